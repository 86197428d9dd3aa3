"""Real COMPAS weeks through ``fairgate monitor run`` before and after their labels arrive.

A deploy-like set-up: the model's scores are recalibrated per race on the deployment sample (the decile's observed
recidivism rate per race, as a deployment would calibrate them), and the deployment audit (with labels) is recorded
in the trail. Four weekly nights then run without ``--labels``: the label-dependent metrics of the rows without
labels are estimated per window and marked estimated, apart from the measured ones, in the document, the CLI and
the PDF. A fifth run brings the late labels of those four weeks: each week's estimates are checked against the
measured values, recorded in the trail (``label_estimates``) and the running coverage is shown.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from monitor_helpers import (
    COMPAS_CSV,
    FIRST_NIGHT,
    WIDE,
    monitor_command,
    record_deployment_audit,
    run_night,
    run_weeks,
    week_rows,
    write_night,
)

from cli import app
from tasks.store import verify
from tasks.store.monitor import label_estimate_rows

WEEKS = 4
POLICY = """\
fairness_checker:
  sensitive_attributes:
    - {name: race, values: [African-American, Caucasian, Hispanic, Other, Asian, Native American],
       reference_group: Caucasian}
  metrics:
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: equal_opportunity_difference, threshold: 0.1}
    - {name: predictive_parity_difference, threshold: 0.1}
  intersectional_analysis: {enabled: false, min_group_size: 20}
  statistics: {n_bootstrap: 100, seed: 3}
  reporting: {format: [json, pdf]}
  monitoring:
    period: week
    windows: [7, 28]
