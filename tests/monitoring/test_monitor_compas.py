"""Real COMPAS weeks through ``fairgate monitor run``: four weekly nights after a deployment audit, the last with
every African-American person flagged. That night's windows fail the policy, so the run exits 1 and page 1 of
the PDF says the windows fail (not a green "no drift": the detector cannot alert at about 90 rows a week, and the
document names that rule with the volume it would need). ``--exit-on alerts`` restores alerts-only."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from monitor_helpers import (
    COMPAS_CSV,
    FIRST_NIGHT,
    monitor_command,
    record_deployment_audit,
    run_weeks,
    write_night,
)
from pdf_words import (
    code_form_metric_names,
    document_numbers,
    page_count,
    page_text,
    pdf_text,
    unexplained_numbers,
)

from cli import app

NIGHTS = 4
POLICY = """\
fairness_checker:
  sensitive_attributes:
    - {name: race, values: [African-American, Caucasian, Hispanic, Other, Asian, Native American],
       reference_group: Caucasian}
    - {name: sex, values: [Male, Female], reference_group: Male}
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: equal_opportunity_difference, threshold: 0.1}
  intersectional_analysis: {enabled: false, min_group_size: 20}
  statistics: {n_bootstrap: 200, seed: 3}
  reporting: {format: [json, pdf]}
  monitoring:
    period: week
    windows: [7, 28, since_deployment]
    alerts:
      - {metric: equal_opportunity_difference, slicing: [race], min_change: 0.1, horizon_nights: 52}
