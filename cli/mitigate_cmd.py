"""``fairgate mitigate``: a remedy for a failing audit, run as a Prefect flow (flows/mitigation.py).

``--method reweighing`` writes training weights (id, group, label, weight), exit 0. ``--method retrain`` retrains
the estimator under the policy's constraint (needs ``pip install 'fairgate[mitigation]'``), audits the model
before and after, and exits with the re-audit's code (0 pass, 1 fail). ``--method thresholds`` fits group
thresholds on the audited predictions' scores, writes the thresholds, the mitigated predictions and the
frontier chart, audits the predictions before and after, and exits with the re-audit's code. Bad input exits
2 with a message and nothing written; a crash exits 3.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, cast

import typer

from cli import console, options
from cli.exits import debug_hint, fail, refusing, run_flow
from cli.invocation import command_line
from fairgate.engine.text import fmt, fmt_signed

_out = console.stdout()


class Method(StrEnum):
    reweighing = "reweighing"
    retrain = "retrain"
    thresholds = "thresholds"


class Objective(StrEnum):
    accuracy = "accuracy"
    balanced_accuracy = "balanced_accuracy"


class Constraint(StrEnum):
    demographic_parity = "demographic_parity"
    true_positive_rate_parity = "true_positive_rate_parity"
    equalized_odds = "equalized_odds"


# The options of one method or two (their help says which); --policy, --out, --trail, --json are every command's.
MethodOption = Annotated[
    Method, typer.Option(help="reweighing (training weights), retrain (Fairlearn, audited) or thresholds (audited)")
]
Training = Annotated[str | None, typer.Option(help=f"reweighing, retrain: training data: {options.SOURCE}.")]
AuditedPredictions = Annotated[
    str | None, typer.Option(help="thresholds: the audited predictions (with scores), as for audit.")
]
AuditedLabels = Annotated[str | None, typer.Option(help="thresholds: the ground truth, as for audit.")]
AuditedAttributes = Annotated[str | None, typer.Option(help="thresholds: the sensitive attributes, as for audit.")]
GroupBy = Annotated[
    list[str] | None, typer.Option("--attribute", help="Group by this policy attribute (repeatable; default all).")
]
FileFormat = Annotated[str, typer.Option("--format", help="reweighing: weights file as csv or parquet.")]
BaseWeight = Annotated[
    str | None, typer.Option("--base-weight", help="reweighing: a column of existing sampling weights.")
]
Evaluation = Annotated[str | None, typer.Option(help="retrain: held-out data (same columns) to predict and audit.")]
Estimator = Annotated[
    Path | None, typer.Option(help="retrain: a scikit-learn classifier or Pipeline (joblib/pickle file).")
]
Feature = Annotated[
    list[str] | None, typer.Option("--feature", help="retrain: a feature column (repeatable; default: the rest).")
]
ConstraintOption = Annotated[
    Constraint | None, typer.Option(help="retrain: the constraint (default: from the policy's first metric).")
]
Metric = Annotated[
    str | None, typer.Option(help="thresholds: the metric to bound (default: the policy's critical one).")
]
Tolerance = Annotated[
    float | None,
    typer.Option(help="thresholds: the gap allowed (default 0: exact equality; docs/guides/mitigating.md says why)."),
]
ObjectiveOption = Annotated[
    Objective | None, typer.Option(help="thresholds: what the thresholds maximise (default accuracy).")
]
AuditedModel = Annotated[str | None, typer.Option("--model", help="retrain, thresholds: model name for the audits.")]
Answers = Annotated[
    str | None, typer.Option("--answers", help="The audit run (id or seq in the trail) this mitigation answers.")
]
Frontier = Annotated[
    int | None,
    typer.Option(
        "--frontier",
        min=2,
        max=200,
        help="retrain: also run Fairlearn's GridSearch with this grid size; write its accuracy-fairness "
        "frontier and the comparison report of its Pareto models against the original.",
    ),
]


def mitigate(
    context: typer.Context,
    method: MethodOption,
    policy: options.Policy,
    training: Training = None,
    predictions: AuditedPredictions = None,
    labels: AuditedLabels = None,
    attributes: AuditedAttributes = None,
    out: options.Out = None,
    attribute: GroupBy = None,
    file_format: FileFormat = "csv",
    base_weight: BaseWeight = None,
    evaluation: Evaluation = None,
    estimator: Estimator = None,
    feature: Feature = None,
    constraint: ConstraintOption = None,
    metric: Metric = None,
    tolerance: Tolerance = None,
    objective: ObjectiveOption = None,
    model: AuditedModel = None,
    trail: options.Trail = None,
    answers: Answers = None,
    frontier: Frontier = None,
    as_json: options.Json = False,
) -> None:
    """Mitigate: reweigh the training data, retrain under the policy's constraint or fit group thresholds; the
    last two are audited before and after."""
    common: dict[str, Any] = {"policy": str(policy), "out_dir": str(out) if out else None, "answers": answers}
    common |= {"trail": str(trail) if trail else None}
    if frontier is not None and method is not Method.retrain:
        fail("--frontier is for --method retrain (a GridSearch under the retrained model's constraint)")
    sources = {"training": training, "evaluation": evaluation, "predictions": predictions, "labels": labels}
    _precheck_writing(policy, out, trail, sources | {"attributes": attributes})
    if method is Method.thresholds:
        inputs = {"predictions": predictions, "labels": labels, "attributes": attributes}
        _precheck_thresholds(inputs, tolerance)
        settings: dict[str, Any] = {"metric": metric, "tolerance": tolerance, "groups": attribute or None}
        settings |= {"objective": objective.value if objective else None, "model_name": model}
        _finish(run_thresholds(common | inputs | settings | {"command_line": command_line(context)}), as_json)
    if training is None:
        fail(f"--method {method.value} needs --training (the training data: a CSV/Parquet file or DB::TABLE)")
    if method is Method.retrain:
        _precheck_retrain(evaluation, estimator)
    parameters = common | {"training": training, "attributes": attribute or None}
    from flows.mitigation import fairgate_retrain, fairgate_reweigh

    if method is Method.reweighing:
        reweighing = {"file_format": file_format, "base_weight": base_weight, "command_line": command_line(context)}
        _finish(_run(fairgate_reweigh, parameters | reweighing), as_json)
    retrain = {
        "evaluation": evaluation,
        "estimator": str(estimator),
        "features": feature or None,
        "constraint": constraint.value if constraint else None,
        "model_name": model,
        "frontier": frontier,
    }
    _finish(_run(fairgate_retrain, parameters | retrain | {"command_line": command_line(context)}), as_json)


def run_thresholds(parameters: dict[str, Any]) -> dict[str, Any]:
    """The ``fairgate-thresholds`` flow's summary (exit 2 on bad input, 3 on a crash)."""
    from flows.mitigation import fairgate_thresholds

    return _run(fairgate_thresholds, parameters)


