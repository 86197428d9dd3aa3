"""The what-if explorer in a real browser: its JavaScript contract against the engine's own audit at a threshold.

Debian's chromium through Playwright (tests/report/explorer_browser.py). On COMPAS, every race group's state at
thresholds 0.35 and 0.65 equals ``fairgate.audit`` with ``columns.decision_threshold`` at that threshold (no
``y_pred`` column: the decisions are the scores at the threshold); on generated continuous scores (binned
cells) the same holds at thresholds on the bin grid, for either favourable label.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from explorer_browser import watched_page

import fairgate
from fairgate.document.groups import GroupEntry
from fairgate.engine.cube import build_cube
from fairgate.engine.labels import SLICING_SEPARATOR
from fairgate.engine.stats import wilson_interval, z_value
from fairgate.report.explorer import explorer_data
from fairgate.report.format import fmt, interval_text
from fairgate.report.suppress import Suppression, binary_counts
from tasks.render.explorer import render_explorer
from tests.engine.conftest import generate, make_policy

RATES = (
    "selection_rate",
    "true_positive_rate",
    "false_positive_rate",
    "positive_predictive_value",
    "false_negative_rate",
    "accuracy",
)
TOL = 1e-9
# Where the screenshots go (to look at them): FAIRGATE_SCREENSHOTS, else the test's temporary folder.
SCREENSHOTS_ENV = "FAIRGATE_SCREENSHOTS"


def at_threshold(policy: fairgate.Policy, t: float, **statistics: Any) -> fairgate.Policy:
    """The policy deciding ``score >= t`` (no y_pred column is given), with fewer bootstrap replicates."""
    columns = policy.columns.model_copy(update={"decision_threshold": t})
    stats = policy.statistics.model_copy(update={"n_bootstrap": 20, **statistics})
    return policy.model_copy(update={"columns": columns, "statistics": stats})


def page_for(frame: pl.DataFrame, policy: fairgate.Policy, out: Path, min_cell_size: int = 10) -> Path:
    """The explorer page of an audit of ``frame`` (its document's groups, the cube with its score table)."""
    document = json.loads(fairgate.audit(frame, at_threshold(policy, 0.5)).to_json())
    data = explorer_data(build_cube(frame, policy, exact_auc=True), document["groups"], policy, min_cell_size)
    out.write_text(render_explorer(data, "test audit"), encoding="utf-8")
    return out


def engine_groups(frame: pl.DataFrame, policy: fairgate.Policy, t: float, slicing: list[str]) -> dict[str, Any]:
    document = json.loads(fairgate.audit(frame.drop("y_pred"), at_threshold(policy, t)).to_json())
    return {
        SLICING_SEPARATOR.join(g["group"][a] for a in slicing): g for g in document["groups"] if g["slicing"] == slicing
    } | {"__results__": [r for r in document["results"] if r.get("slicing") == slicing]}


def assert_same(page: dict[str, Any], engine: dict[str, Any], t: float) -> None:
    """Every shown group's n, rates and Wilson intervals, and every judged summary, as the engine has them."""
    assert page["groups"], "the page shows no group"
    for name, state in page["groups"].items():
        entry = engine[name]
        assert state["threshold"] == t
        assert state["n"] == pytest.approx(entry["n"], abs=TOL)
        for rate in RATES:
            expected = entry["metrics"][rate]
            got = state[rate]
            if expected["value"] is None or not math.isfinite(expected["value"]):
                assert got is None, (name, rate)
                continue
            assert got == pytest.approx(expected["value"], abs=TOL), (name, rate, t)
            assert state["intervals"][rate] == pytest.approx([expected["ci_low"], expected["ci_high"]], abs=TOL)
    for result in engine["__results__"]:
        if result["metric"] in page["summaries"]:
            got = page["summaries"][result["metric"]]["value"]
            assert got == pytest.approx(result["value"], abs=TOL) if result["value"] is not None else got is None


@pytest.fixture(scope="module")
def compas_page(
    tmp_path_factory: pytest.TempPathFactory, compas_rows: pl.DataFrame, compas_policy: fairgate.Policy
) -> Path:
    """Every race group shown (min_cell_size 1): these tests check the page's arithmetic against the engine."""
    out = tmp_path_factory.mktemp("explorer") / "compas.explorer.html"
    return page_for(compas_rows, compas_policy, out, min_cell_size=1)


@pytest.fixture(scope="module")
def compas_page_as_published(
    tmp_path_factory: pytest.TempPathFactory, compas_rows: pl.DataFrame, compas_policy: fairgate.Policy
) -> Path:
    """The page as the demo writes it: the report's suppression at min_cell_size 10."""
    return page_for(compas_rows, compas_policy, tmp_path_factory.mktemp("explorer") / "published.explorer.html")


@pytest.mark.parametrize("t", [0.35, 0.65])
def test_compas_race_state_equals_the_engines_audit_at_the_threshold(
    browser: Any, compas_page: Path, compas_rows: pl.DataFrame, compas_policy: fairgate.Policy, t: float
) -> None:
    page, problems = watched_page(browser)
    page.goto(compas_page.as_uri())
    groups = page.evaluate("fairgateExplorer.groups('race')")
    assert groups == ["African-American", "Asian", "Caucasian", "Hispanic", "Native American", "Other"]
    for group in groups:
        page.evaluate("([g, t]) => fairgateExplorer.setThreshold('race', g, t)", [group, t])
    state = page.evaluate("fairgateExplorer.state('race')")
    assert_same(state, engine_groups(compas_rows, compas_policy, t, ["race"]), t)
    # The page shows what the contract reports: each race row reads its group's threshold and selection rate.
    page.select_option("#slicing", "race")
    rows = page.locator("#groups-body tr")
    engine = engine_groups(compas_rows, compas_policy, t, ["race"])
    for i, group in enumerate(groups):
        assert rows.nth(i).locator("input.thr").input_value() == str(t)
        for rate in RATES:  # the report's formatter: the value, then its interval's ends rounded outward, "a–b"
            shown = rows.nth(i).locator(f"td[data-rate={rate}]").inner_text().split("\n")
            expected = engine[group]["metrics"][rate]
            assert shown == [fmt(expected["value"]), interval_text(expected["ci_low"], expected["ci_high"])]
    words = page.locator("#summaries-body th").all_inner_texts()
    assert "Demographic parity difference" in words  # metric names in words, as the report names them
    assert problems == []


def test_compas_page_moves_with_its_controls_without_errors(browser: Any, compas_page: Path, tmp_path: Path) -> None:
    """Slider, number box, one threshold for all and the 0.1 ... 0.9 table, then screenshots."""
    page, problems = watched_page(browser)
    page.goto(compas_page.as_uri())
    page.select_option("#slicing", "race")
    before = page.evaluate("fairgateExplorer.state('race')")
    box = page.locator("#groups-body tr").nth(0).locator("input.thr")
    box.fill("0.8")
    after = page.evaluate("fairgateExplorer.state('race')")
    assert after["groups"]["African-American"]["threshold"] == 0.8
    assert (
        after["groups"]["African-American"]["selection_rate"] > before["groups"]["African-American"]["selection_rate"]
    )
    assert after["accuracy_change"] != 0
    assert page.locator("#groups-body tr").nth(0).locator("input.slider").input_value() == "0.8"
    page.fill("#all-threshold", "0.3")
    page.click("#apply-all")
    state = page.evaluate("fairgateExplorer.state('race')")
    assert {g["threshold"] for g in state["groups"].values()} == {0.3}
    assert state == page.evaluate("fairgateExplorer.at('race', 0.3)")
    colours = page.locator("#summaries-body tr").evaluate_all("rows => rows.map(r => r.className)")
    assert colours
    assert set(colours) <= {"pass", "fail", "undefined"}
    shots = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "explorer_compas.png"), full_page=True)
    page.click("#fi summary")
    page.select_option("#fi-metric", "true_positive_rate")
    rows = page.locator("#fi-table tbody tr")
    assert rows.count() == 6 + len(page.evaluate("Object.keys(fairgateExplorer.state('race').summaries)")) + 1
    cells = rows.nth(0).locator("td").all_inner_texts()
    expected = [
        page.evaluate(f"fairgateExplorer.at('race', {t}).groups['African-American'].true_positive_rate")
        for t in (0.1, 0.5, 0.9)
    ]
    assert [cells[0], cells[4], cells[8]] == [fmt(v) for v in expected]
    page.screenshot(path=str(shots / "explorer_compas_thresholds.png"), full_page=True)
    assert problems == []


