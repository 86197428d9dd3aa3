"""Mitigation flows: ``fairgate-reweigh`` (training weights), ``fairgate-retrain`` (constrained retraining,
then the ``fairness-audit`` flow on the model before and after, as subflows) and ``fairgate-thresholds``
(group thresholds on the audited scores, then the ``fairness-audit`` flow on the predictions before and after).

Bad input (a missing column, a policy without a metric to constrain, the extra not installed) becomes a Failed
state named ``InvalidInput`` before anything is written, as in the audit flow. The candidate model is written,
never deployed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from prefect import get_run_logger
from prefect.client.schemas.objects import State
from prefect.states import Completed, Failed

import fairgate
from fairgate.errors import FairgateError
from fairgate.mitigation.proposal import slim_results
from fairgate.mitigation.retraining import Family, choose_constraint
from fairgate.mitigation.reweighing import reweigh
from flows.audit import fairness_audit
from flows.commands import equivalent_command
from flows.grid_frontier import fit_frontier_grid, write_frontier
from flows.plain_flow import plain_flow
from flows.runtime import INVALID_INPUT, Inputs, persisted, read_inputs
from tasks.audit import read_policy
from tasks.mitigation.thresholds import fit_thresholds_task
from tasks.mitigation.thresholds_outputs import (
    discard_thresholds,
    split_small_groups,
    thresholds_proposal,
    thresholds_summary,
    write_thresholds,
)
from tasks.mitigation.training import (
    WEIGHT_FORMATS,
    feature_columns,
    fit_models,
    load_estimator,
    policy_attributes,
    read_table,
    record_mitigation_run,
    require_columns,
    require_mitigation_extra,
    retrain_summary,
    training_set,
    weights_frame,
    write_candidate,
    write_json,
)
from tasks.outbound.events import failed_metrics
from tasks.outputs import output_stem, write_frame
from tasks.store import default_trail_path, show_run
from tasks.task_kinds import require_capability


@plain_flow(name="fairgate-reweigh")
def fairgate_reweigh(
    policy: str,
    training: str,
    out_dir: str | None = None,
    attributes: list[str] | None = None,
    file_format: str = "csv",
    answers: str | None = None,
    trail: str | None = None,
    base_weight: str | None = None,
    command_line: str | None = None,
) -> State:
    """Kamiran-Calders weights for a training set: one weights file (id, group, label, weight) and a summary.

    ``base_weight`` names a column of existing (sampling) weights: each row's weight is then its base weight
    times its cell's factor, with the probabilities taken as weighted shares (as AIF360 does). ``answers`` names
    the audit run (id or seq in the trail) this mitigation answers; the summary points to it. ``command_line``:
    the command run (the summary records it, and with it the trail's hash of the summary); without one, the
    equivalent ``fairgate mitigate`` command of the parameters.
    """
    if command_line is None:
        given = {"policy": policy, "training": training, "out_dir": out_dir, "attributes": attributes}
        given |= {"file_format": file_format, "base_weight": base_weight, "answers": answers, "trail": trail}
        command_line = equivalent_command("mitigate --method reweighing", given)
    try:
        summary = _reweigh(
            policy, training, out_dir, attributes, file_format, answers, trail, base_weight, command_line
        )
        return persisted(Completed(message="weights written", data=summary))
    except FairgateError as exc:
        return Failed(name=INVALID_INPUT, message=exc.message)


def _reweigh(
    policy_path: str,
    training: str,
    out_dir: str | None,
    attributes: list[str] | None,
    file_format: str,
    answers: str | None,
    trail: str | None,
    base_weight: str | None,
    command_line: str,
) -> dict[str, Any]:
    if file_format not in WEIGHT_FORMATS:
        raise FairgateError(f"--format {file_format!r}: choose one of {', '.join(WEIGHT_FORMATS)}")
    policy, _ = read_policy(Path(policy_path))
    require_capability(policy, "mitigation", "fairgate mitigate")
    frame = read_table("training", training)
    groups = policy_attributes(policy, attributes)
    require_columns(frame, "training", [policy.columns.id], "the policy's columns.id names each row's id")
    result = reweigh(frame, groups, policy.columns.y_true, base_weight=base_weight)
    output = Path(out_dir or policy.reporting.output_dir)
    answered = answered_audit(answers, policy, output, trail)
    run_id = uuid.uuid4().hex[:12]
    path = output / f"reweighing_{run_id}.{file_format}"
    weights = write_frame(weights_frame(frame, result, policy.columns.id), path)
    outputs = {"weights": str(weights)}
    summary: dict[str, Any] = {
        "method": "reweighing",
        "run_id": run_id,
        "command_line": command_line,
        "answers": answered,
        "training": training,
        "attributes": list(result.attributes),
        "label": result.label,
        "base_weight": base_weight,
        "rows": frame.height,
        "cells": result.table.to_dicts(),
        "outputs": outputs,
    }
    outputs["json"] = str(write_json(summary, output / f"reweighing_{run_id}.json"))
    record_mitigation_run(_trail_path(trail, policy, output), summary)  # after the files: with their sha256
    get_run_logger().info(f"reweighing: {frame.height} rows, {result.table.height} cells -> {weights}")
    return summary


@plain_flow(name="fairgate-retrain")
def fairgate_retrain(
    policy: str,
    training: str,
    evaluation: str,
    estimator: str,
    out_dir: str | None = None,
    attributes: list[str] | None = None,
    features: list[str] | None = None,
    constraint: str | None = None,
    model_name: str | None = None,
    trail: str | None = None,
    max_iter: int = 50,
    answers: str | None = None,
    frontier: int | None = None,
    command_line: str | None = None,
) -> State:
    """Retrain under the policy's constraint (Fairlearn ExponentiatedGradient) and audit before and after.

    The "before" is the estimator refitted on the same training data without the constraint, so the two audits
    differ only by the constraint. The state's result is the summary; its exit code is the re-audit's.
    ``frontier`` (a grid size) adds Fairlearn's GridSearch frontier and its Pareto models' comparison
    (flows/grid_frontier.py) to the summary. ``command_line``: the command run (the audits' documents record it).
    """
    try:
        plan = _plan(policy, training, evaluation, estimator, attributes, features, constraint)
        output = Path(out_dir or plan["policy"].reporting.output_dir)
        plan["answers"] = answered_audit(answers, plan["policy"], output, trail)
    except FairgateError as exc:
        return Failed(name=INVALID_INPUT, message=exc.message)
    try:  # an estimator that cannot take these features (or weights) is the user's to fix, found only in fit
        fitted = fit_models(plan["estimator"], plan["train"], plan["choice"], max_iter)
        grid = fit_frontier_grid(plan, frontier) if frontier else None
    except FairgateError as exc:
        return Failed(name=INVALID_INPUT, message=exc.message)
    files = write_candidate(fitted, plan, output)
    name = model_name or Path(estimator).stem
    runs = {
        "before": (files["predictions_before"], "unconstrained"),
        "after": (files["predictions_after"], f"exponentiated-gradient-{files['run_id']}"),
    }
    where: dict[str, Any] = {"labels": files["labels"], "attributes": files["attributes"], "out": output}
    where |= {"name": name, "trail": trail}
    audits, refused = _audit_before_and_after(runs, policy=policy, command_line=command_line, **where)
    if refused is not None:
        _discard(files)
        return Failed(name=INVALID_INPUT, message=refused)
    summary = retrain_summary(plan, files, audits)
    if grid is not None:
        summary["frontier"] = write_frontier(plan | {"command_line": command_line}, fitted, grid, files)
    summary["outputs"]["json"] = str(write_json(summary, output / f"retrain_{files['run_id']}.json"))
    record_mitigation_run(_trail_path(trail, plan["policy"], output), summary)  # after the files: with their sha256
    get_run_logger().info(f"retrained: verdict {audits['before']['verdict']} -> {audits['after']['verdict']}")
    message = f"verdict {audits['before']['verdict']} -> {audits['after']['verdict']}"
    return persisted(Completed(message=message, data=summary))


def _plan(
    policy_path: str,
    training: str,
    evaluation: str,
    estimator: str,
    attributes: list[str] | None,
    features: list[str] | None,
    constraint: str | None,
) -> dict[str, Any]:
    """Every check before any training or writing: the extra, the policy, both data sets, the estimator."""
    require_mitigation_extra()
    policy, _ = read_policy(Path(policy_path))
    require_capability(policy, "mitigation", "fairgate mitigate")
    choice = choose_constraint(policy, cast(Family | None, constraint))
    groups = policy_attributes(policy, attributes)
    train_frame = read_table("training", training)
    eval_frame = read_table("evaluation", evaluation)
    chosen = list(features) if features else feature_columns(train_frame, policy, groups)
    audited = [a.name for a in policy.sensitive_attributes]  # the re-audit reads every policy attribute
    require_columns(eval_frame, "evaluation", audited, "the re-audit judges every attribute of the policy")
    return {
        "policy": policy,
        "choice": choice,
        "attributes": groups,
        "features": chosen,
        "estimator": load_estimator(Path(estimator)),
        "train": training_set(train_frame, "training", policy, groups, chosen),
        "eval": training_set(eval_frame, "evaluation", policy, groups, chosen),
        "eval_frame": eval_frame.select(policy.columns.id, policy.columns.y_true, *audited),
        "sources": {"training": training, "evaluation": evaluation, "estimator": estimator},
    }


@plain_flow(name="fairgate-thresholds")
def fairgate_thresholds(
    policy: str,
    predictions: str,
    labels: str,
    attributes: str,
    out_dir: str | None = None,
    groups: list[str] | None = None,
    metric: str | None = None,
    tolerance: float | None = None,
    objective: str | None = None,
    model_name: str | None = None,
    trail: str | None = None,
    answers: str | None = None,
    command_line: str | None = None,
) -> State:
    """Group thresholds (Hardt et al. 2016) on the audited scores, then the audit before and after.

    Thresholds fitted on the aligned rows (settings: :func:`_threshold_settings`) are written with the
    mitigated predictions and the frontier; ``fairness-audit`` judges those, and the audited ones unless
    ``answers`` names the recorded audit of these inputs under this policy (its verdict is the "before"). The
    run is recorded in the trail's ``mitigations`` table; the state's result is the summary (the re-audit's exit);
    the audits' documents record ``command_line``.
    """
    try:
        rules, _ = read_policy(Path(policy))
        require_capability(rules, "mitigation", "fairgate mitigate")
        output = Path(out_dir or rules.reporting.output_dir)
        answered = answered_audit(answers, rules, output, trail)
        chosen, metric, tolerance, objective = _threshold_settings(rules, groups, metric, tolerance, objective)
        inputs = read_inputs(rules, predictions, labels, attributes)
        rows, named = inputs.aligned.table, inputs.staged.model[0]
        answered_before = same_audit(answered, inputs, rules)  # before any fitting: the same inputs and policy
        judged, unchanged, small = split_small_groups(rows, rules, chosen)
        mitigation = fit_thresholds_task(
            judged, rules, metric=metric, attributes=chosen, tolerance=tolerance, objective=objective
        )
    except FairgateError as exc:
        return Failed(name=INVALID_INPUT, message=exc.message)
    del rows, judged, inputs
    files = write_thresholds(mitigation, unchanged, rules, output)
    name = model_name or named or Path(predictions).stem  # both audits under one name: the model's
    proposal = thresholds_proposal(mitigation, files, small, answered_before, rules)
    before_document = None if answered is None else show_run(Path(answered["trail"]), answered["run_id"])["document"]
    where: dict[str, Any] = {"labels": labels, "attributes": attributes, "out": output, "name": name, "trail": trail}
    audits, refused = _audit_before_and_after(
        _runs_to_audit(files, predictions, answered_before),
        policy=policy,
        proposal=proposal,
        before_document=before_document,
        command_line=command_line,
        **where,
    )
    if refused is not None:
        discard_thresholds(files)
        return Failed(name=INVALID_INPUT, message=refused)
    if answered_before is not None:
        audits = {"before": answered_before, **audits}
    sources = {"predictions": predictions, "labels": labels, "attributes": attributes}
    summary = thresholds_summary(mitigation, files, audits, sources, answered, small)
    return _recorded_thresholds(summary, files, audits, output, _trail_path(trail, rules, output))


def _runs_to_audit(
    files: dict[str, Any], predictions: str, answered_before: dict[str, Any] | None
) -> dict[str, tuple[str, str | None]]:
    """The mitigated predictions as "after"; the audited ones as "before" unless a recorded audit answers it."""
    runs: dict[str, tuple[str, str | None]] = {"after": (files["predictions"], f"thresholds-{files['run_id']}")}
    if answered_before is None:  # no audit named: judge the audited predictions too
        runs = {"before": (predictions, None), **runs}  # the audited model, as its predictions name it
    return runs


def _threshold_settings(
    rules: fairgate.Policy,
    groups: list[str] | None,
    metric: str | None,
    tolerance: float | None,
    objective: str | None,
) -> tuple[list[str], str | None, float | None, str | None]:
    """The groups, metric, tolerance and objective: as given, else the policy's ``mitigation:`` section, else
    the first attribute (the others left to the fitting's defaults)."""
    section = rules.mitigation
    if section is not None:
        groups = groups or section.groups
        metric = metric or section.metric
        tolerance = section.tolerance if tolerance is None else tolerance
        objective = objective or section.objective
    chosen = policy_attributes(rules, groups) if groups else [rules.sensitive_attributes[0].name]
    return chosen, metric, tolerance, objective


def _recorded_thresholds(
    summary: dict[str, Any], files: dict[str, Any], audits: dict[str, Any], output: Path, trail_path: Path
) -> State:
    """Write the run's summary JSON, record the run in the trail (after the files: with their sha256), and
    end with the re-audit's verdicts."""
    path = output / f"thresholds_{files['run_id']}_summary.json"
    summary["outputs"]["json"] = str(path)  # the file names itself, as the printed summary does
    write_json(summary, path)
    record_mitigation_run(trail_path, summary)
    message = f"verdict {audits['before']['verdict']} -> {audits['after']['verdict']}"
    get_run_logger().info(f"group thresholds: {message}")
    return persisted(Completed(message=message, data=summary))


def answered_audit(run: str | None, policy: fairgate.Policy, output: Path, trail: str | None) -> dict[str, Any] | None:
    """The recorded audit run (id or seq) a mitigation answers, from the trail: its id, model and verdict."""
    if run is None:
        return None
    trail_path = Path(trail) if trail else default_trail_path(policy, output)
    if not trail_path.exists():
        raise FairgateError(f"--answers {run!r}: no audit trail at {trail_path}; pass --trail with the audit's trail")
    record = show_run(trail_path, run)
    document = record.get("document") or {}
    return {
        "run_id": record["run_id"],
        "seq": record["seq"],
        "trail": str(trail_path),
        "model": document.get("model"),
        "verdict": document.get("verdict"),
        "failed_metrics": failed_metrics(document),
        "exit_code": document.get("exit_code"),
        "inputs": record.get("inputs") or {},
        "policy_sha256": record.get("policy_sha256"),
        "json": str(Path(document.get("output_dir") or output) / f"{output_stem(document)}.json"),
    }


def same_audit(answered: dict[str, Any] | None, inputs: Inputs, policy: fairgate.Policy) -> dict[str, Any] | None:
    """The answered audit as the "before" of a mitigation (its recorded verdict, not a second audit), checked to
    have judged the same inputs under the same policy; None when no audit is named."""
    if answered is None:
        return None
    recorded = {role: entry.get("sha256") for role, entry in answered["inputs"].items()}
    current = {role: entry["sha256"] for role, entry in inputs.summary().items()}
    changed = sorted(role for role in current if recorded.get(role) != current[role])
    if changed:
        raise FairgateError(
            f"--answers {answered['run_id']}: that audit judged other {', '.join(changed)} (sha256 differs); pass "
            "the files it audited, or leave out --answers to audit these before and after"
        )
    if answered["policy_sha256"] != policy.sha256():
        raise FairgateError(
            f"--answers {answered['run_id']}: that audit used another policy (sha256 differs), so its verdict is not "
            "comparable with the re-audit; pass the policy it used, or leave out --answers"
        )
    model = answered.get("model") or {}
    return {
        "run_id": answered["run_id"],
        "verdict": answered["verdict"],
        "exit_code": answered["exit_code"],
        "failed_metrics": answered["failed_metrics"],
        "model_version": str(model.get("version")),
        "outputs": {"json": answered["json"]},
        "reused": True,  # read from the trail: the answered audit, not audited again
    }


def _trail_path(trail: str | None, policy: fairgate.Policy, output: Path) -> Path:
    return Path(trail) if trail else default_trail_path(policy, output)


def _discard(files: dict[str, Any]) -> None:
    for key in ("model", "predictions_before", "predictions_after", "labels", "attributes"):
        Path(files[key]).unlink(missing_ok=True)


def _audit_before_and_after(
    runs: Mapping[str, tuple[str, str | None]],
    *,
    policy: str,
    labels: str,
    attributes: str,
    out: Path,
    name: str,
    trail: str | None,
    proposal: dict[str, Any] | None = None,
    before_document: dict[str, Any] | None = None,
    command_line: str | None = None,
) -> tuple[dict[str, dict[str, Any]], str | None]:
    """The ``fairness-audit`` subflow on each stage's predictions (``stage -> (predictions, model version)``):
    the run summaries by stage, or the message of the first audit that refused its input.

    With a ``proposal``, the "after" audit carries it (its report's "Proposed mitigation" section), with the
    "before" results of ``before_document`` (the answered audit) or of the "before" audit just run."""
    audits: dict[str, dict[str, Any]] = {}
    for stage, (predictions, version) in runs.items():
        proposed = None
        if stage == "after" and proposal is not None:
            before = before_document or json.loads(Path(audits["before"]["outputs"]["json"]).read_text())
            answers = proposal["answers"] or audits["before"]["run_id"]
            proposed = proposal | {"before": slim_results(before), "answers": answers}
        state = fairness_audit(
            policy=policy,
            predictions=predictions,
            labels=labels,
            attributes=attributes,
            out_dir=str(out),
            model_name=name,
            model_version=version,
            trail=trail,
            proposed=proposed,
            command_line=command_line,  # the mitigation's command: what reproduces this audit
            return_state=True,
        )
        if state.name == INVALID_INPUT:
            return audits, state.message or "invalid input"
        audits[stage] = cast(dict[str, Any], state.result(raise_on_failure=False))
    return audits, None
