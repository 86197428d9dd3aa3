"""The ``fairness-audit`` flow: align -> validate -> cube -> metrics (one task per slicing) -> adjudicate ->
trend (earlier runs from the trail) -> write JSON + JUnit -> report -> record.

Bad input (an unusable file, a failed expectation, an invalid policy) raises a ``FairgateError`` in whichever
task finds it; :func:`fairness_audit` turns it, in one place, into a ``Failed`` state named ``InvalidInput``
whose message says what to fix. Nothing is written and the trail is not touched.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import get_run_logger, unmapped
from prefect.client.schemas.objects import State
from prefect.states import Completed, Failed

import fairgate
from fairgate.engine.kinds import kind_of
from fairgate.engine.label_checks import LabelEvidence
from fairgate.errors import EMPTY_REFERENCE, NOTHING_JUDGED, FairgateError
from fairgate.mitigation.proposal import completed_proposal
from fairgate.monitoring import trend_of
from fairgate.proxy import judged_on_correction, with_weight_column
from fairgate.verdicts import verdict_word
from flows.audit_dask import PartitionedInputs, audit_on_dask, requested_execution
from flows.heartbeat import heartbeat
from flows.plain_flow import plain_flow
from flows.runtime import (
    INVALID_INPUT,
    TASK_RUNNER,
    AuditRequest,
    Inputs,
    as_is,
    model_info,
    persisted,
    read_inputs,
    read_staged,
    signals_held,
)
from tasks.audit import adjudicate, build_cube, compute_slicing, load_policy, publish_artifacts
from tasks.inputs.align import release, release_rows, stage_inputs
from tasks.inputs.cube_sql import configure, stream_cube
from tasks.inputs.individual import IndividualRun, assess_individual_fairness, check_individual_request
from tasks.inputs.staged import Staged
from tasks.labels import check_estimates, check_label_request, external_label_evidence, label_free_evidence
from tasks.mitigation.proposed_mitigation import check_mitigation_policy, record_proposed_mitigation, wants_mitigation
from tasks.outbound.events import emit_audit_completed, emit_delivery_failed, failed_metrics
from tasks.outputs import discard_staging, promote_outputs, staging_dir, write_outputs
from tasks.store import default_trail_path, model_history, record_run
from tasks.task_kinds import adjudicate_kind, count_kind, slicings_kind, tasks_of
from tasks.validation.validate import validate_aligned, validate_inputs


@plain_flow(name="fairness-audit", task_runner=TASK_RUNNER)
def fairness_audit(
    policy: str,
    predictions: str,
    labels: str | None,
    attributes: str,
    out_dir: str | None = None,
    model_name: str | None = None,
    model_version: str | int | None = None,
    trail: str | None = None,
    run_id: str | None = None,
    registry: dict[str, Any] | None = None,
    proposed: dict[str, Any] | None = None,
    runner: str | None = None,
    dask_address: str | None = None,
    features: str | None = None,
    counterfactual: str | None = None,
    external_labels: str | None = None,
    command_line: str | None = None,
) -> State:
    """Audit one model's predictions against a fairness policy; the state's result is the run summary.

    ``proposed``: these predictions are a mitigation's candidate (``fairgate mitigate``); its block (method,
    fitted rules, frontier, the audited model's results) gets this audit's results as "after" and the report
    its "Proposed mitigation" section.

    ``model_version`` may be a number (``-p model_version=9``); it is recorded as text. ``registry`` names the
    registry entry the audit was started for (the registration event's ``payload.registry``); it is echoed in
    the summary so the verdict can be written back to that model version. ``runner`` (local or dask) and
    ``dask_address`` override the policy's ``execution`` section (flows/audit_dask.py). ``features`` (the
    people's numeric features, joined on id) and ``counterfactual`` (the decisions with the sensitive attribute
    flipped) feed the policy's ``individual_fairness`` checks (tasks/inputs/individual.py). ``labels`` None: the
    label-dependent results are estimated from the scores, calibrated on the model's last labelled audit in the
    trail; ``external_labels``: independent labels for the same people, compared with ``labels`` (tasks/labels.py).
    ``command_line``: the command that started the run (the CLI passes it); the document records it.
    """
    request = AuditRequest(
        policy,
        predictions,
        labels,
        attributes,
        out_dir=out_dir,
        model_name=model_name,
        model_version=None if model_version is None else str(model_version),
        trail=trail,
        run_id=run_id,
        runner=runner,
        dask_address=dask_address,
        proposed=proposed,
        features=features,
        counterfactual=counterfactual,
        external_labels=external_labels,
        command_line=command_line,
    )
    try:
        with heartbeat():  # the run's heartbeat, when the CLI runs it (flows/heartbeat.py)
            summary, gate = _audit(request)
    except FairgateError as exc:  # the one place where invalid input becomes the run's state
        return Failed(name=INVALID_INPUT, message=exc.message)
    summary["registry"] = registry
    announce_verdict(summary)
    return persisted(verdict_state(summary, gate))


def _audit(request: AuditRequest) -> tuple[dict[str, Any], Gate]:
    """The recipe: each line one step of the audit."""
    run_id = request.run_id or uuid.uuid4().hex[:12]
    policy, policy_text = load_policy(Path(request.policy_path))
    _require_report_support(policy)
    check_individual_request(policy, *request.individual_sources)  # features and counterfactual, before any computing
    check_mitigation_policy(policy, request.policy_path)  # mitigation.auto's inputs, before any computing
    execution = requested_execution(policy.execution, request.runner, request.dask_address)
    check_label_request(policy, execution.runner, request.labels, request.external_labels)
    inputs, policy, proxy_summary, cube, parts, individual = _counted(
        policy, execution, request.sources, request.individual_sources
    )
    model = model_info(inputs.staged, request.model_name, request.model_version)
    output = Path(request.out_dir or policy.reporting.output_dir)
    context = audit_context(inputs, proxy_summary) | {
        "output_dir": str(output),
        "execution": execution_record(inputs, cube),
    }
    if request.command_line:
        context["command_line"] = request.command_line
    trail_path = Path(request.trail) if request.trail else default_trail_path(policy, output)
    labels = _label_evidence(request, policy, cube, trail_path, model.name)
    document = _adjudicated(cube, parts, policy, model, run_id, context, individual, labels)
    for warning in coverage_warnings(document, policy):
        get_run_logger().warning(warning)
    if request.labels is not None and kind_of(policy.task).binary_outcomes:  # estimates of these people, checked
        document["label_free_check"] = check_estimates(document, trail_path, model.name)
    # The run is recorded after its report renders: its trend is the trail's earlier runs plus this one.
    history = model_history(trail_path, model.name, policy.reporting.trend_runs - 1, exclude_run=run_id)
    measured = [r for r in document["results"] if not r.get("estimated")]  # estimates never join the trend
    document["trend"] = trend_of(document | {"results": measured}, history, policy)
    predictions, labels_source, attributes = request.sources
    sources = {"predictions": predictions, "labels": labels_source or "", "attributes": attributes}
    if request.proposed is None:  # a failing audit's own proposal (mitigation.auto; it needs labels), else none
        proposal = (
            _proposed_mitigation(document, policy, request.policy_path, sources, output) if labels_source else None
        )
        document["mitigation"] = proposal
    else:  # this audit judges a mitigation's candidate: its results are the proposal's "after"
        document["mitigation"] = completed_proposal(request.proposed, document)
    written, report, record = _publish(document, policy, policy_text, inputs, cube, output, trail_path)
    get_run_logger().info(f"verdict {document['verdict']}: {written['json']}")
    return run_summary(document, written, report, record), Gate.of(policy)


def _label_evidence(
    request: AuditRequest, policy: fairgate.Policy, cube: Any, trail_path: Path, model_name: str
) -> LabelEvidence | None:
    """Estimates from the scores (no labels) or the label-bias finding (external labels); None otherwise."""
    predictions, labels, attributes = request.sources
    if labels is None:
        return label_free_evidence(cube, policy, trail_path, model_name)
    if request.external_labels:
        return external_label_evidence(policy, predictions, labels, request.external_labels, attributes)
    return None


def _counted(
    policy: fairgate.Policy,
    execution: Any,
    sources: tuple[str, str | None, str],
    individual_sources: tuple[str | None, str | None],
) -> tuple[Inputs | PartitionedInputs, fairgate.Policy, dict[str, Any] | None, Any, Any, IndividualRun | None]:
    """The counting half on the path the kind and the execution settings choose: the inputs, the policy (with
    proxy weights), the proxy summary, the cube, the slicings and the individual-fairness checks."""
    if not kind_of(policy.task).binary_outcomes:  # multiclass, regression, ranking: in memory, the kind's steps
        check_kind_execution(policy, execution)
        if individual_sources[0] is not None:
            raise FairgateError(
                f"--features (individual fairness) works on binary audits only (the policy's task is {policy.task}); "
                "leave --features and --counterfactual out"
            )
        inputs, cube, parts = _counted_kind(policy, sources[0], sources[1] or "", sources[2])
        return inputs, policy, None, cube, parts, None
    if execution.runner == "dask":  # the counting half partition by partition on a Dask cluster
        _individual_needs_rows(individual_sources, "execution.runner: dask")
        counted = audit_on_dask(policy, execution, sources[0], sources[1] or "", sources[2])
        return counted.inputs, policy, None, counted.cube, counted.parts, None
    return _counted_here(policy, *sources, individual_sources)


def _adjudicated(
    cube: Any,
    parts: Any,
    policy: fairgate.Policy,
    model: fairgate.ModelInfo,
    run_id: str,
    context: dict[str, Any],
    individual: IndividualRun | None,
    labels: LabelEvidence | None = None,
) -> dict[str, Any]:
    """The judged document (binary audits with their individual-fairness checks, if any; an inferred attribute's
    results on their attenuation-corrected estimates; estimated results and label-bias findings, if any)."""
    if kind_of(policy.task).binary_outcomes:
        checks = individual.result if individual else None
        parts = judged_on_correction(parts, context.get("proxy"), policy)
        return adjudicate(cube, as_is(parts), as_is(policy), model, run_id, as_is(context), checks, labels)
    return adjudicate_kind(cube, as_is(parts), as_is(policy), model, run_id, as_is(context))


def _counted_here(
    policy: fairgate.Policy,
    predictions: str,
    labels: str | None,
    attributes: str,
    individual_sources: tuple[str | None, str | None] = (None, None),
) -> tuple[
    Inputs, fairgate.Policy, dict[str, Any] | None, fairgate.Cube, list[fairgate.SlicingResult], IndividualRun | None
]:
    """Read and validate the inputs, cube them (streaming through DuckDB, or rows in memory) and fan the metrics
    out, in this process; with a features input, the individual-fairness checks on the aligned rows."""
    staged = stage_inputs(as_is(policy), predictions, labels, attributes)  # the policy quoted: no futures in it
    features, counterfactual = individual_sources
    individual = None
    with _spill_directory() as spill:
        if streams(policy, staged):  # the rows stay in DuckDB: validated and cubed there
            _individual_needs_rows(individual_sources, "the streaming path (execution.streaming)")
            inputs, cube = read_streamed(staged, spill)
            proxy_summary = None
        else:
            inputs = read_staged(staged)
            rows, policy, proxy_summary = _with_proxy(inputs.aligned.table, policy)
            cube = build_cube(rows, as_is(policy))
            del rows
            if features is not None:  # neighbours need the rows: before they are released
                individual = assess_individual_fairness(inputs.aligned.table, policy, features, counterfactual)
                inputs.extra = individual.inputs
                inputs.validation.checks += individual.validation.checks
                inputs.validation.ge_results += individual.validation.ge_results
            release_rows(inputs.aligned)  # the cube is all the metrics need
    parts = compute_slicing.map(unmapped(cube), fairgate.plan_slicings(cube, policy), unmapped(as_is(policy))).result()
    return inputs, policy, proxy_summary, cube, parts, individual


def _individual_needs_rows(individual_sources: tuple[str | None, str | None], path: str) -> None:
    """Individual fairness reads the aligned rows in memory: refused (exit 2) where they never reach Python."""
    if individual_sources[0] is not None:
        raise FairgateError(
            f"--features (individual fairness) needs the aligned rows in memory, which {path} does not read; "
            "set execution.streaming: never and execution.runner: local for this audit"
        )


def _counted_kind(policy: fairgate.Policy, predictions: str, labels: str, attributes: str) -> tuple[Inputs, Any, Any]:
    """A non-binary audit's counting half: the same staging, validation and alignment, then the kind's cube and
    slicings (tasks/task_kinds.py)."""
    inputs = read_inputs(policy, predictions, labels, attributes)
    cube = count_kind(inputs.aligned.table, policy)
    release_rows(inputs.aligned)  # the cube is all the metrics need
    return inputs, cube, slicings_kind(cube, policy)


def check_kind_execution(policy: fairgate.Policy, execution: Any) -> None:
    """A non-binary audit runs in memory in this process: a Dask runner given on the command line is refused."""
    if execution.runner == "dask":
        raise FairgateError(
            f"--runner dask works on binary audits only (the policy's task is {policy.task}); leave --runner out"
        )


def run_summary(
    document: dict[str, Any], written: dict[str, str], report: dict[str, Any] | None, record: dict[str, Any]
) -> dict[str, Any]:
    """The flow run's result: small and JSON-serialisable (it is persisted), the document stays in its file."""
    return {
        "verdict": document["verdict"],
        "exit_code": document["exit_code"],  # 0 also on a fail when the policy disables the gate
        "failed_metrics": failed_metrics(document),
        "run_id": document["run_id"],
        "model_name": str(document["model"]["name"]),
        "model_version": str(document["model"]["version"]),
        "outputs": written,
        "report": None if report is None else _report_summary(report),
        "trail": record,
        "mitigation": _mitigation_summary(document.get("mitigation")),
    }