def test_suppressed_groups_are_absent_from_the_page_data(
    browser: Any, compas_page_as_published: Path, compas_doc: dict[str, Any]
) -> None:
    html = compas_page_as_published.read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="fairgate-explorer-data">(.*?)</script>', html, re.S).group(1))  # type: ignore[union-attr]
    entries = [GroupEntry.model_validate(g) for g in compas_doc["groups"]]
    suppression = Suppression.of(entries, 10, counts=binary_counts(entries))  # the report's rule
    hidden = [(tuple(e.slicing), e.group) for e in entries if e.slicing and suppression.hides(e.slicing, e.group)]
    assert hidden, "COMPAS at min_cell_size 10 suppresses some intersections"
    page, problems = watched_page(browser)
    page.goto(compas_page_as_published.as_uri())
    by_label = {s["label"]: s for s in data["slicings"]}
    for slicing, group in hidden:
        name = SLICING_SEPARATOR.join(group[a] for a in slicing)
        label = " × ".join(slicing)
        assert label not in by_label or name not in [g["name"] for g in by_label[label]["groups"]]
        if label in by_label:
            assert name not in page.evaluate("([s]) => fairgateExplorer.groups(s)", [label])
    assert problems == []


@pytest.mark.parametrize("favorable", [1, 0])
def test_binned_scores_match_the_engine_on_the_grid(browser: Any, tmp_path: Path, favorable: int) -> None:
    """Continuous scores (more distinct values than the page keeps): exact at thresholds k/100."""
    frame = generate(seed=11 + favorable, n=3000)
    assert frame["score"].n_unique() > 200
    policy = make_policy(["a", "b"], favorable_label=favorable, min_group_size=30)
    # The arithmetic on the unmerged grid (k = 1); at k = 10 neighbouring cells merge (test_explorer_data.py).
    out = page_for(frame, policy, tmp_path / "generated.explorer.html", min_cell_size=1)
    page, problems = watched_page(browser)
    page.goto(out.as_uri())
    for t in (0.3, 0.62):
        state = page.evaluate("([t]) => fairgateExplorer.at('a', t)", [t])
        assert_same(state, engine_groups(frame, policy, t, ["a"]), t)
    assert "bins of width 1/100" in page.locator("#resolution").inner_text()
    assert problems == []


