"""``fairgate audit`` and ``fairgate demo``: run the ``fairness-audit`` flow, print its summary, exit with its code.

Thin: check the arguments before Prefect starts (cli/checks.py; exit 2, nothing written), run the flow
(flows/audit.py), print the results table (or the document with ``--json``), exit 0 pass, 1 fail; 3 if the audit
could not run (cli/exits.py). Prefect and the engine are imported only when the flow runs.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

import fairgate
from cli import console, options
from cli.checks import check_audit_arguments
from cli.exits import fail, refusing, run_flow
from cli.invocation import command_line
from cli.signals import audit_guard
from fairgate.engine.collection import long_lived
from fairgate.engine.labels import slicing_label
from fairgate.verdicts import insufficient_sentence, passed

#: auto (default: when the machine is not saturated), on or off: whether audit and demo validate in a warm
#: second process (tasks/validation/warm.py).
WARM_VARIABLE = "FAIRGATE_WARM_VALIDATION"

_out = console.stdout()
_err = console.stderr()


def audit(
    context: typer.Context,
    policy: options.Policy,
    predictions: options.Predictions,
    attributes: options.Attributes,
    labels: options.LabelsIfAny = None,
    external_labels: options.ExternalLabels = None,
    out: options.Out = None,
    model: options.Model = None,
    model_version: options.ModelVersion = None,
    trail: options.Trail = None,
    as_json: options.Json = False,
    quiet: options.Quiet = False,
    runner: Annotated[
        str | None, typer.Option("--runner", help="local or dask (default: the policy's execution.runner).")
    ] = None,
    dask_address: Annotated[
        str | None,
        typer.Option("--dask-address", help="Dask scheduler, e.g. tcp://host:8786 (implies --runner dask)."),
    ] = None,
    features: Annotated[
        str | None,
        typer.Option(help="People's numeric features (id + columns) for the policy's individual_fairness checks."),
    ] = None,
    counterfactual: Annotated[
        str | None,
        typer.Option(help="The model's predictions for the same ids with the sensitive attribute flipped."),
    ] = None,
) -> None:
    """Audit a model's predictions against a fairness policy. Exit 0 pass, 1 fail, 2 invalid input.

    On Dask, each input may be a directory or a glob of partition files (the k-th files hold the same people).
    With --features (and --counterfactual), the policy's individual_fairness section is checked too.
    """
    _start_warm_validation()
    _run_audit(
        command=command_line(context),
        policy=policy,
        predictions=predictions,
        labels=labels,
        external_labels=external_labels,
        attributes=attributes,
        out=out,
        model=model,
        model_version=model_version,
        trail=trail,
        as_json=as_json,
        quiet=quiet,
        runner=runner,
        dask_address=dask_address,
        features=features,
        counterfactual=counterfactual,
    )


def demo(
    context: typer.Context,
    out: options.OutFolder = Path("fairness_reports"),
    as_json: options.Json = False,
    quiet: options.Quiet = False,
    task: Annotated[
        str,
        typer.Option("--task", help="Kind of model: binary (default), multiclass, regression or ranking."),
    ] = "binary",
) -> None:
    """Audit a bundled real data set with its demo policy (binary: COMPAS risk scores, ProPublica data)."""
    _start_warm_validation()
    from cli.demos import DEMOS

    if task not in DEMOS:
        fail(f"--task {task!r}: no demo for that kind; demos: {', '.join(DEMOS)}")
    chosen = DEMOS[task]
    workdir = Path(tempfile.mkdtemp(prefix="fairgate-demo-"))
    try:
        files = chosen.write_inputs(workdir)
        if not (quiet or as_json):
            _err.print(f"demo: {chosen.data} split into {', '.join(p.name for p in files.values())}")
        _run_audit(
            command=command_line(context),  # the demo's own command, not its temporary files
            policy=chosen.policy,
            predictions=str(files["predictions"]),
            labels=str(files["labels"]),
            attributes=str(files["attributes"]),
            out=out,
            model=chosen.model,
            model_version=chosen.version,
            trail=None,
            as_json=as_json,
            quiet=quiet,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _start_warm_validation() -> None:
    """First thing: fork the process that imports Great Expectations on the other core while this one starts,
    and runs the audit's suites (tasks/validation/warm.py)."""
    from tasks.validation.warm import WHEN  # the standard library only: checked before anything is imported

    when = os.environ.get(WARM_VARIABLE, "auto").strip().lower() or "auto"
    if when not in WHEN:
        fail(f"{WARM_VARIABLE}={os.environ[WARM_VARIABLE]!r} is not a choice: set it to {', '.join(WHEN)}, or unset it")
    if when == "off":
        return
    with long_lived():  # pandas, which both processes need, is imported once, before the fork
        from tasks.validation.gx_suite import start_warm_process

    start_warm_process(when)