def _mitigation_summary(block: dict[str, Any] | None) -> dict[str, Any] | None:
    """The proposed mitigation's id, method, verdicts and files (the document holds the rest)."""
    if block is None:
        return None
    kept = ("run_id", "method", "status", "summary", "verdict_before", "verdict_after", "files")
    return {key: block[key] for key in kept}


def _report_summary(report: dict[str, Any]) -> dict[str, Any]:
    """The report's paths and the delivery outcome, as text."""
    delivery = report.get("delivery") or {}
    return {
        "html": _text(report.get("html")),
        "pdf": _text(report.get("pdf")),
        "explorer": _text(report.get("explorer")),
        "delivery": {k: _text(v) if k == "eml" else v for k, v in delivery.items()},
    }


def execution_record(inputs: Inputs | PartitionedInputs, cube: Any) -> dict[str, Any]:
    """The document's ``execution`` block: which path read the rows, and how AUC was computed (binary only)."""
    if not isinstance(cube, fairgate.Cube):
        return inputs.execution | {"auc_method": None, "auc_bins": None}
    return inputs.execution | {"auc_method": cube.auc_method, "auc_bins": cube.histogram_bins or None}


def streams(policy: fairgate.Policy, staged: Staged) -> bool:
    """Whether the audit takes the streaming path (``execution.streaming``, decided on the staged row count).

    The proxy infers attributes from rows in Python: with a proxy section ``auto`` stays in memory, and
    ``always`` is refused (exit 2) rather than silently pulling every row.
    """
    if not policy.execution.streams(staged.row_counts["predictions"]):
        return False
    if policy.proxy is None:
        return True
    if policy.execution.streaming == "always":
        raise FairgateError(
            "execution.streaming: always cannot be combined with a proxy section: proxy inference reads the rows "
            "in Python. Set execution.streaming to auto or never, or give the attribute in the attributes input"
        )
    return False


