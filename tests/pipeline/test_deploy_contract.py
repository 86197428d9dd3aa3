"""The registration event contract (tasks/outbound/registration.py) and the trail's ``registrations`` chain, without a
worker: what is accepted, what is rejected and why, and how the trigger's template hands the event over."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pipeline_helpers import POLICY_FAILING, InProcessRunner

from cli import app
from tasks.outbound.registration import (
    REGISTERED,
    Defaults,
    RegistrationRejected,
    check_registration,
    model_of,
    rejected_payload,
    rejected_resource,
)
from tasks.store import list_registrations, record_registration, verify


@pytest.fixture
def files(tmp_path: Path, compas_split: dict[str, Path]) -> dict[str, str]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY_FAILING)
    return {"policy": str(policy), **{role: str(path) for role, path in compas_split.items()}}


def _event(files: dict[str, str], **changes: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "id": "0190-event",
        "event": REGISTERED,
        "resource": {
            "prefect.resource.id": "model.credit.9",
            "prefect.resource.name": "credit",
            "fairgate.model.name": "credit",
            "fairgate.model.version": "9",
        },
        "payload": {"predictions": files["predictions"]},
    }
    event.update(changes)
    return event


def _defaults(files: dict[str, str]) -> Defaults:
    return Defaults(policy=files["policy"], labels=files["labels"], attributes=files["attributes"])


def _rejected(event: dict[str, Any], defaults: Defaults) -> str:
    with pytest.raises(RegistrationRejected) as caught:
        check_registration(event, defaults)
    return caught.value.message


def test_a_valid_event_takes_the_payload_and_fills_in_the_deployment_defaults(files: dict[str, str]) -> None:
    registry = {"kind": "mlflow", "tracking_uri": "http://127.0.0.1:5000", "name": "credit", "version": "9"}
    event = _event(files, payload={"predictions": files["predictions"], "registry": registry})
    registration = check_registration(event, _defaults(files))
    assert (registration.model_name, registration.model_version) == ("credit", "9")
    assert registration.sources == {role: files[role] for role in ("predictions", "labels", "attributes")}
    assert registration.policy == files["policy"]
    assert registration.registry == registry
    detail = json.loads(registration.detail("run42"))
    assert (detail["run_id"], detail["event_id"]) == ("run42", "0190-event")


def test_a_registry_triggered_audit_records_the_equivalent_audit_command(files: dict[str, str]) -> None:
    """What a reviewer types to reproduce the audit the registration started: ``fairgate audit`` with its inputs."""
    import shlex

    from flows.registration import _command

    registration = check_registration(_event(files), _defaults(files))
    words = shlex.split(_command(registration, "/reports", "/reports/trail.duckdb"))
    assert words[:2] == ["fairgate", "audit"]
    options = dict(zip(words[2::2], words[3::2], strict=True))
    assert options == {
        "--policy": files["policy"],
        "--predictions": files["predictions"],
        "--labels": files["labels"],
        "--attributes": files["attributes"],
        "--out": "/reports",
        "--trail": "/reports/trail.duckdb",
        "--model": "credit",
        "--model-version": "9",
    }


def test_the_payload_overrides_the_defaults(files: dict[str, str], tmp_path: Path) -> None:
    other_labels = tmp_path / "labels-v2.csv"
    other_labels.write_bytes(Path(files["labels"]).read_bytes())
    event = _event(files, payload={"predictions": files["predictions"], "labels": str(other_labels)})
    assert check_registration(event, _defaults(files)).sources["labels"] == str(other_labels)


def test_the_name_and_version_come_from_the_resource_id_when_only_the_name_label_is_given(
    files: dict[str, str],
) -> None:
    resource = {"prefect.resource.id": "model.fraud-v2.1.4.0", "prefect.resource.name": "fraud-v2"}
    registration = check_registration(_event(files, resource=resource), _defaults(files))
    assert (registration.model_name, registration.model_version) == ("fraud-v2", "1.4.0")


@pytest.mark.parametrize(
    ("resource", "fragment"),
    [
        ({"prefect.resource.id": "credit.9", "prefect.resource.name": "credit"}, "not of the form model.<name>"),
        ({"prefect.resource.id": "model.credit.9"}, "has no prefect.resource.name"),
        ({"prefect.resource.id": "model.credit.9", "name": "credit"}, "has no prefect.resource.name"),
        (
            {"prefect.resource.id": "model.credit.9", "prefect.resource.name": "credit", "fairgate.model.name": "x"},
            "disagree",
        ),
        (
            {"prefect.resource.id": "model.credit.9", "prefect.resource.name": "credit", "fairgate.model.version": "8"},
            "is not model.<name>.<version> for model 'credit' and version '8'",
        ),
        ({"prefect.resource.id": "model.credit.", "prefect.resource.name": "credit"}, "is not model.<name>.<version>"),
        ({"prefect.resource.id": "model.other.9", "prefect.resource.name": "credit"}, "for model 'credit'"),
    ],
)
def test_a_resource_that_does_not_name_the_model_version_is_rejected(
    files: dict[str, str], resource: dict[str, str], fragment: str
) -> None:
    assert fragment in _rejected(_event(files, resource=resource), _defaults(files))


def test_missing_or_unusable_sources_are_rejected_with_the_fix(files: dict[str, str], tmp_path: Path) -> None:
    defaults = _defaults(files)
    assert "payload.predictions is missing" in _rejected(_event(files, payload={}), defaults)
    assert "no payload object" in _rejected(_event(files, payload=None), defaults)
    no_labels = Defaults(policy=files["policy"], attributes=files["attributes"])
    message = _rejected(_event(files), no_labels)
    assert "payload.labels is missing" in message
    assert "fairgate deploy --labels" in message
    relative = _rejected(_event(files, payload={"predictions": "predictions.csv"}), defaults)
    assert "relative path" in relative
    assert "absolute path" in relative
    missing = str(tmp_path / "nope.parquet")
    assert "does not exist" in _rejected(_event(files, payload={"predictions": missing}), defaults)
    assert "non-empty text" in _rejected(_event(files, payload={"predictions": 7}), defaults)
    bad_policy = tmp_path / "bad.yaml"
    bad_policy.write_text("fairness_checker: {nonsense: 1}\n")
    event = _event(files, payload={"predictions": files["predictions"], "policy": str(bad_policy)})
    assert _rejected(event, defaults).startswith("payload.policy:")
    event = _event(files, payload={"predictions": files["predictions"], "registry": "mlflow"})
    assert "payload.registry must be an object" in _rejected(event, defaults)


def test_an_event_of_another_name_is_rejected(files: dict[str, str]) -> None:
    assert "not 'fairgate.model.registered'" in _rejected(_event(files, event="model.created"), _defaults(files))


def test_the_rejection_names_the_registration_resource_or_the_unknown_model(files: dict[str, str]) -> None:
    event = _event(files, payload={"labels": "x"})
    assert rejected_resource(event)["prefect.resource.id"] == "model.credit.9"
    assert rejected_resource({"resource": {}})["prefect.resource.id"] == "model.unknown.unknown"
    payload = rejected_payload(event, "why")
    assert payload == {"reason": "why", "event_id": "0190-event", "received": {"labels": "x"}}
    assert model_of(event) == ("credit", "9")
    assert model_of({"resource": {"prefect.resource.id": "model.x.1"}}) == ("unknown", "unknown")


def test_the_trigger_template_hands_over_the_whole_event_even_without_predictions(files: dict[str, str]) -> None:
    """The server renders the trigger's parameters as it does for the automation (v1 template upgrade, then
    hydration with the event in the Jinja context): ``{{ event }}`` becomes the event as an object, where
    ``{{ event.payload.predictions }}`` failed (InvalidJinja) and no run started."""
    from prefect.server.events.actions import RunDeployment
    from prefect.server.events.schemas.events import ReceivedEvent
    from prefect.types._datetime import now
    from prefect.utilities.schema_tools.hydration import HydrationContext, hydrate

    from flows.deployments import registration_trigger

    sent = _event(files, payload={"labels": "x"})
    event = ReceivedEvent(
        id=uuid.uuid4(), event=sent["event"], resource=sent["resource"], payload=sent["payload"], occurred=now("UTC")
    )
    parameters = dict(registration_trigger().parameters or {})
    RunDeployment._upgrade_v1_templates(parameters)
    rendered = hydrate(parameters, HydrationContext(render_jinja=True, jinja_context={"event": event}))
    assert rendered["event"]["payload"] == {"labels": "x"}
    assert rendered["event"]["resource"]["prefect.resource.name"] == "credit"
    assert rendered["event"]["event"] == REGISTERED


def test_registrations_are_hash_chained_and_an_edit_shows(tmp_path: Path) -> None:
    trail = tmp_path / "trail.duckdb"
    record_registration(trail, "credit", "9", "accepted", json.dumps({"event_id": "a", "run_id": "r1"}))
    record_registration(trail, "unknown", "unknown", "rejected", json.dumps({"reason": "no name"}))
    rows = list_registrations(trail)
    assert [(r["seq"], r["model_name"], r["status"]) for r in rows] == [
        (1, "credit", "accepted"),
        (2, "unknown", "rejected"),
    ]
    assert rows[1]["detail"] == {"reason": "no name"}
    report = verify(trail)
    assert (report["ok"], report["registrations"]) == (True, 2)
    with duckdb.connect(str(trail)) as con:
        con.execute("update registrations set status = 'accepted' where seq = 2")
    assert verify(trail)["problems"] == ["registrations: registration 2 was altered after recording"]
    with duckdb.connect(str(trail)) as con:
        con.execute("delete from registrations where seq = 1")
    assert any("chain breaks at registration 2" in p for p in verify(trail)["problems"])
    with pytest.raises(ValueError, match="not one of"):
        record_registration(trail, "credit", "9", "maybe", "{}")


def test_a_trail_whose_registrations_table_predates_the_status_column_is_read_and_extended(tmp_path: Path) -> None:
    trail = tmp_path / "old.duckdb"
    record_registration(trail, "credit", "1", "accepted", "{}")
    with duckdb.connect(str(trail)) as con:  # the table as trails before this change created it
        con.execute("drop table registrations")
        con.execute(
            "create table registrations (seq bigint primary key, registered_at varchar, model_name varchar, "
            "model_version varchar, detail varchar, prev_hash varchar not null, row_hash varchar not null)"
        )
    assert list_registrations(trail) == []
    assert verify(trail)["ok"]
    record_registration(trail, "credit", "2", "rejected", "{}")
    assert [r["model_version"] for r in list_registrations(trail)] == ["2"]
    assert verify(trail)["ok"]


def test_trail_registrations_lists_them_with_the_run_or_the_reason(tmp_path: Path, runner: InProcessRunner) -> None:
    trail = tmp_path / "trail.duckdb"
    record_registration(trail, "credit", "9", "accepted", json.dumps({"event_id": "a", "run_id": "run42"}))
    record_registration(trail, "unknown", "unknown", "rejected", json.dumps({"reason": "no model name"}))
    listed = runner.invoke(app, ["trail", "registrations", "--trail", str(trail), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [(r["model_name"], r["status"], r["detail"]) for r in rows] == [
        ("credit", "accepted", {"event_id": "a", "run_id": "run42"}),
        ("unknown", "rejected", {"reason": "no model name"}),
    ]
    table = runner.invoke(app, ["trail", "registrations", "--trail", str(trail)], env={"COLUMNS": "200"})
    assert "run42" in table.stdout
    assert "no model name" in table.stdout
    verified = runner.invoke(app, ["trail", "verify", "--trail", str(trail)], env={"COLUMNS": "200"})
    assert "0 runs, 0 deliveries, 2 registrations" in verified.stdout
