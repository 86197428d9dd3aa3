"""``fairgate compare`` with several candidates: a decision per candidate, the choice, the exit code, Bonferroni
across candidates, the accuracy-fairness plane (Pareto-consistent), the comparison report (its numbers are the
JSON's), audit runs as inputs, and the labels and attributes read once however many models are compared."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from mitigation_helpers import InProcessRunner
from pdf_words import code_form_metric_names, document_numbers, page_count, page_text, pdf_text, unexplained_numbers

import fairgate
from fairgate.errors import DataError
from fairgate.mitigation.compare import compare, compare_candidates, joint_cube
from fairgate.mitigation.plane import accuracy_fairness_plane
from fairgate.mitigation.promotion import ModelAudit
from fairgate.report.comparison import interval, plain, signed

POLICY = """\
fairness_checker:
  favorable_label: 0
  sensitive_attributes:
    - {name: race, values: [African-American, Caucasian, Hispanic, Other, Asian, Native American]}
    - {name: sex, values: [Male, Female]}
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
    - {name: equal_opportunity_difference, threshold: 0.1}
    - {name: calibration_difference, threshold: 0.1}
  intersectional_analysis: {enabled: true, min_group_size: 50, attribute_pairs: [[race, sex]]}
  reporting: {format: [json, html, pdf]}
  columns: {y_true: two_year_recid}
  statistics: {n_bootstrap: 400, seed: 1}
  comparison: {rule: no_worse_fairness}
"""

FLAGS = {  # the high-risk flag (the unfavourable outcome) of each model, over the COMPAS columns
    "baseline": pl.col("decile") >= 5,
    "higher_cut": pl.col("decile") >= 7,
    "cut6": pl.col("decile") >= 6,
    "race_dependent_cut": pl.when(pl.col("race") == "African-American")
    .then(pl.col("decile") >= 3)
    .otherwise(pl.col("decile") >= 5),
}


def _policy() -> fairgate.Policy:
    return fairgate.Policy.from_yaml(POLICY.replace("two_year_recid", "y_true"))


def _model(rows: pl.DataFrame, name: str) -> pl.DataFrame:
    return rows.select("id", "y_true", "race", "sex", FLAGS[name].cast(pl.Int8).alias("y_pred"))


@pytest.fixture(scope="module")
def several(compas_rows: pl.DataFrame) -> dict[str, Any]:
    policy = _policy()
    baseline = _model(compas_rows, "baseline")
    joints = {
        n: joint_cube(baseline, _model(compas_rows, n), policy) for n in ("higher_cut", "race_dependent_cut", "cut6")
    }
    # The change rule and the choice alone: every candidate taken as passing its own audit (none does on COMPAS).
    passing = {n: ModelAudit("pass", (), 4, "test: the change rule alone") for n in joints}
    return {"policy": policy, "joints": joints, "result": compare_candidates(joints, policy, passing)}


def test_each_candidate_gets_its_own_decision_and_the_choice_rests_on_evidence(several: dict[str, Any]) -> None:
    """cut6 is more accurate by +0.004, not significantly: no evidence of a difference, so the first promotable
    candidate given is chosen, and the comparison says so."""
    result = several["result"]
    decisions = {e["name"]: e["decision"] for e in result["candidates"]}
    assert decisions == {"higher_cut": "promote", "race_dependent_cut": "do_not_promote", "cut6": "promote"}
    cut6 = next(e for e in result["candidates"] if e["name"] == "cut6")["accuracy"]
    assert cut6["change"] > 0
    assert cut6["decision_ci_low"] < 0 < cut6["decision_ci_high"]
    assert (result["decision"], result["exit_code"], result["chosen"]) == ("promote", 0, "higher_cut")
    assert result["reasons"][0].startswith("higher_cut is chosen: no evidence of a difference in accuracy")
    assert "chosen by the order given" in result["reasons"][0]
    assert result["reasons"][1] == "also promotable: cut6"


def test_the_compas_example_promotes_no_candidate_that_fails_the_policy(several: dict[str, Any]) -> None:
    """The issue's example: cut6 (demographic disparity by race far beyond the policy) was promoted for an
    accuracy gain of +0.004. Each candidate's own audit now decides whether it may be promoted at all."""
    policy, joints = several["policy"], several["joints"]
    result = compare_candidates({n: joints[n] for n in ("higher_cut", "cut6")}, policy)
    assert (result["decision"], result["exit_code"], result["chosen"]) == ("do_not_promote", 1, None)
    for entry in result["candidates"]:
        assert (entry["decision"], entry["passes_policy"], entry["audit"]["verdict"]) == (
            "do_not_promote",
            False,
            "fail",
        )
    cut6 = result["candidates"][1]
    assert "Disparate impact ratio (race) 0.601" in cut6["audit"]["failed"][0]
    assert result["reasons"][1].startswith("cut6: its own audit fails the policy: disparate impact ratio (race) 0.601")