def read_streamed(staged: Staged, spill: Path) -> tuple[Inputs, fairgate.Cube]:
    """The streaming path's first half: the same validation, then the cube, with no row pulled into Python.

    DuckDB runs under ``execution.memory_limit`` and spills joins and aggregates into ``spill``. The Great
    Expectations suites already judge DuckDB aggregates of the staged inputs (id duplicates, score violations,
    value counts), so they run unchanged, with the same messages; group sizes come from the cube.
    """
    execution = staged.policy.execution
    configure(staged.con, execution.memory_limit, spill)
    validation = validate_inputs(staged)
    aligned, cube = stream_cube(staged)
    validation = validate_aligned(staged, aligned, validation)
    release(staged)
    for warning in validation.warnings:
        get_run_logger().warning(warning)
    path = {"path": "streaming", "memory_limit": execution.memory_limit}
    return Inputs(staged, aligned, validation, path), cube


@contextlib.contextmanager
def _spill_directory() -> Iterator[Path]:
    """A temporary directory DuckDB may spill into on the streaming path, removed after the run."""
    with tempfile.TemporaryDirectory(prefix="fairgate-spill-") as spill:
        yield Path(spill)


def coverage_warnings(document: dict[str, Any], policy: fairgate.Policy) -> list[str]:
    """Why the audit judged less than asked: nothing judged, an empty reference group, skipped slicings."""
    warnings = [s["reason"] for s in document["diagnostics"].get("skipped_slicings", [])]
    if document["verdict_detail"].get("nothing_judged"):
        small = document["diagnostics"]["insufficient_groups"]
        groups = ", ".join(f"{_group_text(g['group'])} (n={g['n']:g})" for g in small[:5]) or "none"
        groups += f" and {len(small) - 5} more" if len(small) > 5 else ""
        minimum = policy.intersectional_analysis.min_group_size
        n_results = document["verdict_detail"]["n_results"]
        warnings.append(NOTHING_JUDGED.format(n_results=n_results, min_group_size=minimum, groups=groups))
    for attribute in policy.sensitive_attributes:
        reference = {attribute.name: attribute.reference_group}
        if attribute.reference_group is not None and any(
            g["group"] == reference and g["n"] == 0 for g in document["groups"]
        ):
            warnings.append(EMPTY_REFERENCE.format(attribute=attribute.name, value=attribute.reference_group))
    return warnings


