"""The report's reviewer blocks (issue 11): counts per group, heatmaps, calibration captions, reproduce, HTML aids."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import polars as pl

from fairgate.report import build_view
from tasks.render.report import render_html


def test_counts_per_group_are_the_confusion_counts_of_the_data(
    compas_doc: dict[str, Any], compas_rows: pl.DataFrame
) -> None:
    # Favourable outcome 0 (not reoffending, not flagged): TP = flagged low-risk and did not reoffend.
    frame = compas_rows.with_columns(
        (pl.col("two_year_recid") == 0).alias("actual"), (pl.col("y_pred") == 0).alias("predicted")
    )
    view = build_view(compas_doc, min_cell_size=1)  # every count printed
    race = next(s for s in view.sections if s.attributes == ["race"])
    assert race.count_labels == ["TP", "FP", "TN", "FN"]
    suppressed = next(s for s in build_view(compas_doc, min_cell_size=10).sections if s.attributes == ["race"])
    for row, shown in zip(race.groups, suppressed.groups, strict=True):
        people = frame.filter(pl.col("race") == row.group["race"])
        expected = [
            people.filter(pl.col("predicted") & pl.col("actual")).height,
            people.filter(pl.col("predicted") & ~pl.col("actual")).height,
            people.filter(~pl.col("predicted") & ~pl.col("actual")).height,
            people.filter(~pl.col("predicted") & pl.col("actual")).height,
        ]
        assert row.counts == [f"{n:,}" for n in expected], row.label
        # At 10 a count is printed as it is, or not at all.
        assert all(s in ("suppressed", c) for s, c in zip(shown.counts, row.counts, strict=True)), row.label


def test_counts_are_hidden_exactly_where_the_rates_are(compas_doc: dict[str, Any]) -> None:
    """A group shows its rates with all four counts, or withholds its rates; then it prints only the counts the
    suppression publishes, none from 1 to k-1 (a rate with the size is a count, a count alone is not a rate)."""
    view = build_view(compas_doc, min_cell_size=10)  # every race group but the two largest holds a small count
    shown = hidden = 0
    for section in view.sections:
        for row in section.groups:
            if row.suppressed:
                hidden += 1
                printed = [float(c.replace(",", "")) for c in row.counts if c != "suppressed"]
                assert not [v for v in printed if 0 < v < 10], row.label
                assert all(c.text == "suppressed" for c in row.cells)
            else:
                shown += 1
                assert len(row.counts) == 4
                assert "suppressed" not in row.counts
    assert hidden > 2
    assert shown >= 10  # the largest groups keep their rates


def test_no_interval_rounds_to_a_point(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc)
    checked = 0
    for section in view.sections:
        for row in section.groups:
            for c in row.cells:
                if c.ci and c.ci_low is not None and c.ci_high is not None and c.ci_low < c.ci_high:
                    low, high = c.ci.split("–")
                    assert low != high, (section.key, row.label, c)
                    checked += 1
    assert checked > 100


def test_heatmaps_show_one_rate_the_failing_component_with_a_legend(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc)
    assert len(view.heatmaps) == 3
    assert len({h.base_metric for h in view.heatmaps}) == 1  # one rate (and one 0-1 scale) in every section
    base = view.heatmaps[0].base_metric
    worst = max((r for r in view.failures if len(r.slicing) > 1), key=lambda r: (r.status == "fail", r.severity))
    # The rate shown is the component with the widest spread of the most severe intersectional failure.
    section = next(s for s in view.sections if s.attributes == worst.slicing)
    spreads = {}
    for rate in section.metric_names:
        col = section.metric_names.index(rate)
        values = [g.cells[col].value for g in section.groups if g.sufficient and not g.suppressed]
        defined = [v for v in values if v is not None]
        spreads[rate] = max(defined) - min(defined)
    assert base in spreads
    components = [
        m
        for m in spreads
        if m in {"true_positive_rate", "false_positive_rate", "selection_rate", "positive_predictive_value"}
    ]
    assert spreads[base] == max(spreads[m] for m in components if m in _bases(worst.metric) or m == base)
    for heatmap in view.heatmaps:
        caption = view.chart_captions[f"heatmap:{heatmap.key}"]
        assert heatmap.metric_label in caption
        assert "grey ·: rates withheld" in caption  # the map prints · in a suppressed cell (charts.heatmap_chart)
        assert "grey –: undefined" in caption
        marked = sum(sum(row) for row in heatmap.excluded)
        section = next(s for s in view.sections if s.key == heatmap.key)
        assert marked == section.n_insufficient
        if marked:
            assert "*: below the minimum group size" in caption


def _bases(metric: str) -> set[str]:
    from fairgate.report.format import base_metrics

    return set(base_metrics(metric))


def test_no_group_silently_disappears_from_the_curves(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc, min_cell_size=10)
    for curves in view.calibration:
        section = next(s for s in view.sections if s.key == curves.key)
        drawn = {c.label for c in curves.curves}
        caption = view.chart_captions.get(f"calibration:{curves.key}", "")
        for row in section.groups:
            if row.suppressed:
                assert "suppressed group" in caption
            else:
                assert row.label in drawn or row.label in caption, (curves.key, row.label)
    race = next(c for c in view.calibration if c.key == "race")
    caption = view.chart_captions["calibration:race"]
    # Native American (counts 5, 1, 9, 3): its rates are withheld, so no curve, and the caption counts it.
    assert "Native American" not in {c.label for c in race.curves}
    assert "suppressed group(s) (rates withheld" in caption


def test_the_pdf_curves_block_notes_run_across_the_page_once_per_attribute(compas_doc: dict[str, Any]) -> None:
    """Under the ROC and calibration rows, not in a third-of-a-page caption per chart: each left-out group once
    (both charts leave it out), the score-bin rule once for all the calibration charts."""
    view = build_view(compas_doc, min_cell_size=10)
    notes = " ".join(view.curves_notes)
    assert notes.count("score bins with fewer than 10 people are not drawn") == 1
    race = next(c for c in view.calibration if c.key == "race")
    assert race.omitted
    for text in race.omitted:
        assert notes.count(text) == 1, notes
    assert any(line.startswith("race: ") for line in view.curves_notes)


def test_the_reproduce_block_pins_inputs_policy_and_window(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc)
    assert view.reproduce_command.startswith("fairgate audit --policy POLICY.yaml")
    assert "--predictions compas.csv" in view.reproduce_command
    assert "--model compas --model-version northpointe-2013" in view.reproduce_command
    facts = {kv.key: kv.value for kv in view.trail + view.reproduce}
    assert facts["Policy SHA-256"] == compas_doc["policy_sha256"]
    assert facts["Predictions SHA-256"].startswith("0" * 64)
    assert facts["Data window"].startswith("none: the inputs have no timestamp column")
    assert (
        facts["Seed and resamples"] == f"seed {compas_doc['seed']}, {compas_doc['n_bootstrap']:,} bootstrap replicates"
    )


def test_the_report_prints_the_recorded_command_else_the_reconstruction(compas_doc: dict[str, Any]) -> None:
    reconstructed = build_view(compas_doc)
    assert reconstructed.reproduce_command.startswith("fairgate audit --policy POLICY.yaml")
    assert not reconstructed.reproduce_recorded
    ran = "fairgate audit --policy p.yaml --predictions 'my preds.csv' --attributes a.csv --quiet"
    recorded = build_view(compas_doc | {"command_line": ran})
    assert recorded.reproduce_recorded
    assert recorded.reproduce_command.splitlines()[0] == "fairgate audit \\"
    assert "    --predictions 'my preds.csv' \\" in recorded.reproduce_command.splitlines()
    assert shlex.split(recorded.reproduce_command.replace("\\\n", " ")) == shlex.split(ran)
    assert recorded.reproduce == reconstructed.reproduce  # hashes, window and seed pin the inputs either way


def test_html_has_a_contents_list_whose_links_all_resolve_and_sortable_tables(compas_report: dict[str, Path]) -> None:
    html = compas_report["html"].read_text()
    links = re.findall(r'<nav class="toc".*?</nav>', html, flags=re.S)[0]
    targets = re.findall(r'href="#([^"]+)"', links)
    ids = set(re.findall(r'id="([^"]+)"', html))
    assert len(targets) >= 15
    assert set(targets) <= ids, set(targets) - ids
    assert html.count('<table class="groups') == html.count('sortable">') + html.count('sortable keep">')
    assert "table.sortable" in html  # the inline script finds its tables


def test_the_pdf_variant_has_no_contents_list_and_no_script(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc)
    html = render_html(view, {}, full_tables=False)
    assert '<nav class="toc"' not in html
    assert "<script" not in html
    assert "sortable" not in re.sub(r"<style>.*?</style>", "", html, flags=re.S)