def _entry(name: str, accuracy: str, change: float, passes: bool = True) -> dict[str, Any]:
    row = {"status": accuracy, "change": change, "decision_ci_low": change - 0.01, "decision_ci_high": change + 0.01}
    reasons = [] if passes else ["promoted although it FAILS the policy (x): y"]
    return {
        "name": name,
        "decision": "promote",
        "passes_policy": passes,
        "promoted_failing": not passes,
        "accuracy": row,
        "reasons": reasons,
    }


def test_the_choice_takes_a_significant_gain_and_prefers_a_passing_candidate() -> None:
    from fairgate.mitigation.promotion import choose

    chosen, reasons = choose([_entry("a", "no_evidence_of_change", 0.02), _entry("b", "better", 0.015)], 0.99)
    assert chosen == "b"
    assert reasons[0].startswith("b is chosen for a significant accuracy gain of +0.015")
    # 0.015 - 0.01 is 0.00499999... in binary: the one rule rounds the lower end down, never to +0.005
    assert "deciding interval [+0.004, +0.025] at level 0.99" in reasons[0]
    chosen, reasons = choose([_entry("a", "better", 0.03, passes=False), _entry("b", "no_evidence_of_change", 0)], 0.99)
    assert chosen == "b"
    assert "no evidence of a difference" in reasons[0]
    chosen, reasons = choose([_entry("a", "better", 0.03, passes=False)], 0.99)
    assert chosen == "a"
    assert reasons[-1].startswith("a is promoted although it FAILS the policy")


def test_a_failing_result_reads_by_the_one_rounding_rule() -> None:
    """A failing result's brief rounds its value once and its interval outward, as every report does."""
    from fairgate.engine.text import bracket_text
    from fairgate.mitigation.promotion import _brief

    result = {"metric": "disparate_impact_ratio", "slicing": ["race"], "threshold": 0.8}
    brief = _brief({**result, "value": 0.60151, "ci_low": 0.55049, "ci_high": 0.65001})
    assert brief == "Disparate impact ratio (race) 0.602 [0.550, 0.651], limit 0.8"
    assert bracket_text(0.55049, 0.65001) in brief
    assert _brief({**result, "value": -0.0004, "ci_low": None, "ci_high": 0.1}) == (
        "Disparate impact ratio (race) 0.000, limit 0.8"
    )


def test_no_promotable_candidate_exits_1_and_names_each_reason(several: dict[str, Any]) -> None:
    policy, joints = several["policy"], several["joints"]
    result = compare_candidates({"race_dependent_cut": joints["race_dependent_cut"]}, policy)
    assert (result["decision"], result["exit_code"], result["chosen"]) == ("do_not_promote", 1, None)
    assert any("disparate impact ratio (race) is worse" in r for r in result["reasons"])


