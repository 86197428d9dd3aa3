"""The regression report pages: the view model from a real regression document, its charts, and suppression.

The document is the law-school demo's audit (``fairgate demo --task regression``'s inputs, computed in-process).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fairgate.document.document import AuditDocument
from fairgate.engine.regression.audit import adjudicate_regression, count_regression, slicings_regression
from fairgate.mitigation.advice import recommend
from fairgate.policy.core import Policy
from fairgate.report.published import published_document
from fairgate.report.regression import TABLE_COLUMNS, regression_view
from fairgate.report.suppress import Suppression
from tasks.inputs.demo_law import fit_and_predict, law_rows
from tasks.render.regression_charts import regression_charts

PACKAGE = Path(__file__).resolve().parents[2] / "fairgate"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    policy = Policy.from_yaml((PACKAGE / "policies" / "law_regression.yaml").read_text())
    audited, _ = fit_and_predict(law_rows(PACKAGE / "data" / "law" / "law_data.csv"))
    rows = audited.rename({"zfya": "y_true"}).select("id", "race", "sex", "y_true", "y_pred")
    counts = count_regression(rows, policy)
    return adjudicate_regression(counts, slicings_regression(counts, policy), policy).to_dict()


def _suppression(document: dict[str, Any], k: int) -> tuple[AuditDocument, Suppression]:
    typed = AuditDocument.model_validate(document)
    return typed, Suppression.of(typed.groups, k, typed.n_rows)


def test_view_has_one_section_per_slicing_with_the_group_table(document: dict[str, Any]) -> None:
    typed, suppression = _suppression(document, 10)
    view = regression_view(typed, suppression)
    assert view is not None
    assert [s.key for s in view.sections] == ["race", "sex", "race × sex"]
    race = view.sections[0]
    assert race.failed
    assert [r.metric for r in race.results] == [r["metric"] for r in document["results"] if r["slicing"] == ["race"]]
    assert race.column_labels == [label for _, label in TABLE_COLUMNS]
    black = next(g for g in race.groups if g.label == "Black")
    value = next(g for g in document["groups"] if g["slicing"] == ["race"] and g["group"] == {"race": "Black"})
    assert black.cells[2].value == pytest.approx(value["metrics"]["mean_residual"]["value"], abs=1e-4)
    assert black.cells[2].ci  # its interval is shown
    assert next(g for g in race.groups if g.is_reference).label == "White"
    assert race.ks_mark is not None
    assert race.ks_mark[1] == "Black"


def test_small_groups_are_suppressed_in_tables_and_plots(document: dict[str, Any]) -> None:
    typed, suppression = _suppression(document, 40)  # Amerindian has 35 people in the audited half
    view = regression_view(typed, suppression)
    assert view is not None
    race = view.sections[0]
    amerindian = next(g for g in race.groups if g.label == "Amerindian")
    assert amerindian.suppressed
    assert all(c.text == "" for c in amerindian.cells)
    drawn = {s.label for s in race.residuals} | {s.label for s in race.cdfs} | {d.label for d in race.distances}
    assert "Amerindian" not in drawn
    # Residual deciles with fewer people than the cell size are not drawn.
    white = next(s for s in race.residuals if s.label == "White")
    assert len(white.x) == 10


def test_charts_are_svg_per_slicing(document: dict[str, Any]) -> None:
    typed, suppression = _suppression(document, 10)
    view = regression_view(typed, suppression)
    assert view is not None
    charts = regression_charts(view)
    assert set(charts) == {f"{kind}:{key}" for kind in ("residuals", "cdf") for key in ("race", "sex", "race × sex")}
    assert all(svg is not None and svg.startswith("<svg") for svg in charts.values())
    assert "largest KS gap" in (charts["cdf:race"] or "")


def test_suppressed_json_hides_the_regression_block_of_small_groups(document: dict[str, Any]) -> None:
    published = published_document(document, 40, "suppressed")
    AuditDocument.model_validate(published)  # still the schema
    block = published["regression"]
    hidden = [g for g in block["groups"] if g.get("suppressed")]
    assert any(g["group"] == {"race": "Amerindian"} for g in hidden)
    assert all(g["binned"] == [] and g["cdf"] == [] for g in hidden)
    gone = [d for d in block["distances"] if d["group"] == {"race": "Amerindian"}]
    assert gone
    assert all(d["ks_distance"] is None and d["suppressed"] for d in gone)
    full = published_document(document, 40, "full")["regression"]
    assert not any(g.get("suppressed") for g in full["groups"])


def test_a_weighted_audit_says_so_above_its_pages(document: dict[str, Any]) -> None:
    """Under weights the counts are weighted sums and n is Kish's: the kind's pages must say so, as binary ones do."""
    from fairgate.report.build import KIND_WEIGHTED_NOTE, build_view
    from tasks.render.report import render_html

    assert build_view(document).kind_weighted_note == ""
    assert "weighted sums" not in render_html(build_view(document))
    weighted = build_view({**document, "weighted": True})
    assert weighted.kind_weighted_note == KIND_WEIGHTED_NOTE
    assert "Kish effective size" in render_html(weighted)


def test_coded_sex_reads_as_the_policys_labels_in_every_table_and_chart(document: dict[str, Any]) -> None:
    """The law data codes sex 1 / 2; the demo policy's labels: map prints them as words (codes kept beside)."""
    from fairgate.report import build_view

    view = build_view(document, min_cell_size=10)
    pages = view.kind_pages
    sex = next(s for s in pages.sections if s.key == "sex")
    assert {g.label for g in sex.groups} == {"Female (1)", "Male (2)"}
    assert {s.label for s in sex.cdfs} == {"Female (1)", "Male (2)"}
    both = next(s for s in pages.sections if s.key == "race × sex")
    assert all(g.label.endswith(("· Female (1)", "· Male (2)")) for g in both.groups)
    assert {g["group"]["sex"] for g in document["groups"] if g["slicing"] == ["sex"]} == {"1", "2"}  # JSON: codes
    outside = regression_view(*_suppression(document, 10))  # without the policy's labels in force: the codes
    assert outside is not None
    assert {g.label for g in next(s for s in outside.sections if s.key == "sex").groups} == {"1", "2"}


