"""The attenuation of proxy-weighted disparities and its correction (fairgate/proxy/attenuation.py)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.proxy.attenuation import (
    attenuation_report,
    corrected_rates,
    mixing_matrix,
    naive_rates,
    proxy_attenuation,
)

PERMUTATIONS = np.array(
    [[0.6, 0.3, 0.1], [0.6, 0.1, 0.3], [0.3, 0.6, 0.1], [0.1, 0.6, 0.3], [0.3, 0.1, 0.6], [0.1, 0.3, 0.6]]
)
TRUE_RATES = np.array([0.30, 0.30, 0.45])  # true demographic parity difference 0.15


def bisg_like(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Calibrated posteriors (permutations of 0.6/0.3/0.1), the true group drawn from them, and y_pred, y_true."""
    rng = np.random.default_rng(seed)
    posterior = PERMUTATIONS[rng.integers(0, len(PERMUTATIONS), n)]
    truth = (rng.random(n)[:, None] > posterior.cumsum(axis=1)).sum(axis=1)
    y_true = (rng.random(n) < 0.4 + 0.1 * truth).astype(float)
    y_pred = (rng.random(n) < TRUE_RATES[truth]).astype(float)
    return posterior, y_pred, y_true


def test_mixing_matrix_rows_sum_to_one_and_diagonal_dominates() -> None:
    posterior, _, _ = bisg_like(5000, seed=0)
    mixing = mixing_matrix(posterior)
    np.testing.assert_allclose(mixing.sum(axis=1), 1.0)
    # E[p_a | A = a] = 0.46 and 0.27 off the diagonal for uniform permutations of 0.6/0.3/0.1.
    np.testing.assert_allclose(np.diag(mixing), 0.46, atol=0.02)
    off_diagonal = mixing[~np.eye(3, dtype=bool)]
    np.testing.assert_allclose(off_diagonal, 0.27, atol=0.02)
    assert np.diag(mixing).min() > off_diagonal.max()  # each true group is most often inferred as itself


def test_two_groups_attenuate_by_the_mixing_contrast_exactly() -> None:
    rng = np.random.default_rng(1)
    p = rng.beta(2, 2, 3000)
    posterior = np.column_stack([p, 1 - p])
    y = (rng.random(3000) < 0.3 + 0.2 * (rng.random(3000) < p)).astype(float)
    naive = naive_rates(posterior, y, None)["selection_rate"]
    rates, _, _ = corrected_rates(posterior, y, None)
    joint = posterior.T @ posterior
    q = joint / posterior.sum(axis=0)[:, None]  # Q[b, a]: weight of inferred group b held by true group a
    assert naive[0] - naive[1] == pytest.approx(
        (q[0, 0] - q[1, 0]) * (rates["selection_rate"][0] - rates["selection_rate"][1])
    )
    report = attenuation_report(posterior, ["x", "y"], y_pred=y)
    (entry,) = report["metrics"]
    assert entry["attenuation_factor"] == pytest.approx(q[0, 0] - q[1, 0])


def test_known_membership_needs_no_correction() -> None:
    rng = np.random.default_rng(2)
    posterior = np.eye(3)[rng.integers(0, 3, 900)]
    y = (rng.random(900) < 0.4).astype(float)
    metrics = ["demographic_parity_difference", "equalized_odds_difference", "theil_index"]
    labels = (rng.random(900) < 0.5).astype(float)
    report = attenuation_report(posterior, ["a", "b", "c"], y_pred=y, y_true=labels, metrics=metrics)
    dpd, eod, theil = report["metrics"]
    assert report["attenuated"] is False
    assert dpd["corrected"]["value"] == pytest.approx(dpd["naive_value"])
    assert eod["corrected"]["value"] == pytest.approx(eod["naive_value"])
    assert dpd["attenuation_factor"] == pytest.approx(1.0)
    assert theil["corrected"] is None
    assert "no mixing correction" in theil["reason"]


def test_posteriors_that_do_not_separate_groups_are_refused() -> None:
    posterior = np.full((500, 2), 0.5)
    y = (np.arange(500) % 2).astype(float)
    (entry,) = attenuation_report(posterior, ["a", "b"], y_pred=y)["metrics"]
    assert entry["corrected"] is None
    assert "not identifiable" in entry["reason"]
    assert "condition number" in entry["reason"]