def test_many_groups_are_paged_and_a_change_off_the_page_still_counts(browser: Any, tmp_path: Path) -> None:
    """150 groups: the table shows 100 at a time; a threshold moved on page 2 changes the summaries and state."""
    levels = {"a": [f"g{i:03d}" for i in range(150)]}
    rng = np.random.default_rng(5)
    score = rng.random(15000)
    frame = pl.DataFrame(
        {
            "a": rng.choice(levels["a"], 15000),
            "y_true": (rng.random(15000) < score).astype(np.int64),
            "y_pred": (score >= 0.5).astype(np.int64),
            "score": score,
        }
    )
    policy = make_policy(
        [{"name": "a", "values": levels["a"]}], min_group_size=30, limits={"max_values_per_attribute": 200}
    )
    out = page_for(frame, policy, tmp_path / "paged.explorer.html", min_cell_size=1)
    page, problems = watched_page(browser)
    page.goto(out.as_uri())
    groups = page.evaluate("fairgateExplorer.groups('a')")
    assert len(groups) == 150
    assert page.locator("#groups-body tr").count() == 100
    before = page.evaluate("fairgateExplorer.state('a')")
    last = groups[-1]
    page.evaluate("([g]) => fairgateExplorer.setThreshold('a', g, 0.95)", [last])
    after = page.evaluate("fairgateExplorer.state('a')")
    assert after["groups"][last]["threshold"] == 0.95
    assert after["groups"][last]["selection_rate"] < before["groups"][last]["selection_rate"]
    assert after["accuracy"] != before["accuracy"]
    expected = page.evaluate("([g]) => { const s = fairgateExplorer.at('a', 0.5); return s.groups[g]; }", [groups[0]])
    assert after["groups"][groups[0]] == expected  # the other groups did not move
    page.click("#next")
    assert page.locator("#groups-body tr").count() == 50
    assert page.locator("#groups-body tr").last.locator("input.thr").input_value() == "0.95"
    assert "groups 101–150 of 150" in page.locator("#page-text").inner_text()
    assert problems == []


