"""Weights (probabilistic membership): Kish effective sizes, scale invariance, and the weighted bootstrap.

Each simulated person has a calibrated posterior over three groups (a permutation of 0.6/0.3/0.1) and
becomes three rows, one per group, weighted by the posterior, as proxy inference's probabilistic mode does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.engine.bootstrap import slicing_seed
from fairgate.engine.cube import PERSON_WEIGHT, build_cube
from fairgate.engine.metrics import GroupCounts, SelectionRate, effective_size
from fairgate.engine.slicing import bootstrap_group_counts, slicing_groups

GROUPS = ("a", "b", "c")
PERMUTATIONS = np.array(
    [[0.6, 0.3, 0.1], [0.6, 0.1, 0.3], [0.3, 0.6, 0.1], [0.1, 0.6, 0.3], [0.3, 0.1, 0.6], [0.1, 0.3, 0.6]]
)
METRICS = [
    {"name": "demographic_parity_difference", "threshold": 0.1},
    {"name": "equal_opportunity_difference", "threshold": 0.1},
    {"name": "disparate_impact_ratio", "threshold": 0.8},
]


def people(n: int, seed: int, rates: tuple[float, ...] = (0.3, 0.3, 0.45)) -> tuple[np.ndarray, pl.DataFrame]:
    """Posteriors (n x 3) and one row per person: true group drawn from its posterior, outcomes by group."""
    rng = np.random.default_rng(seed)
    posterior = PERMUTATIONS[rng.integers(0, len(PERMUTATIONS), n)]
    truth = (rng.random(n)[:, None] > posterior.cumsum(axis=1)).sum(axis=1)
    frame = pl.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n),
            "y_true": (rng.random(n) < 0.5).astype(np.int8),
            "y_pred": (rng.random(n) < np.asarray(rates)[truth]).astype(np.int8),
            "score": rng.random(n),
        }
    )
    return posterior, frame


def expand(posterior: np.ndarray, frame: pl.DataFrame, scale: float = 1.0) -> pl.DataFrame:
    """One row per person and group, weight = posterior (times ``scale``), and the person's total weight, as
    the proxy stage writes them."""
    k = posterior.shape[1]
    return frame.select(pl.all().repeat_by(k).explode()).with_columns(
        pl.Series("grp", list(GROUPS) * frame.height),
        pl.Series("w", posterior.reshape(-1) * scale),
        pl.lit(scale).alias(PERSON_WEIGHT),
    )


# The proxy section tells the engine that "grp" membership is probabilistic (the flow fills the rows in).
PROXY = {"method": "custom", "custom": {"name_table": "names.csv"}, "attribute": "grp"}


def weighted_policy(h: Any, **extra: Any) -> fairgate.Policy:
    return h.make_policy(
        ["grp", "sex"],
        METRICS,
        columns={"weight": "w"},
        min_group_size=extra.pop("min_group_size", 30),
        proxy=PROXY,
        **extra,
    )


def judged_view(document: dict[str, Any]) -> dict[str, Any]:
    """Everything that must not move when the weights are rescaled (the policy names the same column)."""
    return {k: v for k, v in document.items() if k not in ("run_id", "created_at")}


@pytest.mark.parametrize("scale", [10.0, 0.01])
def test_rescaled_weights_give_the_same_audit(h: Any, scale: float) -> None:
    posterior, frame = people(600, seed=3)
    policy = weighted_policy(h, n_bootstrap=200)
    base = judged_view(fairgate.audit(expand(posterior, frame), policy, exact_auc=True).to_dict())
    scaled = judged_view(fairgate.audit(expand(posterior, frame, scale), policy, exact_auc=True).to_dict())
    # Calibration curves report each bin's weight (an expected count), which scales with the weights.
    for document in (base, scaled):
        document["curves"].pop("calibration")
    h.assert_close_tree(base, scaled)
    # The check has teeth: the groups are sizeable and judged, and their n is the Kish size, not the weight sum.
    race = [g for g in base["groups"] if g["slicing"] == ["grp"]]
    assert all(g["sufficient"] for g in race)
    assert all(g["n"] < 0.8 * g["rows"] for g in race)
    # Slicings without the inferred attribute count each person once: n = people (weights sum to 1 each).
    (population,) = [g for g in base["groups"] if g["slicing"] == []]
    assert population["n"] == pytest.approx(600)
    assert population["rows"] == 1800


def test_without_person_weights_each_row_is_a_person(h: Any) -> None:
    posterior, frame = people(300, seed=5)
    rows = expand(posterior, frame).drop(PERSON_WEIGHT)
    document = fairgate.audit(rows, weighted_policy(h, n_bootstrap=10), exact_auc=False).to_dict()
    (population,) = [g for g in document["groups"] if g["slicing"] == []]
    assert population["n"] == pytest.approx(300**2 / float((posterior**2).sum()))


def test_unit_weights_change_nothing(h: Any) -> None:
    _, frame = people(400, seed=4)
    frame = frame.with_columns(pl.Series("grp", np.random.default_rng(5).choice(["x", "y", "z"], frame.height)))
    plain = fairgate.audit(frame, h.make_policy(["grp", "sex"], METRICS, min_group_size=30, n_bootstrap=100))
    ones = fairgate.audit(
        frame.with_columns(pl.lit(1.0).alias("w")),
        h.make_policy(["grp", "sex"], METRICS, min_group_size=30, n_bootstrap=100, columns={"weight": "w"}),
    )
    left, right = plain.to_dict(), ones.to_dict()
    for key in ("groups", "comparisons", "summaries", "results"):
        assert left[key] == right[key], key  # exactly, bit for bit


def test_group_size_is_kish_and_judges_min_group_size(h: Any) -> None:
    # Group x: 100 rows at 0.1 and 100 at 0.9 (sum 100, Kish 121.95); group y: 60 rows at 1 (Kish 60).
    frame = pl.DataFrame(
        {
            "grp": ["x"] * 200 + ["y"] * 60,
            "y_true": [0, 1] * 130,
            "y_pred": [1, 1, 0, 0] * 65,
            "w": [0.1] * 100 + [0.9] * 100 + [1.0] * 60,
        }
    )
    document = fairgate.audit(frame, h.make_policy(["grp"], columns={"weight": "w"}, min_group_size=61)).to_dict()
    sizes = {g["group"]["grp"]: (g["n"], g["sufficient"]) for g in document["groups"] if g["slicing"] == ["grp"]}
    assert sizes["x"] == (pytest.approx(100.0**2 / (100 * 0.01 + 100 * 0.81)), True)
    assert sizes["y"] == (pytest.approx(60.0), False)


def test_effective_fraction_uses_the_denominator_kish_size() -> None:
    one = np.array([1.0])
    counts = GroupCounts(
        tp=np.array([2.0]), fp=np.array([1.0]), tn=np.array([3.0]), fn=np.array([2.0]),
        bin_n=one, bin_positive=one, bin_score=one,
        tp_sq=np.array([1.0]), fp_sq=np.array([0.5]), tn_sq=np.array([1.5]), fn_sq=np.array([3.0]),
    )  # fmt: skip
    successes, trials = SelectionRate().fraction(counts)
    assert trials == pytest.approx(8.0**2 / 6.0)
    assert successes / trials == pytest.approx(3.0 / 8.0)  # the weighted proportion is kept
    assert counts.n_effective == pytest.approx(trials)
    assert effective_size(np.array([5.0]), np.array([5.0])).tolist() == [5.0]


def _selection_rate_spread(posterior: np.ndarray, frame: pl.DataFrame, h: Any) -> tuple[np.ndarray, np.ndarray]:
    """The point selection rate per group and the bootstrap standard deviation of it (400 replicates)."""
    policy = weighted_policy(h, n_bootstrap=400)
    cube = build_cube(expand(posterior, frame), policy, exact_auc=False)
    _, index = slicing_groups(cube, ("grp",))
    point, boot = bootstrap_group_counts(cube, index, 3, 400, slicing_seed(0, ("grp",)), ("grp",))
    metric = SelectionRate()
    return metric.compute(point), metric.compute(boot).std(axis=0)


@pytest.mark.slow
def test_weighted_bootstrap_matches_the_spread_over_people(h: Any) -> None:
    """Across simulated audits, the spread of each group's weighted selection rate equals (within 20%) the
    bootstrap's: drawing Kish effective units per cell gives the variance that resampling people gives."""
    estimates, spreads = [], []
    for seed in range(120):
        posterior, frame = people(1500, seed=100 + seed)
        value, spread = _selection_rate_spread(posterior, frame, h)
        estimates.append(value)
        spreads.append(spread)
    ratio = np.mean(spreads, axis=0) / np.std(estimates, axis=0, ddof=1)
    assert np.all((ratio > 0.85) & (ratio < 1.2)), ratio


@pytest.mark.slow
def test_kish_wilson_intervals_cover_the_weighted_rate(h: Any) -> None:
    """Wilson intervals on Kish sizes cover each group's weighted selection rate (its population value)."""
    posterior, frame = people(400_000, seed=1)
    truth = (posterior * frame["y_pred"].to_numpy()[:, None]).sum(axis=0) / posterior.sum(axis=0)
    policy = weighted_policy(h, n_bootstrap=0)
    hits = np.zeros(3)
    runs = 150
    for seed in range(runs):
        posterior, frame = people(800, seed=1000 + seed)
        document = fairgate.audit(expand(posterior, frame), policy, exact_auc=False).to_dict()
        race = sorted((g for g in document["groups"] if g["slicing"] == ["grp"]), key=lambda g: g["group"]["grp"])
        rate = [g["metrics"]["selection_rate"] for g in race]
        hits += [r["ci_low"] <= t <= r["ci_high"] for r, t in zip(rate, truth, strict=True)]
    assert np.all(hits / runs >= 0.91), hits / runs
