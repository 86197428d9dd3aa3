"""The CUSUM's Markov chain (``fairgate.monitoring.cusum``) against the literature and against simulation.

The thresholds rest on the Brook & Evans chain; these tests check it where the answer is known (Hawkins & Olwell's
tables), and by seeded Monte Carlo of the two-sided CUSUM, including the error of a baseline shared by every
night, which a chain that ignored it would understate.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fairgate.monitoring import cusum


def _false_alarms(h: float, k: float, nights: int, rho: float, runs: int, seed: int) -> float:
    """Share of simulated two-sided CUSUMs alarming within ``nights``, each with its own baseline error."""
    rng = np.random.default_rng(seed)
    shared = np.sqrt(rho) * rng.standard_normal((runs, 1))
    z = shared + np.sqrt(1 - rho) * rng.standard_normal((runs, nights))
    upper = np.zeros(runs)
    lower = np.zeros(runs)
    alarmed = np.zeros(runs, dtype=bool)
    for t in range(nights):
        upper = np.maximum(0.0, upper + z[:, t] - k)
        lower = np.maximum(0.0, lower - z[:, t] - k)
        alarmed |= (upper >= h) | (lower >= h)
    return float(alarmed.mean())


def test_in_control_run_length_matches_the_tables() -> None:
    # One-sided CUSUM, k = 0.5, h = 5: ARL0 = 930 and ARL1 (a one-SE shift) = 10.4 (Hawkins & Olwell 1998).
    assert cusum.survival(5.0, 0.5, 6000, rho=0.0).sum() == pytest.approx(930, rel=0.01)
    assert cusum.survival(5.0, 0.5, 200, rho=0.0, delta=1.0).sum() == pytest.approx(10.4, rel=0.02)


@pytest.mark.parametrize(("k", "rho", "nights"), [(0.5, 0.0, 90), (0.3, 0.03, 90), (0.8, 0.1, 90), (0.3, 0.02, 365)])
def test_threshold_holds_its_false_alarm_rate_in_simulation(k: float, rho: float, nights: int) -> None:
    alpha, runs = 0.05, 20_000
    h = cusum.threshold(alpha, k, nights, rho)
    observed = _false_alarms(h, k, nights, rho, runs, seed=11)
    # The union bound of the two sides makes the chain's rate slightly conservative; 3.5 binomial SEs of slack.
    slack = 3.5 * np.sqrt(alpha * (1 - alpha) / runs)
    assert observed <= alpha + slack
    assert observed >= 0.8 * alpha  # and not grossly conservative (then delays would be longer than needed)


def test_ignoring_the_shared_baseline_error_would_cry_wolf() -> None:
    # Every night compared with one baseline: its error is shared. A threshold solved as if nights were
    # independent (rho = 0) alarms far more often than stated once the baseline carries 5% of the variance.
    alpha, k, nights, rho = 0.01, 0.3, 90, 0.05
    naive = cusum.threshold(alpha, k, nights, 0.0)
    honest = cusum.threshold(alpha, k, nights, rho)
    runs = 20_000
    assert _false_alarms(naive, k, nights, rho, runs, seed=5) > 3 * alpha
    observed = _false_alarms(honest, k, nights, rho, runs, seed=5)
    assert stats.binomtest(round(observed * runs), runs, alpha, alternative="greater").pvalue > 0.001


def test_predicted_delay_matches_simulated_delay() -> None:
    k, rho, delta, nights = 0.5, 0.02, 1.0, 200
    h = cusum.threshold(0.001, k, 90, rho)
    median, within = cusum.delay(h, k, delta, nights, rho)
    rng = np.random.default_rng(3)
    runs = 4000
    z = delta + np.sqrt(rho) * rng.standard_normal((runs, 1)) + np.sqrt(1 - rho) * rng.standard_normal((runs, nights))
    upper = np.zeros(runs)
    first = np.full(runs, np.inf)
    for t in range(nights):
        upper = np.maximum(0.0, upper + z[:, t] - k)
        first = np.where(np.isinf(first) & (upper >= h), t + 1, first)
    assert np.median(first) == pytest.approx(median, abs=1)
    assert np.isfinite(first).mean() == pytest.approx(within, abs=0.02)