@pytest.mark.parametrize(("favorable", "ties", "thresholds"), [(1, False, (0.3, 0.62)), (0, True, (0.3, 0.6))])
def test_weighted_intervals_follow_the_engines_kish_convention(
    browser: Any, tmp_path: Path, favorable: int, ties: bool, thresholds: tuple[float, float]
) -> None:
    """Row weights: the page's intervals use Kish's effective sizes, as ``fairgate.audit`` with weights does.

    Continuous scores (the score table per row) and rounded ones (rows collapsed, their squared weights summed).
    """
    frame = generate(seed=21 + favorable, n=3000, ties=ties)
    weights = np.random.default_rng(7).gamma(0.8, 1.5, frame.height)  # uneven: Kish size well under the sum
    frame = frame.with_columns(pl.Series("w", weights))
    policy = make_policy(["a", "b"], favorable_label=favorable, min_group_size=30)
    policy = policy.model_copy(update={"columns": policy.columns.model_copy(update={"weight": "w"})})
    out = page_for(frame, policy, tmp_path / "weighted.explorer.html", min_cell_size=1)  # the unmerged grid
    page, problems = watched_page(browser)
    page.goto(out.as_uri())
    for t in thresholds:
        state = page.evaluate("([t]) => fairgateExplorer.at('a', t)", [t])
        assert_same(state, engine_groups(frame, policy, t, ["a"]), t)
        # Raw weight sums as trials would give other intervals: the comparison above can fail.
        z = z_value(policy.reporting.confidence_level)
        for name, group in state["groups"].items():
            total = float(frame.filter(pl.col("a") == name)["w"].sum())
            assert group["n"] < 0.9 * total  # the document's n is the Kish size
            raw = wilson_interval(np.array([group["selection_rate"] * total]), np.array([total]), z)
            assert abs(float(raw[0][0]) - group["intervals"]["selection_rate"][0]) > 1e-3
    assert problems == []


def test_fitted_thresholds_and_the_frontier(browser: Any, compas_page: Path, tmp_path: Path) -> None:
    """The frontier's points are buttons; a point the page can apply exactly lands on the frontier."""
    page, problems = watched_page(browser)
    page.goto(compas_page.as_uri())
    page.select_option("#slicing", "race")
    fitted = page.evaluate("fairgateExplorer.fitted('race')")
    assert fitted["metric"] == "equal_opportunity_difference"
    assert "lawful" in page.locator("#fitted-caveat").inner_text()
    # At the audited threshold the page's point is the frontier's current point (same gap, same accuracy).
    now = page.evaluate("fairgateExplorer.frontierPoint('race')")
    assert now["gap"] == pytest.approx(fitted["current"]["gap"], abs=TOL)
    assert now["accuracy"] == pytest.approx(fitted["current"]["accuracy"], abs=TOL)
    buttons = page.locator("#fitted-buttons button")
    assert buttons.count() == len(fitted["points"]) >= 2
    buttons.last.click()
    state = page.evaluate("fairgateExplorer.state('race')")
    for name, threshold in fitted["points"][-1]["thresholds"].items():
        assert state["groups"][name]["threshold"] == threshold
    # The last point (the widest gap) is deterministic on COMPAS race: the page reaches it exactly.
    assert fitted["points"][-1]["randomised"] == []
    now = page.evaluate("fairgateExplorer.frontierPoint('race')")
    assert now["gap"] == pytest.approx(fitted["points"][-1]["gap"], abs=TOL)
    assert now["accuracy"] == pytest.approx(fitted["points"][-1]["accuracy"], abs=TOL)
    assert page.locator("#frontier svg circle.fitted-point").count() == len(fitted["points"])
    assert page.locator("#frontier-now").count() == 1
    shots = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    page.locator("#fitted").screenshot(path=str(shots / "explorer_frontier.png"))
    assert problems == []
