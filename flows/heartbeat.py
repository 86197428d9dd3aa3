"""The audit flow run's heartbeat, without the wait at its end when the CLI runs it.

Prefect 3.9 sends a ``prefect.flow-run.heartbeat`` event when a flow run starts and then every
``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` seconds (180 by default, at least 30), so that an automation can mark a run
whose process died as crashed. Its thread sleeps in one-second steps and the engine joins it when the run ends, so
a flow run started in a process waits 0-1 s at its end, using no CPU: up to a fifth of a CI gate's wall time.

``fairgate audit`` runs the flow with Prefect's thread off (:func:`beating_here`, around the call) and the flow's
body sends the same events from a thread that stops at once when the body returns (:func:`heartbeat`). Runs a
worker starts, and subflows of the audit, keep Prefect's own heartbeat.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from typing import Any

# The heartbeat interval (seconds) Prefect's thread would have used, while the audit's body beats itself.
_EVERY: contextvars.ContextVar[int | None] = contextvars.ContextVar("fairgate_heartbeat_every", default=None)
_MINIMUM_SECONDS = 30  # Prefect's own floor (prefect.flow_engine.MINIMUM_HEARTBEAT_INTERVAL)


@contextlib.contextmanager
def beating_here() -> Iterator[None]:
    """Around a flow's call in this process: Prefect's heartbeat thread off, its interval kept for
    :func:`heartbeat` in the flow's body. Nothing changes when heartbeats are off."""
    from prefect.settings import get_current_settings

    every = get_current_settings().flows.heartbeat_frequency
    if every is None:
        yield
        return
    token = _EVERY.set(max(every, _MINIMUM_SECONDS))
    try:
        with _heartbeat_frequency(None):
            yield
    finally:
        _EVERY.reset(token)


@contextlib.contextmanager
def heartbeat() -> Iterator[None]:
    """In a flow's body: the flow run's heartbeat events when :func:`beating_here` turned Prefect's off (now and
    every interval until the body returns; subflows get Prefect's own again); otherwise nothing."""
    from prefect.context import FlowRunContext

    every, context = _EVERY.get(), FlowRunContext.get()
    if every is None or context is None or context.flow_run is None:
        yield
        return
    stop = threading.Event()
    beat = _heartbeat_event(context)
    token = _EVERY.set(None)
    thread = threading.Thread(target=contextvars.copy_context().run, args=(_beat, beat, every, stop), daemon=True)
    thread.start()
    try:
        with _heartbeat_frequency(every):  # for subflows' engines
            yield
    finally:
        _EVERY.reset(token)
        stop.set()  # the thread ends within its current send; nothing waits for it


@contextlib.contextmanager
def _heartbeat_frequency(seconds: int | None) -> Iterator[None]:
    """Prefect's current settings with another heartbeat interval (None: Prefect's thread off). As
    ``temporary_settings`` makes them, without validating every setting again (20 ms of CPU each time)."""
    from prefect.context import SettingsContext, get_settings_context

    context = get_settings_context()
    flows = context.settings.flows.model_copy(update={"heartbeat_frequency": seconds})
    with SettingsContext(profile=context.profile, settings=context.settings.model_copy(update={"flows": flows})):
        yield


def _beat(event: dict[str, Any], every: int, stop: threading.Event) -> None:
    from prefect.events import emit_event

    while not stop.is_set():
        with contextlib.suppress(Exception):  # as Prefect's: a missed heartbeat never fails the run
            emit_event(**event)
        stop.wait(every)


def _heartbeat_event(context: Any) -> dict[str, Any]:
    """The heartbeat Prefect's engine sends for the flow run of ``context`` (a FlowRunContext): its resource and
    related resources, as ``prefect.flow_engine`` builds them."""
    from prefect import __version__
    from prefect.events.related import tags_as_related_resources
    from prefect.events.schemas.events import RelatedResource

    run, flow = context.flow_run, context.flow
    resource = {
        "prefect.resource.id": f"prefect.flow-run.{run.id}",
        "prefect.resource.name": run.name or "",
        "prefect.version": __version__,
    }
    related = [
        RelatedResource.model_validate(
            {"prefect.resource.id": f"prefect.flow.{run.flow_id}", "prefect.resource.role": "flow"}
            | {"prefect.resource.name": flow.name if flow else ""}
        )
    ]
    if run.deployment_id:
        related.append(
            RelatedResource.model_validate(
                {
                    "prefect.resource.id": f"prefect.deployment.{run.deployment_id}",
                    "prefect.resource.role": "deployment",
                }
            )
        )
    related += tags_as_related_resources(set(run.tags or []))
    return {"event": "prefect.flow-run.heartbeat", "resource": resource, "related": related}
