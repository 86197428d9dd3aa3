"""Statistics behind the reviewer diagnostics: Mantel-Haenszel, the debiased calibration error, the worst-off
subgroup's ranking and the base-rate test, checked by hand computations and by seeded null simulations (slow)
that share their code with ``bench/diagnostics_null.py``."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import polars as pl
import pytest
from bench_scripts import load_bench
from scipy import stats as scipy_stats

import fairgate
from fairgate.engine.diagnostics import mantel_haenszel_difference, mantel_haenszel_differences

BENCH = Path(__file__).resolve().parents[2] / "bench" / "diagnostics_null.py"


@pytest.fixture(scope="module")
def null() -> ModuleType:
    return load_bench("diagnostics_null")


# ------------------------------------------------------------------------------------------- Mantel-Haenszel
def test_mantel_haenszel_with_one_stratum_is_the_crude_difference_with_the_wald_variance() -> None:
    difference, se = mantel_haenszel_difference(*(np.array([v]) for v in (30.0, 100.0, 20.0, 80.0)))
    assert difference == pytest.approx(0.30 - 0.25)
    assert se**2 == pytest.approx(0.3 * 0.7 / 100 + 0.25 * 0.75 / 80)


def test_mantel_haenszel_weights_strata_by_harmonic_size_and_ignores_one_sided_strata() -> None:
    x_a, n_a = np.array([30.0, 5.0, 3.0]), np.array([100.0, 10.0, 4.0])
    x_b, n_b = np.array([20.0, 50.0, 0.0]), np.array([80.0, 100.0, 0.0])  # the third stratum has no b
    difference, se = mantel_haenszel_difference(x_a, n_a, x_b, n_b)
    weights = np.array([100 * 80 / 180, 10 * 100 / 110])
    expected = (weights * np.array([0.30 - 0.25, 0.5 - 0.5])).sum() / weights.sum()
    assert difference == pytest.approx(expected)
    assert 0 < se < 0.1
    assert np.isnan(mantel_haenszel_difference(x_a[2:], n_a[2:], x_b[2:], n_b[2:])[0])


def _one_contrast(x_a: np.ndarray, n_a: np.ndarray, x_b: np.ndarray, n_b: np.ndarray) -> tuple[float, float]:
    """Sato's difference and standard error of one contrast, written out over its strata with both groups."""
    keep = (n_a > 0) & (n_b > 0)
    x_a, n_a, x_b, n_b = x_a[keep], n_a[keep], x_b[keep], n_b[keep]
    total = n_a + n_b
    weight = (n_a * n_b / total).sum()
    if weight <= 0:
        return float("nan"), float("nan")
    difference = float(((x_a * n_b - x_b * n_a) / total).sum() / weight)
    p_term = ((n_a**2 * x_b - n_b**2 * x_a + n_a * n_b * (n_b - n_a) / 2.0) / total**2).sum()
    q_term = ((x_a * (n_b - x_b) + x_b * (n_a - x_a)) / (2.0 * total)).sum()
    return difference, float(np.sqrt(max(difference * p_term + q_term, 0.0)) / weight)


def test_mantel_haenszel_of_many_contrasts_is_each_contrast_alone_to_the_last_bit() -> None:
    """Rows with 0 to 300 strata, a quarter of them one-sided: the batched sums are each row's own (seeded)."""
    rng = np.random.default_rng(4)
    rows, width = 400, 300
    n_a, n_b = (rng.integers(1, 500, (rows, width)).astype(float) for _ in range(2))
    n_a[rng.random((rows, width)) < 0.25] = 0.0
    n_b[:, :: rng.integers(2, 9)] = 0.0
    n_b[rng.choice(rows, 20, replace=False)] = 0.0  # rows without a stratum holding both groups
    used = rng.integers(1, width + 1, rows)  # rows of different lengths: zeros beyond
    n_a[np.arange(width) >= used[:, None]] = 0.0
    x_a, x_b = np.floor(n_a * rng.random((rows, width))), np.floor(n_b * rng.random((rows, width)))
    difference, se = mantel_haenszel_differences(x_a, n_a, x_b, n_b)
    for row in range(rows):
        expected = _one_contrast(x_a[row], n_a[row], x_b[row], n_b[row])
        np.testing.assert_array_equal([difference[row], se[row]], expected)  # equal, NaN where undefined
        np.testing.assert_array_equal(mantel_haenszel_difference(x_a[row], n_a[row], x_b[row], n_b[row]), expected)
    assert np.isnan(difference).sum() >= 20
    assert np.isfinite(difference).sum() >= 300


