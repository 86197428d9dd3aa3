"""Per-slicing bootstrap replicates: reproducible wherever a slicing runs, and tied to the policy's seed.

Each slicing draws its own multinomial replicates or sums a larger slicing's (fairgate/engine/bootstrap.py), so a
slicing computed alone (as one Prefect task) must give exactly the intervals it gets inside
``fairgate.engine.audit`` (threads, other slicings).
"""

from __future__ import annotations

import numpy as np
import polars as pl

import fairgate
from fairgate.engine.audit import audit_counted
from fairgate.engine.bootstrap import draw_counts, slicing_seed


def _frame(seed: int = 3, n: int = 3000) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    score = 1.0 / (1.0 + np.exp(-(1.0 * y + rng.normal(-0.4, 1.0, n))))
    return pl.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n),
            "band": rng.choice(["young", "mid", "old"], n),
            "y_true": y,
            "score": score,
            "y_pred": (score >= 0.5).astype(int),
        }
    )


def _policy(seed: int) -> fairgate.Policy:
    return fairgate.Policy.model_validate(
        {
            "sensitive_attributes": [{"name": "sex"}, {"name": "band"}],
            "metrics": [
                {"name": "equalized_odds_difference", "threshold": 0.1},
                {"name": "calibration_difference", "threshold": 0.05},
            ],
            "intersectional_analysis": {"min_group_size": 1},
            "statistics": {"n_bootstrap": 200, "seed": seed},
        }
    )


def _intervals(part: fairgate.SlicingResult) -> list[tuple[str, float | None, float | None]]:
    return [(r["metric"], r["ci_low"], r["ci_high"]) for r in part.results] + [
        (s["metric"], s["difference_ci_low"], s["difference_ci_high"]) for s in part.summaries
    ]


def test_a_slicing_alone_gets_the_intervals_it_gets_inside_the_audit() -> None:
    frame, policy = _frame(), _policy(seed=7)
    # One cube for both: a cube counted again may sum its scores in another order (threads), a last-bit difference
    cube = fairgate.build_cube(frame, policy, exact_auc=False)
    document = audit_counted(cube, policy).to_dict()
    for slicing in [("sex",), ("band",), ("sex", "band")]:
        alone = fairgate.compute_slicing(cube, slicing, policy)
        inside = {
            (r["metric"], r["ci_low"], r["ci_high"]) for r in document["results"] if tuple(r["slicing"]) == slicing
        }
        assert {entry for entry in _intervals(alone) if entry in inside} == inside
        assert inside  # something was compared


def test_the_seed_and_the_slicing_choose_the_replicates() -> None:
    frame = _frame()
    cube = fairgate.build_cube(frame, _policy(seed=7), exact_auc=False)
    first = _intervals(fairgate.compute_slicing(cube, ("band",), _policy(seed=7)))
    again = _intervals(fairgate.compute_slicing(cube, ("band",), _policy(seed=7)))
    other_seed = _intervals(fairgate.compute_slicing(cube, ("band",), _policy(seed=8)))
    assert first == again
    assert first != other_seed
    assert slicing_seed(7, ("sex",)).entropy != slicing_seed(7, ("band",)).entropy


def test_each_replicate_resamples_all_rows() -> None:
    rows = np.array([5.0, 0.5e3, 12.0, 3.0])
    counts = draw_counts(rows, 50, np.random.SeedSequence(1))
    assert counts.shape == (50, 4)
    assert (counts.sum(axis=1) == rows.sum()).all()
    assert counts.std(axis=0).min() > 0  # resampled, not copied
    assert draw_counts(rows, 0, np.random.SeedSequence(1)).shape == (0, 4)


def _multinomial_fit(counts: np.ndarray, probabilities: np.ndarray) -> float:
    """The chi-square goodness-of-fit p-value of replicates (rows of ``counts``) against the multinomial law of
    their total over ``probabilities``: every outcome enumerated, those expected fewer than 5 times pooled."""
    from scipy import stats

    total = int(counts[0].sum())
    outcomes = [np.array(o) for o in _compositions(total, probabilities.size)]
    expected = stats.multinomial.pmf(np.array(outcomes), total, probabilities) * counts.shape[0]
    seen: dict[tuple[int, ...], int] = {}
    for row in counts.astype(int).tolist():
        seen[tuple(row)] = seen.get(tuple(row), 0) + 1
    observed = np.array([seen.get(tuple(o.tolist()), 0) for o in outcomes], dtype=float)
    assert observed.sum() == counts.shape[0]  # no replicate outside the multinomial's support
    small = expected < 5
    observed = np.append(observed[~small], observed[small].sum())
    expected = np.append(expected[~small], expected[small].sum())
    return float(stats.chisquare(observed, expected).pvalue)


def _compositions(total: int, parts: int) -> list[tuple[int, ...]]:
    if parts == 1:
        return [(total,)]
    return [(first, *rest) for first in range(total + 1) for rest in _compositions(total - first, parts - 1)]


def test_draws_follow_the_multinomial_law() -> None:
    """The conditional binomials over blocks of cells draw exactly the multinomial: a chi-square test over all
    462 outcomes of 6 rows in 7 cells (one empty, so three blocks of three with padding) accepts them, and
    rejects numpy's multinomial with two cells' probabilities swapped, so the test can tell laws apart."""
    rows = np.array([1.0, 0.0, 2.0, 1.0, 1.0, 0.5, 0.5])
    probabilities = rows / rows.sum()
    drawn = draw_counts(rows, 100_000, np.random.SeedSequence(11))
    assert drawn.shape == (100_000, 7)
    assert (drawn[:, 1] == 0).all()  # an empty cell never draws a row
    kept = np.flatnonzero(rows)
    assert _multinomial_fit(drawn[:, kept], probabilities[kept]) > 1e-3
    swapped = probabilities[kept][[0, 2, 1, 3, 4, 5]]
    other = np.random.default_rng(11).multinomial(6, swapped, size=100_000)
    assert _multinomial_fit(other, probabilities[kept]) < 1e-6


