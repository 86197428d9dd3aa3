"""The ``fairgate-registration`` flow: one ``fairgate.model.registered`` event -> checked -> recorded in the trail's
``registrations`` -> the ``fairness-audit`` flow as a subflow (docs/guides/deployment.md, "Event contract").

A malformed event is rejected: a ``rejected`` row with the reason, a ``fairgate.registration.rejected`` event,
and this flow run ends ``Failed`` (``RegistrationRejected``) with the reason as its message, so it is visible in
the UI, to automations and in the trail. A valid one is recorded ``accepted`` (with the audit's run id) before
the audit starts; the audit's final state becomes this flow run's.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from prefect import get_run_logger
from prefect.client.schemas.objects import State
from prefect.states import Failed

from fairgate.errors import FairgateError
from flows.audit import fairness_audit
from flows.commands import equivalent_command
from flows.plain_flow import plain_flow
from tasks.audit import read_policy
from tasks.outbound.registration import (
    Defaults,
    RegistrationRejected,
    check_registration,
    emit_rejected,
    model_of,
    rejected_payload,
)
from tasks.store import default_trail_path, record_registration

REGISTRATION_REJECTED = "RegistrationRejected"
_REJECTED_PREFIX = "registration rejected: "


# A rejected registration ends Failed without the engine's FailedRun traceback: the filter on Prefect's
# flow-run logger in flows/audit.py (imported here) drops it for every deliberate Failed state.


@plain_flow(name="fairgate-registration")
def fairgate_registration(
    event: dict[str, Any],
    policy: str | None = None,
    labels: str | None = None,
    attributes: str | None = None,
    out_dir: str | None = None,
    trail: str | None = None,
) -> State:
    """Audit the model version a registration event names; the other parameters are the deployment's defaults
    for what the event's payload leaves out, and where the outputs and the trail go."""
    try:
        registration = check_registration(event, Defaults(policy, labels, attributes))
    except RegistrationRejected as exc:
        return reject(event, exc.message, registration_trail(policy, out_dir, trail))
    trail_path = registration_trail(registration.policy, out_dir, trail)
    run_id = uuid.uuid4().hex[:12]
    name, version = registration.model_name, registration.model_version
    record_registration(trail_path, name, version, "accepted", registration.detail(run_id))
    get_run_logger().info(f"registration of {name} {version} accepted (event {registration.event_id}): audit {run_id}")
    audit = fairness_audit(
        policy=registration.policy,
        predictions=registration.sources["predictions"],
        labels=registration.sources["labels"],
        attributes=registration.sources["attributes"],
        out_dir=out_dir,
        model_name=name,
        model_version=version,
        trail=str(trail_path),
        run_id=run_id,
        registry=registration.registry,
        command_line=_command(registration, out_dir, str(trail_path)),
        return_state=True,
    )
    return mirrored(audit, f"{name} {version}, audit {run_id}")


def mirrored(audit: State, label: str) -> State:
    """This run's final state: the audit's (type, name, message and summary), so a verdict or an invalid input
    shows on the registration run as it does on the audit subflow run."""
    summary = audit.result(raise_on_failure=False) if audit.is_completed() or audit.is_failed() else None
    return State(
        type=audit.type,
        name=audit.name,
        message=f"{label}: {audit.message}",
        data=summary if isinstance(summary, dict) else None,
    )


def reject(event: Any, reason: str, trail_path: Path) -> State:
    """Record, announce and fail: the three traces of a rejected registration."""
    name, version = model_of(event) if isinstance(event, dict) else ("unknown", "unknown")
    detail = json.dumps(rejected_payload(event, reason), sort_keys=True, default=str)
    message = f"{_REJECTED_PREFIX}{reason}"
    try:
        record_registration(trail_path, name, version, "rejected", detail)
    except FairgateError as exc:  # still announce it and fail the run, naming both problems
        message += f"; and it could not be recorded: {exc.message}"
    emit_rejected(event, reason)
    get_run_logger().error(message)
    return Failed(name=REGISTRATION_REJECTED, message=message)


def registration_trail(policy: str | None, out_dir: str | None, trail: str | None) -> Path:
    """The trail the audit records into (``trail``, else the policy's, else ``audit_trail.duckdb`` in the output
    folder), so that a registration and its run are in the same file; also for an unreadable policy."""
    if trail:
        return Path(trail)
    try:
        parsed = read_policy.fn(Path(policy)) if policy else None
    except FairgateError:
        parsed = None
    if parsed is None:
        return Path(out_dir or "fairness_reports") / "audit_trail.duckdb"
    return default_trail_path(parsed[0], Path(out_dir or parsed[0].reporting.output_dir))


def _command(registration: Any, out_dir: str | None, trail: str) -> str:
    """The ``fairgate audit`` command equivalent to this registration's audit (its report's reproduce block)."""
    named = {"model_name": registration.model_name, "model_version": registration.model_version}
    given = {"policy": registration.policy, **registration.sources, "out_dir": out_dir, "trail": trail}
    return equivalent_command("audit", given | named)
