"""Intervals and tests: Wilson and BH against scipy; Newcombe and bootstrap coverage by simulation."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats

import fairgate
from fairgate.engine.stats import PairFamily, benjamini_hochberg, newcombe_interval, wilson_interval, z_value


@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_matches_scipy_binomtest(level: float) -> None:
    pairs = [(0, 1), (1, 1), (0, 10), (10, 10), (3, 10), (1, 7), (50, 100), (17, 312), (999, 1000), (2, 5000)]
    successes = np.array([k for k, _ in pairs], dtype=float)
    trials = np.array([n for _, n in pairs], dtype=float)
    low, high = wilson_interval(successes, trials, z_value(level))
    for i, (k, n) in enumerate(pairs):
        expected = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
        assert low[i] == pytest.approx(expected.low, abs=1e-9), (k, n)
        assert high[i] == pytest.approx(expected.high, abs=1e-9), (k, n)


def test_wilson_is_undefined_without_trials() -> None:
    low, high = wilson_interval(np.array([0.0]), np.array([0.0]), 1.96)
    assert np.isnan(low[0])
    assert np.isnan(high[0])


def test_audit_group_intervals_are_wilson(h: Any) -> None:
    frame = pl.DataFrame({"grp": ["x"] * 40 + ["y"] * 60, "y_true": [1, 0] * 50, "y_pred": [1] * 13 + [0] * 87})
    document = fairgate.audit(frame, h.make_policy(["grp"])).to_dict()
    entry = next(g for g in document["groups"] if g["group"] == {"grp": "x"})
    expected = stats.binomtest(13, 40).proportion_ci(confidence_level=0.95, method="wilson")
    assert entry["metrics"]["selection_rate"]["ci_low"] == pytest.approx(expected.low, abs=1e-9)
    assert entry["metrics"]["selection_rate"]["ci_high"] == pytest.approx(expected.high, abs=1e-9)


def test_benjamini_hochberg_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.uniform(0, 0.01, 5), rng.uniform(0, 1, 40), [np.nan, np.nan]])
    rng.shuffle(p)
    adjusted = benjamini_hochberg(p)
    defined = np.isfinite(p)
    assert np.isnan(adjusted[~defined]).all()
    np.testing.assert_allclose(adjusted[defined], stats.false_discovery_control(p[defined], method="bh"), atol=1e-12)


def test_audit_adjusts_p_values_within_each_metric_and_slicing(h: Any) -> None:
    """BH within each (metric, slicing) over judged groups; complements share their rate's test; base rates
    are descriptive. (Adjusting over every comparison of the audit made one test's significance depend on
    how many other slicings happened to be audited.)"""
    frame = h.generate(5, 1500).drop("c", "d")
    document = fairgate.audit(frame, h.make_policy(["a", "b"], n_bootstrap=20, min_group_size=60)).to_dict()
    comparisons = document["comparisons"]
    alpha = document["policy"]["statistics"]["significance_level"]
    families: dict[tuple[str, tuple[str, ...]], list[dict[str, Any]]] = {}
    for c in comparisons:
        if c["sufficient"] and c["p_value"] is not None and c["metric"] not in COMPLEMENTS:
            families.setdefault((c["metric"], tuple(c["slicing"])), []).append(c)
        elif not c["sufficient"]:
            assert c["p_value_adjusted"] is None
            assert c["tested"] is False
            assert c["significant"] is False
    assert len(families) > 10
    assert any(not c["sufficient"] for c in comparisons)
    for (metric, _), members in families.items():
        raw = np.array([c["p_value"] for c in members])
        expected = stats.false_discovery_control(raw, method="bh")
        np.testing.assert_allclose([c["p_value_adjusted"] for c in members], expected, atol=1e-12)
        for c in members:
            assert c["tested"] is (metric != "base_rate")
            assert c["p_value_family_size"] == len(members)
            assert c["significant"] == (c["p_value_adjusted"] < alpha)
    by_key = {(c["metric"], tuple(c["slicing"]), tuple(c["group"].items())): c for c in comparisons}
    twins_checked = 0
    for (metric, slicing, group), c in by_key.items():
        partner = COMPLEMENTS.get(metric)
        if partner is not None and c["sufficient"] and c["p_value"] is not None:
            twin = by_key[(partner, slicing, group)]
            assert c["tested"] is False
            assert c["p_value_adjusted"] == twin["p_value_adjusted"]
            assert c["p_value"] == pytest.approx(twin["p_value"], abs=1e-12)  # the same test
            twins_checked += 1
    assert twins_checked > 0


COMPLEMENTS = {
    "false_negative_rate": "true_positive_rate",
    "true_negative_rate": "false_positive_rate",
    "false_discovery_rate": "positive_predictive_value",
    "false_omission_rate": "negative_predictive_value",
}


def test_audit_comparisons_use_newcombe_for_rate_differences(h: Any) -> None:
    frame = pl.DataFrame(
        {
            "grp": ["x"] * 120 + ["y"] * 80,
            "y_true": [1, 0] * 100,
            "y_pred": [1] * 70 + [0] * 50 + [1] * 20 + [0] * 60,
        }
    )
    document = fairgate.audit(frame, h.make_policy([{"name": "grp", "reference_group": "x"}])).to_dict()
    comparison = next(c for c in document["comparisons"] if c["metric"] == "selection_rate")
    assert comparison["group"] == {"grp": "y"}
    assert comparison["reference"] == {"grp": "x"}
    low, high = newcombe_interval(np.array(20.0), np.array(80.0), np.array(70.0), np.array(120.0), z_value(0.95))
    assert comparison["difference"] == pytest.approx(20 / 80 - 70 / 120, abs=1e-12)
    assert comparison["difference_ci_low"] == pytest.approx(float(low), abs=1e-12)
    assert comparison["difference_ci_high"] == pytest.approx(float(high), abs=1e-12)


@pytest.mark.parametrize(
    ("p1", "n1", "p2", "n2"), [(0.30, 200, 0.40, 300), (0.10, 80, 0.15, 120), (0.5, 1000, 0.45, 50)]
)
def test_newcombe_interval_covers_the_true_difference_about_95_percent(p1: float, n1: int, p2: float, n2: int) -> None:
    rng = np.random.default_rng(2024)
    simulations = 4000
    x1 = rng.binomial(n1, p1, simulations).astype(float)
    x2 = rng.binomial(n2, p2, simulations).astype(float)
    low, high = newcombe_interval(
        x1, np.full(simulations, float(n1)), x2, np.full(simulations, float(n2)), z_value(0.95)
    )
    coverage = float(np.mean((low <= p1 - p2) & (p1 - p2 <= high)))
    print(f"Newcombe coverage p1={p1} n1={n1} p2={p2} n2={n2}: {coverage:.4f}")
    assert 0.93 <= coverage <= 0.97


@pytest.mark.slow
def test_bootstrap_interval_of_a_difference_summary_has_sane_coverage(h: Any) -> None:
    """Percentile bootstrap CI of the selection-rate difference (max - min) over simulated audits."""
    rng = np.random.default_rng(7)
    p_x, p_y, n_x, n_y = 0.30, 0.45, 300, 200
    truth = p_y - p_x  # far from 0 (about 3.4 standard errors), so max - min estimates |p_y - p_x|
    policy = h.make_policy(["grp"], n_bootstrap=400)
    simulations, covered = 250, 0
    groups = np.array(["x"] * n_x + ["y"] * n_y)
    for i in range(simulations):
        y_pred = np.concatenate([rng.random(n_x) < p_x, rng.random(n_y) < p_y]).astype(np.int64)
        frame = pl.DataFrame({"grp": groups, "y_true": np.zeros(n_x + n_y, dtype=np.int64), "y_pred": y_pred})
        seeded = policy.model_copy(update={"statistics": policy.statistics.model_copy(update={"seed": i})})
        cube = fairgate.build_cube(frame, seeded)
        part = fairgate.compute_slicing(cube, ("grp",), seeded)
        summary = next(s for s in part.summaries if s["metric"] == "selection_rate")
        covered += summary["difference_ci_low"] <= truth <= summary["difference_ci_high"]
    coverage = covered / simulations
    print(f"bootstrap percentile coverage of a selection-rate difference: {coverage:.3f} over {simulations}")
    assert 0.88 <= coverage <= 0.99


def test_the_bootstrap_tail_is_a_monte_carlo_p_value_and_its_bound_inverts_it() -> None:
    """k replicates of B at or beyond t give (k + 1) / (B + 1), not k / B: one replicate beyond in 200 no longer
    passes Holm's alpha / 9 (0.0056), which made the ranking audit's null false-fail rate 5.0% [3.5, 7.0]."""
    null = np.sort(np.linspace(0.0, 4.0, 200))
    family = PairFamily(np.array([0.0]), np.array([1.0]), null, (2,))
    t = float(null[-1] - 1e-9)  # exactly one replicate at or beyond t
    assert family._bootstrap_tail(t) == pytest.approx(2 / 201)
    assert family._bootstrap_tail(float(null[-1] + 1e-9)) == 0.0  # none beyond: the parametric tails decide
    gap = PairFamily(np.array([t]), np.array([1.0]), null, (2,))
    assert gap.p_beyond(0.0) >= 2 / 201 > 0.05 / 9
    for p in (0.05, 0.02, 0.0056):
        bound = gap.beyond_bound(p)
        assert gap.p_beyond(bound - 1e-7) <= p < gap.p_beyond(bound + 1e-7)
