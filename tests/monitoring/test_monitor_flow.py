"""``fairgate monitor run`` through the ``fairness-monitor`` flow on the real test Prefect server: stable nights
raise no alert (no e-mail, no alert row); a step change in group C's TPR raises one (the event read back from the
server, the e-mail received by a real SMTP server, the ``drift_alerts`` row); the trail verifies; ``monitor
show`` prints the series; late labels rebuild a period; a bad monitoring policy exits 2 with nothing written."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import duckdb
import pytest
from prefect.client.orchestration import get_client
from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

from cli import app
from tasks.store import verify

EVENT_WAIT_SECONDS = 60  # the server persists events in batches
SHIFT_FROM = 4  # nights 1-3 stable, group C's TPR drops by SHIFT from night 4
SHIFT = 0.45
ROWS = 2_000


def _delivery(port: int) -> str:
    return (
        "  delivery:\n"
        "    recipients: [risk@example.org]\n"
        f"    smtp: {{host: 127.0.0.1, port: {port}, security: none}}\n"
        "    retries: 0\n"
        "    attach: [html]\n"
    )


def _read_events(run_id: str) -> list[Any]:
    event_filter = EventFilter(
        event=EventNameFilter(name=["fairgate.drift.detected"]), resource=EventResourceFilter(id=["model.bench.1"])
    )
    deadline = time.monotonic() + EVENT_WAIT_SECONDS
    while True:
        with get_client(sync_client=True) as client:
            page = client.read_events(filter=event_filter, limit=50)
        found = [e for e in page.events if e.payload.get("run_id") == run_id]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def _run(runner: Any, folder: Path, files: dict[str, str], *extra: str) -> Any:
    args = ["monitor", "run", "--policy", str(folder / "policy.yaml"), "--model-name", "bench"]
    args += ["--model-version", "1", "--out", str(folder / "out"), "--trail", str(folder / "trail.duckdb"), "--quiet"]
    args += ["--predictions", files["predictions"], "--labels", files["labels"], "--attributes", files["attributes"]]
    return runner.invoke(app, [*args, *extra])


@pytest.fixture(scope="module")
def monitored(
    tmp_path_factory: pytest.TempPathFactory, nights: ModuleType, runner: Any, smtp_server: Any, prefect_server: str
) -> dict[str, Any]:
    """Five nights of one model: three stable, then two with group C's TPR lowered; each run's exit code,
    document and the e-mails received after it."""
    inbox, port = smtp_server
    folder = tmp_path_factory.mktemp("monitored")
    text = nights.policy_text(100, _delivery(port)).replace("format: [json]", "format: [json, html]")
    (folder / "policy.yaml").write_text(text)
    nights.record_deployment_audit(folder / "policy.yaml", folder / "trail.duckdb", 40_000, 3, "bench")
    runs = []
    for night in range(1, SHIFT_FROM + 2):
        day = nights.START + timedelta(days=night - 1)
        people = nights.night_people(11, night, ROWS, SHIFT, SHIFT_FROM)
        files = nights.write_inputs(people, folder / "nights" / day.isoformat(), day, night * 100_000)
        result = _run(runner, folder, files)
        (path,) = (folder / "out").glob(f"monitoring_*_{day.isoformat()}.json")
        runs.append({"result": result, "document": json.loads(path.read_text()), "mails": len(inbox.messages)})
    return {"folder": folder, "runs": runs, "inbox": inbox}


def test_stable_nights_raise_no_alert(monitored: dict[str, Any]) -> None:
    for run in monitored["runs"][: SHIFT_FROM - 1]:
        assert run["result"].exit_code == 0, run["result"].output
        assert run["document"]["alerts"] == []
        assert run["mails"] == 0  # no alert, no e-mail
    document = monitored["runs"][SHIFT_FROM - 2]["document"]
    assert document["detector"]["streams"], "the detector watched streams"
    assert all(max(s["statistic"]) < s["threshold"] for s in document["detector"]["streams"])
    windows = {w["window"]: w for w in document["windows"]}
    assert windows["7"]["periods"] == SHIFT_FROM - 1
    assert windows["7"]["rows"] == (SHIFT_FROM - 1) * ROWS
    assert windows["since_deployment"]["rows"] == (SHIFT_FROM - 1) * ROWS


def test_a_step_change_raises_an_alert_event_email_and_trail_row(monitored: dict[str, Any]) -> None:
    run = monitored["runs"][SHIFT_FROM - 1]
    assert run["result"].exit_code == 1, run["result"].output  # an alert tonight
    alerts = run["document"]["alerts"]
    assert alerts
    assert {a["metric"] for a in alerts} == {"equal_opportunity_difference"}
    assert any(a["group"] == "C" and a["change"] < 0 for a in alerts)
    # The e-mail, through the policy's delivery to the real SMTP server.
    assert run["mails"] == 1
    message = monitored["inbox"].messages[0]
    assert message["Subject"].startswith("[fairgate] DRIFT: bench 1")
    body = message.get_body(preferencelist=("plain",)).get_content()
    assert "equal_opportunity_difference" in body
    assert "group C" in body
    (attached,) = [part.get_filename() for part in message.iter_attachments()]
    night = run["document"]["night"]
    assert attached.startswith("monitoring_bench_1_")
    assert attached.endswith(f"_{night}.html")
    assert (monitored["folder"] / "out" / attached).exists()  # the report beside the JSON
    # The event, read back from the server.
    events = _read_events(run["document"]["run_id"])
    assert len(events) == len(alerts)
    payload = events[0].payload
    assert payload["model_name"] == "bench"
    assert payload["metric"] == "equal_opportunity_difference"
    assert payload["night"] == run["document"]["night"]
    assert payload["statistic"] >= payload["threshold"]
    assert events[0].resource["fairgate.slicing"] == "race"
    # The trail rows: the alert and the delivery, and every chain intact.
    trail = monitored["folder"] / "trail.duckdb"
    con = duckdb.connect(str(trail), read_only=True)
    rows = con.execute("select night, metric, grp from drift_alerts where run_id = ?", [run["document"]["run_id"]])
    assert {(r[0], r[1], r[2]) for r in rows.fetchall()} == {(a["night"], a["metric"], a["group"]) for a in alerts}
    sent = con.execute("select status from deliveries where run_id = ?", [run["document"]["run_id"]]).fetchall()
    con.close()
    assert sent == [("sent",)]
    report = verify(trail)
    assert report["ok"], report["problems"]
    assert report["monitor_nights"] == SHIFT_FROM + 1
    assert report["period_cubes"] == SHIFT_FROM + 1


def test_the_open_episode_is_shown_the_next_night_without_a_second_alert(monitored: dict[str, Any]) -> None:
    alerted, after = monitored["runs"][SHIFT_FROM - 1], monitored["runs"][SHIFT_FROM]
    assert after["document"]["alerts"] == []  # one alert per episode: no second e-mail ...
    assert after["mails"] == alerted["mails"] == 1
    episodes = after["document"]["episodes"]  # ... but the episode is still open, and named
    assert any(e["group"] == "C" and e["since"] == alerted["document"]["night"] for e in episodes)
    head = after["document"]["headline"]
    assert head["drift"] == "no_new_alert"
    assert f"(C, true positive rate down) since {alerted['document']['night']}" in head["text"]
    assert head["badge"] != "PASS"
    assert after["result"].exit_code == after["document"]["exit_code"] == 1  # the 7-day window fails the policy


def test_monitor_show_prints_the_series_with_the_alert(monitored: dict[str, Any], runner: Any) -> None:
    trail = monitored["folder"] / "trail.duckdb"
    args = ["monitor", "show", "--model", "bench", "--trail", str(trail), "--window", "7"]
    result = runner.invoke(app, [*args, "--metric", "equal_opportunity_difference"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "equal_opportunity_difference on race, window 7" in out
    night = monitored["runs"][SHIFT_FROM - 1]["document"]["night"]
    assert night in out
    assert "ALERT C" in out
    assert "demographic_parity_difference" not in out
    first = monitored["runs"][0]["document"]["windows"][0]["results"][0]
    assert f"{first['value']:.3f}" in out
    missing = runner.invoke(app, ["monitor", "show", "--model", "other", "--trail", str(trail)])
    assert missing.exit_code == 2
    assert "no monitored night of model 'other'" in missing.output


def test_late_labels_rebuild_a_period(tmp_path: Path, nights: ModuleType, runner: Any, prefect_server: str) -> None:
    (tmp_path / "policy.yaml").write_text(nights.policy_text(50))
    nights.record_deployment_audit(tmp_path / "policy.yaml", tmp_path / "trail.duckdb", 20_000, 5, "bench")
    day = nights.START
    people = nights.night_people(2, 1, 1_000, 0.0, None)
    files = nights.write_inputs(people, tmp_path / "full", day, 1)
    early = dict(files)  # the night's labels arrive late: at first only 400 of the 1000 are known
    early["labels"] = str(tmp_path / "labels_early.parquet")
    import polars as pl

    pl.read_parquet(files["labels"]).head(400).write_parquet(early["labels"])
    assert _run(runner, tmp_path, early).exit_code == 0
    assert _run(runner, tmp_path, files).exit_code == 0  # the same night, with all its labels
    documents = sorted(
        (json.loads(p.read_text()) for p in (tmp_path / "out").glob("monitoring_*.json")), key=lambda d: d["created_at"]
    )
    assert [d["stored"][0]["labelled_rows"] for d in documents] == [400, 1000]
    assert [(d["stored"][0]["version"], d["stored"][0]["supersedes"]) for d in documents] == [(1, None), (2, 1)]
    assert {w["window"]: w["rows"] for w in documents[1]["windows"]}["since_deployment"] == 1000
    report = verify(tmp_path / "trail.duckdb")
    assert report["ok"], report["problems"]
    nights_before = verify(tmp_path / "trail.duckdb")["monitor_nights"]
    assert _run(runner, tmp_path, files).exit_code == 0  # again: the same cube is not stored a third time
    assert verify(tmp_path / "trail.duckdb")["period_cubes"] == 2
    assert verify(tmp_path / "trail.duckdb")["monitor_nights"] == nights_before  # nor the same night's row


def test_a_bad_monitoring_policy_exits_2_with_nothing_written(tmp_path: Path, nights: ModuleType, runner: Any) -> None:
    text = nights.policy_text(50).replace("metric: equal_opportunity_difference", "metric: false_positive_rate_gap")
    (tmp_path / "policy.yaml").write_text(text)
    files = nights.write_inputs(nights.night_people(1, 1, 200, 0.0, None), tmp_path / "in", nights.START, 1)
    result = _run(runner, tmp_path, files)
    assert result.exit_code == 2
    assert "monitoring.alerts[0] watches metric 'false_positive_rate_gap', which is not in metrics" in " ".join(
        result.output.split()
    )
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "trail.duckdb").exists()
    (tmp_path / "policy.yaml").write_text(text.split("  monitoring:")[0])
    result = _run(runner, tmp_path, files)
    assert result.exit_code == 2
    assert "has no monitoring: section" in " ".join(result.output.split())


def test_what_the_night_cannot_do_without_is_refused_before_any_work(
    tmp_path: Path, nights: ModuleType, runner: Any
) -> None:
    import polars as pl

    (tmp_path / "policy.yaml").write_text(nights.policy_text(50))
    files = nights.write_inputs(nights.night_people(1, 1, 200, 0.0, None), tmp_path / "in", nights.START, 1)
    no_audit = _run(runner, tmp_path, files)  # no deployment audit recorded to compare with
    assert no_audit.exit_code == 2
    assert "so no deployment audit to compare with; run `fairgate audit`" in " ".join(no_audit.output.split())
    args = ["monitor", "run", "--policy", str(tmp_path / "policy.yaml"), "--model-name", "bench", "--quiet"]
    args += ["--trail", str(tmp_path / "trail.duckdb"), "--out", str(tmp_path / "out")]
    late = runner.invoke(app, [*args, "--predictions", files["predictions"], "--attributes", files["attributes"]])
    assert late.exit_code == 2  # without labels the deployment audit is needed all the more: it calibrates
    assert "a labelled audit is also the reference the estimates of nights without labels" in " ".join(
        late.output.split()
    )
    untimed = dict(files, predictions=str(tmp_path / "untimed.parquet"))
    pl.read_parquet(files["predictions"]).drop("timestamp").write_parquet(untimed["predictions"])
    result = _run(runner, tmp_path, untimed)
    assert result.exit_code == 2
    assert "has no timestamp column 'timestamp' (monitoring.timestamp)" in " ".join(result.output.split())
    assert "pass --night DATE" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "trail.duckdb").exists()


@pytest.mark.parametrize(("gate", "code"), [("", 4), ("  ci_cd_gate: {insufficient: allow}\n", 0)])
def test_a_night_whose_windows_judge_nothing_exits_as_an_insufficient_audit(
    tmp_path: Path, nights: ModuleType, runner: Any, prefect_server: str, gate: str, code: int
) -> None:
    # 25 people: every group below min_group_size (30) in every window, so no window judges anything; the exit
    # code is the one an audit with the verdict "insufficient" gives under the policy (fairgate.verdicts)
    (tmp_path / "policy.yaml").write_text(nights.policy_text(50, gate))
    nights.record_deployment_audit(tmp_path / "policy.yaml", tmp_path / "trail.duckdb", 2_000, 5, "bench")
    files = nights.write_inputs(nights.night_people(3, 1, 25, 0.0, None), tmp_path / "tiny", nights.START, 1)
    result = _run(runner, tmp_path, files)
    assert result.exit_code == code, result.output
    (path,) = (tmp_path / "out").glob("monitoring_*.json")
    document = json.loads(path.read_text())
    assert {w["verdict"] for w in document["windows"]} == {"insufficient"}
    assert document["headline"]["windows"] == "insufficient"
    assert document["headline"]["drift"] == "no_new_alert"
    assert document["exit_code"] == code
    assert _run(runner, tmp_path, files, "--exit-on", "alerts").exit_code == 0  # alerts only
