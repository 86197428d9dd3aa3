"""The registration event contract (docs/guides/deployment.md): a ``fairgate.model.registered`` event checked
and turned into the audit's inputs, or rejected with a reason that is recorded and announced.

The event arrives whole (the ``on-registration`` trigger passes ``{{ event }}``), so nothing is lost in the
trigger's templating: a missing model name or predictions source reaches this module and is rejected here with
a message, instead of the automation failing to render its parameters (``InvalidJinja``) and no run starting.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairgate.errors import FairgateError

REGISTERED = "fairgate.model.registered"
REJECTED = "fairgate.registration.rejected"
UNKNOWN_RESOURCE = {"prefect.resource.id": "model.unknown.unknown", "prefect.resource.name": "unknown"}
SOURCES = ("predictions", "labels", "attributes")

log = logging.getLogger(__name__)


class RegistrationRejected(FairgateError):
    """The registration event does not follow the contract; the message says what is wrong and how to fix it."""

    exit_code = 2


@dataclass(frozen=True)
class Defaults:
    """What the ``on-registration`` deployment supplies when the event's payload does not (fairgate deploy)."""

    policy: str | None = None
    labels: str | None = None
    attributes: str | None = None


@dataclass(frozen=True)
class Registration:
    """A valid registration: the model version and the audit's inputs (absolute, checked to be readable)."""

    event_id: str
    model_name: str
    model_version: str
    policy: str
    sources: dict[str, str]
    registry: dict[str, Any] | None

    def detail(self, run_id: str) -> str:
        """The trail's ``detail`` for an accepted registration: the event, the inputs and the audit run id."""
        inputs = {"policy": self.policy, **self.sources}
        return json.dumps(
            {"event_id": self.event_id, "run_id": run_id, "inputs": inputs, "registry": self.registry}, sort_keys=True
        )


def model_of(event: dict[str, Any]) -> tuple[str, str]:
    """The model name and version an event names, ``unknown`` where it does not (for a rejection's row)."""
    labels = _labels(event)
    name = labels.get("fairgate.model.name") or labels.get("prefect.resource.name") or "unknown"
    version = labels.get("fairgate.model.version")
    resource_id = labels.get("prefect.resource.id", "")
    if not version and resource_id.startswith(f"model.{name}."):
        version = resource_id.removeprefix(f"model.{name}.")
    return name, version or "unknown"


def check_registration(event: dict[str, Any], defaults: Defaults) -> Registration:
    """The registration an event describes; ``RegistrationRejected`` naming the first thing that is wrong."""
    if not isinstance(event, dict):
        raise RegistrationRejected(f"the event is not an object but {type(event).__name__}")
    if event.get("event") != REGISTERED:
        raise RegistrationRejected(f"the event is {event.get('event')!r}, not {REGISTERED!r}")
    name, version = _model(_labels(event))
    payload = event.get("payload")
    if not isinstance(payload, dict):
        raise RegistrationRejected("the event has no payload object; give at least payload.predictions")
    sources = {role: _source(payload, role, getattr(defaults, role, None)) for role in SOURCES}
    policy = _policy(payload, defaults.policy)
    registry = payload.get("registry")
    if registry is not None and not isinstance(registry, dict):
        raise RegistrationRejected(
            f"payload.registry must be an object (kind, tracking_uri, name, version), not {registry!r}"
        )
    return Registration(str(event.get("id") or ""), name, version, policy, sources, registry)


def _labels(event: dict[str, Any]) -> dict[str, str]:
    resource = event.get("resource") if isinstance(event, dict) else None
    if not isinstance(resource, dict):
        return {}
    return {str(k): v for k, v in resource.items() if isinstance(v, str)}