def _precheck(
    policy: Path,
    predictions: str,
    labels: str | None,
    attributes: str,
    where: tuple[str | None, str | None] = (None, None),
    individual: tuple[str | None, str | None] = (None, None),
) -> None:
    """Fail fast (before Prefect starts) on a bad policy or a missing input file (on Dask: partition lists that
    do not line up; individual fairness: features and counterfactual files that do not match the policy)."""
    from fairgate.errors import FairgateError
    from tasks.audit import read_policy
    from tasks.inputs.individual import check_individual_request
    from tasks.inputs.io import parse_source

    with refusing():
        parsed, _ = read_policy.fn(policy)
        check_individual_request(parsed, *individual)
        for role, text in zip(("features", "counterfactual"), individual, strict=True):
            if text is not None:
                parse_source(role, text)
        if _on_dask(parsed, where):
            from flows.audit_dask import requested_execution
            from tasks.inputs.partitions import check_scheduler, plan_partitions

            if labels is None:
                raise FairgateError("an audit without --labels runs in this process only; give --labels on Dask")
            plan_partitions(predictions, labels, attributes)
            if address := requested_execution(parsed.execution, *where).address:
                check_scheduler(address)
            return
        for role, text in (("predictions", predictions), ("labels", labels), ("attributes", attributes)):
            if text is not None:  # no labels: an audit estimating its label-dependent results
                parse_source(role, text)


def _check_external_labels(labels: str | None, external_labels: str) -> None:
    """--external-labels needs --labels to compare with, and an input that can be read."""
    from fairgate.errors import FairgateError
    from tasks.inputs.io import parse_source

    if labels is None:
        raise FairgateError("--external-labels compares two labels: give the audit's own with --labels as well")
    parse_source("labels", external_labels)


def _on_dask(policy: fairgate.Policy, where: tuple[str | None, str | None]) -> bool:
    from flows.audit_dask import requested_execution

    return requested_execution(policy.execution, *where).runner == "dask"


def _run_audit(
    *,
    command: str | None,
    policy: Path,
    predictions: str,
    labels: str | None,
    attributes: str,
    out: Path | None,
    model: str | None,
    model_version: str | None,
    trail: Path | None,
    as_json: bool,
    quiet: bool,
    runner: str | None = None,
    dask_address: str | None = None,
    features: str | None = None,
    counterfactual: str | None = None,
    external_labels: str | None = None,
) -> NoReturn:
    inputs = {"predictions": predictions, "attributes": attributes}
    optional = (("labels", labels), ("features", features), ("counterfactual", counterfactual))
    inputs |= {role: text for role, text in (*optional, ("external-labels", external_labels)) if text}
    with long_lived():  # these checks import the engine, Prefect and the audit flow
        with refusing():
            check_audit_arguments(policy, inputs, out, trail, {"model": model, "model-version": model_version})
        _precheck(policy, predictions, labels, attributes, (runner, dask_address), (features, counterfactual))
        import flows.audit  # noqa: F401  # imported here, with the collector paused
    if external_labels is not None:
        with refusing():
            _check_external_labels(labels, external_labels)
    parameters: dict[str, Any] = {
        "policy": str(policy),
        "predictions": predictions,
        "labels": labels,
        "attributes": attributes,
        "out_dir": str(out) if out else None,
        "model_name": model,
        "model_version": model_version,
        "trail": str(trail) if trail else None,
        "runner": runner,
        "dask_address": dask_address,
        "features": features,
        "counterfactual": counterfactual,
        "external_labels": external_labels,
        "command_line": command,
    }
    with audit_guard():  # Ctrl-C / SIGTERM: stop at once, nothing recorded, no server left (cli/signals.py)
        summary = _run_flow(parameters, show_progress=not (quiet or as_json))
    _warn_undelivered(summary)
    if as_json:  # the file's text is the document as json.dumps(..., indent=2) wrote it: printed, not re-encoded
        sys.stdout.write(Path(summary["outputs"]["json"]).read_text(encoding="utf-8") + "\n")
    elif not quiet:
        _print_summary(summary)
    raise typer.Exit(summary["exit_code"])