def test_the_deciding_intervals_hold_jointly_over_every_candidates_changes(several: dict[str, Any]) -> None:
    """Bonferroni over all candidates: k is the sum of each candidate's judged changes, and each candidate's
    deciding interval is wider than when it is compared alone; the shown intervals do not change."""
    policy, joints, result = several["policy"], several["joints"], several["result"]
    alone = {name: compare(joint, policy) for name, joint in joints.items()}
    k = sum(a["statistics"]["n_judged_changes"] for a in alone.values())
    statistics = result["statistics"]
    assert (statistics["n_judged_changes"], statistics["n_candidates"]) == (k, 3)
    assert statistics["decision_level"] == pytest.approx(1 - policy.statistics.alpha / k)
    assert f"Bonferroni over {k} judged changes across 3 candidates" in statistics["multiplicity"]
    for entry in result["candidates"]:
        single = alone[entry["name"]]
        for joint_row, single_row in zip(entry["changes"], single["changes"], strict=True):
            assert (joint_row["ci_low"], joint_row["ci_high"]) == (single_row["ci_low"], single_row["ci_high"])
            if joint_row["decision_ci_low"] is not None:
                assert joint_row["decision_ci_low"] <= single_row["decision_ci_low"]
                assert joint_row["decision_ci_high"] >= single_row["decision_ci_high"]


def _dominates(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["x"] <= b["x"] and a["y"] >= b["y"] and (a["x"] < b["x"] or a["y"] > b["y"])


def test_the_plane_is_pareto_consistent_and_reads_the_changes(several: dict[str, Any]) -> None:
    plane = accuracy_fairness_plane(several["result"])
    assert plane is not None
    assert (plane["metric"], plane["direction"]) == ("equal_opportunity_difference", "lower_is_better")
    points = plane["points"]
    assert [p["name"] for p in points] == ["baseline", "higher_cut", "race_dependent_cut", "cut6"]
    for point in points:
        dominated = any(_dominates(q, point) for q in points if q is not point)
        assert point["pareto"] is not dominated
    for entry, point in zip(several["result"]["candidates"], points[1:], strict=True):
        worst = max(r["candidate"] for r in entry["changes"] if r["metric"] == "equal_opportunity_difference")
        assert (point["x"], point["y"]) == (worst, entry["accuracy"]["candidate"])
    # A ratio on the x axis: higher is fairer, so the Pareto test flips.
    ratio = accuracy_fairness_plane(several["result"], "disparate_impact_ratio")
    assert ratio is not None
    assert ratio["direction"] == "higher_is_better"
    flipped = [{**p, "x": -p["x"]} for p in ratio["points"]]
    for point in flipped:
        assert point["pareto"] is not any(_dominates(q, point) for q in flipped if q is not point)


def test_an_unknown_plane_metric_is_refused(several: dict[str, Any]) -> None:
    with pytest.raises(fairgate.PolicyError, match="--plane-metric 'roc_auc_difference' is not a compared metric"):
        accuracy_fairness_plane(several["result"], "roc_auc_difference")


def _document(
    result: dict[str, Any], policy: fairgate.Policy, joint: Any = None, command: str | None = None
) -> dict[str, Any]:
    from tasks.compare import comparison_document

    def model(name: str) -> dict[str, Any]:
        inputs = {"predictions": {"source": f"{name}.csv", "sha256": "0" * 64, "rows": 7214}}
        return {"name": name, "version": None, "run": None, "inputs": inputs, "alignment": {}}

    result = {**result, "plane": accuracy_fairness_plane(result)}
    names = [e["name"] for e in result["candidates"]]
    candidates = [model(n) for n in names]
    return comparison_document(result, "report-test", policy, model("baseline"), candidates, joint, command)


def _pdf_text(path: Path) -> str:
    done = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True)
    return " ".join(done.stdout.split())