def _run(flow: Any, parameters: dict[str, Any]) -> dict[str, Any]:
    from cli.signals import audit_guard

    status = f"running the {flow.name} flow"
    with audit_guard():  # Ctrl-C / SIGTERM: stop at once, nothing left in --out, no server left behind
        return run_flow(flow, parameters, what="the mitigation", status=status, hint=debug_hint(""))


def _precheck_writing(policy: Path, out: Path | None, trail: Path | None, inputs: dict[str, str | None]) -> None:
    """Before Prefect starts: the policy reads, --out and the trail can be written, no input is the trail."""
    from cli.checks import check_path_name, check_writing
    from tasks.audit import read_policy

    with refusing():
        check_path_name("policy", str(policy))
        parsed, _ = read_policy.fn(policy)
        check_writing(parsed, out, trail, inputs)


def _finish(summary: dict[str, Any], as_json: bool) -> NoReturn:
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2, default=str) + "\n")
    else:
        _print(summary)
    raise typer.Exit(int(summary.get("exit_code", 0)))


def _precheck_thresholds(inputs: dict[str, str | None], tolerance: float | None) -> None:
    """Before Prefect starts: the three inputs are given and can be found."""
    from tasks.inputs.io import parse_source

    missing = [f"--{role}" for role, text in inputs.items() if text is None]
    if missing:
        fail(f"--method thresholds needs {', '.join(missing)} (the audited inputs, as for fairgate audit)")
    if tolerance is not None and not 0.0 <= tolerance <= 1.0:
        fail(f"--tolerance {tolerance:g}: give the gap allowed, a number between 0 and 1")
    with refusing():
        for role, text in inputs.items():
            parse_source(role, cast(str, text))


def _precheck_retrain(evaluation: str | None, estimator: Path | None) -> None:
    """Before Prefect starts: the options retraining needs, and the extra it runs on."""
    from tasks.mitigation.training import require_mitigation_extra

    if evaluation is None or estimator is None:
        fail("--method retrain needs --evaluation (held-out data to audit) and --estimator (a joblib/pickle file)")
    with refusing():
        require_mitigation_extra()