def _run_flow(parameters: dict[str, Any], *, show_progress: bool) -> dict[str, Any]:
    """The ``fairness-audit`` run's summary (its ``outputs`` name the document's file). PolicyFailed and
    DeliveryFailed carry a verdict (the exit code stays the gate's); any other failure exits 2 (invalid input) or
    3 (cli/exits.py)."""
    from flows.audit import DELIVERY_FAILED, POLICY_FAILED, fairness_audit
    from flows.heartbeat import beating_here

    status = "running the fairness-audit flow (align, validate, cube, metrics, verdict)" if show_progress else None
    with beating_here():  # the flow's body sends the heartbeat: no wait of up to 1 s at the run's end
        return run_flow(
            fairness_audit, parameters, what="the audit", status=status, verdicts={POLICY_FAILED, DELIVERY_FAILED}
        )


def _warn_undelivered(summary: dict[str, Any]) -> None:
    """A report e-mail that failed after its retries, on stderr (the exit code stays the gate's)."""
    delivery = (summary.get("report") or {}).get("delivery") or {}
    if delivery.get("status") == "failed":
        _err.print(
            f"[bold yellow]warning:[/] the report e-mail was not delivered ({escape(str(delivery.get('detail')))}); "
            "re-send it with `fairgate outbox send --policy POLICY --out OUT`",
            highlight=False,
            soft_wrap=True,
        )


# Short enough for 80 columns; the JSON keeps the full status names.
_STATUS_LABELS = {"insufficient_data": "no data"}
_STATUS_NOTES = {
    "inconclusive": "inconclusive: the interval straddles the limit",
    "insufficient_data": "no data: too few people to judge",
}


def _estimate_texts(estimate: dict[str, Any]) -> tuple[str, str]:
    """A value and its interval as the results table prints them."""
    from fairgate.report.format import fmt, interval_text  # the engine's modules: not for --help

    value = "n/a" if estimate.get("value") is None else fmt(estimate["value"])
    # The reports' formatter: ends rounded outward, so the printed interval contains the JSON's.
    ci = interval_text(estimate.get("ci_low"), estimate.get("ci_high"))
    return value, f"[{ci}]" if ci else ""


def _print_summary(summary: dict[str, Any]) -> None:
    document = json.loads(Path(summary["outputs"]["json"]).read_text(encoding="utf-8"))
    # One section per slicing (its name on a row of its own) keeps the table readable in 80 columns.
    table = Table(title="fairness results", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("metric", overflow="fold")
    for column in ("value", "interval", "limit"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    shown: set[str] = set()
    for slicing, rows in itertools.groupby(document.get("results", []), key=lambda r: r.get("slicing") or []):
        table.add_section()
        table.add_row(f"[bold]{slicing_label(slicing)}[/]")
        for r in rows:
            value, ci = _estimate_texts(r)
            status = r.get("status", "")
            shown.add(status)
            colour = {"pass": "green", "fail": "red", "inconclusive": "magenta"}.get(status, "yellow")
            label = _STATUS_LABELS.get(status, status)
            judged = " (corrected)" if r.get("judged") == "corrected" else ""
            judged += " (estimated)" if r.get("estimated") else ""
            table.add_row(
                f" {r.get('metric', '')}{judged}", value, ci, str(r.get("threshold")), f"[{colour}]{label}[/]"
            )
            if naive := r.get("naive"):  # an inferred attribute: the measured (attenuated) value beside it
                table.add_row("   as measured (attenuated)", *_estimate_texts(naive), "", "")
    notes = [text for status, text in _STATUS_NOTES.items() if status in shown]
    if label_free := document.get("label_free"):  # no labels: which results were estimated, and do they count
        counted = "counted in" if label_free["estimated_results"] == "judge" else "not counted in"
        notes.append(f"(estimated): from the scores, no labels yet; {counted} the verdict")
    if notes:
        table.caption = "; ".join(notes) + " (the JSON gives each result's reason)"
    _out.print(table)
    verdict = document["verdict"]
    colour = "green" if passed(verdict) else ("yellow" if verdict == "insufficient" else "red")
    _out.print(f"verdict: [bold {colour}]{verdict.upper()}[/]")
    if verdict == "insufficient":
        _out.print(insufficient_sentence(document["verdict_detail"].get("insufficient") or "block"))
    from tasks.outputs import written_files  # the flow has run: Prefect is loaded

    for kind, path in written_files(summary).items():  # the files a notebook's AuditResult links, in that order
        _out.print(f"{kind}: {path}", highlight=False)
    _out.print(f"audit trail: {summary['trail']['trail']} (run {summary['trail']['seq']})", highlight=False)
    if proposed := summary.get("mitigation"):  # policy mitigation.auto: proposed, never deployed
        _out.print(f"proposed mitigation ({proposed['method']}): {proposed['summary']}", highlight=False)
