"""The ``fairgate-registry-watch`` flow: new MLflow model versions -> ``fairgate.model.registered`` events.

Scheduled every minute by its deployment (:func:`deployment_spec`, registered by ``fairgate deploy`` when mlflow
is installed). Each run lists the registry's versions, tags those that name no predictions as skipped, emits one
event per new version, waits until the Prefect API has stored them, then tags the versions as seen
(``fairgate.event_id``). Idempotent: a version is registered once, however often or concurrently the watch runs
(the event id is derived from the version; the Prefect server keeps one event per id). See tasks/outbound/registry.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect.client.schemas.objects import State
from prefect.states import Completed, Failed

from fairgate.errors import FairgateError
from flows.plain_flow import plain_flow
from tasks.outbound.registry import emit_registrations, find_new_versions, mark_registered, mark_skipped

INVALID_INPUT = "InvalidInput"  # the same state name as the audit flow's bad input
WATCH_DEPLOYMENT = "registry-watch"
WATCH_CRON = "* * * * *"


@plain_flow(name="fairgate-registry-watch")
def registry_watch(
    tracking_uri: str | None = None,
    models: list[str] | None = None,
    since: datetime | None = None,
    confirm_timeout_s: float = 60.0,
) -> State:
    """Register every new version of ``models`` (all models when None) in the registry at ``tracking_uri``
    (else ``MLFLOW_TRACKING_URI``), created since ``since`` when given (so that watching an existing registry
    does not tag each of its old versions as skipped); the state's result says which versions were registered
    or skipped."""
    try:
        plan = find_new_versions(tracking_uri, models, since)
        mark_skipped(tracking_uri, plan.skips)
        confirmed = emit_registrations(plan.registrations, confirm_timeout_s)
        mark_registered(tracking_uri, confirmed)
    except FairgateError as exc:
        return Failed(name=INVALID_INPUT, message=exc.message)
    summary: dict[str, Any] = {
        "registered": [{"name": r.name, "version": r.version, "event_id": r.event_id} for r in confirmed],
        "skipped": [{"name": s.name, "version": s.version, "reason": s.reason} for s in plan.skips],
    }
    unconfirmed = [f"{r.name} v{r.version}" for r in plan.registrations if r not in confirmed]
    if unconfirmed:  # not tagged as seen: the next watch sends them again under the same event id
        message = f"the Prefect API did not confirm the registration events of {', '.join(unconfirmed)}"
        return Failed(message=message + "; the next watch sends them again", data=summary)
    return Completed(message=f"{len(confirmed)} registered, {len(plan.skips)} skipped", data=summary)


def deployment_spec(
    tracking_uri: str | None = None, models: list[str] | None = None, since: datetime | None = None
) -> dict[str, Any]:
    """The watch's deployment, as keyword arguments of ``registry_watch.to_deployment`` (flows/deployments.py):
    every minute; the tracking URI from the worker's ``MLFLOW_TRACKING_URI`` unless given here.

    >>> spec = deployment_spec(models=["credit"])
    >>> spec["name"], spec["cron"], spec["parameters"]
    ('registry-watch', '* * * * *', {'models': ['credit']})
    """
    given = {"tracking_uri": tracking_uri, "models": models, "since": since}
    return {
        "name": WATCH_DEPLOYMENT,
        "description": "Watches the MLflow Model Registry and emits fairgate.model.registered for new versions.",
        "cron": WATCH_CRON,
        "parameters": {key: value for key, value in given.items() if value is not None},
        "tags": ["fairness", "mlflow"],
    }
