"""The view model: rounding, suppression of small cells everywhere, escaping-neutral labels, summaries."""

from __future__ import annotations

import copy
import re
from typing import Any

import pydantic
import pytest
from report_docgen import synthetic_doc, synthetic_document

from fairgate.document import AuditResult
from fairgate.report import build_view, email_summary, flatten, metric_label

ATTRS = {"sex": ["M", "F"], "race": ["a", "b", "c", "tiny"], "age": ["young", "mid", "old"]}


@pytest.fixture
def doc() -> dict[str, Any]:
    return synthetic_doc(ATTRS, tiny=("tiny",), seed=3)


def _all_text(view: Any) -> str:
    return repr(view)


def test_small_groups_are_suppressed_in_tables_curves_and_breakdowns(doc: dict[str, Any]) -> None:
    view = build_view(doc, min_cell_size=10)
    race = next(s for s in view.sections if s.attributes == ["race"])
    tiny = next(g for g in race.groups if g.group == {"race": "tiny"})
    assert tiny.suppressed
    assert tiny.n is None
    assert tiny.n_text == "suppressed"  # one label for every hidden group
    assert all(c.value is None and c.text == "suppressed" for c in tiny.cells)
    # Every intersection containing the tiny group is suppressed too (n = 6 there).
    with_tiny = [(s, g) for s in view.sections for g in s.groups if "tiny" in g.group.values()]
    assert len(with_tiny) > 1  # the group itself and its intersections
    for section, g in with_tiny:
        assert g.suppressed, (section.key, g.label)
    for curves in view.roc + view.calibration:
        assert all("tiny" not in c.label for c in curves.curves)
    breakdown = next(b for b in view.breakdowns if b.attribute == "race")
    assert breakdown.counts[breakdown.labels.index("tiny")] is None
    tiny_cells = 0
    for heatmap in view.heatmaps:
        for i, row in enumerate(heatmap.row_labels):
            for j, col in enumerate(heatmap.col_labels):
                if "tiny" in (row, *col.split(" · ")):
                    assert heatmap.suppressed[i][j]
                    assert heatmap.values[i][j] is None
                    tiny_cells += 1
    assert tiny_cells > 0


def test_secondary_suppression_hides_the_next_smallest_group(doc: dict[str, Any]) -> None:
    view = build_view(doc, min_cell_size=10)
    race = next(s for s in view.sections if s.attributes == ["race"])
    hidden = [g for g in race.groups if g.n is None]
    # One primary (tiny) is recoverable as total minus the rest, so one more group's size is hidden with it
    # (other groups may have their rates withheld, a result's partner or a small count, their sizes shown).
    assert len(hidden) == 2
    secondary = next(g for g in hidden if g.group != {"race": "tiny"})
    n_secondary = next(x["n"] for x in doc["groups"] if x["slicing"] == ["race"] and x["group"] == secondary.group)
    # The complement is the smallest shown group that is not a side of a judged race result (withholding a
    # side would withhold its partner's rates too).
    sides = [
        g for r in doc["results"] if r["slicing"] == ["race"] for g in (r.get("worst_group"), r.get("best_group")) if g
    ]
    others = [x["n"] for x in doc["groups"] if x["slicing"] == ["race"] and x["group"] not in sides and x["n"] >= 10]
    assert sides
    assert n_secondary == min(others)
    assert secondary.n_text == "suppressed"


def test_min_cell_size_is_configurable(doc: dict[str, Any]) -> None:
    strict = build_view(doc, min_cell_size=10**9)
    assert all(g.suppressed for s in strict.sections if s.attributes for g in s.groups)
    loose = build_view(doc, min_cell_size=1)
    # k = 1 hides no size (the synthetic rates give fractional counts under 1, which the count rule still hides).
    assert all(g.n is not None for s in loose.sections for g in s.groups)
    assert sum(g.suppressed for s in loose.sections for g in s.groups) < sum(
        g.suppressed for s in build_view(doc, min_cell_size=10).sections for g in s.groups
    )


def test_suppressed_worst_group_is_named_with_the_one_mark_and_no_size(doc: dict[str, Any]) -> None:
    result = next(r for r in doc["results"] if r["slicing"] == ["race"])
    result["worst_group"] = {"race": "tiny"}
    result["status"] = "fail"
    view = build_view(doc, min_cell_size=10)
    row = next(r for r in view.failures if r.slicing == ["race"] and r.metric == result["metric"])
    assert row.worst_group == "tiny (rates withheld)"  # which group, not its figures
    reasons = " ".join(a.reason for a in view.actions)
    tiny = next(g for g in doc["groups"] if g["group"] == {"race": "tiny"})
    assert f"({tiny['n']:g})" not in reasons


