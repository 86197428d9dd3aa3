"""Row weights (``columns.weight``) in the multiclass, regression and ranking engines, through each kind's audit
steps (count -> slicings -> adjudicate, as the flow calls them) on generated rows:

- a row of whole weight m gives every per-group value that m copies of the row give (a ranking's copies share
  the row's list and rank: tied items, which the engine sums like any others);
- multiplying every weight by 10 or by 0.01 changes nothing in the document: values, Kish effective sizes,
  intervals and statuses (the bootstrap draws in effective units);
- the document says the audit was weighted, exactly when some weight differs from 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.engine.multiclass.audit import adjudicate_multiclass, count_multiclass, slicings_multiclass
from fairgate.engine.ranking.audit import adjudicate_ranking, count_ranking, slicings_ranking
from fairgate.engine.regression.audit import adjudicate_regression, count_regression, slicings_regression

TOL = 1e-9
ROWS = 3000

_ATTRIBUTES = """\
  sensitive_attributes:
    - {name: group, values: [a, b, c], reference_group: a}
    - {name: sex, values: [F, M]}
  intersectional_analysis: {enabled: true, min_group_size: 20, attribute_pairs: [[group, sex]]}
  statistics: {n_bootstrap: 200, seed: 3}
"""

POLICIES = {
    "multiclass": """\
fairness_checker:
  task: multiclass
  multiclass: {classes: [low, mid, high], adverse_classes: [mid, high]}
  metrics:
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: equalized_odds_difference, threshold: 0.1}
    - {name: adverse.disparate_impact_ratio, threshold: 0.8}
  columns: {weight: w}
""",
    "regression": """\
fairness_checker:
  task: regression
  metrics:
    - {name: mean_residual_difference, threshold: 0.2}
    - {name: worst_group_root_mean_squared_error, threshold: 1.0}
    - {name: ks_distance, threshold: 0.2}
  columns: {weight: w}
""",
    "ranking": """\
fairness_checker:
  task: ranking
  ranking: {top_k: [5, 2], discount: log2}
  metrics:
    - {name: top_k_rate_ratio, threshold: 0.8}
    - {name: exposure_ratio, threshold: 0.8}
  columns: {y_true: relevance, weight: w}