def test_mantel_haenszel_interval_covers_in_sparse_strata() -> None:
    """Sato's variance holds coverage with many small strata (seeded; 2,000 draws, ~0.2 s)."""
    rng = np.random.default_rng(9)
    n_a, n_b = np.array([3, 2, 4, 50, 6, 8]), np.array([2, 5, 40, 3, 7, 5])
    p_a, p_b = np.array([0.5, 0.2, 0.9, 0.1, 0.6, 0.3]), np.array([0.4, 0.2, 0.8, 0.1, 0.5, 0.3])
    weights = n_a * n_b / (n_a + n_b)
    truth = (weights * (p_a - p_b)).sum() / weights.sum()
    covered = 0
    for _ in range(2000):
        d, se = mantel_haenszel_difference(
            rng.binomial(n_a, p_a) * 1.0, n_a * 1.0, rng.binomial(n_b, p_b) * 1.0, n_b * 1.0
        )
        covered += abs(d - truth) <= 1.96 * se
    assert 0.92 <= covered / 2000 <= 0.98


# ------------------------------------------------------------------------------------------- calibration
def _direct_debiased(y: np.ndarray, s: np.ndarray, bins: int = 10) -> float:
    index = np.minimum(np.floor(s * bins), bins - 1).astype(int)
    total = 0.0
    for b in range(bins):
        inside = index == b
        k = int(inside.sum())
        if k:
            label = y[inside].mean()
            variance = label * (1 - label) / (k - 1) if k > 1 else 0.0
            total += k / len(s) * ((s[inside].mean() - label) ** 2 - variance)
    return float(np.sqrt(max(total, 0.0)))


def _calibration_audit(h: Any, frame: pl.DataFrame, n_bootstrap: int = 200) -> dict[str, Any]:
    policy = h.make_policy(["grp"], [{"name": "calibration_difference", "threshold": 0.1}], n_bootstrap=n_bootstrap)
    return fairgate.audit(frame, policy, exact_auc=False).to_dict()


def test_debiased_calibration_error_matches_direct_computation(h: Any) -> None:
    rng = np.random.default_rng(4)
    n = 600
    score = rng.random(n)
    y = (rng.random(n) < np.clip(score + np.where(np.arange(n) < 300, 0.15, 0.0), 0, 1)).astype(int)
    grp = np.where(np.arange(n) < 300, "shifted", "calibrated")
    frame = pl.DataFrame({"grp": grp, "y_true": y, "y_pred": (score >= 0.5).astype(int), "score": score})
    document = _calibration_audit(h, frame, n_bootstrap=20)
    groups = h.groups_by_key(document)
    assert groups[((), ())]["metrics"]["expected_calibration_error_debiased"]["value"] == pytest.approx(
        _direct_debiased(y, score), abs=1e-12
    )
    for name in ("shifted", "calibrated"):
        rows = grp == name
        value = groups[(("grp",), (name,))]["metrics"]["expected_calibration_error_debiased"]["value"]
        assert value == pytest.approx(_direct_debiased(y[rows], score[rows]), abs=1e-12)


def test_debiased_calibration_error_interval_excludes_zero_for_a_miscalibrated_group(h: Any) -> None:
    rng = np.random.default_rng(5)
    n = 1000
    score = rng.uniform(0.5, 1.0, n)
    y = (rng.random(n) < score - 0.3).astype(int)  # 30 points over-confident everywhere
    frame = pl.DataFrame({"grp": ["g"] * n, "y_true": y, "y_pred": [1] * n, "score": score})
    entry = h.groups_by_key(_calibration_audit(h, frame))[((), ())]["metrics"]["expected_calibration_error_debiased"]
    assert 0.25 < entry["value"] < 0.35
    assert 0.2 < entry["ci_low"] <= entry["value"] <= entry["ci_high"] < 0.4


