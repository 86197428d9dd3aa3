"""The trend section: earlier runs read back from a real trail, the view, the charts and the rendered report."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from fairgate.monitoring import History, build_trend
from fairgate.report import build_view
from tasks.render.report import build_report_files, render_charts, render_html
from tasks.store import model_history, record_run, verify


def _record(path: Path, document: dict[str, Any], sha: str) -> dict[str, Any]:
    inputs = {"predictions": {"source": "p.csv", "sha256": sha, "rows": document["n_rows"]}}
    return record_run.fn(
        path,
        {**document, "inputs": inputs},
        policy_text="fairness_checker: {}",
        inputs=inputs,
        validation={"success": True},
        join_report={"matched": document["n_rows"]},
        cube_cells=[],
    )


def _run(document: dict[str, Any], run_id: str, *, model: str = "compas", shift: float = 0.0) -> dict[str, Any]:
    """A copy of the COMPAS document as another run (its judged values moved by ``shift``)."""
    run = copy.deepcopy(document)
    run["run_id"], run["model"] = run_id, {"name": model, "version": f"v-{run_id}"}
    for result in run["results"]:
        for key in ("value", "ci_low", "ci_high"):
            if result[key] is not None:
                result[key] = max(0.0, result[key] + shift)
    return run


@pytest.fixture
def trail(tmp_path: Path, compas_doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three runs of compas and one of another model, recorded by the pipeline's own writer."""
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY", raising=False)
    path = tmp_path / "trail.duckdb"
    _record(path, _run(compas_doc, "c1"), "a")
    _record(path, _run(compas_doc, "other", model="credit"), "b")
    _record(path, _run(compas_doc, "c2", shift=0.01), "c")
    _record(path, _run(compas_doc, "c3", shift=0.02), "d")
    return path


def test_history_reads_the_models_last_runs_oldest_first_with_their_standard_errors(
    trail: Path, compas_doc: dict[str, Any]
) -> None:
    history = model_history(trail, "compas", 2)
    assert history.note is None
    assert [(r.run_id, r.seq) for r in history.runs] == [("c2", 3), ("c3", 4)]  # not the other model's run 2
    assert history.runs[-1].input_sha256 == {"predictions": "d"}
    assert history.runs[-1].confidence_level == compas_doc["confidence_level"]
    first = history.runs[0].results[0]
    expected = compas_doc["results"][0]
    assert (first.metric, list(first.slicing)) == (expected["metric"], expected["slicing"])
    assert first.value == pytest.approx(expected["value"] + 0.01)
    assert first.standard_error == pytest.approx(expected["standard_error"])  # read from the stored document
    assert len(history.runs[0].results) == len(compas_doc["results"])
    assert [r.run_id for r in model_history(trail, "compas", 10, exclude_run="c3").runs] == ["c1", "c2"]
    assert verify(trail)["ok"]  # reading changes nothing; the documents with trend and SEs still verify


def test_history_of_a_missing_or_unusable_trail_is_empty_with_a_note(tmp_path: Path) -> None:
    missing = model_history(tmp_path / "none.duckdb", "compas", 5)
    assert (missing.runs, missing.note) == ((), None)  # a first audit: nothing to say but that
    not_a_trail = tmp_path / "notes.duckdb"
    not_a_trail.write_text("not a database")
    text = model_history(not_a_trail, "compas", 5)
    assert text.runs == ()
    assert "could not be read" in (text.note or "")
    assert "not a DuckDB database" in (text.note or "")
    foreign = tmp_path / "foreign.duckdb"
    duckdb.connect(str(foreign)).execute("create table t (x int)").close()
    assert "without the trail's tables" in (model_history(foreign, "compas", 5).note or "")
    folder = model_history(tmp_path, "compas", 5)
    assert "directory" in (folder.note or "")


def test_history_of_a_damaged_trail_is_empty_with_a_note(trail: Path) -> None:
    with duckdb.connect(str(trail)) as con:
        con.execute("drop table metric_results")
    damaged = model_history(trail, "compas", 5)
    assert damaged.runs == ()
    assert "damaged" in (damaged.note or "")