def test_numbers_are_rounded_and_undefined_values_stay_undefined(doc: dict[str, Any]) -> None:
    group = next(g for g in doc["groups"] if g["slicing"] == ["sex"])
    group["metrics"]["selection_rate"] = {"value": 0.123456789, "ci_low": 0.1, "ci_high": 0.15}
    group["metrics"]["accuracy"] = {"value": None, "ci_low": None, "ci_high": None}
    view = build_view(doc)
    sex = next(s for s in view.sections if s.attributes == ["sex"])
    row = next(g for g in sex.groups if g.group == group["group"])
    cell = row.cells[sex.metric_names.index("selection_rate")]
    assert (cell.text, cell.value, cell.ci) == ("0.123", 0.1235, "0.10–0.15")
    assert row.cells[sex.metric_names.index("accuracy")].text == "–"


def test_failures_sorted_critical_first_then_by_severity(doc: dict[str, Any]) -> None:
    view = build_view(doc)
    assert view.verdict == doc["verdict"]
    flags = [(not r.critical, -r.severity) for r in view.failures]
    assert flags == sorted(flags)
    assert {r.metric for r in view.headline_failures} == {r.metric for r in view.failures}
    assert len(view.headline_failures) == len({r.metric for r in view.failures})


def test_scorecard_has_one_cell_per_result(doc: dict[str, Any]) -> None:
    view = build_view(doc)
    card = view.scorecard
    assert sum(c.status != "none" for row in card.rows for c in row.cells) == len(doc["results"])
    assert sum(c.status == "fail" for row in card.rows for c in row.cells) == view.n_failed


def test_gap_text_says_how_far_past_the_threshold() -> None:
    doc = synthetic_doc({"g": ["x", "y"]}, pairs=False)
    doc["results"] = [
        {
            "metric": "disparate_impact_ratio",
            "slicing": ["g"],
            "value": 0.62,
            "ci_low": 0.55,
            "ci_high": 0.7,
            "threshold": 0.8,
            "direction": "higher_is_better",
            "status": "fail",
            "uncertain": False,
            "critical": True,
            "worst_group": {"g": "y"},
            "best_group": {"g": "x"},
            "excluded_groups": [],
            "override_reasons": [],
        }
    ]
    view = build_view(doc)
    assert view.failures[0].gap_text == "below the threshold by 0.180"
    assert view.failures[0].threshold_text == "≥ 0.800"
    assert "0.620" in view.verdict_sentence


def test_intersection_tables_keep_the_judged_metrics(doc: dict[str, Any]) -> None:
    view = build_view(doc)
    pair = next(s for s in view.sections if s.intersection)
    # DIR judges selection rate, equal opportunity judges TPR; the attribute tables carry everything else.
    assert pair.metric_names == ["selection_rate", "true_positive_rate"]
    single = next(s for s in view.sections if s.attributes == ["sex"])
    assert len(single.metric_names) > 5


def test_email_summary_states_verdict_and_top_failures(doc: dict[str, Any]) -> None:
    view = build_view(doc)
    text = email_summary(view, top=2)
    assert text.startswith(f"fairgate verdict: {view.verdict_text} for credit-model 7")
    assert "Top failures:" in text
    assert view.failures[0].metric_label in text
    assert f"and {len(view.failures) - 2} more" in text


def test_flatten_any_shape() -> None:
    rows = flatten({"join": {"matched": 10, "rates": [0.5, 0.25]}, "steps": [{"a": 1}, {"a": 2}]})
    assert [(r.key, r.value) for r in rows] == [
        ("join.matched", "10"),
        ("join.rates", "0.500, 0.250"),
        ("steps", "2 item(s): a: 1 | a: 2"),
    ]


def test_metric_labels() -> None:
    assert metric_label("disparate_impact_ratio") == "Disparate impact ratio"
    assert metric_label("false_omission_rate_difference") == "False omission rate difference"


def test_compas_view_from_the_engine_document(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc, min_cell_size=10)
    assert (view.model_name, view.model_version, view.verdict) == ("compas", "northpointe-2013", "fail")
    assert view.n_rows_text == "7,214"
    assert "favourable outcome is label 0" in view.favorable_note
    race = next(s for s in view.sections if s.attributes == ["race"])
    counts = {g.label: g.n for g in race.groups}
    # README facts. Native American (18) and Asian (32) hold counts under 10 (Native American: 5, 1, 9, 3), so
    # their rates are withheld and their sizes with them (each would give a small count from the others).
    assert counts["African-American"] == 3696
    assert counts["Caucasian"] == 2454
    assert counts["Native American"] is None
    assert {g.label for g in race.groups if g.suppressed} >= {"Asian", "Native American"}
    triple = next(s for s in view.sections if len(s.attributes) == 3)
    assert any(g.suppressed for g in triple.groups)
    # No group under 10 people shows a size anywhere in the view.
    for section in view.sections:
        for g in section.groups:
            assert g.suppressed or g.n is None or g.n >= 10
    assert view.impossibility
    assert "differ" in view.impossibility[0].text
    assert view.use_case_note.startswith("In criminal justice")
    assert re.fullmatch(r"[0-9a-f]{64}", next(kv.value for kv in view.trail if kv.key == "Policy SHA-256"))


