"""``fairgate plan``: the rows an audit needs for its gate to fail on a disparity, and what an audit could detect.

The plan is found by simulated audits judged by the engine itself (cube counts drawn per cell); it is checked here
by an independent simulation of rows through ``fairgate.audit``: at the planned row count the gate fails in 75-90%
of audits (enough, and not wildly too many), for equal opportunity at 0.10 and 0.05 on COMPAS's race shares.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from bench_scripts import load_bench
from typer.testing import CliRunner

import fairgate
from cli import app
from fairgate.engine.sample_size import Scenario, default_target, observed_shares, plan_rows, with_bootstrap_seed

BENCH = load_bench("plan_power")  # the independent simulation bench/plan_power.py runs in full
POLICY, RATES, people = BENCH.POLICY, BENCH.RATES, BENCH.people


def _compas_race() -> pl.DataFrame:
    frame = pl.read_csv(BENCH.COMPAS_CSV, columns=["race"])
    assert isinstance(frame, pl.DataFrame)
    return frame


@pytest.mark.slow
def test_the_planned_rows_give_the_power_in_an_independent_simulation() -> None:
    policy = fairgate.Policy.from_yaml(POLICY)
    shares = observed_shares(_compas_race(), ["race"])
    target = default_target(policy, shares)
    assert target == ("race", "African-American")
    needed = {}
    for disparity in (0.10, 0.05):
        scenario = Scenario("equal_opportunity_difference", disparity, shares, target, **RATES)
        plan = plan_rows(policy, scenario, power=0.8, runs=150, seed=11)  # 150 to search, 150 more to confirm
        assert plan.power >= 0.8
        rng = np.random.default_rng(2026)  # the rows; each audit bootstraps with its own seed, as the planner does
        runs = 400  # 400 independent audits: at 200 this seed's check read 0.74 at 0.05 (others: 0.81-0.83)
        fails = sum(
            fairgate.audit(
                BENCH.people(rng, plan.rows_needed, shares, disparity), with_bootstrap_seed(policy, run)
            ).verdict
            == "fail"
            for run in range(runs)
        )
        assert 0.75 <= fails / runs <= 0.90, (disparity, plan.rows_needed, fails / runs, plan.tried)
        needed[disparity] = plan.rows_needed
    assert needed[0.05] > 2 * needed[0.10]  # half the gap: about four times the rows


def _invoke(*args: str) -> object:
    return CliRunner().invoke(app, ["plan", *args])


def test_plan_json_and_bad_input(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY)
    base = ["--policy", str(tmp_path / "policy.yaml"), "--metric", "equal_opportunity_difference"]
    shares = "race=African-American:0.6,Caucasian:0.4"
    result = _invoke(*base, "--disparity", "0.2", "--shares", shares, "--runs", "20", "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["rows_needed"] > 0
    assert answer["power"] >= 0.8
    assert answer["group"] == {"race": "African-American"}
    assert answer["reference_group"] == "Caucasian"
    bad = {
        "unknown metric": (["--metric", "accuracy_difference", "--disparity", "0.2", "--shares", shares], "not judged"),
        "shares not summing to 1": (
            ["--disparity", "0.2", "--shares", "race=African-American:0.5,Caucasian:0.4"],
            "sum to 0.9",
        ),
        "a group missing": (["--disparity", "0.2", "--shares", "race=African-American:0.6,Other:0.4"], "leave out"),
        "a disparity within the threshold": (
            ["--disparity", "0.0", "--shares", shares],
            "above the policy's threshold",
        ),
        "no shares": (["--disparity", "0.2"], "--attributes FILE or as --shares"),
        "a malformed share": (["--disparity", "0.2", "--shares", "race=African-American"], "is not group:share"),
    }
    for case, (extra, words) in bad.items():
        result = _invoke(
            *base[:2], *(["--metric", "equal_opportunity_difference"] if "--metric" not in extra else []), *extra
        )
        assert result.exit_code == 2, (case, result.output)
        assert result.stderr.startswith("error: "), case
        assert words in result.stderr, (case, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, case
        assert "Traceback" not in result.output


def test_plan_audit_lists_what_each_result_could_detect(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    shares = pl.DataFrame({"race": ["African-American", "Caucasian"], "share": [0.6, 0.4]})
    document = fairgate.audit(BENCH.people(rng, 2_000, shares, 0.0), fairgate.Policy.from_yaml(POLICY)).to_dict()
    (tmp_path / "audit.json").write_text(json.dumps(document))
    result = _invoke("--audit", str(tmp_path / "audit.json"), "--json")
    assert result.exit_code == 0, result.output
    (row,) = [r for r in json.loads(result.stdout)["results"] if r["slicing"] == ["race"]]
    judged = next(r for r in document["results"] if r["slicing"] == ["race"])
    assert row["detectable_disparity"] == judged["detectable_disparity"] > 0.0
    table = _invoke("--audit", str(tmp_path / "audit.json"))
    assert table.exit_code == 0
    assert "equal_opportunity_difference" in table.stdout
    assert f"{judged['detectable_disparity']:.3f}" in table.stdout
    missing = _invoke("--audit", str(tmp_path / "nope.json"))
    assert missing.exit_code == 2
    assert "no such file" in missing.stderr
