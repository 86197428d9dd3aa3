"""The ``fairgate-compare`` flow: resolve each model (a predictions file or a recorded audit run) -> read the
labels and attributes once, and each model's predictions once -> pair each candidate with the baseline on id ->
each candidate's own audit against the policy -> paired bootstrap of every judged metric's change per candidate ->
a decision per candidate (promotable only when its own audit passes) and the one chosen on evidence ->
write the comparison JSON and its report (HTML/PDF) beside it.

Bad input raises a ``FairgateError`` in whichever step finds it; the flow turns it into a ``Failed`` state
named ``InvalidInput`` (as ``fairness-audit`` does) and writes nothing.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from prefect import get_run_logger
from prefect.client.schemas.objects import State
from prefect.states import Completed, Failed

import fairgate
from fairgate.engine.cube import check_cardinality
from fairgate.errors import FairgateError
from fairgate.mitigation.plane import accuracy_fairness_plane
from flows.plain_flow import plain_flow
from flows.runtime import INVALID_INPUT, Inputs, persisted
from tasks.audit import read_policy
from tasks.compare import (
    ModelInput,
    audit_candidate,
    compare_models,
    comparison_document,
    pair_models,
    publish_comparison,
    resolve_input,
    shared_inputs,
    unique_names,
    write_comparison,
)
from tasks.inputs.align import align_inputs, hold_shared_inputs, release, restage_predictions, stage_inputs
from tasks.render.compare_report import write_comparison_report
from tasks.store import default_trail_path
from tasks.task_kinds import require_capability
from tasks.validation.validate import validate_aligned, validate_inputs


@plain_flow(name="fairgate-compare")
def fairgate_compare(
    policy: str,
    baseline: str,
    candidates: list[str],
    labels: str | None = None,
    attributes: str | None = None,
    out_dir: str | None = None,
    run_id: str | None = None,
    trail: str | None = None,
    plane_metric: str | None = None,
    command_line: str | None = None,
) -> State:
    """Compare candidate models with the baseline on the same people; the state's result is the summary.

    ``baseline`` and each of ``candidates`` is a predictions file (or ``DB::TABLE``) or an audit run (id or seq)
    recorded in ``trail``; ``labels``/``attributes`` default to the baseline run's. ``command_line``: the command
    that started the run (the document records it for the report's reproduce block).
    """
    try:
        settings = {"plane_metric": plane_metric, "command_line": command_line}
        summary = _compare(policy, baseline, candidates, labels, attributes, out_dir, run_id, trail, settings)
    except FairgateError as exc:
        return Failed(name=INVALID_INPUT, message=exc.message)
    return persisted(Completed(message=f"decision: {summary['decision']}", data=summary))


def _compare(
    policy_path: str,
    baseline_text: str,
    candidate_texts: list[str],
    labels: str | None,
    attributes: str | None,
    out_dir: str | None,
    run_id: str | None,
    trail: str | None,
    settings: dict[str, Any],
) -> dict[str, Any]:
    """The recipe: each line one step of the comparison."""
    run_id = run_id or uuid.uuid4().hex[:12]
    policy, _ = read_policy(Path(policy_path))
    require_capability(policy, "compare", "fairgate compare")
    output = Path(out_dir or policy.reporting.output_dir)
    trail_path = Path(trail) if trail else default_trail_path(policy, output)
    baseline = resolve_input("baseline", baseline_text, trail_path)
    candidates = [resolve_input("candidate", text, trail_path) for text in candidate_texts]
    labels, attributes = shared_inputs(baseline, candidates, labels, attributes)
    read = read_models(policy, [baseline, *candidates], labels, attributes)
    names = unique_names(candidates)
    joints = {
        name: pair_models(read[0].aligned.table, inputs.aligned.table, policy)
        for name, inputs in zip(names, read[1:], strict=True)
    }
    audits = {name: audit_candidate(inputs.aligned.table, policy) for name, inputs in zip(names, read[1:], strict=True)}
    result = compare_models(joints, policy, audits)
    result["plane"] = accuracy_fairness_plane(result, settings["plane_metric"])
    models = [_model(inputs, model) for inputs, model in zip(read, [baseline, *candidates], strict=True)]
    joint = next(iter(joints.values()), None)  # every candidate is compared on the same people
    document = comparison_document(result, run_id, policy, models[0], models[1:], joint, settings["command_line"])
    publish_comparison(document)
    path = write_comparison(document, output)
    report = write_comparison_report(document, output, list(policy.reporting.format), policy.reporting.min_cell_size)
    get_run_logger().info(f"decision {document['decision']}: {path}")
    return {
        "decision": document["decision"],
        "exit_code": document["exit_code"],
        "chosen": document["chosen"],
        "run_id": run_id,
        "json": path,
        "report": report,
    }


def read_models(policy: fairgate.Policy, models: list[ModelInput], labels: str, attributes: str) -> list[Inputs]:
    """Every model's aligned rows, the labels and attributes read and validated once for all of them.

    The baseline is staged with the labels and attributes (held in memory), validated and aligned as an audit
    does; each candidate's predictions are then staged alone beside them, validated alone and aligned.
    """
    staged = stage_inputs(policy, models[0].predictions, labels, attributes)
    try:
        hold_shared_inputs(staged)
        validation = validate_inputs(staged)
        aligned = align_inputs(staged)
        check_cardinality(aligned.table, policy, source=staged.sources["attributes"].label)
        read = [Inputs(staged, aligned, validate_aligned(staged, aligned, validation))]
        for model in models[1:]:
            restaged = restage_predictions(staged, model.predictions)
            checked = validate_inputs(restaged, roles=("predictions",))
            read.append(Inputs(restaged, align_inputs(restaged), checked))
    finally:
        release(staged)
    for inputs in read:
        for warning in inputs.validation.warnings:
            get_run_logger().warning(warning)
    return read


def _model(inputs: Inputs, model: ModelInput) -> dict[str, Any]:
    """The document's entry of one model: its name (the predictions' or the run's, else the file's) and inputs."""
    named, version = inputs.staged.model
    named = named or model.name
    if model.run is not None:
        named, version = model.run["model_name"], model.run["model_version"]
    return {
        "name": named,
        "version": version,
        "run": model.run,
        "inputs": inputs.summary(),
        "alignment": inputs.aligned.join_report,
    }
