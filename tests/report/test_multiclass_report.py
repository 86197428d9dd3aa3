"""The multiclass report: the frame around the multiclass pages, from a real document (COMPAS tiers, engine only),
rendered to HTML and PDF; small groups suppressed in every table and chart."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import fairgate
from fairgate.engine.multiclass.audit import adjudicate_multiclass, count_multiclass, slicings_multiclass
from fairgate.report import build_view
from tasks.inputs.io import demo_rows
from tasks.render.report import build_report_files, render_charts, render_html

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "fairgate" / "policies" / "compas_multiclass.yaml"
SQL = REPO / "sql"
COMPAS_CSV = REPO / ".." / "shared" / "data" / "compas" / "compas-scores-two-years.csv"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """The demo's audit document, computed by the engine from the demo's own SQL over the real file."""
    rows = demo_rows(COMPAS_CSV, "demo_multiclass")
    policy = fairgate.Policy.from_yaml(POLICY.read_text().replace("n_bootstrap: 1000", "n_bootstrap: 200"))
    cube = count_multiclass(rows, policy)
    return adjudicate_multiclass(cube, slicings_multiclass(cube, policy), policy).to_dict()


def test_view_has_the_frame_and_the_multiclass_pages(document: dict[str, Any]) -> None:
    view = build_view(document, min_cell_size=1)  # every matrix shown (at 10 most race groups hold a small cell)
    assert view.task == "multiclass"
    assert view.verdict == "fail"
    pages = view.kind_pages
    assert pages.classes == ["Low", "Medium", "High"]
    race = next(p for p in pages.pages if p.key == "race")
    assert len(race.confusions) == 6  # every race group, each a 3 x 3 heat table
    black = next(c for c in race.confusions if c.group_label == "African-American")
    assert black.rows[0][0].text == "990"  # truly Low and given Low
    assert max(cell.shade for row in black.rows for cell in row) == 1.0
    assert [t.rate for t in race.tables] == ["selection_rate", "true_positive_rate", "false_positive_rate"]
    # The adverse decision's rules read in the adverse classes' words.
    labels = view.scorecard.metric_labels
    assert "Disparate impact ratio, adverse or not" in labels
    assert any("not given Medium or High" in label for label in labels)
    assert not view.sections  # no binary slicing tables
    assert not view.roc


def test_the_frame_has_the_model_card_and_names_what_the_policy_leaves_out(document: dict[str, Any]) -> None:
    card = build_view(document, min_cell_size=10).frame.model_card  # the core frame every kind carries
    assert card is not None
    assert card.stated == []
    assert card.missing_note.startswith("The policy has no model_card section")
    assert {kv.key for kv in card.facts} >= {"Evaluation window", "Rows evaluated", "Policy SHA-256", "Verdict"}


def test_small_groups_are_suppressed_everywhere(document: dict[str, Any]) -> None:
    """Asian (32 people) and Native American (18) fall under a minimum cell size of 40; groups with a confusion
    cell from 1 to 39 (or withheld with one) withhold their matrix and the classes it makes a count of, alike in
    every table and chart."""
    view = build_view(document, min_cell_size=40)
    race = next(p for p in view.kind_pages.pages if p.key == "race")
    hidden = {c.group_label for c in race.confusions if c.suppressed}
    assert hidden >= {"Asian", "Native American"}
    assert all(c.n_text == "suppressed" for c in race.confusions if c.group_label in ("Asian", "Native American"))
    for confusion in race.confusions:
        if confusion.suppressed:
            assert confusion.rows == []
    # A withheld matrix may keep some classes' rates (class by class); Asian and Native American keep none.
    for table in race.tables:
        for row in table.rows:
            if row.group_label in ("Asian", "Native American"):
                assert row.suppressed
            if row.group_label not in hidden:
                assert "–" not in row.cells
            assert row.suppressed == (set(row.cells) == {"–"})
    assert race.chart is not None
    withheld = {row.group_label for row in race.tables[0].rows if row.suppressed}
    assert not withheld & set(race.chart.groups)
    for rate in race.chart.values:
        for label, values in zip(race.chart.groups, rate, strict=True):
            assert not all(v is None for v in values), label
    html = render_html(view, render_charts(view))
    assert ">32<" not in html  # the suppressed size is not printed


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils")
def test_pdf_renders_offline_and_reads_as_a_multiclass_report(document: dict[str, Any], tmp_path: Path) -> None:
    paths = build_report_files(document, out_dir=tmp_path, formats=("pdf",))
    pdf = paths["pdf"]
    assert pdf is not None
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "Classes and their summaries" in text
    assert "Confusion matrices" in text
    assert "Predicted share per class" in text
    assert "Glossary" in text
    pages = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    n_pages = int(next(line.split()[-1] for line in pages.splitlines() if line.startswith("Pages:")))
    assert 4 <= n_pages <= 10


def test_each_class_has_its_base_rates_against_the_rest_and_the_impossibility_note(document: dict[str, Any]) -> None:
    """The binary audit's base-rate test and note, per class (one against the rest) of each single attribute."""
    classes = document["multiclass"]["classes"]
    entries = document["diagnostics"]["base_rates"]
    assert sorted((e["outcome_class"], e["slicing"][0]) for e in entries) == sorted(
        (c, a) for c in classes for a in ("race", "sex")
    )
    # Each group's base rate of class c is the multiclass block's own one-vs-rest base rate of c.
    own = {
        (tuple(g["slicing"]), tuple(sorted(g["group"].items())), c): g["rates"]["base_rate"][i]["value"]
        for g in document["multiclass"]["groups"]
        for i, c in enumerate(classes)
    }
    for entry in entries:
        for g in entry["groups"]:
            key = (tuple(entry["slicing"]), tuple(sorted(g["group"].items())), entry["outcome_class"])
            assert g["base_rate"] == pytest.approx(own[key])
    # COMPAS: the tiers' base rates differ by race, so the impossibility note applies, per class.
    race_high = next(e for e in entries if e["slicing"] == ["race"] and e["outcome_class"] == "High")
    assert race_high["differ"]
    assert "cannot all hold" in race_high["impossibility"]
    view = build_view(document, min_cell_size=1)
    assert "race, class High vs rest" in {kv.key for kv in view.base_rates}
    assert any(note.slicing_label == "race, class High vs rest" for note in view.impossibility)