""",
}

STEPS: dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]] = {
    "multiclass": (count_multiclass, slicings_multiclass, adjudicate_multiclass),
    "regression": (count_regression, slicings_regression, adjudicate_regression),
    "ranking": (count_ranking, slicings_ranking, adjudicate_ranking),
}


def policy_of(kind: str, weighted: bool = True) -> fairgate.Policy:
    text = POLICIES[kind] + _ATTRIBUTES
    if not weighted:
        text = text.replace("  columns: {weight: w}\n", "").replace(", weight: w}", "}")
    return fairgate.Policy.from_yaml(text)


def generated(kind: str, seed: int = 0) -> pl.DataFrame:
    """Rows of the kind with group-dependent outcomes and whole weights 1..4."""
    rng = np.random.default_rng(seed)
    group = rng.choice(["a", "b", "c"], ROWS, p=[0.5, 0.3, 0.2])
    sex = rng.choice(["F", "M"], ROWS)
    shift = np.select([group == "b", group == "c"], [0.4, -0.3], 0.0)
    frame = pl.DataFrame({"id": np.arange(ROWS), "group": group, "sex": sex, "w": rng.integers(1, 5, ROWS) * 1.0})
    if kind == "multiclass":
        classes = np.array(["low", "mid", "high"])
        truth = np.clip(np.round(rng.normal(1.0 + shift, 0.8)), 0, 2).astype(int)
        predicted = np.clip(truth + rng.choice([-1, 0, 1], ROWS, p=[0.2, 0.6, 0.2]), 0, 2)
        return frame.with_columns(y_true=pl.Series(classes[truth]), y_pred=pl.Series(classes[predicted]))
    if kind == "regression":
        label = rng.normal(shift, 1.0)
        return frame.with_columns(y_true=pl.Series(label), y_pred=pl.Series(label + rng.normal(shift / 2, 0.5)))
    lists = ROWS // 20  # lists of 20, each ranked by a noisy score that favours group b
    score = rng.normal(shift, 1.0)
    frame = frame.with_columns(list_id=pl.Series(np.arange(ROWS) // 20).cast(pl.String), score=pl.Series(score))
    frame = frame.with_columns(rank=pl.col("score").rank("ordinal", descending=True).over("list_id").cast(pl.Int64))
    assert frame["list_id"].n_unique() == lists
    return frame.with_columns(relevance=pl.Series(rng.integers(0, 4, ROWS) * 1.0)).drop("score")


def audit(kind: str, rows: pl.DataFrame, policy: fairgate.Policy) -> dict[str, Any]:
    count, slicings, adjudicate = STEPS[kind]
    cube = count(rows, policy)
    result = adjudicate(cube, slicings(cube, policy), policy, run_id="weights", context={})
    document: dict[str, Any] = result.to_dict()
    return document


def group_values(document: dict[str, Any]) -> dict[tuple[Any, ...], float | None]:
    """Every per-group metric value of the document (``groups``: every kind lists its metrics there)."""
    values = {}
    for group in document["groups"]:
        key = (tuple(group["slicing"]), tuple(sorted(group["group"].items())))
        for name, estimate in group["metrics"].items():
            values[(*key, name)] = estimate["value"]
    return values


def assert_same(got: dict[Any, float | None], expected: dict[Any, float | None]) -> None:
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        if value is None:
            assert got[key] is None, key
        else:
            assert got[key] is not None, key
            assert abs(got[key] - value) <= TOL * max(1.0, abs(value)), (key, got[key], value)


@pytest.mark.parametrize("kind", list(POLICIES))
def test_whole_weights_equal_repeating_the_rows(kind: str) -> None:
    rows = generated(kind)
    repeated = rows.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64)).explode()).drop("w")
    repeated = repeated.with_columns(id=pl.int_range(pl.len()))  # one id per copy, as an input would have
    assert repeated.height == int(rows["w"].sum()) > rows.height
    by_weight = audit(kind, rows, policy_of(kind))
    by_repeat = audit(kind, repeated, policy_of(kind, weighted=False))
    assert by_weight["weighted"] is True
    assert by_repeat["weighted"] is False
    values = group_values(by_repeat)
    assert len(values) > 50
    assert_same(group_values(by_weight), values)
    # The judged values too (multiclass: the adverse decision's rules from its binary cube; regression: KS).
    judged = {(r["metric"], tuple(r["slicing"])): r["value"] for r in by_repeat["results"]}
    assert_same({(r["metric"], tuple(r["slicing"])): r["value"] for r in by_weight["results"]}, judged)


def _judged(document: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (r["metric"], tuple(r["slicing"]), r["value"], r["ci_low"], r["ci_high"], r["status"])
        for r in document["results"]
    ]


def assert_same_judgement(got_document: dict[str, Any], expected_document: dict[str, Any], *, rel: float) -> None:
    """The same results, statuses and slicings; values and interval ends equal to ``rel``."""
    for got, expected in zip(_judged(got_document), _judged(expected_document), strict=True):
        assert got[:2] == expected[:2]
        assert got[5] == expected[5], got
        for a, b in zip(got[2:5], expected[2:5], strict=True):
            assert (a is None and b is None) or a == pytest.approx(b, rel=rel, abs=1e-12), (got, expected)


@pytest.mark.parametrize("kind", list(POLICIES))
@pytest.mark.parametrize("factor", [10.0, 0.01])
def test_scaling_every_weight_changes_nothing(kind: str, factor: float) -> None:
    rows = generated(kind, seed=1)
    base = audit(kind, rows, policy_of(kind))
    scaled = audit(kind, rows.with_columns(pl.col("w") * factor), policy_of(kind))
    assert_same(group_values(scaled), group_values(base))
    sizes = {(tuple(g["slicing"]), tuple(g["group"].items())): g["n"] for g in base["groups"]}
    for group in scaled["groups"]:
        expected = sizes[(tuple(group["slicing"]), tuple(group["group"].items()))]
        assert group["n"] == pytest.approx(expected, rel=TOL), group["group"]
    assert_same_judgement(scaled, base, rel=1e-6)


@pytest.mark.parametrize("kind", list(POLICIES))
def test_weights_of_one_are_the_unweighted_audit(kind: str) -> None:
    rows = generated(kind, seed=2).with_columns(w=pl.lit(1.0))
    with_ones = audit(kind, rows, policy_of(kind))
    without = audit(kind, rows.drop("w"), policy_of(kind, weighted=False))
    assert with_ones["weighted"] is False
    # Equal up to rounding: the weighted sums may add the same numbers in another order (seen: 1 ulp apart).
    assert_same_judgement(with_ones, without, rel=1e-12)
    assert_same(group_values(with_ones), group_values(without))


@pytest.mark.parametrize("kind", list(POLICIES))
def test_every_kind_lists_a_slicings_groups_by_the_binary_rule(kind: str) -> None:
    """One rule for every kind (fairgate/engine/groups.py): a declared value without rows is a group of size 0,
    never silently absent, and a slicing's groups are in value order, however the policy lists them."""
    policy = fairgate.Policy.from_yaml(
        (POLICIES[kind] + _ATTRIBUTES).replace("values: [a, b, c]", "values: [zz, c, a, b]")
    )
    document = audit(kind, generated(kind), policy)
    listed = [g for g in document["groups"] if g["slicing"] == ["group"]]
    assert [g["group"]["group"] for g in listed] == ["a", "b", "c", "zz"]
    empty = listed[-1]
    assert empty["n"] == 0
    assert not empty["sufficient"]
    pairs = [tuple(g["group"].values()) for g in document["groups"] if g["slicing"] == ["group", "sex"]]
    assert pairs == sorted(pairs)
    assert ("zz", "F") not in pairs