def test_view_does_not_modify_the_document(doc: dict[str, Any]) -> None:
    before = copy.deepcopy(doc)
    build_view(doc)
    assert doc == before


def test_validation_details_become_a_checks_table_and_stay_short(doc: dict[str, Any]) -> None:
    # The pipeline records every Great Expectations check and the raw results (20 KB for COMPAS); one huge
    # cell made WeasyPrint's table layout quadratic (5 minutes for the demo), so the view summarises them.
    check = {
        "input": "/tmp/x/compas_predictions.parquet",
        "column": "id",
        "severity": "critical",
        "expectation": "expect_column_values_to_be_unique",
        "success": False,
        "unexpected_count": 3,
    }
    doc["validation"] = {
        "success": False,
        "checks": [check] * 16,
        "results": [{"raw": "x" * 9000}],
        "warnings": ["group race='Asian' has 32 rows"],
        "note": "y" * 5000,
    }
    view = build_view(doc)
    assert [kv.key for kv in view.validation] == ["All critical checks passed", "Note"]
    assert view.validation_line == "0/16 checks passed; 16 did not (listed below)."
    assert len(view.validation_failures) == 16
    assert all(len(kv.value) <= 240 for kv in view.validation)
    assert len(view.validation_checks) == 16
    first = view.validation_checks[0]
    assert (first.input, first.expectation, first.passed, first.detail) == (
        "compas_predictions.parquet",
        "column values to be unique",
        False,
        "3 unexpected",
    )
    assert view.validation_warnings == ["group race='Asian' has 32 rows"]


def test_data_window_from_the_predictions_provenance(doc: dict[str, Any]) -> None:
    assert build_view(doc).data_window == "not stated in the inputs"
    doc["predictions_provenance"] = [
        {
            "model_name": "m",
            "model_version": "1",
            "first_prediction_at": "2026-01-03 00:00:00",
            "last_prediction_at": "2026-01-30 00:00:00",
        },
        {
            "model_name": "m",
            "model_version": "2",
            "first_prediction_at": "2026-01-01 00:00:00",
            "last_prediction_at": "2026-01-20 00:00:00",
        },
    ]
    assert build_view(doc).data_window == "2026-01-01 00:00:00 to 2026-01-30 00:00:00"


def test_undecided_statuses_are_shown_apart_from_pass_and_fail(doc: dict[str, Any]) -> None:
    sex = [r for r in doc["results"] if r["slicing"] == ["sex"]]
    sex[0].update(status="inconclusive", reason="the interval contains the threshold")
    sex[1].update(status="insufficient_data", value=None, ci_low=None, ci_high=None, unavailable="needs scores")
    view = build_view(doc)
    rows = {r.metric: r for r in view.undecided}
    assert len(view.undecided) == 2
    inconclusive, missing = rows[sex[0]["metric"]], rows[sex[1]["metric"]]
    assert (inconclusive.mark, inconclusive.reason) == ("INCONCLUSIVE", "the interval contains the threshold")
    assert (missing.mark, missing.reason, missing.value_text) == ("NO DATA", "needs scores", "–")
    assert all(r.status == "fail" for r in view.failures)
    statuses = {c.status for row in view.scorecard.rows if row.slicing_label == "sex" for c in row.cells}
    assert statuses == {"inconclusive", "insufficient_data"}
    text = email_summary(view)
    assert "Not judged pass or fail:" in text
    assert "INCONCLUSIVE (the interval contains the threshold)" in text


def test_view_rejects_a_document_that_is_not_the_contract(doc: dict[str, Any]) -> None:
    doc["results"][0]["status"] = "maybe"
    with pytest.raises(pydantic.ValidationError, match="status"):
        build_view(doc)


def test_view_accepts_the_typed_document() -> None:
    typed = synthetic_document({"g": ["x", "y"]}, pairs=False)
    assert build_view(typed) == build_view(AuditResult(typed).to_dict())


def test_synthetic_document_meets_the_shipped_schema(doc: dict[str, Any]) -> None:
    """The report tests' document is the contract, not an approximation of it."""
    import json

    import jsonschema

    from fairgate.document import SCHEMA_PATH

    jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text()))
    assert {len(g["slicing"]) for g in doc["groups"]} == {1, 2}
