"""``run_audit``: the audit flow called from Python (a notebook, a script), returning a :class:`fairgate.AuditResult`.

The same run as ``fairgate audit``: the policy's reports and the audit trail are written, the run is a Prefect flow
run (on the server ``PREFECT_API_URL`` names, else a temporary local one). The result carries the files the run
wrote (``result.files``), so a notebook shows them linked. ``fairgate.audit`` is the engine alone: it writes nothing
and its result has no files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from fairgate.errors import FairgateError

if TYPE_CHECKING:
    from fairgate.document.result import AuditResult


def run_audit(
    policy: str | Path,
    predictions: str | Path,
    labels: str | Path | None,
    attributes: str | Path,
    *,
    out_dir: str | Path | None = None,
    model_name: str | None = None,
    model_version: str | int | None = None,
    trail: str | Path | None = None,
    **options: Any,
) -> AuditResult:
    """Audit the predictions against the policy as ``fairgate audit`` does; the result with the files written.

    ``options`` are the audit flow's other parameters (``runner``, ``dask_address``, ``features``,
    ``counterfactual``, ``external_labels``, ``run_id``). Bad input or configuration raises
    :class:`fairgate.FairgateError` (its message says what to fix) and leaves nothing written; a verdict never
    raises (a fail is ``result.verdict == "fail"``, ``result.exit_code`` the CLI's exit code).
    """
    from flows.audit import DELIVERY_FAILED, POLICY_FAILED, fairness_audit
    from flows.runtime import INVALID_INPUT
    from tasks.outputs import atomic_outputs, audit_result

    parameters: dict[str, Any] = {
        "policy": str(policy),
        "predictions": str(predictions),
        "labels": None if labels is None else str(labels),
        "attributes": str(attributes),
        "out_dir": None if out_dir is None else str(out_dir),
        "model_name": model_name,
        "model_version": model_version,
        "trail": None if trail is None else str(trail),
        **options,
    }
    with atomic_outputs():  # a refusal or a crash leaves no file behind
        state = fairness_audit(**parameters, return_state=True)
        if state.is_failed() and state.name not in (POLICY_FAILED, DELIVERY_FAILED):
            if state.name == INVALID_INPUT:
                raise FairgateError(state.message or "invalid input")
            raise RuntimeError(f"the audit crashed: {state.message}; this is a bug in fairgate, please report it")
        summary = cast("dict[str, Any]", state.result(raise_on_failure=False))
    return audit_result(summary)