def test_the_report_holds_the_decision_and_the_numbers_of_the_json(several: dict[str, Any], tmp_path: Path) -> None:
    from tasks.compare import write_comparison
    from tasks.render.compare_report import comparison_report_files

    document = _document(several["result"], several["policy"])
    json_path = Path(write_comparison.fn(document, tmp_path))
    files = comparison_report_files(document, tmp_path, ["json", "html", "pdf"])
    assert {Path(p).name for p in files.values()} == {"comparison_report-test.html", "comparison_report-test.pdf"}
    assert not list(tmp_path.glob(".*.tmp"))
    written = json.loads(json_path.read_text())
    text = _pdf_text(Path(files["pdf"]))
    assert code_form_metric_names(text) == []
    html = Path(files["html"]).read_text()
    assert "PROMOTE" in text
    assert "Chosen candidate: higher_cut" in text
    assert "no evidence of a difference in accuracy" in text
    assert "own audit" in text
    assert "no_worse_fairness" in text
    assert written["statistics"]["multiplicity"].split(":")[0] in text
    for entry in written["candidates"]:
        assert f"{entry['name']}: {entry['decision'].replace('_', ' ')}" in text
        for row in [entry["accuracy"], *entry["changes"]]:
            numbers = (
                f"{plain(row['baseline'])} {plain(row['candidate'])} {signed(row['change'])} "
                f"{interval(row['ci_low'], row['ci_high'])} {interval(row['decision_ci_low'], row['decision_ci_high'])}"
            )
            assert numbers in text, (entry["name"], row["metric"], row["slicing"])
    assert "data:image/svg+xml;base64," in html  # the plane, inline
    assert "http://" not in html.replace("http://www.w3.org", "")
    assert "https://" not in html


COMMAND = "fairgate compare --policy policy.yaml --baseline baseline.csv --candidate higher_cut.csv"


