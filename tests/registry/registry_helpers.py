"""Helpers for the registry tests: model versions on the test MLflow server, events read back from Prefect."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
COMPAS_CSV = REPO / ".." / "shared" / "data" / "compas" / "compas-scores-two-years.csv"


def new_version(registry: Any, name: str, tags: dict[str, str] | None = None) -> str:
    """A model version pointing at a fresh run (the registry's metadata is all fairgate reads); its number."""
    from mlflow.exceptions import MlflowException

    with contextlib.suppress(MlflowException):  # already there from an earlier version
        registry.create_registered_model(name)
    run = registry.create_run(experiment_id="0")
    registry.set_terminated(run.info.run_id)
    version = registry.create_model_version(
        name, source=f"runs:/{run.info.run_id}/model", run_id=run.info.run_id, tags=tags or {}
    )
    return str(version.version)


def registered_events(
    resource_id: str, *, expect: int, timeout_s: float = 30.0, name: str = "fairgate.model.registered"
) -> list[Any]:
    """The ``name`` events (registrations by default) of one resource, read from the Prefect API; polled until
    ``expect`` are there (events are stored asynchronously), then read once more after a pause so that a
    duplicate arriving late would be counted too."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

    event_filter = EventFilter(event=EventNameFilter(name=[name]), resource=EventResourceFilter(id=[resource_id]))
    deadline = time.monotonic() + timeout_s
    with get_client(sync_client=True) as client:
        while True:
            events = client.read_events(filter=event_filter, limit=50).events
            if len(events) >= expect or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        time.sleep(2)
        return list(client.read_events(filter=event_filter, limit=50).events)