def test_draws_at_scale_have_the_multinomial_moments() -> None:
    """Millions of rows over 50 cells: the means, variances and covariances of the draws are the multinomial's
    (n p, n p (1 - p), -n p_i p_j) within a few standard errors of 20,000 replicates."""
    rng = np.random.default_rng(5)
    rows = np.round(rng.gamma(0.7, 1.0, 50) * 1e5)
    n, p = rows.sum(), rows / rows.sum()
    drawn = draw_counts(rows, 20_000, np.random.SeedSequence(2))
    assert (drawn.sum(axis=1) == n).all()
    standard_errors = np.sqrt(n * p * (1 - p) / drawn.shape[0])
    assert (np.abs(drawn.mean(axis=0) - n * p) < 5 * standard_errors).all()
    covariance = np.cov(drawn, rowvar=False)
    law = n * (np.diag(p) - np.outer(p, p))
    scale = np.sqrt(np.outer(np.diag(law), np.diag(law)))
    assert np.abs(covariance - law).max() < 0.05 * scale.max()
    assert np.abs((covariance - law) / scale).max() < 0.05  # correlations within 0.05 (se about 0.007)


def test_a_slicing_inside_a_larger_one_sums_its_draws_with_the_multinomial_law() -> None:
    """A slicing inside a larger planned one sums that parent's drawn cells (fairgate/engine/replicate_sources.py).

    Its replicates are exactly the sums of the parent's (the same draws, not new ones), and they follow the
    multinomial law over its own cells: a chi-square test over every outcome of 6 rows in the attribute's 4
    occupied cells (two of them with 2 rows from two parent cells each) accepts them, and the same test
    rejects the law with two cells' probabilities swapped.
    """
    from fairgate.engine.replicate_sources import replicate_source
    from fairgate.engine.slicing import bootstrap_group_counts, slicing_groups
    from fairgate.engine.slicing_cells import flat_cells

    frame = pl.DataFrame(
        {
            "sex": ["f", "f", "f", "m", "m", "m"],
            "band": ["young", "old", "old", "young", "young", "old"],
            "y_true": [1, 1, 0, 1, 0, 1],
            "score": [0.91, 0.93, 0.2, 0.81, 0.3, 0.85],
            "y_pred": [1, 1, 0, 1, 0, 1],
        }
    )
    policy = _policy(seed=5).model_copy(
        update={"statistics": _policy(5).statistics.model_copy(update={"n_bootstrap": 60_000})}
    )
    cube = fairgate.build_cube(frame, policy, exact_auc=False)
    parent, child = ("sex", "band"), ("sex",)
    assert fairgate.plan_slicings(cube, policy)[-1] == parent
    drawn = {}
    for slicing in (parent, child):
        groups, index = slicing_groups(cube, slicing)
        source = replicate_source(cube, slicing, policy)
        assert source is not None  # unweighted and planned: both read the parent's draws
        flat = flat_cells(cube, index)
        rows = np.bincount(flat, weights=cube.cells["__rows"].to_numpy(), minlength=groups.height * 4 * 10)
        occupied = np.flatnonzero(rows)
        drawn[slicing] = (source(flat, occupied), flat, occupied, rows[occupied])
    parent_drawn, parent_flat, parent_occupied, _ = drawn[parent]
    child_drawn, child_flat, child_occupied, child_rows = drawn[child]
    # The same draws: each child cell's replicate counts are the sums of its parent cells'.
    into = np.empty(parent_occupied.size, dtype=np.int64)
    into[np.searchsorted(parent_occupied, parent_flat)] = np.searchsorted(child_occupied, child_flat)
    summed = np.zeros_like(child_drawn)
    np.add.at(summed.T, into, parent_drawn.T)
    np.testing.assert_array_equal(summed, child_drawn)
    probabilities = child_rows / child_rows.sum()
    assert _multinomial_fit(child_drawn, probabilities) > 1e-3
    assert child_rows.tolist() == [1, 2, 1, 2]
    assert parent_occupied.size == 6
    swapped = probabilities[[1, 0, 2, 3]]
    assert _multinomial_fit(child_drawn, swapped) < 1e-6
    # The slicing's group counts come from these draws: every replicate resamples all 6 rows.
    _, boot = bootstrap_group_counts(
        cube,
        slicing_groups(cube, child)[1],
        2,
        60_000,
        slicing_seed(5, child),
        child,
        source=replicate_source(cube, child, policy),
    )
    assert (boot.n.sum(axis=1) == 6).all()


def test_weighted_cubes_draw_every_slicing_on_its_own() -> None:
    """Under weights a slicing draws Kish units of its own cells, which are not sums of a parent's: no sharing."""
    from fairgate.engine.replicate_sources import replicate_source

    frame = _frame().with_columns(pl.Series("w", np.random.default_rng(1).gamma(2.0, 0.5, 3000)))
    policy = _policy(seed=7).model_copy(update={"columns": _policy(7).columns.model_copy(update={"weight": "w"})})
    cube = fairgate.build_cube(frame, policy, exact_auc=False)
    assert all(replicate_source(cube, s, policy) is None for s in fairgate.plan_slicings(cube, policy))
    unweighted = fairgate.build_cube(_frame(), _policy(seed=7), exact_auc=False)
    assert replicate_source(unweighted, ("sex",), _policy(seed=7)) is not None
