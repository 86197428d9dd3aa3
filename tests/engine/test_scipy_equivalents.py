"""The engine computes what it used to ask scipy.stats and scipy.optimize for with scipy.special's functions (the
same ones scipy.stats calls) and its own Brent root finder, so that an audit does not import either package (a
second of the CI gate's start-up). Each equivalent is compared with scipy over a dense grid: the same value to
the last bit. And the engine's whole gate path, with Great Expectations loaded, leaves scipy.stats unrun (a fresh
interpreter: whether a module ran is a property of the process)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy import optimize, special, stats

from fairgate.engine import exact
from fairgate.engine.diagnostics import contingency_p_value
from fairgate.engine.roots import brentq
from fairgate.engine.stats import (
    PairFamily,
    benjamini_hochberg,
    two_proportion_p_value,
    z_value,
)
from fairgate.engine.studentized_range import (
    _GRID,
    _GRID_CDF,
    _GRID_DENSITY,
    studentized_range_sf,
    studentized_range_sfs,
)

REPO = Path(__file__).resolve().parents[2]


def _same(a: object, b: object) -> bool:
    return bool(np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True))


def test_binomial_quantiles_are_scipys_over_a_dense_grid() -> None:
    rates = np.concatenate([np.linspace(0.0, 1.0, 41), np.geomspace(1e-9, 1e-2, 15), 1 - np.geomspace(1e-9, 1e-2, 15)])
    for q in (5e-13, 1e-9, 1e-3, 0.05, 0.5, 0.95):
        for trials in (1, 2, 3, 7, 15, 40, 99, 250, 1000, 4321):
            ppf = [exact.binomial_ppf(q, trials, r) for r in rates]
            isf = [exact.binomial_isf(q, trials, r) for r in rates]
            assert _same(ppf, stats.binom.ppf(q, trials, rates)), (q, trials)
            assert _same(isf, stats.binom.isf(q, trials, rates)), (q, trials)


def test_normal_and_t_conversions_are_scipys() -> None:
    levels = np.concatenate([np.linspace(0.001, 0.999, 999), 1 - np.geomspace(1e-12, 1e-3, 40)])
    assert all(z_value(level) == stats.norm.ppf(0.5 + level / 2.0) for level in levels)
    assert _same(_GRID_DENSITY, stats.norm.pdf(_GRID))
    assert _same(_GRID_CDF, stats.norm.cdf(_GRID))
    z = np.linspace(-12.0, 12.0, 2401)
    assert _same(special.ndtr(-z), stats.norm.sf(z))
    assert _same(-special.ndtri(special.ndtr(-z)), stats.norm.isf(stats.norm.sf(z)))
    gaps, ses = np.array([0.2, 0.1, 0.3]), np.array([0.05, 0.04, 0.08])
    for df in (1.0, 2.0, 4.5, 9.0, 30.0, 200.0):
        family = PairFamily(gaps, ses, None, (3,), df=df)
        for x in np.linspace(0.0, 8.0, 161):
            assert family._on_t_scale(x) == stats.t.isf(stats.norm.sf(x), df)
            assert family._on_normal_scale(x) == stats.norm.isf(stats.t.sf(x, df))


def test_chi_square_tails_and_contingency_tests_are_scipys() -> None:
    x = np.linspace(0.0, 80.0, 801)
    for df in (1, 2, 3, 5, 8, 13, 40):
        assert _same(special.chdtrc(df, x), stats.chi2.sf(x, df))
    rng = np.random.default_rng(7)
    tables = [rng.integers(0, 400, size=(rows, 2)).astype(float) for rows in (2, 3, 4, 6, 10) for _ in range(60)]
    tables += [rng.uniform(0.5, 300.0, size=(rows, 2)) for rows in (2, 3, 5) for _ in range(60)]  # weighted counts
    tables += [np.array([[a, b], [c, d]], dtype=float) for a, b, c, d in itertools.product((1, 2, 5, 30), repeat=4)]
    for table in tables:
        expected = stats.chi2_contingency(table, correction=table.shape[0] == 2).pvalue
        assert contingency_p_value(table) == expected, table.tolist()


def test_fisher_exact_is_scipys_on_every_small_table_and_random_large_ones() -> None:
    rng = np.random.default_rng(3)
    tables = [np.array(t).reshape(2, 2) for t in itertools.product(range(6), repeat=4)]
    tables += [rng.integers(0, 500, 4).reshape(2, 2) for _ in range(400)]
    tables += [np.array([[rng.integers(0, 5), rng.integers(1, 3000)], [rng.integers(0, 60), rng.integers(1, 3000)]])
               for _ in range(400)]  # fmt: skip
    for table in tables:
        assert _same(exact.fisher_exact_p(table), stats.fisher_exact(table).pvalue), table.tolist()
    x1, n1 = np.array([0.0, 1.0, 2.0, 40.0]), np.array([12.0, 20.0, 7.0, 100.0])
    x2, n2 = np.array([5.0, 30.0, 1.0, 52.0]), np.array([40.0, 200.0, 9.0, 100.0])
    fisher = [
        stats.fisher_exact(np.rint([[a, n - a], [b, m - b]]).astype(int)).pvalue
        for a, n, b, m in zip(x1, n1, x2, n2, strict=True)
    ]
    assert _same(two_proportion_p_value(x1, n1, x2, n2)[:3], fisher[:3])


def test_benjamini_hochberg_is_scipys_for_any_size() -> None:
    rng = np.random.default_rng(11)
    for size in (1, 2, 3, 10, 57):
        p = rng.uniform(0, 1, size) ** 3
        assert _same(benjamini_hochberg(p), stats.false_discovery_control(p, method="bh"))


def test_brent_roots_are_scipys() -> None:
    compared = 0
    for sizes in [(2,), (3,), (4,), (6,), (3, 2), (6, 2, 3), (12,), (30,)]:
        for p in np.geomspace(1e-8, 0.5, 25):

            def excess(x: float, sizes: tuple[int, ...] = sizes, p: float = float(p)) -> float:
                return studentized_range_sfs(x * np.sqrt(2.0), sizes) - p

            low = float(-special.ndtri(p / 2.0))
            if excess(low) > 0:
                compared += 1
                high = 2.0 * low
                while excess(high) > 0:
                    high *= 2.0
                assert brentq(excess, low, high, xtol=1e-9) == optimize.brentq(excess, low, high, xtol=1e-9)
    for groups in range(2, 25):
        for level in (0.9, 0.95, 0.99, 1 - 1e-6):

            def tail(x: float, groups: int = groups, level: float = level) -> float:
                return studentized_range_sf(x, groups) - (1.0 - level)

            assert brentq(tail, 1e-6, 40.0, xtol=1e-10) == optimize.brentq(tail, 1e-6, 40.0, xtol=1e-10)
    assert compared >= 100
    for c in np.linspace(0.1, 5.0, 30):
        f = lambda x, c=c: np.cos(x) - c * x  # noqa: E731
        assert brentq(f, 0.0, 10.0, xtol=1e-12) == optimize.brentq(f, 0.0, 10.0, xtol=1e-12)


def test_brent_refuses_what_scipy_refuses() -> None:
    for f, a, b in ((lambda x: x * x + 1.0, -1.0, 1.0), (lambda x: np.nan, 0.0, 1.0)):
        for solver in (brentq, optimize.brentq):
            try:
                solver(f, a, b, xtol=1e-9)
            except ValueError:
                continue
            raise AssertionError(f"{solver} accepted a bracket without a sign change or a NaN")


_GATE_PATH = """
import json, sys
sys.path.insert(0, "tests/engine")
import cli.audit_cmd, tasks.audit, flows.audit  # what `fairgate audit` imports
import fairgate
from conftest import load_compas
from tasks.validation.gx_suite import load_great_expectations
policy = fairgate.Policy.from_yaml(open("fairgate/policies/compas_demo.yaml").read())
load_great_expectations()
frame = load_compas().rename({"y_true": "two_year_recid"})  # the demo policy's name for the truth
cube = fairgate.build_cube(frame, policy)
parts = [fairgate.compute_slicing(cube, s, policy) for s in fairgate.plan_slicings(cube, policy)]
document = fairgate.adjudicate(cube, parts, policy).to_dict()
# scipy.linalg is not listed: the published document's suppression pattern takes its pivoted QR (about 0.02 s)
ran = [m for m in ("scipy.stats._stats_py", "scipy.optimize._optimize", "scipy.spatial") if m in sys.modules]
print(json.dumps({"results": len(document["results"]), "ran": ran}))
"""


def test_the_gate_path_does_not_run_scipy_stats_or_optimize() -> None:
    done = subprocess.run([sys.executable, "-c", _GATE_PATH], cwd=REPO, capture_output=True, text=True, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["results"] > 20  # the demo policy's metrics over every slicing were judged
    assert seen["ran"] == []