def _group_text(group: dict[str, str]) -> str:
    return " & ".join(f"{k}={v}" for k, v in group.items())


def audit_context(inputs: Inputs | PartitionedInputs, proxy_summary: dict[str, Any] | None) -> dict[str, Any]:
    """What the audit document records about its inputs: sources, the join, validation, proxy, provenance."""
    context: dict[str, Any] = {
        "inputs": inputs.summary(),
        "alignment": inputs.aligned.join_report,
        "validation": inputs.validation.to_dict(),
    }
    if proxy_summary is not None:
        context["proxy"] = proxy_summary
    if inputs.staged.provenance:
        context["predictions_provenance"] = inputs.staged.provenance
    return context


def _publish(
    document: dict[str, Any],
    policy: fairgate.Policy,
    policy_text: str,
    inputs: Inputs | PartitionedInputs,
    cube: Any,
    output: Path,
    trail_path: Path,
) -> tuple[dict[str, str], dict[str, Any] | None, dict[str, Any]]:
    """Write the outputs and the report, record the run, then move the files into place.

    Everything is written into a hidden staging folder and moved into place only once the run is recorded,
    so a failed or interrupted run leaves no partial report behind.
    """
    staging = staging_dir(output, document["run_id"])
    try:
        written = write_outputs(as_is(document), staging)
        publish_artifacts(document)
        report = _publish_report(document, policy, staging, trail_path, output, cube)
        with signals_held():  # recorded with its outputs in place, or neither
            record = record_run(  # the large values quoted: Prefect walks no futures through them
                trail_path,
                as_is(document),
                policy_text=policy_text,
                inputs=as_is(inputs.summary()),
                validation=as_is(inputs.validation.to_dict()),
                join_report=as_is(inputs.aligned.join_report),
                cube_cells=as_is(tasks_of(policy.task).cube_cells(cube)),
            )
            record_proposed_mitigation(trail_path, document.get("mitigation"), document["run_id"])
            moved = promote_outputs(staging, output)
    finally:
        discard_staging(staging)
    written = {kind: moved.get(path, path) for kind, path in written.items()}
    return written, _relocated(report, moved, staging, output), record


