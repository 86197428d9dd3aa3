"""The studentized range with infinite degrees of freedom: the tails and critical values of pairwise families.

A family of g groups' pairwise differences, each standardised, has its largest |difference| / sqrt(2) distributed
as the range of g independent standard normals (``fairgate.engine.stats.PairFamily`` reads it for its critical
value and its p-values). Computed by quadrature on one fixed grid; scipy's own is about 100 times slower
(tests/engine/test_scipy_equivalents.py compares them).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from scipy import special

from fairgate.engine.roots import brentq

_GRID = np.linspace(-9.0, 9.0, 3601)
_GRID_DENSITY = np.exp(-(_GRID**2) / 2.0) / np.sqrt(2 * np.pi)  # norm.pdf and norm.cdf, as scipy.stats computes them
_GRID_CDF = special.ndtr(_GRID)
_GRID_STEPS = np.diff(_GRID)  # the trapezoid rule's widths (np.trapezoid's own, found once)


def studentized_range_sf(q: float, groups: int) -> float:
    """P(range of ``groups`` independent standard normals > q).

    The studentized range with infinite degrees of freedom, by quadrature of
    k * integral phi(z) (Phi(z) - Phi(z - q))^(k-1) dz (scipy's own is ~100x slower).

    >>> round(studentized_range_sf(3.314, 3), 3), round(studentized_range_sf(2.772, 2), 3)
    (0.05, 0.05)
    """
    if groups < 2 or q <= 0:
        return 1.0
    return _range_sf(_within(q), groups)


def studentized_range_sfs(q: float, sizes: Sequence[int]) -> float:
    """The sum over ``sizes`` of :func:`studentized_range_sf` (q, g), term by term the same values.

    The integrand's Phi(z) - Phi(z - q) is computed once for all of them, and each size's tail once.

    >>> studentized_range_sfs(3.0, (3, 4, 3)) == sum(studentized_range_sf(3.0, g) for g in (3, 4, 3))
    True
    """
    within = _within(q) if q > 0 else None
    tails = {g: 1.0 if g < 2 or within is None else _range_sf(within, g) for g in set(sizes)}
    return sum(tails[g] for g in sizes)


def _within(q: float) -> np.ndarray:
    # special.ndtr is what norm.cdf computes, without its per-call argument checks (most of the tail's time)
    within: np.ndarray = np.clip(_GRID_CDF - special.ndtr(_GRID - q), 0.0, 1.0)
    return within


def _range_sf(within: np.ndarray, groups: int) -> float:
    integrand = _GRID_DENSITY * within ** (groups - 1)
    cdf = groups * (_GRID_STEPS * (integrand[1:] + integrand[:-1]) / 2.0).sum()  # np.trapezoid(integrand, _GRID)
    return float(min(1.0, max(0.0, 1.0 - cdf)))


@functools.lru_cache(maxsize=4096)
def studentized_range_root(sizes: tuple[int, ...], p: float) -> float:
    """The t whose union of studentized-range tails, sum over ``sizes`` of P(range > t sqrt 2), is ``p`` (to 1e-9).

    Depends on the family's sizes and ``p`` only, so an audit's results that share both (every metric of one
    slicing at one Holm step) find it once. The normal tail's own t when the range's tails are already within
    ``p`` there (a family of one group).

    >>> t = studentized_range_root((3,), 0.05)
    >>> round(float(t * np.sqrt(2.0)), 3), round(studentized_range_sf(t * np.sqrt(2.0), 3), 4)
    (3.314, 0.05)
    """

    def excess(x: float) -> float:
        return studentized_range_sfs(x * np.sqrt(2.0), sizes) - p

    low = float(-special.ndtri(p / 2.0))  # the normal tail's t: never beyond the range's (one pair, two sides)
    if excess(low) <= 0:
        return low
    high = 2.0 * low
    while excess(high) > 0 and high < 1e3:
        high *= 2.0
    return brentq(excess, low, high, xtol=1e-9)


@functools.lru_cache(maxsize=1024)
def tukey_kramer(level: float, groups: int) -> float:
    """The Tukey-Kramer critical value q(level, groups, inf) / sqrt(2) for standardised pair differences."""
    if groups < 2:
        return 0.0
    q = brentq(lambda x: studentized_range_sf(x, groups) - (1.0 - level), 1e-6, 40.0, xtol=1e-10)
    return float(q / np.sqrt(2.0))
