"""The monitoring report renders a monitoring document: alerts marked, numbers as the document has them.

The document is built from the drift simulation on the night a step change is first alerted
(``monitoring_doc.py``); when mon-flow's document model is present it is validated against it first.
"""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path
from typing import Any

import pytest
from monitoring_doc import monitoring_document
from pdf_words import code_form_metric_names, pdf_text

from fairgate.report.format import fmt, fmt_p, fmt_signed
from fairgate.report.monitoring import build_monitoring_view
from tasks.render.monitor_report import monitoring_charts, render_monitoring_html, render_monitoring_report


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    doc = monitoring_document()
    try:
        from fairgate.document.monitoring import MonitoringDocument
    except ImportError:  # before mon-flow's branch is merged
        return doc
    return MonitoringDocument.model_validate(doc).model_dump(mode="json")


def _text(page: str) -> str:
    return html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_view_carries_the_alert_and_the_documents_numbers(document: dict[str, Any]) -> None:
    view = build_monitoring_view(document)
    assert len(document["alerts"]) >= 1
    alert = document["alerts"][0]
    assert view.alerts[0].group == alert["group"]
    assert view.alerts[0].change_text == fmt_signed(alert["change"])  # the reports' one formatter
    panel = next(p for p in view.night_panels if p.key == f"{alert['metric']}:{alert['slicing']}")
    assert panel.alerted
    assert view.night_panels[0] is panel  # alerted panels first
    series = next(s for s in panel.series if s.stream == alert["stream"])
    assert series.nights[-1] == document["night"]
    assert len(series.nights) - 1 in series.alert_nights
    assert series.load[-1] >= 1.0
    stream = next(s for s in document["detector"]["streams"] if s["stream"] == alert["stream"])
    assert series.estimate == stream["estimate"]
    assert view.stream_rows[0].alerted
    # Every window result is a table row, with its value as the document has it.
    results = [(w, r) for w in document["windows"] for r in w["results"]]
    assert len(view.window_rows) == len(results)
    for row, (_, r) in zip(view.window_rows, results, strict=True):
        assert row.value_text == fmt(r["value"])
        assert row.p_text == fmt_p(r["p_value"])
        assert row.significant == bool(r["significant"])
    assert any(r["p_value"] is not None for _, r in results)
    charts = monitoring_charts(view)
    assert {f"change:{panel.key}", f"load:{panel.key}", "window:legend"} <= set(charts)


def test_html_marks_the_alert_and_shows_the_values(document: dict[str, Any]) -> None:
    view = build_monitoring_view(document)
    page = render_monitoring_html(view, {})
    text = _text(page)
    alert = document["alerts"][0]
    assert "DRIFT" in text
    assert f"{alert['group']} alert" in text
    assert alert["detail"] in text
    first = document["windows"][0]["results"][0]
    assert f"{first['value']:.3f}" in text
    assert f"{first['baseline_value']:.3f}" in text
    assert document["headline"]["text"] in text  # the night's headline under the badge
    assert "Drift: 1 new alert" in text or "new alerts" in text
    quiet = {**document, "alerts": [], "episodes": [], "headline": None, "exit_code": 0}
    quiet_view = build_monitoring_view(quiet)
    quiet_text = _text(render_monitoring_html(quiet_view, {}))
    assert "Drift: no new alert" in quiet_text
    assert "Alerts tonight" not in quiet_text
    assert "DRIFT" not in quiet_view.badge


