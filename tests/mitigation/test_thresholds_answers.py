"""``fairgate mitigate --method thresholds --answers RUN``: the answered audit is the "before" (read from the
trail, not audited again), the default tolerance (0) gets the re-audit judged, and the run is recorded in the
trail's ``mitigations`` table pointing to the audit it answers. Other inputs or another policy are refused."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from mitigation_helpers import InProcessRunner

from cli import DEMO_DATA, DEMO_POLICY, app
from tasks.inputs.io import write_demo_inputs
from tasks.store import list_mitigations, list_runs


@pytest.fixture(autouse=True)
def _flows_use_the_session_server(prefect_server: str) -> None:
    """The mitigation flows run on the one test server."""


@pytest.fixture(scope="module")
def answered(runner: InProcessRunner, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The demo inputs audited once (200 replicates, JSON only): the run a mitigation answers."""
    folder = tmp_path_factory.mktemp("answers")
    files = write_demo_inputs(DEMO_DATA, folder)
    policy = yaml.safe_load(DEMO_POLICY.read_text())
    policy["fairness_checker"]["statistics"]["n_bootstrap"] = 200
    policy["fairness_checker"]["reporting"]["format"] = ["json"]
    files["policy"] = folder / "policy.yaml"
    files["policy"].write_text(yaml.safe_dump(policy))
    files["out"] = folder / "out"
    args = ["audit", "--policy", str(files["policy"]), "--out", str(files["out"]), "--quiet"]
    args += [arg for role in ("predictions", "labels", "attributes") for arg in (f"--{role}", str(files[role]))]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.stderr
    (run,) = list_runs(files["out"] / "audit_trail.duckdb")
    return {"files": files, "run": run}


def _mitigate(answered: dict, *extra: str) -> list[str]:
    files = answered["files"]
    args = ["mitigate", "--method", "thresholds", "--policy", str(files["policy"]), "--out", str(files["out"])]
    args += [arg for role in ("predictions", "labels", "attributes") for arg in (f"--{role}", str(files[role]))]
    return [*args, *extra]


def test_the_answered_audit_is_the_before_and_the_default_tolerance_is_judged(
    runner: InProcessRunner, answered: dict
) -> None:
    run_id = answered["run"]["run_id"]
    trail = answered["files"]["out"] / "audit_trail.duckdb"
    result = runner.invoke(app, [*_mitigate(answered, "--answers", run_id, "--json")])
    assert result.exit_code in (0, 1), result.stderr
    summary = json.loads(result.stdout)
    assert summary["tolerance"] == 0.0  # the default: exact equality (tasks/mitigation/thresholds.py says why)
    before, after = summary["audits"]["before"], summary["audits"]["after"]
    assert before["run_id"] == run_id
    assert before["reused"] is True
    assert before["verdict"] == "fail"
    # One new audit (the mitigated predictions), not two: the answered one is not audited again.
    runs = list_runs(trail)
    assert [r["run_id"] for r in runs] == [run_id, after["run_id"]]
    document = json.loads(Path(after["outputs"]["json"]).read_text())
    (race,) = [
        r for r in document["results"] if r["metric"] == "equal_opportunity_difference" and r["slicing"] == ["race"]
    ]
    assert race["status"] == "pass"  # judged: not inconclusive, as a tolerance at the threshold left it
    assert race["ci_high"] < race["threshold"]
    (row,) = list_mitigations(trail)
    assert row["answers"] == run_id
    assert row["mitigation_id"] == summary["run_id"]
    assert (row["verdict_before"], row["verdict_after"]) == ("fail", after["verdict"])
    assert set(row["outputs"]) == set(summary["outputs"])


def test_answers_naming_an_audit_of_other_inputs_is_refused(
    runner: InProcessRunner, answered: dict, tmp_path: Path
) -> None:
    files = answered["files"]
    other = tmp_path / "other_predictions.parquet"
    frame = pl.read_parquet(files["predictions"])
    frame.with_columns(pl.col("score").reverse()).write_parquet(other)
    runs_before = list_runs(files["out"] / "audit_trail.duckdb")
    args = _mitigate(answered, "--answers", answered["run"]["run_id"])
    args[args.index(str(files["predictions"]))] = str(other)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.stderr
    message = " ".join(result.stderr.split())
    assert "that audit judged other predictions" in message
    assert "Traceback" not in result.stderr + result.stdout
    assert list_runs(files["out"] / "audit_trail.duckdb") == runs_before