def test_calibration_difference_is_judged_on_the_debiased_error() -> None:
    assert fairgate.engine.metrics.policy_metric("calibration_difference").bases == (
        "expected_calibration_error_debiased",
    )


@pytest.mark.slow
@pytest.mark.parametrize("n", [100, 1000])
def test_calibrated_model_debiased_error_is_centred_on_zero_and_covers_it(null: ModuleType, n: int) -> None:
    """100 seeded calibrated samples (about 3 s): the plug-in ECE is biased, the debiased one is not."""
    figures = null.calibrated_ece(100, 2026, n)
    plain, debiased = figures["expected_calibration_error"], figures["expected_calibration_error_debiased"]
    assert plain["mean"] > (0.08 if n == 100 else 0.025)  # the bias being fixed
    assert plain["covers_zero"] < 0.1
    # Its positive part (a calibrated group reads 0 about half the time) stays well under the plug-in bias.
    assert debiased["mean"] < 0.4 * plain["mean"]
    assert debiased["covers_zero"] >= 0.95


# ------------------------------------------------------------------------------------------- worst-off subgroup
def _rows(a: str, b: str, n: int, positives: int, detected: int) -> dict[str, list[Any]]:
    return {
        "a": [a] * n,
        "b": [b] * n,
        "y_true": [1] * positives + [0] * (n - positives),
        "y_pred": [1] * detected + [0] * (n - detected),
    }