def _relocated(value: Any, moved: dict[str, str], staging: Path, output: Path) -> Any:
    """The report's paths after promotion (it wrote into the staging folder), also inside texts such as the
    delivery's "message kept in <path>"."""
    if isinstance(value, dict):
        return {k: _relocated(v, moved, staging, output) for k, v in value.items()}
    if isinstance(value, Path | str) and str(value) in moved:
        return moved[str(value)]
    if isinstance(value, str):
        return value.replace(f"{staging}{os.sep}", f"{output}{os.sep}")
    return value


def _with_proxy(rows: Any, policy: fairgate.Policy) -> tuple[Any, fairgate.Policy, dict[str, Any] | None]:
    """The rows with the inferred attribute, the policy the cube then needs, and the proxy's summary; the rows
    and policy unchanged when the policy has no proxy section."""
    if policy.proxy is None:
        return rows, policy, None
    from tasks.inputs.proxy import apply_proxy  # the proxy work's module; required when the policy has a proxy section

    policy = with_weight_column(policy)
    rows, summary = apply_proxy(rows, policy)
    return rows, policy, summary


def _proposed_mitigation(
    document: dict[str, Any], policy: fairgate.Policy, policy_path: str, sources: dict[str, str], output: Path
) -> dict[str, Any] | None:
    """A failing audit's proposed remedy when the policy asks for one (``mitigation.auto``), else None."""
    if document["verdict"] != "fail" or not wants_mitigation(policy):
        return None
    from flows.proposed_mitigation import propose_mitigation  # the subflow reads inputs with read_inputs above

    return propose_mitigation(document, policy, policy_path, sources, output)


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
    document: dict[str, Any], policy: fairgate.Policy, output: Path, trail_path: Path, final_dir: Path, cube: Any
) -> dict[str, Any] | None:
    """HTML/PDF report and e-mail delivery, when the policy asks for them (flows/report_flow.py).

    With an HTML report of a binary audit with scores, the what-if explorer beside it (tasks/render/explorer.py).
    """
    if not _wants_report(policy):
        return None
    from flows.report_flow import publish_report
    from tasks.render.explorer import write_explorer
    from tasks.render.report import report_suppression

    explorer = None
    k = policy.reporting.min_cell_size
    suppression = report_suppression(document, k)  # once: the explorer, the report and its e-mail withhold alike
    if "html" in policy.reporting.format:  # written first: the HTML report links to it
        explorer = write_explorer(as_is(document), as_is(cube), policy, output, k, as_is(suppression))
    name = explorer.name if explorer is not None else None
    report = publish_report(document, policy, output, trail_path, final_dir, explorer=name, suppression=suppression)
    report["explorer"] = explorer
    return report


