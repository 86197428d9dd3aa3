"""Prefect events about an audit, for registries and automations outside the flow run (contract.md).

``fairgate.audit.completed`` after every recorded audit run, ``fairgate.delivery.failed`` when the report
e-mail finally fails, ``fairgate.drift.detected`` per drift alert of a recorded monitoring night. All name the
model version as their resource (``model.<name>.<version>``), the same resource as the
``fairgate.model.registered`` event that may have started the run, so an automation can follow one model
version from registration to verdict.

Prefect's events client sends in batches from a background thread; :func:`emit` waits until the event is
sent, so it is not lost when the process (a CLI run with its ephemeral server, a worker's flow-run process)
ends right after the flow.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from prefect.events import emit_event
from prefect.events.worker import EventsWorker
from prefect.exceptions import EventTooLarge

from fairgate.engine.labels import slicing_label
from fairgate.verdicts import verdict_word

AUDIT_COMPLETED = "fairgate.audit.completed"
DELIVERY_FAILED = "fairgate.delivery.failed"
#: The version of the events' contract (docs/concepts/pipeline.md): 2 spells the verdict in lower
#: case everywhere (resource label, payload, MLflow tags, flow-run state), as the audit document does.
CONTRACT_VERSION = 2


DRIFT_DETECTED = "fairgate.drift.detected"

log = logging.getLogger(__name__)


def model_resource(model_name: str, model_version: str, **labels: str) -> dict[str, str]:
    """The model version as a Prefect resource (the registration event's resource, plus ``labels``)."""
    return {
        "prefect.resource.id": f"model.{model_name}.{model_version}",
        "prefect.resource.name": model_name,
        "fairgate.model.name": model_name,
        "fairgate.model.version": model_version,
        **labels,
    }


def _reported_only(result: Mapping[str, Any], document: Mapping[str, Any]) -> bool:
    """An estimated result (no labels yet) that the verdict does not rest on (``labels.estimated_results``)."""
    return bool(result.get("estimated")) and (document.get("label_free") or {}).get("estimated_results") != "judge"


def failed_metrics(document: Mapping[str, Any]) -> list[str]:
    """The failed results as ``metric@slicing`` (slicing ``a*b`` for an intersection, ``all`` for none).

    >>> failed_metrics({"results": [{"metric": "dir", "slicing": ["race", "sex"], "status": "fail"},
    ...                             {"metric": "eod", "slicing": ["sex"], "status": "pass"}]})
    ['dir@race*sex']
    """
    return [
        f"{r.get('metric')}@{'*'.join(r.get('slicing') or []) or 'all'}"
        for r in document.get("results", [])
        if r.get("status") == "fail" and not _reported_only(r, document)
    ]


def audit_completed_payload(
    summary: Mapping[str, Any], flow_run_id: str | None, registry: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The ``fairgate.audit.completed`` payload of a run summary (flows/audit.py)."""
    report = summary.get("report") or {}
    return {
        "contract_version": CONTRACT_VERSION,
        "verdict": verdict_word(summary["verdict"]),
        "exit_code": summary["exit_code"],
        "failed_metrics": list(summary["failed_metrics"]),
        "run_id": summary["run_id"],
        "flow_run_id": flow_run_id,
        "model_name": summary["model_name"],
        "model_version": summary["model_version"],
        "outputs": {"json": summary["outputs"]["json"], "pdf": report.get("pdf"), "html": report.get("html")},
        "trail": summary["trail"]["trail"],
        "registry": dict(registry) if registry else None,
    }


def emit_audit_completed(
    summary: Mapping[str, Any], flow_run_id: str | None, registry: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """Emit ``fairgate.audit.completed`` for a recorded run; return the event as sent (None: no Prefect API)."""
    labels = {"fairgate.verdict": verdict_word(summary["verdict"])}
    if registry and registry.get("kind"):  # lets a registry's automation match its own audits only
        labels["fairgate.registry.kind"] = str(registry["kind"])
    resource = model_resource(summary["model_name"], summary["model_version"], **labels)
    related = [{"prefect.resource.id": f"prefect.flow-run.{flow_run_id}", "prefect.resource.role": "flow-run"}]
    payload = audit_completed_payload(summary, flow_run_id, registry)
    return emit(AUDIT_COMPLETED, resource, payload, related if flow_run_id else None)


def emit_delivery_failed(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """Emit ``fairgate.delivery.failed`` for a run whose report e-mail failed after its retries (the message
    is kept in the outbox: ``fairgate outbox send`` re-sends it)."""
    outcome = (summary.get("report") or {}).get("delivery") or {}
    payload = {
        "run_id": summary["run_id"],
        "recipients": list(outcome.get("recipients") or []),
        "detail": str(outcome.get("detail", "")),
        "outbox": outcome.get("eml"),
    }
    return emit(DELIVERY_FAILED, model_resource(summary["model_name"], summary["model_version"]), payload)


def emit_drift_detected(document: Mapping[str, Any], trail: str) -> list[dict[str, Any] | None]:
    """One ``fairgate.drift.detected`` event per alert (contract.md, "Events")."""
    model = document["model"]
    sent = []
    for alert in document["alerts"]:
        values = {"change": alert["change"]}
        for window in document["windows"]:
            for result in window["results"]:
                if result["metric"] == alert["metric"] and slicing_label(result["slicing"]) == alert["slicing"]:
                    values[f"window_{window['window']}"] = result["value"]
        resource = model_resource(
            model["name"],
            model["version"],
            **{"fairgate.metric": alert["metric"], "fairgate.slicing": alert["slicing"]},
        )
        payload = {
            "model_name": model["name"],
            "model_version": model["version"],
            "metric": alert["metric"],
            "slicing": alert["slicing"],
            "group": alert["group"],
            "window": "night",
            "night": alert["night"],
            "values": values,
            "statistic": alert["statistic"],
            "threshold": alert["threshold"],
            "run_id": document["run_id"],
            "trail": trail,
        }
        sent.append(emit(DRIFT_DETECTED, resource, payload))
    return sent


def emit(
    event: str,
    resource: dict[str, str],
    payload: dict[str, Any],
    related: list[dict[str, str]] | None = None,
) -> dict[str, Any] | None:
    """Emit one event and wait until the events client has sent it; the event as a dict, None when Prefect
    has no events client here (no API configured)."""
    try:
        sent = emit_event(event=event, resource=resource, related=related, payload=payload)
    except EventTooLarge as exc:  # the audit is recorded: a missing event must not turn it into a crash
        log.warning("event %s not emitted: %s", event, exc)
        return None
    if sent is None:
        log.warning("event %s not emitted: no Prefect API to send it to", event)
        return None
    _flush()
    return sent.model_dump(mode="json")


def _flush() -> None:
    """Wait until the queued events are sent: draining stops the events worker once its queue is empty (the
    next event starts a new one)."""
    progress = logging.getLogger("EventsWorker")
    progress.addFilter(_waiting_is_expected)
    try:
        EventsWorker.instance().drain()  # in a loop this returns a future, which the exit hook's drain completes
    finally:
        progress.removeFilter(_waiting_is_expected)


def _waiting_is_expected(record: logging.LogRecord) -> bool:
    """While we drain on purpose, Prefect's "Still processing items" warning reports the wait, not a problem."""
    return not record.getMessage().startswith("Still processing items")
