"""The ``fairness-audit`` flow: align -> validate -> cube -> metrics (one task per slicing) -> adjudicate ->
write JSON + JUnit -> report -> record.

Bad input (an unusable file, a failed expectation, an invalid policy) ends the run in a ``Failed`` state named
``InvalidInput`` whose message says what to fix; nothing is written and the trail is not touched.
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from pathlib import Path
from typing import Any, TypeVar, cast

from prefect import flow, get_run_logger, unmapped
from prefect.states import Completed, Failed, State
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

import fairgate
from fairgate.errors import FairgateError
from tasks.align import align_inputs, release, release_rows, stage_inputs
from tasks.audit import (
    adjudicate,
    build_cube,
    compute_slicing,
    cube_cells,
    engine_frame,
    plan_slicings,
    publish_artifacts,
    read_policy,
)
from tasks.io import InvalidInput
from tasks.outputs import discard_staging, promote_outputs, staging_dir, write_outputs
from tasks.trail import record_run
from tasks.validate import validate_aligned, validate_inputs

INVALID_INPUT = "InvalidInput"
T = TypeVar("T")


# Metric tasks run in threads; more threads than cores only adds memory (each slicing holds its replicates).
_TASK_RUNNER: Any = ThreadPoolTaskRunner(max_workers=max(1, min(4, os.cpu_count() or 1)))


@flow(name="fairness-audit", task_runner=_TASK_RUNNER)
def fairness_audit(
    policy: str,
    predictions: str,
    labels: str,
    attributes: str,
    out_dir: str | None = None,
    model_name: str | None = None,
    model_version: str | None = None,
    trail: str | None = None,
    run_id: str | None = None,
) -> State:
    """Audit one model's predictions against a fairness policy; the state's result is the run summary."""
    try:
        summary = _audit(policy, predictions, labels, attributes, out_dir, model_name, model_version, trail, run_id)
    except FairgateError as exc:
        return Failed(name=INVALID_INPUT, message=exc.message)
    return Completed(message=f"verdict: {summary['verdict']}", data=summary)


def _audit(
    policy_path: str,
    predictions: str,
    labels: str,
    attributes: str,
    out_dir: str | None,
    model_name: str | None,
    model_version: str | None,
    trail: str | None,
    run_id: str | None,
) -> dict[str, Any]:
    logger = get_run_logger()
    run_id = run_id or uuid.uuid4().hex[:12]
    policy, policy_text = _ok(read_policy(Path(policy_path)))
    output = Path(out_dir or policy.reporting.output_dir)
    trail_path = Path(trail) if trail else _trail_path(policy, output)
    _require_report_support(policy)

    staged = _ok(stage_inputs(policy, predictions, labels, attributes))
    validation = _ok(validate_inputs(staged))
    aligned = _ok(align_inputs(staged))
    validation = _ok(validate_aligned(staged, aligned, validation))
    release(staged)
    for warning in validation.warnings:
        logger.warning(warning)

    rows, proxy_summary = aligned.table, None
    if policy.proxy is not None:
        policy = _with_proxy_weights(policy)
        rows, proxy_summary = _apply_proxy(rows, policy)

    cube = _ok(build_cube(engine_frame(rows, policy), policy))
    rows = None
    release_rows(aligned)  # the cube is all the metrics need
    slicings = plan_slicings(cube, policy)
    parts = compute_slicing.map(unmapped(cube), slicings, unmapped(policy)).result()
    inputs = {
        role: {"source": source.label, "sha256": staged.sha256[role], "rows": staged.row_counts[role]}
        for role, source in staged.sources.items()
    }
    context: dict[str, Any] = {"inputs": inputs, "alignment": aligned.join_report, "validation": validation.to_dict()}
    if proxy_summary is not None:
        context["proxy"] = proxy_summary
    if staged.provenance:
        context["predictions_provenance"] = staged.provenance
    named_name, named_version = staged.model  # the predictions may name their model; options win
    model = fairgate.ModelInfo(
        name=model_name or named_name or "model", version=model_version or named_version or "unversioned"
    )
    document = adjudicate(cube, _as_is(parts), policy, model, run_id, context)

    # Everything is written into a hidden staging folder and moved into place only once the run is recorded,
    # so a failed or interrupted run leaves no partial report behind.
    staging = staging_dir(output, run_id)
    try:
        written = write_outputs(_as_is(document), staging)
        publish_artifacts(_as_is(document))
        report = _publish_report(document, policy, staging, trail_path)
        record = record_run(
            trail_path,
            _as_is(document),
            policy_text=policy_text,
            inputs=inputs,
            validation=validation.to_dict(),
            join_report=aligned.join_report,
            cube_cells=cube_cells(cube),
        )
        moved = promote_outputs(staging, output)
    finally:
        discard_staging(staging)
    written = {kind: moved.get(path, path) for kind, path in written.items()}
    report = _relocated(report, moved)
    logger.info(f"verdict {document['verdict']}: {written['json']}")
    return {
        "verdict": document["verdict"],
        "exit_code": document["exit_code"],  # 0 also on a fail when the policy disables the gate
        "run_id": run_id,
        "outputs": written,
        "report": report,
        "trail": record,
        "document": document,
    }


def _relocated(value: Any, moved: dict[str, str]) -> Any:
    """The report's paths after promotion (it wrote into the staging folder)."""
    if isinstance(value, dict):
        return {k: _relocated(v, moved) for k, v in value.items()}
    if isinstance(value, Path | str) and str(value) in moved:
        return moved[str(value)]
    return value


