"""Two-sided CUSUM on standardized observations: thresholds and delays from the Brook & Evans Markov chain.

A stream's nightly observation is z_t = estimate_t / SE_t: N(0, 1) while nothing changed, N(delta, 1) after a
change of delta standard errors. The upper statistic is S_t = max(0, S_{t-1} + z_t - k) and the lower one its
mirror; a stream alarms when either reaches h.

Every night of a stream is compared with the same baseline, so the baseline's own sampling error is one draw
shared by all nights: z_t = sqrt(rho) * eta + sqrt(1 - rho) * eps_t with eta, eps_t independent N(0, 1) and rho
the baseline's share of the variance. Ignoring it would understate false alarms (a baseline that happened to
come out low pushes every night up). So the run-length distribution is computed conditionally on eta, exactly
as a CUSUM of N(sqrt(rho) eta + delta, 1 - rho) increments, and integrated over eta by Gauss-Hermite quadrature.

Brook & Evans (1972): the statistic's range [0, h) is cut into ``STATES`` cells (the first holding S = 0), the
CUSUM becomes a Markov chain on them with an absorbing alarm state, and the probability of an alarm within N
nights, or the mean nights to an alarm, follow from powers of the transient matrix Q. The two sides are joined
by the union bound P(upper or lower) <= P(upper) + P(lower), a few per mille of alpha high at the rates used here.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy import optimize
from scipy.stats import norm

STATES = 64  # Markov chain cells at least; 200 move the thresholds by under 0.3% and the median delays not at all
CELL = 0.25  # widest cell in SEs: a high threshold (long horizon, shared baseline error) gets more cells
MAX_STATES = 200  # (cells under 0.5 SE up to h = 100: thresholds within 0.3% of 400 cells)
QUADRATURE_NODES = 12  # Gauss-Hermite nodes over the baseline's error (24 or 80 give the same thresholds)
# Rounding grids of the detector's settings: thresholds are cached per rounded setting, and the CUSUM runs with
# the rounded values, so what is solved is what is applied. rho rounds up (a larger shared error, a higher h).
K_STEP = 0.05
RHO_STEP = 0.01


def round_k(k: float) -> float:
    """The reference value on its grid (at least one step)."""
    return max(K_STEP, round(k / K_STEP) * K_STEP)


def round_rho(rho: float) -> float:
    """The baseline's variance share rounded up to its grid, kept below 1."""
    return min(0.95, math.ceil(max(rho, 0.0) / RHO_STEP - 1e-9) * RHO_STEP)


def _nodes(rho: float) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature nodes and weights over eta ~ N(0, 1) (a single node at 0 without a shared baseline error)."""
    if rho <= 0.0:
        return np.zeros(1), np.ones(1)
    nodes, weights = hermegauss(QUADRATURE_NODES)
    return nodes, weights / weights.sum()


def _transient(h: float, k: float, means: np.ndarray, sd: float) -> np.ndarray:
    """Brook-Evans transient matrices, one per mean: Q[q, i, j] = P(state i -> state j) of the upper CUSUM."""
    states = min(MAX_STATES, max(STATES, math.ceil(h / CELL)))
    width = 2.0 * h / (2 * states - 1)
    centres = np.arange(states) * width
    # Next S = max(0, c_i + z - k); cell j >= 1 is [(j - 1/2) w, (j + 1/2) w), cell 0 is S < w / 2.
    upper_edges = (np.arange(states) + 0.5) * width
    shift = centres[:, None] - k  # (i, 1)
    cdf = norm.cdf((upper_edges[None, None, :] - shift[None, :, :] - means[:, None, None]) / sd)  # (q, i, j)
    q: np.ndarray = np.diff(cdf, axis=-1, prepend=0.0)
    return q


def _chain(h: float, k: float, rho: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature weights and the transient matrices given the baseline's error at each node."""
    nodes, weights = _nodes(rho)
    return weights, _transient(h, k, delta + math.sqrt(rho) * nodes, math.sqrt(1.0 - rho))


def survival(h: float, k: float, nights: int, *, rho: float, delta: float = 0.0) -> np.ndarray:
    """P(no alarm of the upper CUSUM within t nights), t = 0..nights, started at 0, for a shift of delta SEs.

    Integrated over the baseline's shared error (variance share ``rho``).
    """
    weights, q = _chain(h, k, rho, delta)
    alive = np.ones(q.shape[:2])
    out = np.empty(nights + 1)
    out[0] = 1.0
    for t in range(1, nights + 1):
        alive = np.matmul(q, alive[..., None])[..., 0]  # P(survive t more nights | start in state i)
        out[t] = float(weights @ alive[:, 0])
    return out


def survival_at(h: float, k: float, nights: int, *, rho: float, delta: float = 0.0) -> float:
    """P(no alarm within ``nights``) alone: row 0 of Q^nights (by repeated squaring for long horizons)."""
    weights, q = _chain(h, k, rho, delta)
    if nights <= 4 * q.shape[-1]:  # stepping a vector costs N m^2, squaring about m^3 log N
        return float(survival(h, k, nights, rho=rho, delta=delta)[-1])
    return float(weights @ np.linalg.matrix_power(q, nights)[:, 0, :].sum(axis=-1))


def false_alarm_probability(h: float, k: float, nights: int, *, rho: float) -> float:
    """P(either side alarms within ``nights``) with nothing changed (union bound of the two sides)."""
    # The lower side's run length given eta is the upper one's given -eta; the quadrature is symmetric.
    return 2.0 * (1.0 - survival_at(h, k, nights, rho=rho))


@functools.cache
def threshold(alpha: float, k: float, nights: int, rho: float) -> float:
    """The smallest h whose two-sided false-alarm probability within ``nights`` is at most ``alpha``."""

    def excess(h: float) -> float:
        return math.log(false_alarm_probability(h, k, nights, rho=rho) + 1e-300) - math.log(alpha)

    high = 4.0
    while excess(high) > 0:
        high *= 2.0
        if high > 1e4:  # pragma: no cover - alpha below any reachable false-alarm probability
            raise ValueError(f"no CUSUM threshold reaches a false-alarm probability of {alpha:g}")
    low = 1e-3
    if excess(low) <= 0:
        return low
    return float(optimize.brentq(excess, low, high, xtol=2e-3))


@functools.cache
def delay(h: float, k: float, delta: float, nights: int, rho: float) -> tuple[float, float]:
    """(median nights to the upper side's alarm, P(alarm within ``nights``)) after a shift of ``delta`` SEs.

    The CUSUM starts at 0 and the night of the change counts as night 1; the median is infinite when the alarm
    is not more likely than not within ``nights``. The median, not the mean: integrated over the baseline's
    error, a baseline that came out on the side of the change hides it for long, and the mean is dominated by
    that tail (infinite when it never alarms).
    """
    weights, q = _chain(h, k, rho, delta)
    alive = np.ones(q.shape[:2])
    median = math.inf
    for t in range(1, nights + 1):  # stepped until the median: usually a few nights, whatever the horizon
        alive = np.matmul(q, alive[..., None])[..., 0]
        if float(weights @ alive[:, 0]) <= 0.5:
            median = float(t)
            break
    return median, 1.0 - survival_at(h, k, nights, rho=rho, delta=delta)