def _print(summary: dict[str, Any]) -> None:
    if summary["method"] == "thresholds":
        _print_thresholds(summary)
    elif summary["method"] == "reweighing":
        _out.print(f"reweighing by {' x '.join(summary['attributes'])}: {summary['rows']} rows", highlight=False)
        for cell in summary["cells"]:
            group = ", ".join(str(cell[a]) for a in summary["attributes"])
            _out.print(f"  {group} / {summary['label']}={cell[summary['label']]}: weight {fmt(cell['weight'], 4)}")
    else:
        c, acc = summary["constraint"], summary["accuracy"]["overall"]
        bound = c["difference_bound"] if c["ratio_bound"] is None else c["ratio_bound"]
        _out.print(f"constraint: {c['family']} (from {c['metric']}, bound {bound})", highlight=False)
        _out.print(f"accuracy: {_change(acc)}", highlight=False)
        audits = summary["audits"]
        _out.print(f"verdict: {audits['before']['verdict']} -> {audits['after']['verdict']}", highlight=False)
        for stage in ("before", "after"):
            _out.print(f"audit {stage}: {audits[stage]['outputs']['json']}", highlight=False)
        if summary.get("frontier"):
            _print_frontier(summary["frontier"])
    if summary.get("answers"):
        answered = summary["answers"]
        _out.print(f"answers audit run {answered['run_id']} (verdict {answered['verdict']})", highlight=False)
    for kind, path in summary["outputs"].items():
        _out.print(f"{kind}: {path}", highlight=False)


def _print_frontier(frontier: dict[str, Any]) -> None:
    grid = [p for p in frontier["points"] if p["role"] == "candidate"]
    pareto = [p for p in grid if p["pareto"]]
    _out.print(
        f"GridSearch frontier ({frontier['grid_size']} models, {frontier['metric']}): {len(pareto)} on the Pareto "
        f"frontier; {frontier['json']}",
        highlight=False,
    )
    for point in pareto:
        _out.print(
            f"  {point['name']}: accuracy {fmt(point['accuracy'], 4)}, "
            f"{frontier['metric']} {fmt(point['disparity'], 4)}",
            highlight=False,
        )
    comparison = frontier["comparison"]
    if comparison:
        chosen = f" ({comparison['chosen']})" if comparison["chosen"] else ""
        decided = f"{comparison['decision']}{chosen}"
        _out.print(f"Pareto models vs original: {decided}; {comparison['json']}", highlight=False)


def _print_thresholds(summary: dict[str, Any]) -> None:
    from fairgate.report.mitigation import rule_text  # the report's words for a rule (loaded once it has run)

    by = " x ".join(summary["attributes"])
    _out.print(
        f"group thresholds by {by}: {summary['constraint']} (from {summary['metric']}), "
        f"tolerance {summary['tolerance']:g}, maximising {summary['objective']}",
        highlight=False,
    )
    for group, rule in summary["groups"].items():
        _out.print(f"  {group}: {rule_text(rule)}", highlight=False)
    for where in ("in_sample", "held_out"):
        cost = summary[where]
        if cost is None:
            _out.print("held out: not measured (a half lacks a group or an outcome)", highlight=False)
            continue
        label = "in sample" if where == "in_sample" else f"held out ({cost['rows_measured']} rows)"
        acc, gap = cost["overall"], cost["gap"]
        _out.print(
            f"{label}: gap {fmt(gap['before'])} -> {fmt(gap['after'])}; accuracy {_change(acc)}",
            highlight=False,
        )
        for group, g in cost["groups"].items():
            accuracy = f"{fmt(g['before'], 4)} -> {fmt(g['after'], 4)}"
            _out.print(f"    {group} (n={g['n']}): accuracy {accuracy}", highlight=False)
    audits = summary["audits"]
    _out.print(f"verdict: {audits['before']['verdict']} -> {audits['after']['verdict']}", highlight=False)
    for stage in ("before", "after"):
        _out.print(f"audit {stage}: {audits[stage]['outputs']['json']}", highlight=False)


def _change(accuracy: dict[str, Any]) -> str:
    """Accuracy before -> after (change), at 4 decimals by the one rounding rule."""
    before, after = fmt(accuracy["before"], 4), fmt(accuracy["after"], 4)
    return f"{before} -> {after} ({fmt_signed(accuracy['change'], 4)})"