def test_worst_subgroup_is_ranked_by_its_upper_bound_not_its_point_estimate(h: Any) -> None:
    # (x, p) : TPR 12/20 = 0.60 but n = 20 (wide); (y, q): 340/500 = 0.68 on 500 positives (narrow);
    # the other cells have TPR 0.8. The point estimate would name (x, p); the upper bound names (y, q).
    cells = [("x", "p", 40, 20, 12), ("y", "q", 1000, 500, 340), ("x", "q", 1000, 500, 400), ("y", "p", 1000, 500, 400)]
    parts = [_rows(*c) for c in cells]
    frame = pl.DataFrame({k: list(itertools.chain.from_iterable(p[k] for p in parts)) for k in parts[0]})
    policy = h.make_policy(["a", "b"], min_group_size=30, n_bootstrap=0)
    worst = {w["metric"]: w for w in fairgate.audit(frame, policy).to_dict()["diagnostics"]["worst_subgroups"]}
    entry = worst["true_positive_rate"]
    assert entry["group"] == {"a": "y", "b": "q"}
    assert entry["n"] == 1000
    assert entry["value"] == pytest.approx(0.68)
    low, high = scipy_stats.binomtest(340, 500).proportion_ci(0.95, method="wilson")
    assert (entry["ci_low"], entry["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert entry["ranked_by"] == "ci_high"
    assert entry["n_candidates"] == 4
    assert "n = 1,000" in entry["note"]  # the one count rule: thousands separated
    assert "not adjusted" in entry["note"]


@pytest.mark.slow
def test_worst_subgroup_size_is_not_biased_toward_the_smallest_under_the_null(null: ModuleType) -> None:
    """100 seeded audits of identical groups (about 11 s), 3 metrics: each size quartile within 0.10-0.45."""
    shares = null.worst_subgroup_quartiles(100, 2026)
    assert shares["point_estimate"][0] > 0.6  # the winner's curse the rule removes
    assert all(0.10 <= s <= 0.45 for s in shares["confidence_bound"]), shares


# ------------------------------------------------------------------------------------------- Simpson, base rates
@pytest.mark.slow
def test_simpson_null_flag_rate_is_at_most_five_percent(null: ModuleType) -> None:
    """100 seeded audits without any within-stratum disparity (about 10 s); the point-based rule flagged 31%."""
    assert null.simpson_null_rate(100, 2026) <= 0.05


def test_simpson_flags_a_real_reversal_at_scale(h: Any, null: ModuleType) -> None:
    """Power: group a0 lives in the low-selection strata, so it is selected less overall (about -0.17 vs a2);
    selecting 12% of its non-selected rows gives it about +0.08 inside every stratum: a true reversal."""
    rng = np.random.default_rng(11)
    frame = null.simpson_null_frame(rng, 6000)
    raised = (frame["a"] == "a0").to_numpy() & (rng.random(frame.height) < 0.12)
    frame = frame.with_columns(pl.Series("y_pred", np.where(raised, 1, frame["y_pred"].to_numpy())))
    policy = h.make_policy(["a", "c"], min_group_size=30, n_bootstrap=0)
    flags = fairgate.audit(frame, policy).to_dict()["diagnostics"]["simpson"]
    selection = [f for f in flags if f["metric"] == "selection_rate" and f["stratified_by"] == "c"]
    assert any("a0" in f["groups"] for f in selection), flags
    for flag in selection:
        assert np.sign(flag["overall_difference"]) == -np.sign(flag["stratified_difference"])
        assert flag["stratified_ci_low"] <= flag["stratified_difference"] <= flag["stratified_ci_high"]


def test_base_rate_test_is_the_chi_square_of_the_groups_table(h: Any, compas: pl.DataFrame) -> None:
    policy = h.make_policy(["race", "sex"], min_group_size=30, n_bootstrap=0)
    entries = {tuple(b["slicing"]): b for b in fairgate.audit(compas, policy).to_dict()["diagnostics"]["base_rates"]}
    counts = compas.group_by("race").agg(pl.len().alias("n"), pl.col("y_true").sum().alias("pos"))
    counts = counts.filter(pl.col("n") >= 30)
    table = np.stack([counts["pos"].to_numpy(), (counts["n"] - counts["pos"]).to_numpy()], axis=1)
    assert entries[("race",)]["p_value"] == pytest.approx(scipy_stats.chi2_contingency(table).pvalue, rel=1e-9)
    assert entries[("race",)]["differ"] is True
    assert all({"base_rate", "ci_low", "ci_high", "n"} <= set(g) for g in entries[("race",)]["groups"])
    # Holm across the two attributes: the smaller p-value doubled, the larger kept (monotone).
    raw = sorted(entries[s]["p_value"] for s in entries)
    assert sorted(entries[s]["p_value_adjusted"] for s in entries) == pytest.approx(
        [min(1.0, 2 * raw[0]), max(min(1.0, 2 * raw[0]), raw[1])]
    )


def test_impossibility_note_with_one_comparable_group_draws_no_conclusion(h: Any) -> None:
    frame = pl.DataFrame(
        {"grp": ["x"] * 100 + ["y"] * 5, "y_true": [1, 0] * 50 + [1] * 5, "y_pred": [1, 0] * 50 + [0] * 5}
    )
    document = fairgate.audit(frame, h.make_policy(["grp"], min_group_size=30, n_bootstrap=0)).to_dict()
    (entry,) = document["diagnostics"]["base_rates"]
    assert entry["p_value"] is None
    assert entry["differ"] is False
    assert "no conclusion" in entry["impossibility"]
    assert "can" not in entry["impossibility"].split("compare")[1]


def test_impossibility_note_keeps_the_uninformative_escape_for_equalized_odds_only(h: Any) -> None:
    """Independence and calibration conflict whenever base rates differ, even for an uninformative score (a
    calibrated constant score per group equals its base rate, so selection rates differ); the escape clause
    "unless the predictions carry no information" belongs to independence with separation only."""
    frame = pl.DataFrame(
        {
            "grp": ["x"] * 200 + ["y"] * 200,
            "y_true": [1] * 160 + [0] * 40 + [1] * 40 + [0] * 160,
            "y_pred": [1] * 150 + [0] * 10 + [1] * 10 + [0] * 30 + [1] * 30 + [0] * 10 + [1] * 20 + [0] * 140,
        }
    )
    document = fairgate.audit(frame, h.make_policy(["grp"], min_group_size=30, n_bootstrap=0)).to_dict()
    (entry,) = document["diagnostics"]["base_rates"]
    note = entry["impossibility"]
    assert entry["differ"] is True
    sentences = {s.split("(demographic parity)")[1] for s in note.split(". ") if "(demographic parity)" in s}
    (sentence,) = sentences
    calibration, odds = sentence.split("equalized odds")[0], sentence.split("equalized odds")[1]
    assert "calibration, even for a score that carries no information" in calibration
    assert "unless" not in calibration
    assert "unless the predictions carry no information" in odds
