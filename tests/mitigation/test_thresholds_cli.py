"""``fairgate mitigate --method thresholds`` end to end on the COMPAS demo inputs: the thresholds, the mitigated
predictions and the frontier written, the audit before and after as subflows, and refusals (exit 2, nothing
written) for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from mitigation_helpers import InProcessRunner

from cli import DEMO_DATA, DEMO_POLICY, app
from tasks.inputs.io import write_demo_inputs


@pytest.fixture(autouse=True)
def _flows_use_the_session_server(prefect_server: str) -> None:
    """The mitigation flows run on the one test server."""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo's inputs and policy, with 200 bootstrap replicates and JSON output only (bounded time)."""
    folder = tmp_path_factory.mktemp("thresholds-demo")
    files = write_demo_inputs(DEMO_DATA, folder)
    policy = yaml.safe_load(DEMO_POLICY.read_text())
    policy["fairness_checker"]["statistics"]["n_bootstrap"] = 200
    policy["fairness_checker"]["reporting"]["format"] = ["json"]
    files["policy"] = folder / "policy.yaml"
    files["policy"].write_text(yaml.safe_dump(policy))
    return files


def _args(demo: dict[str, Path], out: Path) -> list[str]:
    args = ["mitigate", "--method", "thresholds", "--policy", str(demo["policy"]), "--out", str(out)]
    for role in ("predictions", "labels", "attributes"):
        args += [f"--{role}", str(demo[role])]
    return args


def _race(document: dict, metric: str) -> dict:
    (result,) = [r for r in document["results"] if r["metric"] == metric and r["slicing"] == ["race"]]
    return result


def test_thresholds_close_the_gap_and_the_audit_judges_it(
    runner: InProcessRunner, demo: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    # A tolerance below the policy's 0.10: fitted at the threshold itself, the randomised decisions land on
    # either side of it (0.105 on this draw), which the audit cannot call a pass.
    result = runner.invoke(app, [*_args(demo, out), "--tolerance", "0.02", "--json"])
    assert result.exit_code in (0, 1), result.stderr
    summary = json.loads(result.stdout)
    assert summary["method"] == "thresholds"
    assert summary["metric"] == "equal_opportunity_difference"  # the demo policy's critical metric
    assert summary["tolerance"] == 0.02
    assert summary["attributes"] == ["race"]
    outputs = {kind: Path(path) for kind, path in summary["outputs"].items()}
    run = summary["run_id"]
    assert {kind: p.name for kind, p in outputs.items()} == {
        "thresholds": f"thresholds_{run}.json",
        "predictions": f"thresholds_{run}_predictions.parquet",
        "frontier": f"thresholds_{run}_frontier.svg",
        "json": f"thresholds_{run}_summary.json",
    }
    assert all(p.parent == out and p.is_file() for p in outputs.values())
    assert json.loads(outputs["json"].read_text()) == summary

    rules = json.loads(outputs["thresholds"].read_text())
    assert rules["metric"] == "equal_opportunity_difference"
    # Groups the audit does not judge (fewer than min_group_size 50) keep their audited decisions.
    assert set(rules["groups"]) == set(summary["groups"]) == {"African-American", "Caucasian", "Hispanic", "Other"}
    assert summary["unchanged_groups"] == [
        {"group": {"race": "Asian"}, "n": 32},
        {"group": {"race": "Native American"}, "n": 18},
    ]
    svg = outputs["frontier"].read_text()
    assert svg.startswith("<svg")
    assert "policy threshold 0.1" in svg

    # The mitigated predictions: every audited person once, the same scores, the decisions replaced.
    mitigated = pl.read_parquet(outputs["predictions"])
    original = pl.read_parquet(demo["predictions"])
    assert mitigated.columns == ["id", "score", "y_pred"]
    joined = original.join(mitigated, on="id", suffix="_after")
    assert joined.height == mitigated.height == original.height
    assert (joined["score"] - joined["score_after"]).abs().max() < 1e-12
    assert 0 < (joined["y_pred"] != joined["y_pred_after"]).sum() < joined.height
    small = pl.read_parquet(demo["attributes"]).filter(pl.col("race").is_in(["Asian", "Native American"]))
    untouched = joined.join(small, on="id", how="semi")
    assert untouched.height == 50
    assert untouched["y_pred"].to_list() == untouched["y_pred_after"].to_list()

    # The audits: the flow's own documents, the re-audit under the same policy.
    audits = summary["audits"]
    before = json.loads(Path(audits["before"]["outputs"]["json"]).read_text())
    after = json.loads(Path(audits["after"]["outputs"]["json"]).read_text())
    assert after["model"]["version"] == f"thresholds-{run}"
    for document in (before, after):  # what a reviewer types to reproduce both audits: the mitigation itself
        assert document["command_line"].startswith("fairgate mitigate --method thresholds"), document["command_line"]
    eod_before = _race(before, "equal_opportunity_difference")
    eod_after = _race(after, "equal_opportunity_difference")
    assert eod_before["status"] == "fail"
    assert eod_before["value"] > 0.2
    assert eod_after["value"] < 0.05
    assert eod_after["status"] in {"pass", "inconclusive"}  # below the threshold; the interval decides which
    assert audits["before"]["verdict"] == before["verdict"] == "fail"
    assert audits["after"]["verdict"] == after["verdict"]
    assert summary["exit_code"] == after["exit_code"] == result.exit_code

    # The price: the re-audit's gap is what the summary reports in sample; held out, the gap still shrinks.
    in_sample, held_out = summary["in_sample"], summary["held_out"]
    assert in_sample["gap"]["after"] == pytest.approx(eod_after["value"], abs=0.01)
    assert in_sample["overall"]["change"] == pytest.approx(
        in_sample["overall"]["after"] - in_sample["overall"]["before"]
    )
    assert -0.03 < in_sample["overall"]["change"] <= 0.0
    assert set(in_sample["groups"]) == set(summary["groups"])
    assert held_out["rows_fit"] + held_out["rows_measured"] == mitigated.height - untouched.height
    assert held_out["gap"]["after"] < held_out["gap"]["before"] - 0.1
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("thresholds_")) == sorted(
        p.name for p in outputs.values()
    )


def test_bad_input_is_refused_with_nothing_written(
    runner: InProcessRunner, demo: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    base = ["mitigate", "--method", "thresholds", "--policy", str(demo["policy"]), "--out", str(out)]
    cases = [
        ([*base, "--predictions", str(demo["predictions"])], "needs --labels, --attributes"),
        ([*_args(demo, out), "--metric", "demographic_parity_difference"], "is not one of them"),
        ([*_args(demo, out), "--attribute", "religion"], "'religion' is not a sensitive attribute of the policy"),
        ([*_args(demo, out), "--tolerance", "1.5"], "between 0 and 1"),
    ]
    no_score = tmp_path / "no_score.parquet"
    pl.read_parquet(demo["predictions"]).drop("score").write_parquet(no_score)
    cases.append(([*_args(demo, out), "--predictions", str(no_score)], "need the score column 'score'"))
    for args, fragment in cases:
        result = runner.invoke(app, args)
        message = " ".join(result.stderr.split())
        assert result.exit_code == 2, (args, result.exit_code, result.stderr)
        assert "Traceback" not in result.stderr + result.stdout
        assert fragment in message, message
        assert not out.exists()
