"""The engine's fast paths give what the slower formulations they replace give (fairgate/engine/stats.py):
Benjamini-Hochberg without scipy's per-call handling, the normal tails by ``special.ndtr``, the studentized-range
tails of a family's components from one integrand, and the deciding interval's root found once per (sizes, p)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as scipy_stats

from fairgate.engine import studentized_range
from fairgate.engine.stats import PairFamily, benjamini_hochberg
from fairgate.engine.studentized_range import studentized_range_sf, studentized_range_sfs


@pytest.mark.parametrize("size", [1, 2, 3, 7, 40, 300])
def test_benjamini_hochberg_equals_scipys(size: int) -> None:
    rng = np.random.default_rng(size)
    for _ in range(50):
        p = rng.random(size)
        if size > 2:
            p[: size // 2] = p[0]  # ties
            p[-1] = 1.0
            p[1] = 0.0
        expected = scipy_stats.false_discovery_control(p, method="bh")
        assert np.array_equal(benjamini_hochberg(p), expected)
    with_nan = benjamini_hochberg(np.array([0.01, np.nan, 0.04, 0.03]))
    assert np.array_equal(with_nan, [0.03, np.nan, 0.04, 0.04], equal_nan=True)


def test_benjamini_hochberg_refuses_what_scipy_refuses() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        benjamini_hochberg(np.array([0.2, 1.5, 0.1]))


def test_range_tails_of_components_equal_one_by_one() -> None:
    for q in [0.0, 0.3, 1.7, 3.314, 6.0, 12.0]:
        for sizes in [(2,), (3, 3), (4, 5, 20), (1, 6)]:
            assert studentized_range_sfs(q, sizes) == sum(studentized_range_sf(q, g) for g in sizes)
    grid = np.linspace(-9.0, 9.0, 3601)
    q = 2.5
    inside = np.clip(scipy_stats.norm.cdf(grid) - scipy_stats.norm.cdf(grid - q), 0.0, 1.0)
    by_scipy = 1.0 - 4 * np.trapezoid(scipy_stats.norm.pdf(grid) * inside**3, grid)
    assert studentized_range_sf(q, 4) == by_scipy


def _beyond_bound_by_search(family: PairFamily, p: float) -> float:
    """The deciding bound as it was computed before (a root search from each family's own start)."""
    t = float(scipy_stats.norm.isf(p / 2.0))
    if family.null is not None and family.null.size >= 20:
        # replicates allowed at or beyond t under the Monte Carlo p-value (k + 1) / (B + 1)
        allowed = max(0, int(np.floor(p * (family.null.size + 1) - 1.0 + 1e-9)))
        if allowed < family.null.size:
            t = max(t, float(np.nextafter(family.null[family.null.size - allowed - 1], np.inf)))

    def excess(x: float) -> float:
        return sum(studentized_range_sf(x * np.sqrt(2.0), g) for g in family.sizes) - p

    if excess(t) > 0:
        high = 2.0 * t
        while excess(high) > 0 and high < 1e3:
            high *= 2.0
        t = float(optimize.brentq(excess, t, high, xtol=1e-9))
    return max(0.0, float(np.max(family.gap - t * family.se)))


@pytest.mark.parametrize("seed", range(6))
def test_beyond_bound_equals_the_root_search_it_replaces(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = tuple(int(g) for g in rng.integers(2, 9, rng.integers(1, 4)))
    n_pairs = sum(g * (g - 1) // 2 for g in sizes)
    null = np.sort(np.abs(rng.normal(0.0, 1.6, 1000))) if seed % 2 else None
    family = PairFamily(rng.uniform(0.0, 0.4, n_pairs), rng.uniform(0.01, 0.08, n_pairs), null, sizes)
    studentized_range.studentized_range_root.cache_clear()
    for p in [0.2, 0.05, 0.01, 0.0013, 1e-5]:
        assert family.beyond_bound(p) == pytest.approx(_beyond_bound_by_search(family, p), abs=1e-9)
        assert family.beyond_bound(p) == pytest.approx(_beyond_bound_by_search(family, p), abs=1e-9)  # cached


def test_each_slicing_is_counted_once_per_cube(monkeypatch: pytest.MonkeyPatch) -> None:
    """plan_slicings and skipped_slicings share one count per slicing of the same cube."""
    import collections

    import polars as pl

    import fairgate
    from fairgate.engine import planning

    rng = np.random.default_rng(3)
    n = 2000
    frame = pl.DataFrame(
        {
            "a": rng.choice(["x", "y", "z"], n),
            "b": rng.choice(["u", "v"], n),
            "c": rng.choice(["p", "q", "r", "s"], n),
            "y_true": rng.integers(0, 2, n),
            "y_pred": rng.integers(0, 2, n),
        }
    )
    policy = fairgate.Policy.model_validate(
        {
            "sensitive_attributes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "metrics": [{"name": "demographic_parity_difference", "threshold": 0.1}],
            "intersectional_analysis": {"min_group_size": 30, "include_triples": True},
            "limits": {"max_groups_per_slicing": 10},
            "statistics": {"n_bootstrap": 50},
        }
    )
    calls: collections.Counter[tuple[str, ...]] = collections.Counter()
    counted = planning.slicing_group_count

    def counting(cube: object, slicing: tuple[str, ...], policy: object) -> int:
        calls[slicing] += 1
        return counted(cube, slicing, policy)  # type: ignore[arg-type]

    monkeypatch.setattr(planning, "slicing_group_count", counting)
    document = fairgate.audit(frame, policy).to_dict()
    assert calls, "the planner counted no slicing"
    assert set(calls.values()) == {1}
    skipped = document["diagnostics"]["skipped_slicings"]
    assert [(s["slicing"], s["groups"]) for s in skipped] == [(["a", "c"], 12), (["a", "b", "c"], 24)]


def test_slicing_groups_equal_the_polars_join_they_replace() -> None:
    """Groups from packed attribute codes: the same sorted groups and cell indices as a Polars unique + join."""
    import itertools

    import polars as pl

    import fairgate
    from fairgate.engine.cube import build_cube
    from fairgate.engine.slicing import GROUP, slicing_groups

    rng = np.random.default_rng(11)
    n = 3000
    frame = pl.DataFrame(
        {
            "a": rng.choice(["x", "y", "Z", "é"], n),
            "b": rng.choice(["u", "v"], n),
            "c": rng.choice(["p10", "p2", "q", "r", "s"], n),
            "y_true": rng.integers(0, 2, n),
            "y_pred": rng.integers(0, 2, n),
        }
    )
    policy = fairgate.Policy.model_validate(
        {
            "sensitive_attributes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "metrics": [{"name": "demographic_parity_difference", "threshold": 0.1}],
        }
    )
    cube = build_cube(frame.filter(~((pl.col("a") == "x") & (pl.col("c") == "q"))), policy)

    def joined(slicing: tuple[str, ...], declared: list[str] | None) -> tuple[pl.DataFrame, np.ndarray]:
        keys = list(slicing)
        present = cube.cells.select(keys).unique()
        if declared is not None:
            present = pl.concat([present, pl.DataFrame({keys[0]: declared}, schema=present.schema)]).unique()
        groups = present.sort(keys).with_row_index(GROUP)
        index = cube.cells.select(keys).join(groups, on=keys, how="left", maintain_order="left")[GROUP]
        return groups, index.to_numpy().astype(np.int64)

    cases: list[tuple[tuple[str, ...], list[str] | None]] = [(("a",), ["w", "y", "zz"]), (("c",), ["p1"])]
    cases += [(s, None) for k in (1, 2, 3) for s in itertools.combinations(["a", "b", "c"], k)]
    for slicing, declared in cases:
        groups, index = slicing_groups(cube, slicing, declared)
        expected_groups, expected_index = joined(slicing, declared)
        assert groups.equals(expected_groups), slicing
        assert np.array_equal(index, expected_index), slicing