def _model(labels: dict[str, str]) -> tuple[str, str]:
    """Name and version from the resource: ``model.<name>.<version>`` with ``prefect.resource.name`` (or
    ``fairgate.model.name``) naming the model, and ``fairgate.model.version`` or the id's rest the version."""
    resource_id = labels.get("prefect.resource.id", "")
    form = "model.<name>.<version>"
    if not resource_id.startswith("model."):
        raise RegistrationRejected(f"the resource id {resource_id!r} is not of the form {form}")
    names = {labels[k].strip() for k in ("prefect.resource.name", "fairgate.model.name") if labels.get(k, "").strip()}
    if not names:
        raise RegistrationRejected(
            f"the resource {resource_id!r} has no prefect.resource.name: set it (and fairgate.model.name) to the "
            "model's name"
        )
    if len(names) > 1:
        raise RegistrationRejected(f"prefect.resource.name and fairgate.model.name disagree: {sorted(names)}")
    name = names.pop()
    version = labels.get("fairgate.model.version", "").strip() or resource_id.removeprefix(f"model.{name}.")
    if not version or resource_id != f"model.{name}.{version}":
        raise RegistrationRejected(
            f"the resource id {resource_id!r} is not {form} for model {name!r}"
            + (f" and version {version!r}" if version and version != resource_id else "")
        )
    return name, version


def _source(payload: dict[str, Any], role: str, default: str | None) -> str:
    """A payload source (or the deployment's default), absolute and readable."""
    from tasks.inputs.io import parse_source

    value = payload.get(role)
    if value is None:
        if default is None:
            hint = "" if role == "predictions" else f", and the deployment sets no default (fairgate deploy --{role})"
            raise RegistrationRejected(f"payload.{role} is missing{hint}: give the {role} source (FILE or DB::TABLE)")
        value, where = default, f"the deployment's default {role}"
    else:
        where = f"payload.{role}"
    if not isinstance(value, str) or not value.strip():
        raise RegistrationRejected(f"{where} must be a non-empty text (FILE or DB::TABLE), not {value!r}")
    if not Path(value.partition("::")[0]).expanduser().is_absolute():
        raise RegistrationRejected(
            f"{where} {value!r} is a relative path; the worker runs the audit in a temporary folder, so give an "
            "absolute path"
        )
    try:
        parse_source(role, value)
    except FairgateError as exc:
        raise RegistrationRejected(f"{where}: {exc.message}") from None
    return value


def _policy(payload: dict[str, Any], default: str | None) -> str:
    from tasks.audit import read_policy

    value = payload.get("policy", default)
    where = "payload.policy" if "policy" in payload else "the deployment's policy"
    if not isinstance(value, str) or not value.strip():
        raise RegistrationRejected(f"{where} must be the path of a policy YAML file, not {value!r}")
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise RegistrationRejected(f"{where} {value!r} is a relative path; give an absolute path")
    try:
        read_policy.fn(path)
    except FairgateError as exc:
        raise RegistrationRejected(f"{where}: {exc.message}") from None
    return str(path)


def rejected_payload(event: Any, reason: str) -> dict[str, Any]:
    """The ``fairgate.registration.rejected`` payload (contract.md)."""
    received = event.get("payload") if isinstance(event, dict) else None
    event_id = event.get("id") if isinstance(event, dict) else None
    return {"reason": reason, "event_id": None if event_id is None else str(event_id), "received": received}


def rejected_resource(event: Any) -> dict[str, str]:
    """The rejected event's resource: the registration's own, or ``model.unknown.unknown`` without one."""
    labels = _labels(event) if isinstance(event, dict) else {}
    return labels if labels.get("prefect.resource.id") else dict(UNKNOWN_RESOURCE)


def emit_rejected(event: Any, reason: str) -> dict[str, Any] | None:
    """Emit ``fairgate.registration.rejected`` and wait until it is sent (the flow-run process ends right
    after); the event as a dict, None when there is no Prefect API to send it to."""
    from prefect.events import emit_event
    from prefect.events.worker import EventsWorker

    sent = emit_event(event=REJECTED, resource=rejected_resource(event), payload=rejected_payload(event, reason))
    if sent is None:
        log.warning("event %s not emitted: no Prefect API to send it to", REJECTED)
        return None
    EventsWorker.instance().drain()
    return sent.model_dump(mode="json")
