"""Individual fairness against AIF360 (consistency) and scipy (Wilson intervals), on COMPAS and generated data.

AIF360's ``consistency`` (``BinaryLabelDatasetMetric.consistency`` and ``aif360.sklearn.metrics.
consistency_score``) must equal the engine's to 1e-9: on COMPAS's numeric features (many ties and exact
duplicates: the neighbours must be AIF360's, not merely some nearest ones), on continuous generated data, for
several k and with scaled features. Per-group consistency is checked against AIF360's own neighbour search
(``NearestNeighbors(algorithm="ball_tree")`` as AIF360 builds it), restricted to the group's people.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from aif360.datasets import BinaryLabelDataset
from aif360.metrics import BinaryLabelDatasetMetric
from aif360.sklearn.metrics import consistency_score as aif360_consistency_score
from scipy import stats
from scipy.spatial import cKDTree
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from fairgate.engine.individual import GroupConsistency, GroupFlips, LevelFamily, consistency_score, disagreements
from fairgate.engine.individual.neighbours import AIF360Neighbours
from fairgate.engine.stats import z_value
from tests.engine.conftest import COMPAS_CSV, quiet_oracles

TOL = 1e-9
COMPAS_FEATURES = ["priors_count", "age", "juv_fel_count", "juv_misd_count", "juv_other_count"]


@pytest.fixture(scope="module")
def compas_people() -> pl.DataFrame:
    raw = pl.read_csv(COMPAS_CSV)
    return raw.select(
        *COMPAS_FEATURES,
        pl.col("race"),
        pl.col("sex"),
        pl.col("score_text").is_in(["Medium", "High"]).cast(pl.Int64).alias("y_pred"),
    )


def _aif360_dataset_consistency(x: np.ndarray, y: np.ndarray, k: int) -> float:
    """AIF360's BinaryLabelDatasetMetric.consistency on a dataset whose labels are the decisions."""
    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(x.shape[1])])
    frame["protected"] = 0.0
    frame["label"] = y.astype(float)
    with quiet_oracles():
        dataset = BinaryLabelDataset(df=frame, label_names=["label"], protected_attribute_names=["protected"])
        metric = BinaryLabelDatasetMetric(dataset)
        # AIF360's features include the protected column (a constant here: it does not move any distance).
        return float(np.asarray(metric.consistency(n_neighbors=k)).ravel()[0])


def _aif360_group_consistency(x: np.ndarray, y: np.ndarray, k: int, rows: np.ndarray) -> float:
    """AIF360's loop over the given rows only, with AIF360's neighbour search over everyone."""
    with quiet_oracles():
        indices = NearestNeighbors(n_neighbors=k, algorithm="ball_tree").fit(x).kneighbors(x)[1]
    return 1.0 - float(np.mean([abs(y[i] - np.mean(y[indices[i]])) for i in rows]))


@pytest.mark.parametrize("k", [1, 5, 12])
def test_compas_consistency_equals_aif360(compas_people: pl.DataFrame, k: int) -> None:
    x = compas_people.select(COMPAS_FEATURES).to_numpy().astype(float)
    y = compas_people["y_pred"].to_numpy()
    # The features tie a lot (integer counts): the test is only meaningful if many people have > k duplicates.
    _, multiplicity = np.unique(x, axis=0, return_counts=True)
    assert multiplicity.max() > k
    with quiet_oracles():
        expected = float(aif360_consistency_score(x, y, n_neighbors=k))
    assert abs(consistency_score(x, y, k=k) - expected) <= TOL
    assert abs(consistency_score(x, y, k=k) - _aif360_dataset_consistency(x, y, k)) <= TOL


@pytest.mark.parametrize(("scaling", "scaler"), [("standard", StandardScaler), ("minmax", MinMaxScaler)])
def test_scaled_consistency_equals_aif360_on_scaled_features(
    compas_people: pl.DataFrame, scaling: str, scaler: type
) -> None:
    x = compas_people.select(COMPAS_FEATURES).to_numpy().astype(float)
    y = compas_people["y_pred"].to_numpy()
    # Scaling turns equal integer distances into nearly equal floats: ties then fall by the last bit, so the
    # oracle gets the very matrix a user's scaler makes of the same (C-ordered) features.
    x = np.ascontiguousarray(x)
    with quiet_oracles():
        expected = float(aif360_consistency_score(scaler().fit_transform(x), y, n_neighbors=5))
    assert abs(consistency_score(x, y, k=5, scaling=scaling) - expected) <= TOL  # type: ignore[arg-type]
    # Scaling matters on these features (age spans decades, the juvenile counts a few units).
    assert abs(consistency_score(x, y, k=5, scaling=scaling) - consistency_score(x, y, k=5)) > 1e-4  # type: ignore[arg-type]