def test_the_mean_outcome_rows_name_coded_groups_by_the_policys_labels(document: dict[str, Any]) -> None:
    """The mean outcome per group beside the impossibility note: "Female (1) 0.052", never the bare code "1"."""
    from fairgate.report import build_view

    view = build_view(document, min_cell_size=10)
    (sex,) = [row.value for row in view.base_rates if row.key == "sex"]
    groups = [part.rsplit(" ", 1)[0] for part in re.sub(r" \((?:differ|no) signific[^)]*\)$", "", sex).split("; ")]
    assert groups == ["Female (1)", "Male (2)"], sex


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils (pdftotext) not installed")
def test_every_interval_on_page_one_contains_the_json_interval(document: dict[str, Any], tmp_path: Path) -> None:
    """Regression intervals include negative ends: each printed one contains a JSON interval, widened by at most
    its last printed digit, and reads "to" (never "-0.33--0.28") when an end is negative."""
    from tasks.render.report import build_report_files

    pdf = build_report_files(document, out_dir=tmp_path, formats=["pdf"], min_cell_size=10)["pdf"]
    assert pdf is not None
    pages = [
        " ".join(subprocess.run(["pdftotext", "-f", str(p), "-l", str(p), str(pdf), "-"], check=True,
                                capture_output=True, text=True).stdout.split())
        for p in (1, 2)
    ]  # fmt: skip
    assert not re.search(r"\d-\d", pages[1].replace("LSAT-UGPA", ""))  # no hyphen between numbers on the tables page
    printed = re.findall(r"(−?\d+\.\d+)(?:–| to )(−?\d+\.\d+)", pages[0])
    assert printed
    ends = [(r["ci_low"], r["ci_high"]) for r in document["results"] if r["ci_low"] is not None]
    for a, b in printed:
        low, high = float(a.replace("−", "-")), float(b.replace("−", "-"))
        digits = len(a.split(".")[1])
        assert any(low <= x and y <= high and x - low < 10**-digits and high - y < 10**-digits for x, y in ends), (a, b)
    assert re.search(r"−\d+\.\d+ to −\d+\.\d+", pages[1]), "the group table prints a negative interval with 'to'"


def test_thresholds_and_gaps_carry_the_outcomes_unit_where_the_metric_is_in_it(document: dict[str, Any]) -> None:
    """A gap in mean residual is in the outcome's unit (the policy names it), a KS distance in none."""
    typed, suppression = _suppression(document, 10)
    view = regression_view(typed, suppression)
    assert view is not None
    rows = {r.metric: r for r in view.sections[0].results}
    assert rows["mean_residual_difference"].threshold_text == "≤ 0.200 SD of ZFYA"
    assert rows["mean_residual_difference"].gap_text.endswith(" SD of ZFYA")
    assert rows["worst_group_root_mean_squared_error"].threshold_text == "≤ 1.000 SD of ZFYA"
    assert rows["ks_distance"].threshold_text == "≤ 0.200"  # a share of the distribution: no unit
    unnamed = {**document, "policy": {**document["policy"], "regression": None}}
    typed, suppression = _suppression(unnamed, 10)
    plain = regression_view(typed, suppression)
    assert plain is not None
    assert plain.sections[0].results[0].threshold_text.endswith(" outcome units")
    # Page 1's "would catch ... or more" and "what this audit could detect" figures are in the same unit.
    from fairgate.report import build_view

    page_one = {r.metric: r for r in build_view(document, min_cell_size=10).undecided}
    wrmse = page_one["worst_group_root_mean_squared_error"].detectable_text
    assert re.fullmatch(r"\d+\.\d{3} SD of ZFYA or more", wrmse), wrmse


def test_the_residual_chart_draws_bands_only_for_a_few_groups(document: dict[str, Any]) -> None:
    """Eight bands under one legend overprint each other: with more than three groups the lines go without."""
    typed, suppression = _suppression(document, 10)
    view = regression_view(typed, suppression)
    assert view is not None
    race, sex = view.sections[0], view.sections[1]
    assert len(race.residuals) > 3
    assert not race.banded
    assert sex.banded


def test_a_recommendations_value_and_threshold_carry_the_outcomes_unit(document: dict[str, Any]) -> None:
    """The recommendation's reason says "0.703 SD of ZFYA against a threshold of 0.2 SD of ZFYA" (one unit rule)."""
    reasons = [rec["reason"] for rec in recommend(document) if rec.get("metric") == "mean_residual_difference"]
    assert reasons
    assert all(re.search(r"\d SD of ZFYA against a threshold of [\d.]+ SD of ZFYA\)", r) for r in reasons), reasons
    ks = [rec["reason"] for rec in recommend(document) if rec.get("metric", "").startswith("ks_distance")]
    assert ks  # the law demo fails KS distance on race and race x sex
    assert all("SD of ZFYA" not in r for r in ks)  # a distance between distributions has no unit