def test_an_intersection_table_keeps_the_withheld_groups_a_failure_names_and_the_largest(
    document: dict[str, Any],
) -> None:
    """At k = 10 every race × sex group's rates are withheld: the PDF's tables still list the groups the failures
    name and the largest (their rates "–"), never an empty table under its headings."""
    view = build_view(document, min_cell_size=10)
    page = next(p for p in view.kind_pages.pages if p.key == "race × sex")
    shown = [row.group_label for row in page.tables[0].pdf_rows]
    named = {
        f"{r['worst_group']['race']} · {r['worst_group']['sex']}"
        for r in document["results"]
        if r["slicing"] == ["race", "sex"] and r["status"] == "fail" and r.get("worst_group")
    }
    assert named
    assert named <= set(shown)
    largest = max(
        (g for g in document["multiclass"]["groups"] if g["slicing"] == ["race", "sex"]), key=lambda g: g["n"]
    )
    assert f"{largest['group']['race']} · {largest['group']['sex']}" in shown


def test_the_rate_charts_legend_names_only_the_groups_drawn(document: dict[str, Any]) -> None:
    """A group with every class withheld has no bars: the legend does not list it as if it had. A shown group
    has a bar for each class whose rates its table prints, and none for a class it withholds."""
    view = build_view(document, min_cell_size=10)
    race = next(p for p in view.kind_pages.pages if p.key == "race")
    withheld = [row.group_label for row in race.tables[0].rows if row.suppressed]
    assert withheld  # at k = 10 some race groups' rates are withheld (the test can fail)
    assert not set(withheld) & set(race.chart.groups)
    rows = {row.group_label: row for row in race.tables[0].rows}
    for label, values in zip(race.chart.groups, race.chart.values[0], strict=True):
        assert any(v is not None for v in values)
        assert [v is None for v in values] == [c == "–" for c in rows[label].cells]