def test_compas_group_consistency_equals_aif360_restricted_to_the_group(compas_people: pl.DataFrame) -> None:
    x = compas_people.select(COMPAS_FEATURES).to_numpy().astype(float)
    y = compas_people["y_pred"].to_numpy()
    race = compas_people["race"].to_numpy()
    values = sorted(set(race))
    codes = np.array([values.index(r) for r in race])
    measured = GroupConsistency.of(disagreements(x, y, k=5), codes, len(values), 5)
    for g, value in enumerate(values):
        rows = np.flatnonzero(race == value)
        assert measured.n[g] == rows.size
        assert abs(measured.value[g] - _aif360_group_consistency(x, y, 5, rows)) <= TOL, value
    # The population is the people-weighted mean of its groups.
    overall = float((measured.value * measured.n).sum() / measured.n.sum())
    assert abs(overall - consistency_score(x, y, k=5)) <= TOL


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_consistency_equals_aif360(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 3000
    continuous = rng.normal(size=(n, 4))
    # Half continuous, half coarse integer columns with heavy duplication (ties at every distance).
    tied = rng.integers(0, 3, size=(n, 3)).astype(float)
    x = np.hstack([continuous, tied]) if seed % 2 else tied
    y = (rng.random(n) < 1 / (1 + np.exp(-x[:, 0]))).astype(np.int64)
    with quiet_oracles():
        expected = float(aif360_consistency_score(x, y, n_neighbors=5))
    assert abs(consistency_score(x, y, k=5) - expected) <= TOL
    assert abs(consistency_score(x, y, k=5) - _aif360_dataset_consistency(x, y, 5)) <= TOL


def test_chunked_queries_give_the_same_neighbours(compas_people: pl.DataFrame) -> None:
    x = compas_people.select(COMPAS_FEATURES).to_numpy().astype(float)
    y = compas_people["y_pred"].to_numpy()
    whole = disagreements(x, y, k=5)
    assert np.array_equal(disagreements(x, y, k=5, chunk=997, n_jobs=2), whole)


def test_bad_features_are_refused() -> None:
    x = np.array([[0.0], [np.nan], [1.0]])
    with pytest.raises(ValueError, match="finite"):
        disagreements(x, np.array([0, 1, 0]), k=2)
    with pytest.raises(ValueError, match="0/1"):
        disagreements(np.zeros((3, 1)), np.array([0, 2, 0]), k=2)
    with pytest.raises(ValueError, match="k = 4"):
        disagreements(np.zeros((3, 1)), np.array([0, 1, 0]), k=4)


def test_flip_counts_and_wilson_intervals_match_scipy() -> None:
    rng = np.random.default_rng(5)
    n = 5000
    codes = rng.integers(0, 3, n)
    decisions = rng.integers(0, 2, n)
    flip = rng.random(n) < np.array([0.02, 0.05, 0.10])[codes]
    counterfactual = np.where(flip, 1 - decisions, decisions)
    flips = GroupFlips.of(decisions, counterfactual, codes, 3, favorable=1)
    z = z_value(0.95)
    low, high = flips.interval(flips.flips, z)
    for g in range(3):
        rows = codes == g
        changed = int((decisions[rows] != counterfactual[rows]).sum())
        assert flips.flips[g] == changed
        assert flips.to_favorable[g] == int(((decisions[rows] == 0) & (counterfactual[rows] == 1)).sum())
        ci = stats.binomtest(changed, int(rows.sum())).proportion_ci(confidence_level=0.95, method="wilson")
        assert abs(low[g] - ci.low) <= 1e-9
        assert abs(high[g] - ci.high) <= 1e-9


def test_level_family_holds_its_error_rate_at_the_threshold() -> None:
    """Seeded simulation: groups whose flip rate (or consistency) sits exactly at the threshold are judged beyond
    it at most alpha of the time, with 3 groups (Bonferroni over them)."""
    rng = np.random.default_rng(11)
    alpha, threshold, n, runs = 0.05, 0.05, 400, 4000
    flips = rng.binomial(n, threshold, size=(runs, 3)).astype(float)
    rejected = [
        LevelFamily(f / n, np.zeros(3), np.full(3, float(n)), "wilson", f).p_beyond(threshold) <= alpha for f in flips
    ]
    assert np.mean(rejected) <= alpha + 0.012  # 3.5 standard errors of 4,000 runs
    # Consistency: per-person terms m/k with k = 5 at a true mean of 0.2 (consistency 0.8 = the threshold).
    probabilities = np.array([0.3, 0.4, 0.3, 0.0, 0.0, 0.0])
    k = 5
    assert abs(float((probabilities * np.arange(6) / k).sum()) - 0.2) < 1e-12
    rejected = []
    for _ in range(runs):
        counts = rng.multinomial(n, probabilities, size=3)
        g = GroupConsistency(counts, k)
        rejected.append(LevelFamily(-g.value, g.se, g.n.astype(float), "normal").p_beyond(-0.8) <= alpha)
    assert np.mean(rejected) <= alpha + 0.012  # 3.5 standard errors of 4,000 runs
    # And it has power: a group at consistency 0.7 with 2,000 people is found.
    counts = np.vstack([rng.multinomial(2000, probabilities), rng.multinomial(2000, [0.1, 0.3, 0.3, 0.2, 0.1, 0.0])])
    g = GroupConsistency(counts, k)
    assert LevelFamily(-g.value, g.se, g.n.astype(float), "normal").p_beyond(-0.8) < 1e-6


def _ball_tree_sets(x: np.ndarray, k: int) -> list[frozenset[int]]:
    """Each point's k neighbours as AIF360's search picks them (a set: consistency sums over it)."""
    with quiet_oracles():
        indices = NearestNeighbors(n_neighbors=k, algorithm="ball_tree").fit(x).kneighbors(x)[1]
    return [frozenset(row) for row in indices.tolist()]


@pytest.mark.parametrize("shape", ["continuous", "grid", "continuous and grid"])
def test_every_neighbourhood_is_the_ball_trees(shape: str) -> None:
    """Row by row the neighbour sets are AIF360's: the KD-tree where the boundary is clear, the ball tree on ties."""
    rng = np.random.default_rng(11)
    n, k = 4000, 5
    parts = {
        "continuous": [rng.normal(size=(n, 6))],
        # Integer coordinates: many distinct points at equal distance from a query (ties away from 0 too).
        "grid": [rng.integers(0, 6, size=(n, 4)).astype(float)],
        "continuous and grid": [rng.normal(size=(n, 2)), rng.integers(0, 3, size=(n, 2)).astype(float)],
    }[shape]
    x = np.hstack(parts)
    search = AIF360Neighbours(x, k)
    found = [frozenset(row) for row in search.nearest(x).tolist()]
    assert found == _ball_tree_sets(x, k)
    if shape == "grid":
        assert search.ball_tree_queries > 0
    else:  # a continuous coordinate separates the distances: no query needed the slow search
        assert search.ball_tree_queries == 0


def test_ties_at_the_boundary_need_the_ball_tree(compas_people: pl.DataFrame) -> None:
    """Any exact search finds *some* k nearest; on COMPAS only the ball tree's own tie-breaking gives AIF360's.

    Without the ball tree for tied queries (the KD-tree's first k taken as they come), the neighbour sets differ
    from AIF360's for many people: this is what the boundary check is for.
    """
    x = compas_people.select(COMPAS_FEATURES).to_numpy().astype(float)
    expected = _ball_tree_sets(x, 5)
    kd_only = [frozenset(row) for row in cKDTree(x).query(x, k=5)[1].tolist()]
    assert sum(a != b for a, b in zip(kd_only, expected, strict=True)) > 100
    search = AIF360Neighbours(x, 5)
    assert [frozenset(row) for row in search.nearest(x).tolist()] == expected
    assert 0 < search.ball_tree_queries < len(x)


def test_k_as_large_as_the_population() -> None:
    x = np.array([[0.0], [1.0], [1.0]])
    assert AIF360Neighbours(x, 3).nearest(x).tolist() == [[0, 1, 2]] * 3
    assert consistency_score(x, np.array([1, 0, 0]), k=3) == pytest.approx(1 - (2 / 3 + 1 / 3 + 1 / 3) / 3)