def _text(path: Any) -> str | None:
    return None if path is None else str(path)


# The flow run's final state. A FAIL verdict is a successful audit: Completed, unless the policy asks for Failed.
POLICY_FAILED = "PolicyFailed"
DELIVERY_FAILED = "DeliveryFailed"
_LISTED = 10


@dataclass(frozen=True)
class Gate:
    """What the policy says about the flow run's final state (``ci_cd_gate.fail_flow_run``,
    ``delivery.required``)."""

    fail_flow_run: bool
    delivery_required: bool

    @classmethod
    def of(cls, policy: fairgate.Policy) -> Gate:
        delivery = policy.delivery
        required = delivery is not None and delivery.enabled and delivery.required
        return cls(fail_flow_run=policy.ci_cd_gate.fail_flow_run, delivery_required=required)


def verdict_state(summary: dict[str, Any], gate: Gate) -> State:
    """``Completed`` (message: the verdict), ``Failed``/``PolicyFailed`` for a gate failure when the policy asks,
    ``DeliveryFailed`` (Completed, or Failed when delivery is required) for a report e-mail that did not go.
    The summary is the state's (persisted) result in every case."""
    verdict = f"verdict: {verdict_word(summary['verdict'])}"
    failed = summary["failed_metrics"]
    if failed:  # the first ten: a state message is read in a list; the event and the result have them all
        more = f" and {len(failed) - _LISTED} more" if len(failed) > _LISTED else ""
        verdict += f"; failed: {', '.join(failed[:_LISTED])}{more}"
    delivery = (summary.get("report") or {}).get("delivery") or {}
    if summary["exit_code"] != 0 and gate.fail_flow_run:  # a fail (1), or a blocking insufficient (4)
        return Failed(name=POLICY_FAILED, message=verdict, data=summary)
    if delivery.get("status") == "failed":
        state = Failed if gate.delivery_required else Completed
        return state(name=DELIVERY_FAILED, message=f"{verdict}; report delivery {delivery['detail']}", data=summary)
    return Completed(message=verdict, data=summary)


def announce_verdict(summary: dict[str, Any]) -> None:
    """Emit ``fairgate.audit.completed`` (tasks/outbound/events.py) for the recorded run, with this flow run as related
    resource and the registry entry the run was started for (the ``registry`` parameter, when given), and
    ``fairgate.delivery.failed`` when its report e-mail did not go."""
    from prefect.runtime import flow_run

    registry = flow_run.parameters.get("registry")  # read at run time: the parameter is optional
    emit_audit_completed(summary, flow_run.id, registry if isinstance(registry, dict) else None)
    if ((summary.get("report") or {}).get("delivery") or {}).get("status") == "failed":
        emit_delivery_failed(summary)  # after the run is recorded: the kept message is in its final place