"""


def _compas() -> pl.DataFrame:
    frame = pl.from_arrow(
        duckdb.sql(
            "select id, two_year_recid as y_true, decile_score / 10.0 as score, "
            "cast(score_text in ('Medium', 'High') as integer) as y_pred, race, sex, "
            "cast(compas_screening_date as timestamp) as timestamp "
            f"from read_csv('{COMPAS_CSV}')"
        ).to_arrow_table()
    )
    assert isinstance(frame, pl.DataFrame)
    return frame


@pytest.fixture(scope="module")
def compas_nights(tmp_path_factory: pytest.TempPathFactory, runner: Any, prefect_server: str) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("compas_monitor")
    (folder / "policy.yaml").write_text(POLICY)
    trail = folder / "trail.duckdb"
    rows = _compas()
    start = datetime.combine(FIRST_NIGHT, datetime.min.time())
    deployed = rows.filter(pl.col("timestamp") < start).select("y_true", "y_pred", "score", "race", "sex")
    record_deployment_audit(deployed, folder / "policy.yaml", trail)
    base = monitor_command(folder / "policy.yaml", folder / "out", trail)

    def write(night: pl.DataFrame, week: int) -> list[str]:
        if week == NIGHTS - 1:  # the model flags every African-American person this week
            night = night.with_columns(
                pl.when(pl.col("race") == "African-American").then(1).otherwise(pl.col("y_pred")).alias("y_pred")
            )
        return write_night(night, folder / f"week{week + 1}", ["race", "sex"])

    return {"folder": folder, "runs": run_weeks(runner, base, rows, NIGHTS, write), "base": base}


def test_the_flagged_week_fails_its_windows_and_exits_1(compas_nights: dict[str, Any]) -> None:
    last = compas_nights["runs"][-1]
    document = last["document"]
    assert 70 <= last["rows"] <= 110  # about 90 people a week, as in the field
    assert last["result"].exit_code == 1, last["result"].output
    assert document["alerts"] == []  # the detector cannot alert at this volume ...
    assert document["exit_code"] == 1  # ... but the windows fail the policy
    week = next(w for w in document["windows"] if w["window"] == "7")
    assert week["verdict"] == "fail"
    failed = {r["metric"] for r in week["results"] if r["status"] == "fail" and r["slicing"] == ["race"]}
    assert {"disparate_impact_ratio", "demographic_parity_difference"} <= failed
    head = document["headline"]
    assert head["windows"] == "fail"
    assert head["drift"] == "no_new_alert"
    assert head["badge"].startswith("FAIL")
    assert head["text"].startswith("Windows: FAIL (")
    assert f"{week['n_failed']} in 7 days" in head["text"]
    assert "Drift: no new alert" in head["text"]
    output = " ".join(last["result"].output.split())
    assert "Windows: FAIL" in output
    assert "no drift" not in output.lower()


def test_page_one_of_the_pdf_says_the_windows_fail(compas_nights: dict[str, Any]) -> None:
    document = compas_nights["runs"][-1]["document"]
    (pdf,) = (compas_nights["folder"] / "out").glob(f"monitoring_*_{document['night']}.pdf")
    command = ["pdftotext", "-f", "1", "-l", "1", str(pdf), "-"]
    page = subprocess.run(command, capture_output=True, text=True, check=True)
    text = " ".join(page.stdout.split())
    assert "Windows: FAIL" in text
    assert "NO DRIFT" not in text
    assert "PASS" not in text.split("Windows:")[0]  # the badge above the headline is not a green all-clear
    assert code_form_metric_names(pdf_text(pdf)) == []  # `fairgate monitor run`'s PDF names metrics in words
    assert "Sign-off" in pdf_text(pdf)


def test_the_underpowered_rule_is_named_with_the_volume_it_needs(compas_nights: dict[str, Any]) -> None:
    for run in compas_nights["runs"]:  # every night, from the first
        (rule,) = run["document"]["underpowered"]
        assert rule["metric"] == "equal_opportunity_difference"
        assert rule["slicing"] == ["race"]
        assert rule["detection_probability"] < 0.5
        assert "Under-powered drift rule: Equal opportunity difference on race" in rule["detail"]
        assert "rows a week" in rule["detail"]
        assert rule["rows_needed"] is None or rule["rows_needed"] > rule["rows_per_period"]
    first, last = compas_nights["runs"][0]["document"], compas_nights["runs"][-1]["document"]
    assert "watches no stream yet" in first["underpowered"][0]["detail"]  # too few Caucasians with a label yet
    (rule,) = last["underpowered"]
    assert rule["stream"].startswith("equal_opportunity_difference · race · African-American vs Caucasian")
    assert rule["predicted_delay"] is None or rule["predicted_delay"] > rule["horizon_nights"]
    output = " ".join(compas_nights["runs"][-1]["result"].output.split())
    assert "WEAK RULE Under-powered drift rule" in output


def test_the_underpowered_rule_is_named_at_load(compas_nights: dict[str, Any]) -> None:
    # before any night is computed, at the only volume known (no expected_rows_per_period: the deployment
    # audit's 5,000 rows a week), the rule is too weak: the baseline's own error blocks it over 52 weeks
    for run in compas_nights["runs"]:
        warning = " ".join(run["result"].stderr.split())
        assert "warning: under-powered drift rule: equal_opportunity_difference on race" in warning
        assert "the deployment audit's row count" in warning
        assert "no weekly volume suffices" in warning
        assert run["result"].stdout.count("warning:") == 0  # stderr only: --json output stays JSON


def test_every_status_shows_the_interval_that_decided_it(compas_nights: dict[str, Any]) -> None:
    for run in compas_nights["runs"]:
        for window in run["document"]["windows"]:
            for r in window["results"]:
                if r["status"] not in ("pass", "fail", "inconclusive"):
                    continue
                low, high, limit = r["decision_ci_low"], r["decision_ci_high"], r["threshold"]
                beyond = low > limit if r["direction"] == "lower_is_better" else high < limit
                within = high <= limit + 1e-9 if r["direction"] == "lower_is_better" else low >= limit - 1e-9
                assert (r["status"] == "fail") == beyond, r
                if r["status"] == "pass":
                    assert within, r
                assert r["status_reason"]


def test_windows_that_coincide_are_marked(compas_nights: dict[str, Any]) -> None:
    first = {w["window"]: w for w in compas_nights["runs"][0]["document"]["windows"]}
    assert first["28"]["same_as"] == "7"  # one week stored: 7 days, 28 days and since deployment are one sum
    assert first["since_deployment"]["same_as"] == "7"
    last = {w["window"]: w for w in compas_nights["runs"][-1]["document"]["windows"]}
    assert last["7"]["same_as"] is None
    assert last["since_deployment"]["same_as"] == "28"  # four weeks: 28 days is everything since deployment


def test_exit_on_alerts_restores_alerts_only(compas_nights: dict[str, Any], runner: Any) -> None:
    args = [*compas_nights["base"], *compas_nights["runs"][-1]["args"], "--exit-on", "alerts", "--quiet"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output  # no new alert: the failing windows do not count
    bad = runner.invoke(app, [*args[:-3], "--exit-on", "sometimes"])
    assert bad.exit_code == 2


def _piped(args: list[str], cwd: Path, columns: str | None) -> subprocess.CompletedProcess[str]:
    """The installed command with stdout a pipe (``| cat``, a CI log), COLUMNS as given or unset."""
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    env |= {"COLUMNS": columns} if columns is not None else {}
    command = [str(Path(sys.executable).parent / "fairgate"), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


METRICS = ("disparate_impact_ratio", "demographic_parity_difference", "equal_opportunity_difference")


@pytest.mark.slow
def test_monitor_run_piped_at_80_columns_shows_metrics_whole(compas_nights: dict[str, Any]) -> None:
    args = [*compas_nights["base"], *compas_nights["runs"][-1]["args"], "--exit-on", "alerts"]
    done = _piped(args, compas_nights["folder"], "80")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "…" not in done.stdout
    for metric in METRICS:  # each on the line of its result, with its slicing: never "m... d..." or one per line
        assert any(metric in line and "race" in line for line in lines), done.stdout


@pytest.mark.parametrize("columns", [None, "80"])
def test_monitor_show_piped_shows_every_night_and_the_alert_column(
    compas_nights: dict[str, Any], columns: str | None
) -> None:
    trail = str(compas_nights["folder"] / "trail.duckdb")
    args = ["monitor", "show", "--model", "compas", "--trail", trail, "--window", "7"]
    done = _piped(args, compas_nights["folder"], columns)
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout
    nights = [run["document"]["night"] for run in compas_nights["runs"]]
    lines = done.stdout.splitlines()
    headers = [i for i, line in enumerate(lines) if line.split()[:2] == ["night", "value"]]
    assert len(headers) >= len(METRICS), done.stdout  # one table per (metric, slicing)
    for i in headers:
        assert lines[i].split()[-1] == "alert", lines[i]  # the alert column is kept
        rows = lines[i + 2 : i + 2 + len(nights)]  # under the header's rule: one row per night, whole
        assert [row.split()[0] for row in rows] == nights, "\n".join(lines[i : i + 8])
    shown = _piped([*args, "--json"], compas_nights["folder"], columns)
    series = json.loads(shown.stdout)["series"]
    assert {s["metric"] for s in series} >= set(METRICS)
    assert all([n["night"] for n in s["nights"]] == nights for s in series)


def _last_pdf(compas_nights: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    document = compas_nights["runs"][-1]["document"]
    (pdf,) = (compas_nights["folder"] / "out").glob(f"monitoring_*_{document['run_id']}_{document['night']}.pdf")
    return pdf, document


def _page_one_numbers(pdf: Path, document: dict[str, Any]) -> tuple[str, list[str]]:
    """Page 1's text with the counts that are not data checked in context and removed, and the numbers left
    that the document does not account for."""
    text = page_text(pdf)
    text = re.sub(r"The windows' values, charted.*?Each point is a window's value", "", text)  # chart axes
    pages = page_count(pdf)
    assert f"Page 1 of {pages}" in text
    text = text.replace(f"Page 1 of {pages}", "")
    withheld = sum(g["n"] is None for w in document["windows"] if not w["same_as"] for g in w["groups"])
    if withheld:
        assert f'{withheld} size(s) here are marked "suppressed"' in text
        text = text.replace(f"{withheld} size(s)", "")
    for window in document["windows"]:
        undecided = [r for r in window["results"] if r["status"] in ("inconclusive", "insufficient_data")]
        if undecided and not window["same_as"]:
            label = "since deployment" if window["window"] == "since_deployment" else f"{window['window']} days"
            assert f"{label}: {len(undecided)} result(s) neither pass nor fail" in text, label
            text = text.replace(f"{label}: {len(undecided)} result(s)", "")
    skipped = len(document["detector"]["skipped"])
    assert f"left out {skipped} stream(s)" in text
    text = text.replace(f"left out {skipped} stream(s)", "")
    results = [r for w in document["windows"] for r in w["results"]]
    listed = [r for r in results if r["significant"] or r["status"] == "fail"]
    if m := re.search(r"This PDF lists the (\d+) window results .*? all (\d+) are in", text):
        assert (int(m.group(1)), int(m.group(2))) == (len(listed), len(results))
        text = text.replace(m.group(0), "")
    return text, unexplained_numbers(text, document)


def test_every_number_on_page_one_of_the_monitoring_report_comes_from_the_json(compas_nights: dict[str, Any]) -> None:
    pdf, document = _last_pdf(compas_nights)
    text, unexplained = _page_one_numbers(pdf, document)
    assert unexplained == [], f"numbers on page 1 not found in the JSON document: {unexplained}"
    # The frame: what to do, what was not judged, the group sizes and the model card are on page 1.
    for words in ("What to do:", "Not judged:", "group sizes per window", "Model card", "Small-cell rule"):
        assert words in text, words
    week = next(w for w in document["windows"] if w["window"] == "7")
    table = page_text(pdf, layout=True)  # a table row's cells on one line
    for group in week["groups"]:
        name = group["group"]["race" if group["slicing"] == ["race"] else "sex"]
        row = re.search(rf"(?:race|sex) {re.escape(name)} (\S+)", table)
        assert row is not None, name
        assert row.group(1) == ("suppressed" if group["n"] is None else f"{group['n']:,}"), name


def test_the_page_one_check_fails_on_a_wrong_number(compas_nights: dict[str, Any]) -> None:
    """The check can fail: the same page against the document with one size or one value altered names it."""
    pdf, document = _last_pdf(compas_nights)
    caught = []
    for window in document["windows"]:
        for key, items, field in (("groups", window["groups"], "n"), ("results", window["results"], "value")):
            for i, item in enumerate(items):
                if item[field] is None:
                    continue
                printed = f"{item[field]:,}" if field == "n" else f"{item[field]:.3f}"
                altered = json.loads(json.dumps(document))
                for other in altered["windows"]:  # a window marked same_as repeats the numbers: altered alike
                    if other["window"] == window["window"] or other["same_as"] == window["window"]:
                        other[key][i][field] = item[field] + (1000 if field == "n" else 0.0707)
                        other[key][i].pop("status_reason", None)  # the gate's words repeat the value
                if printed in document_numbers(altered) or printed not in page_text(pdf):
                    continue  # the same text is printed from another number too, or not on page 1
                _, unexplained = _page_one_numbers(pdf, altered)
                assert printed in unexplained, (key, item)
                caught.append(key)
    assert {"groups", "results"} <= set(caught), caught


def test_group_sizes_under_k_are_never_printed_and_none_follows_from_the_others(compas_nights: dict[str, Any]) -> None:
    """Every window's published sizes: none from 1 to k-1, and a withheld one is not the total minus the rest."""
    k = compas_nights["runs"][-1]["document"]["min_cell_size"]
    for run in compas_nights["runs"]:
        for window in run["document"]["windows"]:
            for slicing in {tuple(g["slicing"]) for g in window["groups"]}:
                sizes = [g["n"] for g in window["groups"] if tuple(g["slicing"]) == slicing]
                assert not any(n is not None and 0 < n < k for n in sizes), (window["window"], slicing)
                assert sizes.count(None) != 1, (window["window"], slicing)  # one hidden = rows minus the rest
    assert any(g["n"] is None for r in compas_nights["runs"] for w in r["document"]["windows"] for g in w["groups"])


def test_the_night_records_the_command_that_ran_it_and_the_report_prints_it(compas_nights: dict[str, Any]) -> None:
    pdf, document = _last_pdf(compas_nights)
    command = document["command_line"]
    assert command.startswith("fairgate monitor run --policy ")
    assert f"--trail {compas_nights['folder'] / 'trail.duckdb'}" in command
    assert "fairgate monitor run \\" in pdf_text(pdf)  # the reproduce block, one option a line
    assert document["model_card"] is None  # the policy has no model_card section: the report names what is missing
    assert "The policy has no model_card section" in pdf_text(pdf)