@pytest.mark.parametrize(("share", "identifiable"), [(0.67, True), (0.65, False)])
def test_the_condition_number_rule_decides_identifiability(share: float, identifiable: bool) -> None:
    """Two groups, everyone's posterior (share, 1 - share) or its mirror: M = [[m, 1 - m], [1 - m, m]] with
    m = share^2 + (1 - share)^2, condition number 1 / (2m - 1) = 1 / (2 share - 1)^2: 8.7 at 0.67 (kept), 11.1
    at 0.65 (refused)."""
    n = 2000
    posterior = np.where((np.arange(n) % 2 == 0)[:, None], [share, 1 - share], [1 - share, share])
    y = (np.arange(n) % 3 == 0).astype(float)
    report = attenuation_report(posterior, ["a", "b"], y_pred=y)
    m = share**2 + (1 - share) ** 2
    assert report["condition_number"] == pytest.approx(1 / (2 * m - 1))
    assert report["identifiable"] is identifiable
    (entry,) = report["metrics"]
    assert (entry["corrected"] is not None) is identifiable


def test_naive_estimate_is_attenuated_and_corrected_one_recovers_the_truth() -> None:
    posterior, y_pred, y_true = bisg_like(100_000, seed=3)
    metrics = ["demographic_parity_difference", "disparate_impact_ratio"]
    report = attenuation_report(posterior, ["a", "b", "c"], y_pred=y_pred, y_true=y_true, metrics=metrics)
    dpd, dir_ = report["metrics"]
    assert report["attenuated"] is True
    assert dpd["naive_value"] == pytest.approx(0.15 * 0.19, abs=0.01)
    assert dpd["corrected"]["value"] == pytest.approx(0.15, abs=0.02)
    assert dpd["corrected"]["ci_low"] <= 0.15 <= dpd["corrected"]["ci_high"]
    assert dir_["corrected"]["ci_low"] <= 0.30 / 0.45 <= dir_["corrected"]["ci_high"]
    assert dir_["naive_value"] > 0.85  # the four-fifths rule would pass on the attenuated value


@pytest.mark.slow
def test_corrected_interval_covers_the_true_disparity() -> None:
    """Seeded BISG-like audits: the corrected interval of the demographic parity difference (true 0.15) covers
    it in at least 90% of runs (bench/weights_coverage.py runs 400)."""
    runs, hits, naive = 80, 0, []
    for seed in range(runs):
        posterior, y_pred, _y_true = bisg_like(20_000, seed=500 + seed)
        (entry,) = attenuation_report(posterior, ["a", "b", "c"], y_pred=y_pred, seed=seed)["metrics"]
        hits += entry["corrected"]["ci_low"] <= 0.15 <= entry["corrected"]["ci_high"]
        naive.append(entry["naive_value"])
    assert hits / runs >= 0.9
    assert np.mean(naive) == pytest.approx(0.0285, abs=0.006)


def test_proxy_attenuation_reads_outcomes_from_the_policy_columns() -> None:
    posterior, y_pred, y_true = bisg_like(3000, seed=4)
    frame = pl.DataFrame({"y_true": y_true.astype(int), "y_pred": y_pred.astype(int)})
    policy = fairgate.Policy.from_mapping(
        {
            "fairness_checker": {
                "sensitive_attributes": [{"name": "race"}],
                "metrics": [{"name": "equal_opportunity_difference", "threshold": 0.1}],
                "columns": {"weight": "w"},
                "proxy": {"method": "custom", "custom": {"name_table": "names.csv"}, "attribute": "race"},
            }
        },
        source="test",
    )
    report = proxy_attenuation(frame, posterior, ["a", "b", "c"], policy)
    (entry,) = report["metrics"]
    assert report["mode"] == "probabilistic"
    assert entry["metric"] == "equal_opportunity_difference"
    assert set(entry["corrected"]["by_group"]["true_positive_rate"]) == {"a", "b", "c"}
    broken = frame.with_columns(pl.lit(2).alias("y_pred"))
    assert "not 0/1" in proxy_attenuation(broken, posterior, ["a", "b", "c"], policy)["reason"]


def test_most_likely_assignment_is_corrected_too() -> None:
    """Hard assignment to the most likely group also mixes groups; W = one-hot of the assignment."""
    posterior, y_pred, _y_true = bisg_like(100_000, seed=6)
    hard = np.eye(3)[posterior.argmax(axis=1)]
    report = attenuation_report(posterior, ["a", "b", "c"], y_pred=y_pred, weights=hard)
    (entry,) = report["metrics"]
    assert entry["naive_value"] < 0.08  # attenuated: 0.4 x 0.15 (60% of people assigned to their group)
    assert entry["corrected"]["ci_low"] <= 0.15 <= entry["corrected"]["ci_high"]
    assert entry["corrected"]["value"] == pytest.approx(0.15, abs=0.025)