def test_no_green_all_clear_while_a_window_fails_or_an_episode_is_open(document: dict[str, Any]) -> None:
    passing = [dict(w, verdict="pass", n_failed=0) for w in document["windows"]]
    failing = [dict(passing[0], verdict="fail", n_failed=2), *passing[1:]]
    night = {**document, "windows": failing, "alerts": [], "episodes": [], "headline": None}
    view = build_monitoring_view(night)
    assert view.badge.startswith("FAIL")
    assert view.badge_class == "fail"
    assert "Windows: FAIL (2 results: 2 in 7 days)" in view.sentence
    episode = {
        "stream": "s",
        "metric": "equal_opportunity_difference",
        "slicing": "race",
        "group": "r2",
        "component": "true_positive_rate",
        "direction": "down",
        "since": "2026-02-10",
        "change": -0.05,
        "last_night": "2026-02-20",
        "confirmations": 3,
    }
    ongoing = build_monitoring_view({**night, "windows": passing, "episodes": [episode]})
    assert ongoing.badge == "DRIFT ONGOING"
    assert "Ongoing: equal opportunity difference by race (r2, true positive rate down) since 2026-02-10" in (
        ongoing.sentence
    )
    assert "alerted on 2026-02-10, still open on 2026-02-20" in _text(render_monitoring_html(ongoing, {}))
    clear = build_monitoring_view({**night, "windows": passing})
    assert clear.badge == "PASS"


def test_report_files_render_offline(document: dict[str, Any], tmp_path: Path) -> None:
    paths = render_monitoring_report(document, tmp_path, ["html", "pdf"])
    assert set(paths) == {"html", "pdf"}
    assert paths["pdf"].read_bytes().startswith(b"%PDF")
    assert code_form_metric_names(pdf_text(paths["pdf"])) == []  # alerts, episodes and tables name metrics in words
    page = paths["html"].read_text()
    assert "data:image/svg+xml;base64," in page
    assert "http://" not in page.replace("http://www.w3.org", "")
    assert render_monitoring_report(document, tmp_path / "none", ["json"]) == {}


def test_left_out_streams_are_grouped_by_reason_with_the_date_once(document: dict[str, Any]) -> None:
    """One line per reason, the groups listed on it, the night said once (not repeated on every stream)."""
    why = (
        "the group has too few people tonight for true positive rate (needs {n}: at least 5 expected events of each "
        "kind at the baseline rate 0.{n})"
    )
    groups = ["Asian", "Native American", "Other", "Hispanic"]
    skipped = [
        f"2014-01-20: equal_opportunity_difference · race · {g} vs White · true_positive_rate: {why.format(n=40 + i)}"
        for i, g in enumerate(groups)
    ]
    skipped.append("2014-01-20: disparate_impact_ratio · race · Asian vs White · selection_rate: " + why[:40])
    night = {**document, "detector": {**(document.get("detector") or {}), "skipped": skipped}}
    view = build_monitoring_view(night)
    assert view.skipped.n_streams == 5
    assert len(view.skipped.lines) == 2  # two reasons
    text = _text(render_monitoring_html(view, {}))
    section = text[text.index("Left out on 2014-01-20 (5 stream(s))") :]
    assert section.count("2014-01-20") == 1
    assert section.count("too few people tonight for true positive rate (") == 1
    for i, group in enumerate(groups):
        assert f"Equal opportunity difference · race · {group} vs White (needs {40 + i})" in section


def test_the_night_builds_the_frame_every_report_type_shows(document: dict[str, Any]) -> None:
    """The monitoring view's frame is the core's ReportFrame: the night's badge and sentence as its decision,
    a group's size once per window (the simulated document publishes none: tests/monitoring/test_monitor_compas.py
    checks them on a PDF), the glossary ending on the one word for a withheld size."""
    from fairgate.report.model import SUPPRESSED_ROW, ReportFrame

    view = build_monitoring_view(document)
    frame = view.frame
    assert isinstance(frame, ReportFrame)
    assert (frame.decision, frame.why) == (view.badge, [view.sentence])
    assert frame.run_id == document["run_id"]
    assert len(frame.size_columns) == len(document["windows"])
    assert all(len(r.sizes) == len(frame.size_columns) for r in frame.size_rows)
    assert frame.glossary[-1] == SUPPRESSED_ROW
    assert frame.what_to_do.startswith(("What to do:", "Nothing to act on"))
