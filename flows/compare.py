"""The ``fairgate-compare`` flow: read both models' inputs as an audit does -> pair them on id -> paired
bootstrap of every judged metric's change -> promotion decision -> write the comparison JSON.

Bad input raises a ``FairgateError`` in whichever step finds it; the flow turns it into a ``Failed`` state
named ``InvalidInput`` (as ``fairness-audit`` does) and writes nothing.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.client.schemas.objects import State
from prefect.states import Completed, Failed

import fairgate
from fairgate.document.comparison import COMPARISON_SCHEMA_VERSION
from fairgate.document.result import fairgate_version
from fairgate.errors import FairgateError
from flows.audit import INVALID_INPUT, Inputs, persisted, read_inputs
from tasks.audit import read_policy
from tasks.compare import compare_models, pair_models, publish_comparison, write_comparison


@flow(name="fairgate-compare")
def fairgate_compare(
    policy: str,
    baseline_predictions: str,
    candidate_predictions: str,
    labels: str,
    attributes: str,
    out_dir: str | None = None,
    run_id: str | None = None,
) -> State:
    """Compare a candidate model with the baseline on the same people; the state's result is the summary."""
    try:
        summary = _compare(policy, baseline_predictions, candidate_predictions, labels, attributes, out_dir, run_id)
    except FairgateError as exc:
        return Failed(name=INVALID_INPUT, message=exc.message)
    return persisted(Completed(message=f"decision: {summary['decision']}", data=summary))


def _compare(
    policy_path: str,
    baseline_predictions: str,
    candidate_predictions: str,
    labels: str,
    attributes: str,
    out_dir: str | None,
    run_id: str | None,
) -> dict[str, Any]:
    """The recipe: each line one step of the comparison."""
    run_id = run_id or uuid.uuid4().hex[:12]
    policy, _ = read_policy(Path(policy_path))
    baseline = read_inputs(policy, baseline_predictions, labels, attributes)
    candidate = read_inputs(policy, candidate_predictions, labels, attributes)
    joint = pair_models(baseline.aligned.table, candidate.aligned.table, policy)
    result = compare_models(joint, policy)
    document = _with_metadata(result, run_id, policy, {"baseline": baseline, "candidate": candidate})
    publish_comparison(document)
    path = write_comparison(document, Path(out_dir or policy.reporting.output_dir))
    get_run_logger().info(f"decision {document['decision']}: {path}")
    return {"decision": document["decision"], "exit_code": document["exit_code"], "run_id": run_id, "json": path}


def _with_metadata(
    result: dict[str, Any], run_id: str, policy: fairgate.Policy, models: dict[str, Inputs]
) -> dict[str, Any]:
    """The comparison document: what was compared, from which inputs, under which policy, then the result."""
    return {
        "schema_version": COMPARISON_SCHEMA_VERSION,
        "kind": "comparison",
        "run_id": run_id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "fairgate_version": fairgate_version(),
        "policy_sha256": policy.sha256(),
        "models": {role: _model(inputs) for role, inputs in models.items()},
        **result,
    }


def _model(inputs: Inputs) -> dict[str, Any]:
    name, version = inputs.staged.model
    return {"name": name, "version": version, "inputs": inputs.summary(), "alignment": inputs.aligned.join_report}
