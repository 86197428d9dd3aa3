"""The registry watch against a real MLflow server and a real Prefect server: one event per new version, read
back from the Prefect API; skipped versions tagged with the reason; never twice, even after a crash between
sending the event and tagging the version."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from registry_helpers import new_version, registered_events

from flows.registry_watch import registry_watch
from tasks.outbound.registry import EVENT_ID_TAG, STATUS_TAG


def _watch(uri: str, name: str) -> dict[str, Any]:
    state = registry_watch(tracking_uri=uri, models=[name], return_state=True)
    assert state.is_completed(), state.message
    return state.result()


def _tags(registry: Any, name: str, version: str) -> dict[str, str]:
    return dict(registry.get_model_version(name, version).tags)


def test_a_new_version_is_registered_once(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str, compas_inputs: dict[str, Path]
) -> None:
    sources = {f"fairgate.{role}": str(path) for role, path in compas_inputs.items()}
    version = new_version(registry, model_name, {**sources, "fairgate.policy": "policies/credit.yaml"})

    first = _watch(mlflow_server, model_name)
    assert [(r["name"], r["version"]) for r in first["registered"]] == [(model_name, version)]
    second = _watch(mlflow_server, model_name)
    assert second == {"registered": [], "skipped": []}

    events = registered_events(f"model.{model_name}.{version}", expect=1)
    assert len(events) == 1
    event = events[0]
    assert str(event.id) == first["registered"][0]["event_id"]
    assert event.resource.root == {
        "prefect.resource.id": f"model.{model_name}.{version}",
        "prefect.resource.name": model_name,
        "fairgate.model.name": model_name,
        "fairgate.model.version": version,
    }
    assert event.payload == {
        "predictions": str(compas_inputs["predictions"]),
        "labels": str(compas_inputs["labels"]),
        "attributes": str(compas_inputs["attributes"]),
        "policy": "policies/credit.yaml",
        "registry": {"kind": "mlflow", "tracking_uri": mlflow_server, "name": model_name, "version": version},
    }
    tags = _tags(registry, model_name, version)
    assert tags[EVENT_ID_TAG] == str(event.id)
    assert tags[STATUS_TAG] == "registered"


def test_a_crash_after_the_event_does_not_send_it_twice(
    prefect_server: str,
    mlflow_server: str,
    registry: Any,
    model_name: str,
    compas_inputs: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A watch that died after emitting but before tagging (simulated: the tag removed) finds the event stored
    under the version's id, sends nothing and tags the version; were it sent again, the server keeps one."""
    import prefect.events

    sent: list[Any] = []
    emit = prefect.events.emit_event
    monkeypatch.setattr(prefect.events, "emit_event", lambda **kw: sent.append(kw) or emit(**kw))
    version = new_version(registry, model_name, {"fairgate.predictions": str(compas_inputs["predictions"])})
    first = _watch(mlflow_server, model_name)["registered"]
    assert len(sent) == 1
    registry.delete_model_version_tag(model_name, version, EVENT_ID_TAG)

    sent.clear()
    again = _watch(mlflow_server, model_name)["registered"]
    assert again == first  # confirmed under the same id
    assert sent == []
    assert _tags(registry, model_name, version)[EVENT_ID_TAG] == first[0]["event_id"]

    resource = f"model.{model_name}.{version}"
    same_id = uuid.UUID(again[0]["event_id"])
    emit(event="fairgate.model.registered", resource={"prefect.resource.id": resource}, id=same_id)
    assert len(registered_events(resource, expect=2, timeout_s=8)) == 1


def test_sources_may_come_from_the_run_and_predictions_are_required(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str, compas_inputs: dict[str, Path]
) -> None:
    untagged = new_version(registry, model_name)
    from_run = new_version(registry, model_name)
    run_id = registry.get_model_version(model_name, from_run).run_id
    registry.set_tag(run_id, "fairgate.predictions", str(compas_inputs["predictions"]))  # set while training

    result = _watch(mlflow_server, model_name)
    assert [r["version"] for r in result["registered"]] == [from_run]
    assert [s["version"] for s in result["skipped"]] == [untagged]
    status = _tags(registry, model_name, untagged)[STATUS_TAG]
    assert status.startswith("skipped: no fairgate.predictions tag on the version or its run")
    assert EVENT_ID_TAG not in _tags(registry, model_name, untagged)
    assert registered_events(f"model.{model_name}.{untagged}", expect=1, timeout_s=3) == []

    # Adding the missing tag is enough: the next watch registers the skipped version.
    registry.set_model_version_tag(model_name, untagged, "fairgate.predictions", str(compas_inputs["predictions"]))
    later = _watch(mlflow_server, model_name)
    assert [r["version"] for r in later["registered"]] == [untagged]
    assert _tags(registry, model_name, untagged)[STATUS_TAG] == "registered"
    assert len(registered_events(f"model.{model_name}.{untagged}", expect=1)) == 1


def test_versions_older_than_since_are_left_alone(
    prefect_server: str, mlflow_server: str, registry: Any, model_name: str
) -> None:
    old = new_version(registry, model_name)  # untagged: would be tagged skipped
    created = datetime.fromtimestamp(registry.get_model_version(model_name, old).creation_timestamp / 1000, UTC)

    later = created + timedelta(seconds=1)
    state = registry_watch(tracking_uri=mlflow_server, models=[model_name], since=later, return_state=True)
    assert state.result() == {"registered": [], "skipped": []}
    assert STATUS_TAG not in _tags(registry, model_name, old)

    naive_utc = (created - timedelta(seconds=1)).replace(tzinfo=None)  # naive means UTC
    state = registry_watch(tracking_uri=mlflow_server, models=[model_name], since=naive_utc, return_state=True)
    assert [s["version"] for s in state.result()["skipped"]] == [old]


def test_no_tracking_uri_is_a_clear_failure(prefect_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    state = registry_watch(return_state=True)
    assert state.is_failed()
    assert state.name == "InvalidInput"
    assert "MLFLOW_TRACKING_URI" in str(state.message)