def test_history_of_an_old_trail_without_standard_errors_falls_back_to_the_intervals(
    tmp_path: Path, compas_doc: dict[str, Any]
) -> None:
    path = tmp_path / "old.duckdb"
    old = _run(compas_doc, "old")
    old["schema_version"] = "1.1"
    for result in old["results"]:
        result.pop("standard_error", None)
    _record(path, old, "x")
    (run,) = model_history(path, "compas", 5).runs
    assert all(r.standard_error is None for r in run.results)
    current = _run(compas_doc, "new", shift=0.05)
    current["inputs"] = {"predictions": {"source": "p.csv", "sha256": "y", "rows": 1}}
    trend = build_trend(current, model_history(path, "compas", 5), max_runs=10, alpha=0.05)
    tested = [s["change"] for s in trend["series"] if s["change"]["tested"]]
    assert tested
    assert all(c["standard_error"] > 0 for c in tested)


def _html(document: dict[str, Any]) -> tuple[str, dict[str, str]]:
    view = build_view(document)
    charts = render_charts(view)
    return render_html(view, charts), charts


def test_a_first_run_gets_one_sentence_and_no_chart(compas_doc: dict[str, Any]) -> None:
    document = {**compas_doc, "trend": build_trend(compas_doc, History(), max_runs=10, alpha=0.05)}
    html, charts = _html(document)
    assert not [key for key in charts if key.startswith("trend:")]
    section = html[
        html.index('<section class="trend"') : html.index("</section>", html.index('<section class="trend"'))
    ]
    assert "first audit of model compas in this trail" in section
    assert "<img" not in section
    assert "Changes since the previous run" not in section


def test_a_later_run_shows_a_chart_per_metric_and_its_changes(trail: Path, compas_doc: dict[str, Any]) -> None:
    current = _run(compas_doc, "c4", shift=0.2)  # a large rise of every disparity
    current["inputs"] = {"predictions": {"source": "p.csv", "sha256": "e", "rows": 1}}
    current["trend"] = build_trend(current, model_history(trail, "compas", 9), max_runs=10, alpha=0.05)
    view = build_view(current)
    assert view.trend is not None
    metrics = {r["metric"] for r in compas_doc["results"]}
    assert {p.key for p in view.trend.panels} == metrics
    assert all(p.run_labels == ["#1", "#3", "#4", "now"] for p in view.trend.panels)
    html, charts = _html(current)
    assert {key for key in charts if key.startswith("trend:")} == {f"trend:{m}" for m in metrics} | {"trend:legend"}
    section = html[html.index('<section class="trend"') :]
    assert "4 audits of model compas in this trail" in section
    assert "significant, worse" in section  # a 0.2 rise is far beyond the runs' standard errors
    assert current["trend"]["n_significant"] > 0
    # The earlier runs' table names the runs by their trail seq, and the current one as "this run".
    assert re.search(r"<td>#4</td>.*<td>v-c3</td>", section, re.S)


@pytest.mark.slow
def test_the_pdf_renders_the_trend(tmp_path: Path, trail: Path, compas_doc: dict[str, Any]) -> None:
    import subprocess

    current = _run(compas_doc, "c4", shift=0.05)
    current["inputs"] = {"predictions": {"source": "p.csv", "sha256": "e", "rows": 1}}
    current["trend"] = build_trend(current, model_history(trail, "compas", 9), max_runs=10, alpha=0.05)
    paths = build_report_files(current, out_dir=tmp_path, formats=["pdf"])
    assert paths["pdf"] is not None
    text = subprocess.run(["pdftotext", "-layout", str(paths["pdf"]), "-"], capture_output=True, text=True).stdout
    assert "Trend against earlier runs" in text
    assert "Changes since the previous run" in text
    assert "higher is better" in text  # the disparate impact chart's title is text in the PDF (searchable)
