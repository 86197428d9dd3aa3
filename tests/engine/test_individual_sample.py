"""Consistency estimated from a seeded random sample of people (``individual_fairness.sample_people``).

The sampled people's terms must be exactly the full computation's (neighbours searched among everyone); a sample
as large as the population must give exactly the unsampled result; and on one fixed generated population the
per-group 95% interval of the sampled estimate must cover the exact full-population group consistency at close to
its stated rate over many seeded draws of the sample.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.document.individual import Consistency
from fairgate.engine.individual import GroupConsistency, IndividualInputs, assess_individual, disagreements
from fairgate.engine.individual.consistency import sample_rows
from fairgate.engine.stats import z_value
from fairgate.errors import PolicyError
from fairgate.report.individual import individual_view
from fairgate.report.suppress import Suppression
from tests.engine.conftest import COMPAS_CSV

COMPAS_FEATURES = ["priors_count", "age", "juv_fel_count", "juv_misd_count", "juv_other_count"]
POPULATION, SAMPLE, DRAWS, K = 20_000, 2_000, 200, 5


def _policy(individual: dict[str, Any], **extra: Any) -> fairgate.Policy:
    body: dict[str, Any] = {
        "sensitive_attributes": [{"name": "group"}],
        "metrics": [{"name": "demographic_parity_difference", "threshold": 0.5}],
        "favorable_label": 1,
        "individual_fairness": individual,
        **extra,
    }
    return fairgate.Policy.from_mapping({"fairness_checker": body})


def _public(block: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in block.items() if not key.startswith("_")}


@pytest.fixture(scope="module")
def population() -> IndividualInputs:
    """20k people, 6 continuous features, two groups of unequal size whose decisions follow the features unequally.

    Group b (30%) is decided with more noise than group a, so the two groups' consistencies differ.
    """
    rng = np.random.default_rng(2026)
    features = rng.normal(size=(POPULATION, 6))
    group = np.where(rng.random(POPULATION) < 0.3, "b", "a").astype(object)
    signal = 1.5 * features[:, 0] - features[:, 1] + 0.5 * features[:, 2] * features[:, 3]
    noise = np.where(group == "b", 1.5, 0.5) * rng.normal(size=POPULATION)
    decisions = (signal + noise > 0.3).astype(np.int64)
    return IndividualInputs(
        features=features,
        feature_names=[f"x{i}" for i in range(6)],
        decisions=decisions,
        attributes={"group": group},
    )


@pytest.fixture(scope="module")
def exact_terms(population: IndividualInputs) -> np.ndarray:
    return disagreements(population.features, population.decisions, k=K)


def _codes(population: IndividualInputs) -> np.ndarray:
    return np.where(population.attributes["group"] == "a", 0, 1)


def test_sampled_terms_are_the_full_computations(population: IndividualInputs, exact_terms: np.ndarray) -> None:
    rows = sample_rows(POPULATION, SAMPLE, seed=11)
    assert rows is not None
    assert rows.size == SAMPLE
    assert np.unique(rows).size == SAMPLE  # without replacement
    sampled = disagreements(population.features, population.decisions, k=K, rows=rows)
    np.testing.assert_array_equal(sampled, exact_terms[rows])
    # Scaling is fitted on everyone, as in the full computation, not on the sample.
    scaled_all = disagreements(population.features, population.decisions, k=K, scaling="standard")
    scaled_rows = disagreements(population.features, population.decisions, k=K, scaling="standard", rows=rows)
    np.testing.assert_array_equal(scaled_rows, scaled_all[rows])


def test_a_sample_as_large_as_the_population_is_everyone(population: IndividualInputs) -> None:
    exact = assess_individual(population, _policy({"min_consistency": 0.6}))
    for size in (POPULATION, POPULATION + 1, 10**7):
        assert sample_rows(POPULATION, size, seed=3) is None
        same = assess_individual(population, _policy({"min_consistency": 0.6, "sample_people": size, "seed": 3}))
        assert same.block == exact.block
        assert "sampled" not in same.block["consistency"]
        assert [_public(e) for e in same.entries] == [_public(e) for e in exact.entries]


def test_the_same_seed_gives_the_same_estimate(population: IndividualInputs, exact_terms: np.ndarray) -> None:
    policy = _policy({"min_consistency": 0.6, "sample_people": SAMPLE, "seed": 5})
    first, again = assess_individual(population, policy), assess_individual(population, policy)
    assert first.block == again.block
    other = assess_individual(population, _policy({"min_consistency": 0.6, "sample_people": SAMPLE, "seed": 6}))
    assert other.block["consistency"]["value"] != first.block["consistency"]["value"]
    block = first.block["consistency"]
    assert block["sampled"] == {"people_sampled": SAMPLE, "people": POPULATION, "seed": 5}
    assert block["n"] == SAMPLE
    assert sum(g["n"] for g in block["groups"]) == SAMPLE
    # The estimate is the sampled people's exact terms, summarised as GroupConsistency summarises them.
    rows = sample_rows(POPULATION, SAMPLE, seed=5)
    assert rows is not None
    measured = GroupConsistency.of(exact_terms[rows], _codes(population)[rows], 2, K)
    assert [g["value"] for g in block["groups"]] == pytest.approx(measured.value.tolist(), abs=1e-12)
    low, high = measured.interval(z_value(0.95))
    assert [g["ci_low"] for g in block["groups"]] == pytest.approx(low.tolist(), abs=1e-12)
    assert [g["ci_high"] for g in block["groups"]] == pytest.approx(high.tolist(), abs=1e-12)
    # The document model accepts the block, and the report says it is an estimate from a sample.
    view = individual_view(Consistency.model_validate(block), None, Suppression.of([], 0))
    assert view is not None
    assert "estimated from a seeded random sample of 2,000 of 20,000 people (seed 5" in view.setup


def test_group_intervals_cover_the_full_population_value(population: IndividualInputs, exact_terms: np.ndarray) -> None:
    """200 seeded samples of 2,000 of the 20k: each group's 95% interval covers its exact value >= 90% of draws."""
    codes = _codes(population)
    exact = GroupConsistency.of(exact_terms, codes, 2, K).value
    assert abs(exact[0] - exact[1]) > 0.02  # the groups differ: a pooled estimate could not cover both
    z = z_value(0.95)
    covered = np.zeros(2)
    estimates = np.empty((DRAWS, 2))
    for draw in range(DRAWS):
        rows = sample_rows(POPULATION, SAMPLE, seed=draw)
        assert rows is not None
        measured = GroupConsistency.of(exact_terms[rows], codes[rows], 2, K)
        low, high = measured.interval(z)
        covered += (low <= exact) & (exact <= high)
        estimates[draw] = measured.value
    coverage = covered / DRAWS
    assert (coverage >= 0.90).all(), coverage
    # Unbiased: the mean of the draws' estimates is within 4 standard errors of the exact value.
    spread = estimates.std(axis=0, ddof=1) / np.sqrt(DRAWS)
    assert (np.abs(estimates.mean(axis=0) - exact) <= 4 * spread).all(), (estimates.mean(axis=0), exact)


