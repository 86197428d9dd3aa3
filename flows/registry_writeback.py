"""The ``fairgate-registry-writeback`` flow: a finished audit's verdict -> tags and an alias on the MLflow version.

Triggered by ``fairgate.audit.completed`` (:func:`deployment_spec`, registered by ``fairgate deploy``); audits
whose payload names no MLflow registry are left alone. Also callable as a plain function or subflow, e.g. by an
audit flow that does not go through automations: ``registry_writeback(payload)``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from prefect.client.schemas.objects import State
from prefect.events.schemas.deployment_triggers import DeploymentEventTrigger
from prefect.states import Completed, Failed

from fairgate.errors import FairgateError
from flows.plain_flow import plain_flow
from tasks.outbound.registry import DEFAULT_ALIAS, mlflow_target, write_verdict

INVALID_INPUT = "InvalidInput"
WRITEBACK_DEPLOYMENT = "registry-writeback"
COMPLETED_EVENT = "fairgate.audit.completed"


@plain_flow(name="fairgate-registry-writeback")
def registry_writeback(payload: dict[str, Any], alias: str = DEFAULT_ALIAS, tracking_uri: str | None = None) -> State:
    """Write the verdict of a ``fairgate.audit.completed`` ``payload`` to its model version: tags
    ``fairgate.verdict``, ``fairgate.run_id``, ``fairgate.failed_metrics``, ``fairgate.report``, and the model card
    (an artifact of the version's run, its place in ``fairgate.model_card``); ``alias`` set on a
    pass, removed from this version otherwise. ``tracking_uri`` overrides the payload's (another route to the
    same registry)."""
    try:
        target = mlflow_target(payload)
        if target is None:
            return Completed(message="the audit names no MLflow registry: nothing written", data=None)
        written = write_verdict(target, payload, alias, tracking_uri)
    except FairgateError as exc:
        return Failed(name=INVALID_INPUT, message=exc.message)
    message = f"{written.name} v{written.version}: verdict {payload['verdict']}, alias {alias} {written.alias_action}"
    return Completed(message=message, data=asdict(written))


def deployment_spec() -> dict[str, Any]:
    """The write-back's deployment, as keyword arguments of ``registry_writeback.to_deployment``
    (flows/deployments.py): run on every completed audit with the event's payload (a dict: a single-expression
    template keeps its type). Prefect triggers match resources, not payloads: the event's resource carries
    ``fairgate.registry.kind`` for audits started from a registry, so other audits start no run."""
    trigger = DeploymentEventTrigger(
        name="fairgate-verdict-to-mlflow",
        enabled=True,
        # Only audits of MLflow versions: the completed event labels its resource with the registry's kind.
        match={"prefect.resource.id": "model.*", "fairgate.registry.kind": "mlflow"},
        expect={COMPLETED_EVENT},
        parameters={"payload": "{{ event.payload }}"},
    )
    return {
        "name": WRITEBACK_DEPLOYMENT,
        "description": "Writes each audit's verdict back to its MLflow model version (tags, fairness alias).",
        "triggers": [trigger],
        "parameters": {"alias": DEFAULT_ALIAS},
        "tags": ["fairness", "mlflow"],
    }