@pytest.fixture(scope="module")
def compared_pdf(several: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The comparison report of the COMPAS candidates, with the evaluation set's group sizes and the command."""
    from tasks.render.compare_report import comparison_report_files

    folder = tmp_path_factory.mktemp("compared")
    joint = several["joints"]["higher_cut"]
    document = _document(several["result"], several["policy"], joint, COMMAND)
    document = json.loads(json.dumps(document))
    files = comparison_report_files(document, folder, ["pdf"], several["policy"].reporting.min_cell_size)
    return Path(files["pdf"]), document


def _page_one(pdf: Path) -> str:
    text = page_text(pdf)
    text = re.sub(r"Accuracy-fairness plane of the compared models.*?x: ", "x: ", text)  # the chart's axes
    pages = page_count(pdf)
    assert f"Page 1 of {pages}" in text
    return text.replace(f"Page 1 of {pages}", "")


def test_every_number_on_page_one_of_the_comparison_comes_from_the_json(
    compared_pdf: tuple[Path, dict[str, Any]],
) -> None:
    pdf, document = compared_pdf
    text = _page_one(pdf)
    assert unexplained_numbers(text, document) == [], "numbers on page 1 not found in the JSON document"
    assert "What to do:" in text
    first_two = text + " " + page_text(pdf, 2)
    for words in ("Who was compared", "Model card"):  # the frame on pages 1-2, as the audit report has it
        assert words in first_two, words
    chosen = next(e for e in document["candidates"] if e["name"] == document["chosen"])
    accuracy = chosen["accuracy"]
    shown = interval(accuracy["ci_low"], accuracy["ci_high"])
    row = f"{plain(accuracy['candidate'])} {signed(accuracy['change'])} {shown}"
    assert row.replace("\u2212", "-") in text  # the chosen candidate's accuracy, change and interval
    # The group sizes: every one printed as the document has it, none from 1 to k-1, the rule stated.
    k = document["min_cell_size"]
    table = page_text(pdf, layout=True) + " " + page_text(pdf, 2, layout=True)
    assert document["groups"], "the document publishes the evaluation set's group sizes"
    for group in document["groups"]:
        assert group["n"] is None or not 0 < group["n"] < k
        label = " · ".join(group["group"][a] for a in group["slicing"])
        shown = "suppressed" if group["n"] is None else f"{group['n']:,}"
        assert re.search(rf"{re.escape(label)}\s+{shown}(?!\d)", table), label
    if any(g["n"] is None for g in document["groups"]):
        assert "Small-cell rule" in text  # the suppression note on page 1 when it withholds anything
    closing = pdf_text(pdf)
    assert "fairgate compare \\" in closing  # the command run, one option a line
    assert "--candidate higher_cut.csv" in closing
    assert "Glossary" in closing


def test_the_comparison_page_one_check_fails_on_a_wrong_number(compared_pdf: tuple[Path, dict[str, Any]]) -> None:
    """The check can fail: the same page against the document with the chosen candidate's accuracy altered."""
    pdf, document = compared_pdf
    text = _page_one(pdf)
    altered = json.loads(json.dumps(document))
    chosen = next(e for e in altered["candidates"] if e["name"] == document["chosen"])
    printed = plain(chosen["accuracy"]["candidate"])
    chosen["accuracy"]["candidate"] += 0.0707
    for point in altered["plane"]["points"]:
        if point["name"] == document["chosen"]:
            point["y"] += 0.0707
    assert printed not in document_numbers(altered)
    assert printed in unexplained_numbers(text, altered)
    sized = json.loads(json.dumps(document))
    table = page_text(pdf) + " " + page_text(pdf, 2)  # the sizes follow the candidates
    printed_sizes = [f"{g['n']:,}" for g in sized["groups"] if g["n"] is not None]
    group = next(g for g in sized["groups"] if g["n"] is not None and printed_sizes.count(f"{g['n']:,}") == 1)
    printed = f"{group['n']:,}"
    group["n"] += 100000
    assert printed not in document_numbers(sized)
    assert printed in unexplained_numbers(table, sized)


def test_only_the_requested_formats_are_rendered(several: dict[str, Any], tmp_path: Path) -> None:
    from tasks.render.compare_report import comparison_report_files

    document = _document(several["result"], several["policy"])
    assert comparison_report_files(document, tmp_path, ["json"]) == {}
    assert list(comparison_report_files(document, tmp_path, ["json", "html"])) == ["html"]


# ------------------------------------------------------------------------------ labels and attributes read once
def test_held_labels_and_attributes_are_not_read_again(compare_files: dict[str, Path], tmp_path: Path) -> None:
    """After holding, the label and attribute files can vanish: each further model aligns against memory."""
    from tasks.inputs.align import align_inputs, hold_shared_inputs, release, restage_predictions, stage_inputs
    from tasks.validation.validate import validate_inputs

    copies = {role: tmp_path / f"{role}.csv" for role in ("labels", "attributes")}
    for role, path in copies.items():
        shutil.copy(compare_files[role], path)
    policy = fairgate.Policy.from_yaml(POLICY)
    staged = stage_inputs.fn(policy, str(compare_files["baseline"]), str(copies["labels"]), str(copies["attributes"]))
    try:
        hold_shared_inputs(staged)
        first = align_inputs.fn(staged)
        for path in copies.values():
            path.unlink()
        restaged = restage_predictions.fn(staged, str(compare_files["higher_cut"]))
        validate_inputs.fn(restaged, roles=("predictions",))
        second = align_inputs.fn(restaged)
    finally:
        release(staged)
    assert first.table.num_rows == second.table.num_rows == 7214
    assert first.table["two_year_recid"].equals(second.table["two_year_recid"])
    assert restaged.sources["predictions"].label == str(compare_files["higher_cut"])
    assert restaged.sha256["labels"] == staged.sha256["labels"]


def test_a_candidate_without_a_prediction_column_is_named(compare_files: dict[str, Path], tmp_path: Path) -> None:
    from tasks.inputs.align import hold_shared_inputs, release, restage_predictions, stage_inputs

    odd = tmp_path / "odd.csv"
    odd.write_text("id,decision\n1,0\n")
    policy = fairgate.Policy.from_yaml(POLICY)
    staged = stage_inputs.fn(
        policy, str(compare_files["baseline"]), str(compare_files["labels"]), str(compare_files["attributes"])
    )
    try:
        hold_shared_inputs(staged)
        with pytest.raises(DataError, match=r"odd.csv has neither the prediction column 'y_pred' nor the score"):
            restage_predictions.fn(staged, str(odd))
    finally:
        release(staged)


@pytest.mark.slow
def test_the_flow_stages_labels_and_attributes_once_for_three_models(
    prefect_server: str, compare_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tasks.inputs.align
    from flows.compare import fairgate_compare

    registered: list[str] = []
    original = tasks.inputs.align.register_source

    def counting(con: Any, source: Any, view: str, **options: Any) -> list[str]:
        registered.append(source.role)
        return original(con, source, view, **options)

    monkeypatch.setattr(tasks.inputs.align, "register_source", counting)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.replace("[json, html, pdf]", "[json]"))
    state = fairgate_compare(
        policy=str(policy),
        baseline=str(compare_files["baseline"]),
        candidates=[str(compare_files["higher_cut"]), str(compare_files["race_dependent_cut"])],
        labels=str(compare_files["labels"]),
        attributes=str(compare_files["attributes"]),
        out_dir=str(tmp_path / "out"),
        return_state=True,
    )
    summary = state.result()
    assert sorted(registered) == ["attributes", "labels", "predictions", "predictions", "predictions"]
    document = json.loads(Path(summary["json"]).read_text())
    assert [e["name"] for e in document["candidates"]] == ["higher_cut", "race_dependent_cut"]
    assert summary["report"] == {}  # json only: no report asked for
    for entry in document["candidates"]:
        assert entry["model"]["inputs"]["labels"]["sha256"] == document["baseline"]["inputs"]["labels"]["sha256"]


# ---------------------------------------------------------------------------------------- CLI end to end
def _fairgate(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    fairgate_bin = Path(sys.executable).parent / "fairgate"
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run(
        [str(fairgate_bin), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.slow
def test_cli_several_candidates_exit_0_naming_the_chosen_one_with_a_report(
    prefect_server: str, compare_files: dict[str, Path], tmp_path: Path
) -> None:
    """Every COMPAS cut fails the policy: with promote_failing_if_better the higher cut (significantly fairer than
    the baseline) is promoted, and the CLI and the report's first page say it still fails the policy."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        POLICY.replace("{rule: no_worse_fairness}", "{rule: no_worse_fairness, promote_failing_if_better: true}")
    )
    out = tmp_path / "out"
    args = ["compare", "--policy", str(policy), "--baseline", str(compare_files["baseline"])]
    for name in ("higher_cut", "race_dependent_cut"):
        args += ["--candidate", str(compare_files[name])]
    args += ["--labels", str(compare_files["labels"]), "--attributes", str(compare_files["attributes"])]
    done = _fairgate([*args, "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "decision: PROMOTE: higher_cut (it still FAILS the policy)" in done.stdout
    assert "race_dependent_cut - baseline (paired bootstrap): do not promote" in done.stdout
    assert "its own audit against the policy: does not pass (verdict fail)" in done.stdout
    assert "fails: Disparate impact ratio (race) 0.679" in done.stdout
    (json_path,) = out.glob("comparison_*.json")
    document = json.loads(json_path.read_text())
    assert (document["chosen"], document["chosen_fails_policy"]) == ("higher_cut", True)
    assert sorted(p.name for p in out.iterdir()) == [json_path.with_suffix(s).name for s in (".html", ".json", ".pdf")]
    text = _pdf_text(json_path.with_suffix(".pdf"))
    assert "Chosen candidate: higher_cut Warning: the promoted model higher_cut still FAILS the policy." in text
    accuracy = document["candidates"][0]["accuracy"]
    assert f"{signed(accuracy['change'])} {interval(accuracy['ci_low'], accuracy['ci_high'])}" in text


@pytest.fixture(scope="module")
def audited_runs(
    prefect_server: str, compare_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Two recorded audits (baseline and the higher cut) in one trail; their predictions are copies we can edit."""
    from cli import app

    folder = tmp_path_factory.mktemp("runs")
    policy = folder / "policy.yaml"
    policy.write_text(POLICY.replace("[json, html, pdf]", "[json]"))
    out, runs = folder / "out", {}
    for name in ("baseline", "higher_cut"):
        copy = folder / f"{name}.csv"
        shutil.copy(compare_files[name], copy)
        args = ["audit", "--policy", str(policy), "--predictions", str(copy), "--labels", str(compare_files["labels"])]
        args += ["--attributes", str(compare_files["attributes"]), "--out", str(out), "--model", name, "--json"]
        result = InProcessRunner().invoke(app, args)
        assert result.exit_code in (0, 1), result.stderr
        runs[name] = json.loads(result.stdout)["run_id"]
    return {"folder": folder, "policy": policy, "out": out, "runs": runs, "trail": out / "audit_trail.duckdb"}


@pytest.mark.slow
def test_cli_compares_recorded_runs_with_their_own_labels(audited_runs: dict[str, Any], tmp_path: Path) -> None:
    runs = audited_runs["runs"]
    args = ["compare", "--policy", str(audited_runs["policy"]), "--baseline", runs["baseline"]]
    args += ["--candidate", "2", "--out", str(audited_runs["out"]), "--json"]  # seq 2: the second recorded run
    done = _fairgate(args, tmp_path)
    assert done.returncode == 1, done.stderr  # the higher cut fails the policy: not promotable
    document = json.loads(done.stdout)
    (entry,) = document["candidates"]
    assert entry["model"]["run"]["run_id"] == runs["higher_cut"]
    # The candidate's own audit in compare is the recorded audit's adjudication: the same verdict.
    assert (entry["audit"]["verdict"], entry["model"]["run"]["verdict"]) == ("fail", "fail")
    assert entry["audit"]["source"].startswith("the model's own audit")
    assert entry["name"] == f"higher_cut unversioned (run {runs['higher_cut']})"
    assert document["baseline"]["run"]["run_id"] == runs["baseline"]
    assert document["baseline"]["inputs"]["labels"]["source"].endswith("labels.csv")


@pytest.mark.slow
def test_a_run_whose_predictions_changed_or_vanished_is_refused(audited_runs: dict[str, Any], tmp_path: Path) -> None:
    from tasks.compare import resolve_input

    runs, trail, folder = audited_runs["runs"], audited_runs["trail"], audited_runs["folder"]
    assert resolve_input("candidate", runs["higher_cut"], trail).run is not None
    edited = folder / "higher_cut.csv"
    original = edited.read_text()
    try:
        edited.write_text(original + "\n")  # one byte more: the sha256 no longer matches the recorded one
        with pytest.raises(DataError, match=r"has changed since the run was recorded"):
            resolve_input("candidate", runs["higher_cut"], trail)
        edited.unlink()
        with pytest.raises(DataError, match=r"predictions input .*higher_cut.csv' is gone"):
            resolve_input("candidate", runs["higher_cut"], trail)
    finally:
        edited.write_text(original)
    with pytest.raises(DataError, match=r"neither a predictions file nor a run: no run 'nosuchrun'"):
        resolve_input("candidate", "nosuchrun", trail)
    args = ["compare", "--policy", str(audited_runs["policy"]), "--baseline", "nosuchrun", "--candidate", "2"]
    done = _fairgate([*args, "--out", str(tmp_path / "elsewhere")], tmp_path)
    assert done.returncode == 2
    assert "nor is it an audit run: no trail at" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr


def test_unique_names_and_file_stems() -> None:
    from tasks.compare import ModelInput, unique_names

    models = [ModelInput("candidate", "a/model.csv"), ModelInput("candidate", "b/model.parquet")]
    assert unique_names(models) == ["model", "model #2"]
    assert np.array_equal(np.array(unique_names([ModelInput("candidate", "db.duckdb::preds")])), ["db::preds"])


def test_cli_refuses_an_unknown_plane_metric_before_any_work(compare_files: dict[str, Path], tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    args = ["compare", "--policy", str(policy), "--baseline", str(compare_files["baseline"])]
    args += ["--candidate", str(compare_files["higher_cut"]), "--labels", str(compare_files["labels"])]
    args += ["--attributes", str(compare_files["attributes"]), "--plane-metric", "accuracy_difference"]
    done = _fairgate([*args, "--out", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 2
    assert "--plane-metric 'accuracy_difference' is not a metric of the policy" in " ".join(done.stderr.split())
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------- multiplicity across candidates
_SIM_POLICY = """\
fairness_checker:
  sensitive_attributes: [{name: g}]
  metrics:
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: equal_opportunity_difference, threshold: 0.1}
    - {name: equalized_odds_difference, threshold: 0.1}
  intersectional_analysis: {min_group_size: 30}
  statistics: {n_bootstrap: 400, seed: 7}
"""
# Per (group, label): the share of people and P(baseline favourable); each candidate swaps 8% of the people of
# the cell each way (as many to favourable as away from it), so every metric's population value is the baseline's.
_CELLS = {("A", 1): (0.33, 0.80), ("A", 0): (0.27, 0.30), ("B", 1): (0.14, 0.60), ("B", 0): (0.26, 0.20)}
_SWAP = 0.08


def _candidates_sample(rng: np.random.Generator, n: int, k: int) -> dict[str, Any]:
    """k candidates on the same n people, each no different from the baseline in the population."""
    from fairgate.mitigation.compare import JointCube

    keys = list(_CELLS)
    people = rng.multinomial(n, [share for share, _ in _CELLS.values()])
    joints = {}
    rows: dict[str, list[list[Any]]] = {f"candidate {c}": [] for c in range(k)}
    for (group, label), count in zip(keys, people, strict=True):
        favourable = _CELLS[(group, label)][1]
        ones = rng.binomial(count, favourable)
        for name in rows:
            # Swap mass _SWAP of the cell each way: P(to 1 | 0) and P(to 0 | 1) keep P(favourable) unchanged.
            up = rng.binomial(count - ones, _SWAP / (1 - favourable))
            down = rng.binomial(ones, _SWAP / favourable)
            for b, c, m in ((0, 0, count - ones - up), (0, 1, up), (1, 0, down), (1, 1, ones - down)):
                rows[name].append([group, label, b, c, m])
    for name, cells in rows.items():
        frame = pl.DataFrame(
            cells, schema=["g", "__y_true", "__pred_baseline", "__pred_candidate", "__rows"], orient="row"
        ).with_columns(pl.col("__y_true", "__pred_baseline", "__pred_candidate").cast(pl.Int8))
        joints[name] = JointCube(frame.filter(pl.col("__rows") > 0), ("g",), [(), ("g",)])
    return joints


@pytest.mark.slow
def test_candidates_no_different_from_the_baseline_are_refused_at_most_alpha_of_the_time() -> None:
    """Three candidates, each no different from the baseline: with the deciding intervals held jointly over all
    three candidates' changes, any of them is refused in at most alpha (0.05) of 200 samples of 3,000 people
    (measured: 0 of 200, with or without comparison.simultaneous: the gap and ratio intervals are simultaneous)."""
    policy = fairgate.Policy.from_yaml(_SIM_POLICY)
    rng = np.random.default_rng(20261202)
    replications, refused_any, promoted_all = 200, 0, 0
    for _ in range(replications):
        joints = _candidates_sample(rng, 3000, 3)
        passing = {name: ModelAudit("pass", (), 4, "test: the change rule alone") for name in joints}
        result = compare_candidates(joints, policy, passing)
        decisions = [e["decision"] for e in result["candidates"]]
        refused_any += "do_not_promote" in decisions
        promoted_all += decisions.count("promote") == 3
        assert result["statistics"]["n_candidates"] == 3
    assert refused_any / replications <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / replications), refused_any
    assert promoted_all == replications - refused_any


def test_the_agreement_prints_no_small_count_of_people_decided_differently(several: dict[str, Any]) -> None:
    """The small-cell rule in the comparison report: a count 1..k-1 of people decided differently is never shown."""
    from fairgate.report.comparison import comparison_view

    document = _document(several["result"], several["policy"])
    entry = document["candidates"][0]
    counts = entry["agreement"]
    differ = (counts["favourable_only_baseline"], counts["favourable_only_candidate"])
    shown = next(c for c in comparison_view(document, min_cell_size=1).candidates if c.name == entry["name"])
    assert f"only for the candidate: {differ[1]:,}" in shown.agreement  # every count at k = 1 (as a count: 1,322)
    k = max(differ) + 1  # both counts under k: suppressed, and the alike count with them
    hidden = next(c for c in comparison_view(document, min_cell_size=k).candidates if c.name == entry["name"])
    rule = "the counts decided alike and differently are suppressed (small-cell rule)"
    assert hidden.agreement == f"{entry['n_rows']:,} people compared; {rule}"
