"""The explorer's data without a browser: cells from the score histogram or the calibration bins, as the rows say."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.engine.columns import WEIGHT_SQ
from fairgate.engine.cube import add_score_histogram, build_cube, score_squares
from fairgate.engine.labels import SLICING_SEPARATOR
from fairgate.report.build import as_document
from fairgate.report.explorer import explorer_data
from fairgate.report.explorer_fit import page_threshold
from fairgate.report.suppress import Suppression
from tests.engine.conftest import make_policy
from tests.report.conftest import compas_frame


def rows(seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    score = rng.random(5000)
    return pl.DataFrame(
        {
            "a": rng.choice(["x", "y", "z"], 5000),
            "y_true": (rng.random(5000) < score).astype(np.int64),
            "y_pred": (score >= 0.5).astype(np.int64),
            "score": score,
        }
    )


def expected_cells(frame: pl.DataFrame, group: str, bins: int, favorable: int) -> dict[tuple[float, int], int]:
    """Rows of a group per (raw score bin's lower edge, favourable truth), counted from the rows themselves."""
    mine = frame.filter(pl.col("a") == group)
    lower = np.floor(mine["score"].to_numpy() * bins) / bins
    truth = (mine["y_true"].to_numpy() == favorable).astype(int)
    out: dict[tuple[float, int], int] = {}
    for edge, t in zip(lower, truth, strict=True):
        out[(round(float(edge), 9), int(t))] = out.get((round(float(edge), 9), int(t)), 0) + 1
    return out


def page_cells(slicing: dict[str, Any], group: str) -> dict[tuple[float, int], int]:
    entry = next(g for g in slicing["groups"] if g["name"] == group)
    out = {}
    for label, key in ((1, "positive"), (0, "negative")):
        for score, count in zip(slicing["scores"], entry[key], strict=True):
            if count:
                out[(round(score, 9), label)] = count
    return out


def document_groups(frame: pl.DataFrame) -> list[dict[str, Any]]:
    sizes = frame.group_by("a").len().sort("a")
    return [{"slicing": [], "group": {}, "n": float(frame.height), "sufficient": True, "metrics": {}}] + [
        {"slicing": ["a"], "group": {"a": a}, "n": float(n), "sufficient": True, "metrics": {}}
        for a, n in sizes.iter_rows()
    ]


@pytest.mark.parametrize("favorable", [1, 0])
@pytest.mark.parametrize("source", ["histogram", "calibration bins"])
def test_cells_from_the_cubes_bins_count_the_rows(favorable: int, source: str) -> None:
    frame = rows(3 + favorable)
    policy = make_policy(["a"], favorable_label=favorable)
    cube = build_cube(frame, policy, exact_auc=False)
    if source == "histogram":
        cube = add_score_histogram(cube, frame, policy, 1024)
    bins = 128 if source == "histogram" else policy.statistics.calibration_bins
    data = explorer_data(cube, document_groups(frame), policy, min_cell_size=1)  # k = 1: no cell is small
    (slicing,) = data["slicings"]
    assert not slicing["exact"]
    assert f"1/{bins}" in slicing["resolution"]
    for group in ("x", "y", "z"):
        assert page_cells(slicing, group) == expected_cells(frame, group, bins, favorable)


@pytest.mark.parametrize("exact", [True, False])
def test_no_score_cell_holds_a_small_count(exact: bool) -> None:
    """A group's count of one outcome at one score (or between two thresholds) is never 1 to k-1 on the page.

    Neighbouring scores are merged until each cell holds 0 or at least k people of each outcome in every group;
    the totals stay the rows' own, and the page says the grid was merged.
    """
    frame = rows(5)
    policy = make_policy(["a"])
    cube = build_cube(frame, policy, exact_auc=exact)
    if not exact:
        cube = add_score_histogram(cube, frame, policy, 1024)
    (slicing,) = explorer_data(cube, document_groups(frame), policy, min_cell_size=10)["slicings"]
    seen = 0
    for entry in slicing["groups"]:
        for key in ("positive", "negative"):
            assert all(c == 0 or c >= 10 for c in entry[key]), (entry["name"], key)
            seen += sum(entry[key])
        mine = frame.filter(pl.col("a") == entry["name"])
        assert sum(entry["positive"]) == int((mine["y_true"] == 1).sum())
    assert seen == frame.height
    assert not slicing["exact"]
    assert "merged" in slicing["resolution"]
    # Unmerged (k = 1), the same data has cells of 1 to 9 people: the test can fail.
    (raw,) = explorer_data(cube, document_groups(frame), policy, min_cell_size=1)["slicings"]
    assert any(0 < c < 10 for entry in raw["groups"] for c in entry["positive"] + entry["negative"])


def test_a_suppressed_group_leaves_no_trace_in_the_data() -> None:
    frame = rows(9).with_columns(
        pl.when(pl.int_range(pl.len()) < 4).then(pl.lit("tiny")).otherwise(pl.col("a")).alias("a")
    )
    policy = make_policy(["a"])
    data = explorer_data(build_cube(frame, policy, exact_auc=True), document_groups(frame), policy, min_cell_size=10)
    names = [g["name"] for g in data["slicings"][0]["groups"]]
    assert "tiny" not in names
    assert len(names) == 2  # complementary suppression: one more group goes, so "tiny" is not total minus the rest
    assert "tiny" not in str(data)


def test_added_score_tables_keep_the_squared_weights() -> None:
    """A collapsed score table (rounded scores) keeps its squared weights' sums; added to a per-row one, both do."""
    rng = np.random.default_rng(4)
    tied = rows(1).with_columns(pl.col("score").round(1), pl.Series("w", rng.gamma(0.8, 1.5, 5000)))
    fine = rows(2).with_columns(pl.Series("w", rng.gamma(0.8, 1.5, 5000)))
    policy = make_policy(["a"])
    policy = policy.model_copy(update={"columns": policy.columns.model_copy(update={"weight": "w"})})
    first, second = build_cube(tied, policy, exact_auc=True), build_cube(fine, policy, exact_auc=True)
    assert first.scores is not None
    assert second.scores is not None
    assert first.scores.height < tied.height  # collapsed
    assert WEIGHT_SQ in first.scores.columns
    total = (first + second).scores
    assert total is not None
    expected = float((tied["w"] ** 2).sum() + (fine["w"] ** 2).sum())
    assert float(score_squares(total)[WEIGHT_SQ].sum()) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("favorable", [1, 0])
def test_a_fitted_rule_becomes_the_page_threshold_with_the_same_decisions(favorable: int) -> None:
    """The page decides favourably at score >= t (label 1) or score < t (label 0); the fitted rule where the
    favourable score exceeds its threshold: on every grid cell the two agree, for thresholds anywhere."""
    rng = np.random.default_rng(favorable)
    for _ in range(200):
        grid = np.unique(np.round(rng.random(rng.integers(1, 30)), 2))
        favourable_scores = grid if favorable == 1 else 1.0 - grid
        rule = rng.choice([*favourable_scores, -np.inf, np.inf, rng.random()])
        page = page_threshold(grid, float(rule), favorable == 1)
        decided = grid >= page if favorable == 1 else grid < page
        assert decided.tolist() == (favourable_scores > rule).tolist()


def test_the_page_shows_exactly_the_groups_the_report_shows(
    compas_doc: dict[str, Any], compas_policy: fairgate.Policy
) -> None:
    """The explorer file is built with the report's rule (judged results' partners included), not the groups' own:
    on COMPAS the groups' own rule shows groups the report withholds (Hispanic among them)."""
    cube = build_cube(compas_frame(), compas_policy, exact_auc=True)
    suppression = Suppression.of_document(as_document(compas_doc), 10)
    own = explorer_data(cube, compas_doc["groups"], compas_policy, 10)
    page = explorer_data(cube, compas_doc["groups"], compas_policy, 10, suppression)

    def shown(data: dict[str, Any]) -> set[tuple[tuple[str, ...], str]]:
        return {(tuple(s["attributes"]), g["name"]) for s in data["slicings"] for g in s["groups"]}

    report = {
        (tuple(g["slicing"]), SLICING_SEPARATOR.join(str(g["group"][a]) for a in g["slicing"]))
        for g in compas_doc["groups"]
        if g["slicing"] and (g["n"] or 0) > 0 and not suppression.hides(g["slicing"], g["group"])
    }
    assert shown(page) == report
    assert shown(own) != report  # the test can fail: the groups' own rule differs on COMPAS


def test_the_report_is_built_with_the_suppression_the_explorer_was_given(compas_doc: dict[str, Any]) -> None:
    """The audit computes the suppression once (tasks.render.report.report_suppression) and hands it to the
    explorer and the report: the view built with it is the view that computes its own, and the one handed over
    is the one used (a pattern withholding nothing shows the groups the report's own rule withholds)."""
    from fairgate.report.build import build_view
    from tasks.render.report import report_suppression

    suppression = report_suppression(compas_doc, 10)
    assert build_view(compas_doc, min_cell_size=10, suppression=suppression) == build_view(compas_doc, min_cell_size=10)
    nothing = Suppression.of_document(as_document(compas_doc), 1)
    given = build_view(compas_doc, min_cell_size=10, suppression=nothing)
    assert given.n_suppressed_total == 0 < build_view(compas_doc, min_cell_size=10).n_suppressed_total