"""


def _compas() -> pl.DataFrame:
    """COMPAS with the decile recalibrated per race on the deployment sample (screened before the first night)."""
    frame = pl.from_arrow(
        duckdb.sql(
            "select id, two_year_recid as y_true, decile_score, cast(score_text in ('Medium', 'High') as integer) "
            "as y_pred, race, cast(compas_screening_date as timestamp) as timestamp "
            f"from read_csv('{COMPAS_CSV}')"
        ).to_arrow_table()
    )
    assert isinstance(frame, pl.DataFrame)
    start = datetime.combine(FIRST_NIGHT, datetime.min.time())
    deployed = frame.filter(pl.col("timestamp") < start)
    by_cell = deployed.group_by("race", "decile_score").agg(pl.col("y_true").mean().alias("cell"))
    by_decile = deployed.group_by("decile_score").agg(pl.col("y_true").mean().alias("decile"))
    frame = frame.join(by_cell, on=["race", "decile_score"], how="left").join(by_decile, on="decile_score")
    return frame.with_columns(pl.coalesce("cell", "decile").clip(0.01, 0.99).alias("score"))


@pytest.fixture(scope="module")
def weeks(tmp_path_factory: pytest.TempPathFactory, runner: Any, prefect_server: str) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("compas_labels")
    (folder / "policy.yaml").write_text(POLICY)
    trail = folder / "trail.duckdb"
    rows = _compas()
    start = datetime.combine(FIRST_NIGHT, datetime.min.time())
    deployed = rows.filter(pl.col("timestamp") < start).select("y_true", "y_pred", "score", "race")
    deployment = record_deployment_audit(deployed, folder / "policy.yaml", trail)
    base = monitor_command(folder / "policy.yaml", folder / "out", trail)
    runs = run_weeks(
        runner, base, rows, WEEKS, lambda night, week: write_night(night, folder / f"week{week + 1}", ["race"], False)
    )
    show = ["monitor", "show", "--model", "compas", "--trail", str(trail), "--window", "28"]
    shown = {"text": runner.invoke(app, show, env=WIDE), "json": runner.invoke(app, [*show, "--json"])}
    week_one = week_rows(rows, start)
    partial = write_night(week_one, folder / "partial", ["race"])
    week_one.head(week_one.height // 2).select("id", "y_true").write_parquet(folder / "partial" / "labels.parquet")
    result, path = run_night(runner, [*base, *partial, "--night", FIRST_NIGHT.isoformat()], folder / "out")
    half = {"result": result, "document": json.loads(path.read_text())}
    late = week_rows(rows, start, WEEKS)
    last = (FIRST_NIGHT + timedelta(days=7 * (WEEKS - 1))).isoformat()
    args = [*write_night(late, folder / "late", ["race"]), "--night", last]
    result, path = run_night(runner, [*base, *args], folder / "out")
    labelled = {"result": result, "document": json.loads(path.read_text()), "json": path}
    return {
        "folder": folder,
        "trail": trail,
        "runs": runs,
        "half": half,
        "labelled": labelled,
        "deployment": deployment,
        "shown": shown,
    }


def test_nights_without_labels_estimate_each_window_apart(weeks: dict[str, Any]) -> None:
    assert weeks["deployment"]["curves"]["calibration"]  # the reference keeps its reliability bins
    for run in weeks["runs"]:
        assert run["result"].exit_code in (0, 1), run["result"].output
        document = run["document"]
        assert document["labels_given"] is False
        assert document["inputs"]["labels"]["rows"] == 0
        assert all(w["periods"] == 0 for w in document["windows"])  # no measured window sums unlabelled rows
        assert document["label_free"]["reference_run_id"] == "deployment"
        assert document["label_free"]["estimated_results"] == "report_only"
        (week,) = [w for w in document["estimated_windows"] if w["window"] == "7"]
        assert week["estimated"] is True
        assert week["periods"] == 1
        results = {r["metric"]: r for r in week["results"] if r["slicing"] == ["race"]}
        assert results["demographic_parity_difference"]["estimated"] is False  # measured: it needs no label
        for name in ("equal_opportunity_difference", "predictive_parity_difference"):
            assert results[name]["estimated"] is True
        reasons = results["equal_opportunity_difference"]["estimate_reasons"] or {}
        assert all("min_events" in why or "calibrat" in why for why in reasons.values())
        assert "Estimates:" in document["headline"]["text"]
        assert "not counted" in document["headline"]["text"]
    last = weeks["runs"][-1]["document"]
    month = next(w for w in last["estimated_windows"] if w["window"] == "28")
    assert month["periods"] == WEEKS
    eo = next(r for r in month["results"] if r["metric"] == "equal_opportunity_difference")
    assert eo["value"] is not None
    assert eo["ci_low"] <= eo["value"] <= eo["ci_high"]
    output = " ".join(weeks["runs"][-1]["result"].output.split())
    assert "window 28 without labels yet (estimated)" in output
    assert "(estimated) " in output
    assert "shown apart, not counted" in output


def test_monitor_show_lists_the_estimated_windows_of_nights_without_labels(weeks: dict[str, Any]) -> None:
    """After label-free nights only, ``monitor show`` shows each night's estimated window, marked so."""
    text, as_json = weeks["shown"]["text"], weeks["shown"]["json"]
    assert text.exit_code == 0, text.output
    assert as_json.exit_code == 0, as_json.output
    series = {(s["metric"], s["slicing"]): s["nights"] for s in json.loads(as_json.output)["series"]}
    nights = series[("equal_opportunity_difference", "race")]
    assert [n["night"] for n in nights] == [(FIRST_NIGHT + timedelta(days=7 * w)).isoformat() for w in range(WEEKS)]
    assert all(n["estimated_window"] and n["estimated"] for n in nights)
    last = weeks["runs"][-1]["document"]
    month = next(w for w in last["estimated_windows"] if w["window"] == "28")
    recorded = next(r for r in month["results"] if r["metric"] == "equal_opportunity_difference")
    assert nights[-1]["value"] == recorded["value"]  # the window the night's document holds
    parity = series[("demographic_parity_difference", "race")]
    assert all(n["estimated_window"] and not n["estimated"] for n in parity)  # measured, on rows without labels
    output = " ".join(text.output.split())
    assert "no labels yet" in output
    assert "(estimated)" in output


