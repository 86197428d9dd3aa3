"""The ranking report pages: the view model from a real ranking document, its charts, the PDF, and suppression.

The document is the law-school demo's audit (``fairgate demo --task ranking``'s inputs, computed in-process).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from fairgate.document.document import AuditDocument
from fairgate.engine.ranking.audit import adjudicate_ranking, count_ranking, slicings_ranking
from fairgate.policy.core import Policy
from fairgate.report import build_view
from fairgate.report.published import published_document
from fairgate.report.ranking import ranking_pages
from fairgate.report.suppress import Suppression
from tasks.inputs.demo_ranking import write_ranking_demo_inputs
from tasks.render.ranking_charts import ranking_charts
from tasks.render.report import render_charts, render_html

PACKAGE = Path(__file__).resolve().parents[2] / "fairgate"


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    policy = Policy.from_yaml((PACKAGE / "policies" / "law_ranking.yaml").read_text())
    files = write_ranking_demo_inputs(PACKAGE / "data" / "law" / "law_data.csv", tmp_path_factory.mktemp("law"))
    rows = (
        pl.read_parquet(files["predictions"])
        .join(pl.read_parquet(files["labels"]), on="id")
        .join(pl.read_parquet(files["attributes"]), on="id")
    )
    cube = count_ranking(rows, policy)
    return adjudicate_ranking(cube, slicings_ranking(cube, policy), policy).to_dict()


def _typed(document: dict[str, Any], k: int) -> tuple[AuditDocument, Suppression]:
    typed = AuditDocument.model_validate(document)
    return typed, Suppression.of(typed.groups, k, typed.n_rows)


def test_pages_per_slicing_with_group_rows_and_charts(document: dict[str, Any]) -> None:
    typed, suppression = _typed(document, 10)
    pages = ranking_pages(typed, suppression)
    assert [p.key for p in pages.pages] == ["race", "sex", "race × sex"]
    race = pages.pages[0]
    black = next(r for r in race.rows if r.group_label == "Black")
    value = next(g for g in document["groups"] if g["slicing"] == ["race"] and g["group"] == {"race": "Black"})
    assert black.top_k_rate.startswith(f"{value['metrics']['top_10_rate']['value']:.3f} [")
    assert race.exposure_chart is not None
    assert len(race.exposure_chart.groups) == 8
    assert race.share_chart is not None
    assert race.share_chart.cutoffs == [10, 5]
    assert "278 lists" in pages.settings_text
    assert pages.slicings == ["race", "sex", "race × sex"]
    judged = next(s for s in pages.summaries if s.metric_label == "Top k rate ratio (k = 10)")
    assert judged.cells[0].worst == "Black"
    assert judged.cells[0].value_text.startswith("0.038 [")
    # Puertorican applicants never reach a top 5 here: the ratio is 0, reported without an interval, with a note.
    top5 = next(s for s in pages.summaries if s.metric_label == "Top k rate ratio (k = 5)").cells[0]
    assert top5.value_text == "0.000"
    assert top5.note is not None
    assert "no interval" in pages.notes[top5.note - 1]
    charts = ranking_charts(pages)
    assert {"rank-exposure:race", "rank-share:race", "rank-exposure:sex"} <= set(charts)
    assert all(svg is not None and svg.startswith("<svg") for svg in charts.values())


def test_small_groups_are_drawn_again_on_a_scale_that_shows_them(document: dict[str, Any]) -> None:
    """On the 0-to-1 scale of White's 83% a group of 2% of the items lies flat on the axis: the groups under
    10% of the items get a second row of curves and a second panel of bars whose top fits their largest value."""
    import re
    from html import unescape

    from tasks.render.ranking_charts import scale_top

    typed, suppression = _typed(document, 10)
    pages = ranking_pages(typed, suppression)
    race, sex = pages.pages[0], pages.pages[1]
    charts = ranking_charts(pages)
    axes = {key: len(re.findall(r'<g id="axes_\d+"', svg or "")) for key, svg in charts.items()}
    assert (axes["rank-exposure:race"], axes["rank-share:race"]) == (4, 2)  # large groups, then the small ones
    assert (axes["rank-exposure:sex"], axes["rank-share:sex"]) == (2, 1)  # 44% and 56%: one scale shows both
    assert race.exposure_chart is not None
    small = [
        g
        for g, share in zip(race.exposure_chart.groups, race.exposure_chart.population_share, strict=True)
        if share is not None and share < 0.1
    ]
    assert "Black" in small
    assert "White" not in small
    assert all(name in race.chart_note for name in small)
    assert "own scale" in race.chart_note
    assert "own scale" not in sex.chart_note
    cumulative = [
        v
        for g, name in enumerate(race.exposure_chart.groups)
        if name in small
        for v in race.exposure_chart.cumulative_exposure[g]
    ]
    assert scale_top(cumulative) <= 0.1  # the small groups' exposure (at most about 6%) fills a tenth, not the axis
    html = render_html(build_view(document), charts)
    assert race.chart_note.split(" (")[0] in unescape(html)


def test_small_groups_are_suppressed_in_tables_and_charts(document: dict[str, Any]) -> None:
    typed, suppression = _typed(document, 60)  # Amerindian: under 60 applicants in the audited half
    pages = ranking_pages(typed, suppression)
    race = pages.pages[0]
    amerindian = next(r for r in race.rows if r.group_label == "Amerindian")
    assert amerindian.suppressed
    assert amerindian.top_k_rate == "–"
    assert race.exposure_chart is not None
    assert "Amerindian" not in race.exposure_chart.groups
    published = published_document(document, 60, "suppressed")
    AuditDocument.model_validate(published)
    hidden = [c for c in published["ranking"]["curves"] if c["group"] == {"race": "Amerindian"}]
    assert hidden
    assert all(c["suppressed"] and c["items"] == [] for c in hidden)


def test_html_report_has_the_ranking_pages_and_the_judged_results(document: dict[str, Any]) -> None:
    view = build_view(document)
    html = render_html(view, render_charts(view))
    assert "Ranking: exposure and the top of the lists" in html
    assert "Exposure along the ranking by race" in html
    assert 'id="rank-race-sex"' in html
    assert "Top k rate ratio" in html
    assert "Traceback" not in html


def test_the_pdf_table_and_charts_show_the_largest_groups_and_every_group_named_in_a_failure(
    document: dict[str, Any],
) -> None:
    """One selection rule: race × sex's PDF rows and charts hold the failures' groups and the largest groups."""
    typed, suppression = _typed(document, 10)
    page = next(p for p in ranking_pages(typed, suppression).pages if p.key == "race × sex")
    groups = [g for g in document["groups"] if g["slicing"] == ["race", "sex"]]
    assert len(groups) > 8, "the intersection must hold more groups than the PDF lists for this test to bite"
    labels = {r.group_label for r in page.pdf_rows}
    largest = sorted(groups, key=lambda g: -(g["n"] or 0))[:2]
    for g in largest:
        assert f"{g['group']['race']} · {g['group']['sex']}" in labels
    named = set()
    for r in document["results"]:
        if r["slicing"] == ["race", "sex"] and r["status"] == "fail":
            named |= {f"{x['race']} · {x['sex']}" for x in (r["worst_group"], r["best_group"]) if x}
    assert named, "the demo fails on race × sex"
    assert named <= labels
    assert page.exposure_chart is not None
    assert page.share_chart is not None
    assert named <= set(page.exposure_chart.groups)
    assert named <= set(page.share_chart.groups)
    assert [r.group_label for r in page.pdf_rows] == page.share_chart.groups  # the table and charts agree
    assert page.n_hidden_in_pdf == len(groups) - len(page.pdf_rows)


def test_summary_notes_name_groups_in_words_and_never_a_suppressed_one(document: dict[str, Any]) -> None:
    typed, suppression = _typed(document, 10)
    notes = ranking_pages(typed, suppression).notes
    assert notes
    assert not any(mark in note for note in notes for mark in ("{", "}", "[", "'")), notes  # no Python reprs
    assert any("Puertorican" in note for note in notes)
    typed, suppression = _typed(document, 60)  # Puertorican: under 60 applicants in the audited half
    hidden = ranking_pages(typed, suppression)
    assert not any("Puertorican" in note for note in hidden.notes), hidden.notes
    cells = [c for row in hidden.summaries for c in row.cells]
    named = [name for c in cells for name in (c.worst, c.best) if "Puertorican" in name]
    assert all(name.endswith("(rates withheld)") for name in named), named  # named, its figures withheld


def test_a_failed_warning_check_is_badged_as_a_warning_not_a_failure(document: dict[str, Any]) -> None:
    """A check of warning severity that did not pass (groups under min_group_size) must not read FAIL beside
    the verdict; a critical one still does."""
    import dataclasses

    from fairgate.report.model import CheckRow

    warning = CheckRow(
        "aligned rows", "sensitive attribute groups", "column values to be between", "warning", False, ""
    )
    critical = dataclasses.replace(warning, column="id", expectation="column values to be unique", severity="critical")
    view = dataclasses.replace(build_view(document), validation_failures=[warning, critical])
    html = render_html(view)
    rows = html[html.index('<table class="checks') :].split("</tr>")
    (warned,) = [r for r in rows if "sensitive attribute groups" in r]
    (failed,) = [r for r in rows if "to be unique" in r]
    assert "WARNING</span>" in warned
    assert "FAIL</span>" not in warned
    assert "FAIL</span>" in failed
