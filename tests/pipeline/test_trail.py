"""The audit trail: hash chain catches edits and deletions; concurrent audits both recorded; crashes roll back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from pipeline_helpers import InProcessRunner, Inputs

from cli import app
from tasks.store import list_runs, record_delivery, record_run, verify
from tasks.store import runs as store_runs


def _document(run_id: str, verdict: str = "fail") -> dict:
    return {
        "run_id": run_id,
        "verdict": verdict,
        "model": {"name": "m", "version": "1"},
        "n_rows": 10,
        "created_at": "2026-01-01T00:00:00+00:00",
        "fairgate_version": "0.1.0",
        "policy_sha256": "ab" * 32,
        "results": [
            {
                "metric": "disparate_impact_ratio",
                "slicing": ["sex"],
                "value": 0.7,
                "ci_low": 0.6,
                "ci_high": 0.8,
                "threshold": 0.8,
                "direction": "higher_is_better",
                "status": verdict,
                "uncertain": False,
                "critical": False,
            },
            {
                "metric": "disparate_impact_ratio",
                "slicing": ["race"],
                "value": None,
                "ci_low": None,
                "ci_high": None,
                "threshold": 0.8,
                "direction": "higher_is_better",
                "status": "insufficient_data",
                "uncertain": False,
                "critical": False,
            },
        ],
    }


def _record(path: Path, run_id: str) -> dict:
    return record_run.fn(
        path,
        _document(run_id),
        policy_text="fairness_checker: {}",
        inputs={"labels": {"sha256": "00"}},
        validation={"success": True},
        join_report={"matched": 10},
        cube_cells=[{"sex": "F", "y_true": 1, "y_pred": 1, "rows": 4}],
    )


@pytest.fixture
def trail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY", raising=False)  # these tests are about the unkeyed chain
    path = tmp_path / "trail.duckdb"
    for run_id in ("r1", "r2", "r3"):
        _record(path, run_id)
    record_delivery(path, "r2", ["a@example.org"], "sent", "smtp ok")
    record_delivery(path, "r3", ["a@example.org"], "sent", "smtp ok")
    return path


def _tamper(path: Path, statement: str) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute(statement)


def _verify_cli(runner: InProcessRunner, path: Path) -> tuple[int, str]:
    result = runner.invoke(app, ["trail", "verify", "--trail", str(path)])
    return result.exit_code, " ".join((result.stdout + result.stderr).split())


def test_intact_trail_verifies(runner: InProcessRunner, trail: Path) -> None:
    code, output = _verify_cli(runner, trail)
    assert code == 0
    assert "intact: 3 runs, 2 deliveries" in output
    assert [r["seq"] for r in list_runs(trail)] == [1, 2, 3]


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("update metric_results set value = 0.95 where run_id = 'r2' and position = 0", "run 2 (r2) was altered"),
        ("update runs set verdict = 'pass' where run_id = 'r1'", "run 1 (r1) was altered"),
        ("update cubes set cells = '[]' where run_id = 'r3'", "run 3 (r3) was altered"),
        ("delete from runs where run_id = 'r2'", "seq 2 is missing"),
        ("delete from metric_results where run_id = 'r1' and position = 1", "run 1 (r1) was altered"),
        ("update deliveries set status = 'failed' where seq = 1", "delivery 1 was altered"),
        ("delete from deliveries where seq = 1", "the chain breaks at delivery 2"),
    ],
    ids=["edit-metric", "edit-run", "edit-cube", "delete-run", "delete-metric", "edit-delivery", "delete-delivery"],
)
def test_verify_detects_edited_and_deleted_rows(
    runner: InProcessRunner, trail: Path, statement: str, expected: str
) -> None:
    _tamper(trail, statement)
    code, output = _verify_cli(runner, trail)
    assert code == 1
    assert "TAMPERED" in output, output
    assert expected in output, output


def test_deleted_run_and_rechained_successor_is_still_caught(trail: Path) -> None:
    """Deleting run 2 and renumbering run 3 to seq 2 still breaks the chain (run 3 names run 2's hash)."""
    _tamper(trail, "delete from runs where run_id = 'r2'")
    _tamper(trail, "update runs set seq = 2 where run_id = 'r3'")
    report = verify(trail)
    assert not report["ok"]
    assert any("does not follow the previous run" in p for p in report["problems"])


def test_a_run_that_fails_mid_write_leaves_nothing(trail: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after the run row is inserted (here: the metric insert breaks): the transaction rolls back."""
    before = list_runs(trail)
    broken = [*store_runs.METRIC_COLUMNS[:-1], "no_such_column"]
    monkeypatch.setattr(store_runs, "METRIC_COLUMNS", broken)
    with pytest.raises(duckdb.Error):
        _record(trail, "r4")
    monkeypatch.undo()
    assert list_runs(trail) == before
    assert verify(trail)["ok"]
    assert _record(trail, "r5")["seq"] == 4  # and the next run continues the chain


@pytest.mark.slow
def test_two_concurrent_audits_are_both_recorded(inputs: Inputs, tmp_path: Path) -> None:
    """Two `fairgate audit` processes started together on one trail: both runs recorded, chain intact."""
    shared_trail = tmp_path / "shared" / "trail.duckdb"
    processes = []
    for name in ("a", "b"):
        out = tmp_path / f"out_{name}"
        args = inputs.args("--quiet", "--trail", str(shared_trail))
        args[args.index("--out") + 1] = str(out)
        args[args.index("--model") + 1] = f"model_{name}"
        processes.append(
            subprocess.Popen(
                [str(Path(sys.executable).parent / "fairgate"), *args],
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outcomes = [p.communicate(timeout=900) for p in processes]
    assert [p.returncode for p in processes] == [1, 1], [o[1][-2000:] for o in outcomes]
    runs = list_runs(shared_trail)
    assert sorted(r["model_name"] for r in runs) == ["model_a", "model_b"]
    assert verify(shared_trail)["ok"]
    for name in ("a", "b"):
        (document,) = (tmp_path / f"out_{name}").glob("*.json")
        assert json.loads(document.read_text())["run_id"] in {r["run_id"] for r in runs}


def test_missing_trail_is_a_clear_error(runner: InProcessRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["trail", "list", "--trail", str(tmp_path / "none.duckdb")])
    assert result.exit_code == 2
    assert "no audit trail" in result.stderr
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_verify_json_names_the_chain_and_the_head(runner: InProcessRunner, trail: Path) -> None:
    result = runner.invoke(app, ["trail", "verify", "--trail", str(trail), "--json"], env={"FAIRGATE_TRAIL_KEY": ""})
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["chain"], report["keyed"], report["head_seq"]) == ("sha256 (unkeyed)", False, 3)
    assert report["head"] == list_runs(trail)[-1]["run_hash"]
    assert "unkeyed (sha256)" in " ".join(result.stderr.split())  # the warning stays off stdout


def test_trail_list_piped_into_a_log_keeps_full_run_ids_on_one_line(tmp_path: Path) -> None:
    """Piped (a CI log), a table is printed at its natural width whatever COLUMNS says: no id cut, no row wrapped."""
    path = tmp_path / "trail.duckdb"
    run_id = "a-long-run-id-that-trail-show-and-compare-need-whole-0123456789"
    _record(path, run_id)
    env = {**{k: v for k, v in os.environ.items() if k != "FAIRGATE_TRAIL_KEY"}, "COLUMNS": "40"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "fairgate"), "trail", "list", "--trail", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (row,) = [line for line in done.stdout.splitlines() if run_id in line]
    assert "fail" in row
    assert "10" in row


def test_the_estimated_run_is_the_newest_label_free_audit_of_the_same_predictions(tmp_path: Path) -> None:
    """A labelled audit's earlier estimates: the newest audit of the model without labels on the same predictions
    that kept estimates; labelled runs, other predictions, other models and runs beyond the look-back are passed
    over, and a trail without any gives None (its documents then are not read at all)."""
    from tasks.store import append_audit_run
    from tasks.store.history import last_estimated_document

    trail = tmp_path / "trail.duckdb"

    def add(run_id: str, sha: str, label_rows: int, label_free: object, model: str = "m") -> None:
        document = _document(run_id) | {"model": {"name": model, "version": "1"}, "label_free": label_free}
        inputs = {"predictions": {"sha256": sha}, "labels": {"rows": label_rows}}
        append_audit_run(trail, document, policy_text="", inputs=inputs, validation={}, join_report={}, cube_cells=[])

    assert last_estimated_document(trail, "m", "s1") is None  # no trail yet
    add("old", "s1", 0, {"estimated_results": "judge"})
    add("newer", "s1", 0, {"estimated_results": "report"})
    add("labelled", "s1", 100, {"estimated_results": "judge"})  # had labels: not an estimate
    add("other-predictions", "s2", 0, {"estimated_results": "judge"})
    add("no-estimates", "s1", 0, None)  # without labels but kept no estimates
    add("other-model", "s1", 0, {"estimated_results": "judge"}, model="n")
    assert (last_estimated_document(trail, "m", "s1") or {}).get("run_id") == "newer"
    assert last_estimated_document(trail, "m", "s3") is None
    assert last_estimated_document(trail, "m", "s1", look_back=3) is None  # "newer" is the 4th newest run of m
    assert (last_estimated_document(trail, "m", "s1", look_back=4) or {}).get("run_id") == "newer"