def test_the_explore_nights_page_marks_the_estimated_windows(weeks: dict[str, Any]) -> None:
    from tasks.serve.pages import nights_context

    nights = {n["night"]: n["rows"] for n in nights_context(weeks["trail"], "compas")["nights"]}
    second = nights[(FIRST_NIGHT + timedelta(days=7)).isoformat()]  # never re-run with labels
    estimated = [r for r in second if r["window"] == "28 (no labels yet)"]
    assert {r["metric"] for r in estimated if r["estimated"]} == {
        "equal_opportunity_difference",
        "predictive_parity_difference",
    }
    assert any(r["metric"] == "demographic_parity_difference" and not r["estimated"] for r in estimated)
    from tasks.serve.explore_app import _environment

    html = (
        _environment().get_template("nights.html.j2").render(trail="trail", **nights_context(weeks["trail"], "compas"))
    )
    assert "28 (no labels yet)" in html
    assert " (estimated)</td>" in html


def test_report_only_estimates_never_decide_the_night(weeks: dict[str, Any]) -> None:
    for run in weeks["runs"]:
        for window in run["document"]["estimated_windows"]:
            measured_fails = [r for r in window["results"] if not r["estimated"] and r["status"] == "fail"]
            assert window["n_failed"] == len(measured_fails)  # failing estimates are not the window's failures
            assert window["verdict"] == ("fail" if measured_fails else window["verdict"])


def test_late_labels_check_every_estimate_and_keep_the_coverage(weeks: dict[str, Any]) -> None:
    labelled = weeks["labelled"]
    assert labelled["result"].exit_code in (0, 1), labelled["result"].output
    document = labelled["document"]
    assert [p["supersedes"] for p in document["stored"]] == [2] + [1] * (WEEKS - 1)  # each week with its labels
    checks = document["estimate_checks"]
    assert len(checks["checks"]) == WEEKS
    assert checks["n_checks"] == WEEKS
    rows = [r for c in checks["checks"] for r in c["results"]]
    assert rows
    assert all(r["covered"] == (r["ci_low"] <= r["measured"] <= r["ci_high"]) for r in rows)
    cover = checks["coverage"]
    assert cover["n_compared"] == len(rows)
    assert cover["n_covered"] == sum(r["covered"] for r in rows)
    assert cover["ci_low"] <= cover["rate"] <= cover["ci_high"]
    assert document["estimated_windows"] == []  # every period has its labels now
    recorded = label_estimate_rows(weeks["trail"], "compas")
    assert [r["kind"] for r in recorded].count("estimate") == WEEKS
    assert [r["kind"] for r in recorded].count("check") == WEEKS
    assert verify(weeks["trail"])["ok"]
    output = " ".join(labelled["result"].output.split())
    assert f"running coverage of the estimates: {cover['n_covered']}/{cover['n_compared']}" in output


def test_a_period_with_half_its_labels_waits_for_the_rest(weeks: dict[str, Any]) -> None:
    half = weeks["half"]
    assert half["result"].exit_code in (0, 1), half["result"].output
    (stored,) = half["document"]["stored"]
    assert stored["labelled_rows"] < stored["rows"]  # half the week's people have their label
    assert half["document"]["estimate_checks"] is None  # not checked against other people's values


def test_the_pdf_shows_estimated_results_and_the_coverage(weeks: dict[str, Any]) -> None:
    out = weeks["folder"] / "out"
    unlabelled, labelled = weeks["runs"][-1]["document"], weeks["labelled"]["document"]
    pdfs = [next(out.glob(f"monitoring_*_{d['run_id']}_{d['night']}.pdf")) for d in (unlabelled, labelled)]
    text = _pdf_text(pdfs[0])
    assert "Rows without labels yet: estimated results" in text
    assert "EST. " in text
    assert "estimated" in text
    checked = _pdf_text(pdfs[-1])
    assert "Earlier estimates against their labels" in checked
    assert "Running coverage of the estimates" in checked


def _pdf_text(pdf: Path) -> str:
    return " ".join(
        subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout.split()
    )