def test_groups_with_too_few_sampled_people_are_reported_not_judged() -> None:
    raw = pl.read_csv(COMPAS_CSV)
    inputs = IndividualInputs(
        features=raw.select(COMPAS_FEATURES).to_numpy().astype(float),
        feature_names=COMPAS_FEATURES,
        decisions=raw["score_text"].is_in(["Medium", "High"]).cast(pl.Int64).to_numpy(),
        attributes={"group": raw["race"].to_numpy().astype(object)},
    )
    policy = _policy(
        {"features": COMPAS_FEATURES, "min_consistency": 0.5, "sample_people": 2_000, "seed": 1},
        intersectional_analysis={"min_group_size": 30},
    )
    result = assess_individual(inputs, policy)
    rows = {g["group"]["group"]: g for g in result.block["consistency"]["groups"]}
    entry = next(e for e in result.entries if e["slicing"] == ["group"])
    small = {g["group"] for g in entry["insufficient_groups"]}
    assert small == {name for name, row in rows.items() if row["n"] < 30}
    assert {"Asian", "Native American"} <= small  # 32 and 18 people of 7,214: a handful sampled
    assert rows["African-American"]["sufficient"]


@pytest.mark.parametrize(
    ("value", "message"),
    [(999, "at least 1,000 (got 999)"), (2500.5, "(got 2500.5)"), ("5000", "(got '5000')"), (True, "(got True)")],
)
def test_a_bad_sample_size_names_the_key(value: object, message: str) -> None:
    with pytest.raises(PolicyError, match=r"individual_fairness\.sample_people") as caught:
        _policy({"sample_people": value})
    assert message in caught.value.message
    with pytest.raises(PolicyError, match=r"individual_fairness\.seed"):
        _policy({"sample_people": 5000, "seed": "one"})


def test_a_policy_without_sampling_keeps_its_hash() -> None:
    plain = _policy({"min_consistency": 0.6})
    assert "sample_people" not in plain.canonical_json()
    assert _policy({"min_consistency": 0.6, "sample_people": 5000}).sha256() != plain.sha256()