def _as_is(value: T) -> T:
    """A large collection (slicing results, the audit document) handed to a task without Prefect walking it
    element by element for futures, which took seconds at 10M rows; it holds none."""
    return cast(T, quote(value))


def _ok(value: T | InvalidInput) -> T:
    """Stop the recipe at the first invalid input (the task already explained it)."""
    if isinstance(value, InvalidInput):
        value.raise_()
    return value  # type: ignore[return-value]


def _trail_path(policy: fairgate.Policy, output: Path) -> Path:
    """The policy's trail path when it sets one, else ``audit_trail.duckdb`` in the output folder."""
    if "audit_trail" in policy.model_fields_set:
        return Path(policy.audit_trail.path)
    return output / "audit_trail.duckdb"


def _apply_proxy(rows: Any, policy: fairgate.Policy) -> tuple[Any, dict[str, Any]]:
    from tasks.proxy import apply_proxy  # the proxy work's module; required when the policy has a proxy section

    return _ok(apply_proxy(rows, policy))


def _with_proxy_weights(policy: fairgate.Policy) -> fairgate.Policy:
    """Probabilistic membership counts each person in every inferred group with weight P(group | name, place):
    the cube must sum those weights, so the policy gets a weight column when it names none."""
    if policy.proxy is None or policy.proxy.mode != "probabilistic" or policy.columns.weight is not None:
        return policy
    columns = policy.columns.model_copy(update={"weight": "proxy_weight"})
    return policy.model_copy(update={"columns": columns})


def _wants_report(policy: fairgate.Policy) -> bool:
    return bool({"html", "pdf"} & set(policy.reporting.format)) or policy.delivery is not None


def _require_report_support(policy: fairgate.Policy) -> None:
    """Checked before any work: a policy asking for a report this installation cannot produce is invalid."""
    if _wants_report(policy) and importlib.util.find_spec("flows.report_flow") is None:
        raise FairgateError(
            f"the policy asks for report formats {policy.reporting.format} or delivery, but flows/report_flow.py "
            "is not installed; remove html/pdf from reporting.format and the delivery section"
        )


def _publish_report(
    document: dict[str, Any], policy: fairgate.Policy, output: Path, trail_path: Path
) -> dict[str, Any] | None:
    """HTML/PDF report and e-mail delivery, when the policy asks for them (flows/report_flow.py)."""
    if not _wants_report(policy):
        return None
    from flows.report_flow import publish_report

    return publish_report(document, policy, output, trail_path)
