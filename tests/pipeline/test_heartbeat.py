"""The audit's flow-run heartbeat when the CLI runs it (flows/heartbeat.py): sent by the flow's body, the same
event Prefect sends, from a thread that stops when the body returns (Prefect's own is joined in one-second steps);
subflows and runs outside ``beating_here`` keep Prefect's own."""

from __future__ import annotations

import threading
import time
from typing import Any

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter
from prefect.settings import get_current_settings

from flows.heartbeat import _beat, beating_here, heartbeat

EVENT_WAIT_SECONDS = 60  # the server stores events in batches


def _heartbeats(flow_run_id: Any) -> list[Any]:
    """The heartbeat events of one flow run, once the server has stored at least one."""
    resource = f"prefect.flow-run.{flow_run_id}"
    event_filter = EventFilter(event=EventNameFilter(name=["prefect.flow-run.heartbeat"]))
    event_filter.resource = EventResourceFilter(id=[resource])
    deadline = time.monotonic() + EVENT_WAIT_SECONDS
    while True:
        with get_client(sync_client=True) as client:
            events = client.read_events(filter=event_filter, limit=50).events
        if events or time.monotonic() > deadline:
            return events
        time.sleep(0.5)


def _beat_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if getattr(t, "_target", None) is not None and _beat in t._args]  # type: ignore[attr-defined]


@flow(name="heartbeat-probe")
def _probe() -> dict[str, Any]:
    """Inside the run: Prefect's setting as its engine read it, and as the body (and its subflows) see it."""
    engine_saw = get_current_settings().flows.heartbeat_frequency
    with heartbeat():
        body_sees = get_current_settings().flows.heartbeat_frequency
        beating = len(_beat_threads())
    return {"engine": engine_saw, "body": body_sees, "beating": beating}


def test_the_cli_run_sends_its_heartbeat_from_the_body(prefect_server: str) -> None:
    every = get_current_settings().flows.heartbeat_frequency
    with beating_here():
        state = _probe(return_state=True)
    seen = state.result()
    assert seen == {"engine": None, "body": every, "beating": 1}  # Prefect's thread off; subflows get it back
    assert get_current_settings().flows.heartbeat_frequency == every  # restored after the call
    (event,) = _heartbeats(state.state_details.flow_run_id)
    assert event.resource["prefect.resource.name"] == _flow_run_name(state.state_details.flow_run_id)
    assert [r.role for r in event.related] == ["flow"]
    deadline = time.monotonic() + 5
    while _beat_threads() and time.monotonic() < deadline:  # stopped: ends within its current send
        time.sleep(0.05)
    assert not _beat_threads()


def test_outside_the_cli_prefects_own_heartbeat_stays(prefect_server: str) -> None:
    every = get_current_settings().flows.heartbeat_frequency
    state = _probe(return_state=True)
    assert state.result() == {"engine": every, "body": every, "beating": 0}
    assert len(_heartbeats(state.state_details.flow_run_id)) == 1  # Prefect's, at the run's start


def _flow_run_name(flow_run_id: Any) -> str:
    with get_client(sync_client=True) as client:
        return str(client.read_flow_run(flow_run_id).name)
