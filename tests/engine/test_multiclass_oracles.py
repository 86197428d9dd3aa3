"""Oracle tests of the multiclass engine: Fairlearn's MetricFrame with sklearn's per-class metrics, to 1e-9.

Datasets:

- COMPAS (real): the prediction is ``score_text`` (Low / Medium / High). The three-class truth is derived from
  the two-year outcome, ordered by severity: ``Low`` = no new offence within two years (``two_year_recid = 0``),
  ``Medium`` = a new, non-violent offence within two years, ``High`` = a new offence within two years and a
  violent one on record (``is_violent_recid = 1``). Attributes race, sex, age_cat.
- Generated, 4 classes, with row weights, a declared attribute value without rows (an empty group), and a
  class that never occurs (neither true nor predicted) in one group; and generated, 5 classes, unweighted.

Per group: sklearn's ``recall_score`` / ``precision_score`` (``average=None``), ``confusion_matrix`` and
``accuracy_score`` through ``MetricFrame``; Fairlearn's selection rate and false positive rate of the one-vs-rest
indicators. Summaries: Fairlearn's ``demographic_parity_difference`` / ``_ratio`` and
``equalized_odds_difference`` on the one-vs-rest indicators. fairgate leaves undefined values null where sklearn
gives NaN (``zero_division=np.nan``) and Fairlearn 0, so only values defined on both sides are compared, and
each test checks that it compared something.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, precision_score, recall_score

import fairgate
from fairgate.engine.multiclass import (
    MulticlassCube,
    audit_multiclass,
    build_multiclass_cube,
    compute_multiclass_slicing,
    plan_multiclass_slicings,
    to_binary_cube,
)
from fairgate.errors import DataError, PolicyError
from fairgate.policy.task import MulticlassOptions

TOL = 1e-9
TIERS = ["Low", "Medium", "High"]


@dataclass
class Case:
    name: str
    frame: pl.DataFrame
    attributes: list[str]
    classes: list[str]
    weighted: bool
    policy: fairgate.Policy
    options: MulticlassOptions
    results: dict[tuple[str, ...], Any]

    @property
    def pandas(self) -> pd.DataFrame:
        return self.frame.to_pandas()

    def weights(self) -> np.ndarray | None:
        return self.frame["w"].to_numpy() if self.weighted else None


def compas_tiers(compas_csv: Any) -> pl.DataFrame:
    raw = pl.read_csv(compas_csv)
    truth = (
        pl.when(pl.col("two_year_recid") == 0)
        .then(pl.lit("Low"))
        .when(pl.col("is_violent_recid") == 1)
        .then(pl.lit("High"))
        .otherwise(pl.lit("Medium"))
    )
    return raw.select("race", "sex", "age_cat", truth.alias("y_true"), pl.col("score_text").alias("y_pred"))


def generated(seed: int, n: int, classes: list[str], *, weighted: bool) -> pl.DataFrame:
    """Two attributes with skewed frequencies, a class distribution and accuracy that depend on the group."""
    rng = np.random.default_rng(seed)
    k = len(classes)
    region = rng.choice(["north", "south", "east"], size=n, p=[0.5, 0.3, 0.2])
    band = rng.choice(["young", "middle", "old"], size=n, p=[0.3, 0.45, 0.25])
    shift = (region == "south") * 0.6 + (band == "old") * 0.4
    logits = rng.normal(0.0, 1.0, (n, k)) + np.outer(shift, np.linspace(0.0, 1.0, k))
    truth = logits.argmax(axis=1)
    correct = rng.random(n) < 0.55 + 0.1 * (region == "north")
    guess = np.where(correct, truth, rng.integers(0, k, n))
    frame = pl.DataFrame(
        {
            "region": region,
            "band": band,
            "y_true": np.array(classes)[truth],
            "y_pred": np.array(classes)[guess],
            "w": rng.gamma(2.0, 0.5, n) if weighted else np.ones(n),
        }
    )
    if weighted:
        # The last class never occurs in east (neither true nor predicted): its TPR, FPR's complement and PPV
        # are undefined or 0 there.
        absent = classes[-1]
        frame = frame.filter(
            ~((pl.col("region") == "east") & ((pl.col("y_true") == absent) | (pl.col("y_pred") == absent)))
        )
    return frame


def make_case(
    name: str, frame: pl.DataFrame, attributes: list[dict[str, Any]], classes: list[str], weighted: bool
) -> Case:
    document: dict[str, Any] = {
        "sensitive_attributes": attributes,
        "metrics": [{"name": "demographic_parity_difference", "threshold": 0.1}],
        "intersectional_analysis": {"min_group_size": 1},
        "statistics": {"n_bootstrap": 50},
    }
    if weighted:
        document["columns"] = {"weight": "w"}
    policy = fairgate.Policy.from_mapping({"fairness_checker": document})
    options = MulticlassOptions(classes=classes)
    audit = audit_multiclass(frame, policy, options)
    results = {tuple(r.slicing): r for r in audit.slicings}
    return Case(name, frame, [a["name"] for a in attributes], classes, weighted, policy, options, results)


CASES = ["compas", "generated-weighted-4", "generated-5"]
COMPAS_CSV = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "compas" / "compas-scores-two-years.csv"


@pytest.fixture(scope="module", params=CASES)
def case(request: pytest.FixtureRequest) -> Case:
    if request.param == "compas":
        frame = compas_tiers(COMPAS_CSV)
        attributes = [{"name": a} for a in ("race", "sex", "age_cat")]
        return make_case("compas", frame, attributes, TIERS, weighted=False)
    if request.param == "generated-weighted-4":
        classes = ["a", "b", "c", "d"]
        frame = generated(21, 4000, classes, weighted=True)
        # "west" is declared but has no rows: an empty group (n = 0) that the oracles never see.
        attributes = [{"name": "region", "values": ["north", "south", "east", "west"]}, {"name": "band"}]
        return make_case(request.param, frame, attributes, classes, weighted=True)
    classes = ["v", "w", "x", "y", "z"]
    frame = generated(22, 5000, classes, weighted=False)
    return make_case(request.param, frame, [{"name": "region"}, {"name": "band"}], classes, weighted=False)


def _slicings(case: Case) -> list[tuple[str, ...]]:
    """Every attribute, pair and triple (the policy audits triples by default)."""
    return [s for k in (1, 2, 3) for s in itertools.combinations(case.attributes, k)]


def _key(index: Any, slicing: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(str(v) for v in index) if len(slicing) > 1 else (str(index),)


def _groups(result: Any) -> dict[tuple[str, ...], int]:
    return {tuple(g[a] for a in result.slicing): i for i, g in enumerate(result.groups)}


def _present(case: Case, slicing: tuple[str, ...]) -> set[tuple[str, ...]]:
    return set(case.frame.select(list(slicing)).unique().rows())


def _declared_empty(case: Case, slicing: tuple[str, ...]) -> set[tuple[str, ...]]:
    """Declared values of a single attribute without rows: groups with n = 0 (the oracles never see them)."""
    if len(slicing) != 1:
        return set()
    declared = case.policy.attribute(slicing[0]).values or []
    return {(v,) for v in declared} - _present(case, slicing)


def _sklearn_frame(case: Case, slicing: tuple[str, ...], h: Any) -> Any:
    from fairlearn.metrics import MetricFrame

    labels = case.classes
    metrics = {
        "true_positive_rate": partial(recall_score, labels=labels, average=None, zero_division=np.nan),
        "positive_predictive_value": partial(precision_score, labels=labels, average=None, zero_division=np.nan),
        "confusion": partial(confusion_matrix, labels=labels),
        "accuracy": accuracy_score,
    }
    weights = case.weights()
    params = {name: {"sample_weight": weights} for name in metrics} if weights is not None else None
    data = case.pandas
    with h.quiet_oracles():
        return MetricFrame(
            metrics=metrics,
            y_true=data["y_true"],
            y_pred=data["y_pred"],
            sensitive_features=data[list(slicing)],
            sample_params=params,
        )


def test_per_class_metrics_match_sklearn_through_metricframe(case: Case, h: Any) -> None:
    compared = undefined = 0
    for slicing in _slicings(case):
        ours = case.results[slicing]
        index = _groups(ours)
        by_group = _sklearn_frame(case, slicing, h).by_group
        present = _present(case, slicing)
        assert set(index) == present | _declared_empty(case, slicing)
        for label, row in by_group.iterrows():
            if _key(label, slicing) not in present:
                continue  # MetricFrame lists every combination of the attributes' values, even without rows
            g = index[_key(label, slicing)]
            assert np.allclose(ours.confusion[g], row["confusion"], rtol=0, atol=TOL), (slicing, label)
            assert abs(ours.accuracy["value"][g] - row["accuracy"]) <= TOL
            compared += 1
            for name in ("true_positive_rate", "positive_predictive_value"):
                for c, theirs in enumerate(row[name]):
                    value = ours.metrics[name]["value"][g][c]
                    if value is None or np.isnan(theirs):
                        assert value is None, (name, slicing, label, c, theirs)
                        assert np.isnan(theirs), (name, slicing, label, c, value)
                        undefined += 1
                        continue
                    assert abs(value - theirs) <= TOL, (name, slicing, label, c, value, theirs)
                    compared += 1
    assert compared > 50
    if case.weighted:
        assert undefined > 0  # the class absent in east: its recall and precision are undefined there


def _indicator_frame(case: Case, slicing: tuple[str, ...], c: str, h: Any) -> Any:
    from fairlearn.metrics import MetricFrame, false_positive_rate, selection_rate

    data = case.pandas
    y, p = (data["y_true"] == c).astype(int), (data["y_pred"] == c).astype(int)
    weights = case.weights()
    metrics = {"selection_rate": selection_rate, "false_positive_rate": false_positive_rate}
    params = {name: {"sample_weight": weights} for name in metrics} if weights is not None else None
    with h.quiet_oracles():
        return MetricFrame(
            metrics=metrics, y_true=y, y_pred=p, sensitive_features=data[list(slicing)], sample_params=params
        )


def test_one_vs_rest_selection_and_false_positive_rates_match_fairlearn(case: Case, h: Any) -> None:
    compared = 0
    for slicing in _slicings(case):
        ours = case.results[slicing]
        index = _groups(ours)
        for c, label in enumerate(case.classes):
            by_group = _indicator_frame(case, slicing, label, h).by_group
            present = _present(case, slicing)
            for group, row in by_group.iterrows():
                if _key(group, slicing) not in present:
                    continue
                g = index[_key(group, slicing)]
                assert abs(ours.metrics["selection_rate"]["value"][g][c] - row["selection_rate"]) <= TOL
                fpr = ours.metrics["false_positive_rate"]["value"][g][c]
                if fpr is not None:  # no negatives of the class in the group: Fairlearn says 0
                    assert abs(fpr - row["false_positive_rate"]) <= TOL
                compared += 2
    assert compared > 50


def test_summaries_match_fairlearn_on_one_vs_rest_indicators(case: Case, h: Any) -> None:
    from fairlearn.metrics import (
        demographic_parity_difference,
        demographic_parity_ratio,
        equalized_odds_difference,
    )

    data = case.pandas
    weights = case.weights()
    compared = skipped = 0
    # Each attribute and one pair: three Fairlearn calls per class and slicing are slow, and the other tests
    # already cover every intersection's per-group values.
    for slicing in [s for s in _slicings(case) if len(s) == 1] + [tuple(case.attributes[:2])]:
        ours = case.results[slicing]
        worst: dict[str, list[float]] = {}
        for c in case.classes:
            y, p = (data["y_true"] == c).astype(int), (data["y_pred"] == c).astype(int)
            features = data[list(slicing)]
            with h.quiet_oracles():
                theirs = {
                    "demographic_parity_difference": demographic_parity_difference(
                        y, p, sensitive_features=features, sample_weight=weights
                    ),
                    "demographic_parity_ratio": demographic_parity_ratio(
                        y, p, sensitive_features=features, sample_weight=weights
                    ),
                    "equalized_odds_difference": equalized_odds_difference(
                        y, p, sensitive_features=features, sample_weight=weights
                    ),
                }
            for metric, expected in theirs.items():
                worst.setdefault(metric, []).append(expected)
                value = ours.summary(metric).by_class[c].value
                if metric == "equalized_odds_difference" and _some_group_lacks_class(ours, c):
                    skipped += 1  # TPR or FPR undefined in a group: fairgate leaves it out, Fairlearn counts 0
                    continue
                assert value is not None
                assert abs(value - expected) <= TOL, (slicing, metric, c, value, expected)
                compared += 1
        lacking = any(_some_group_lacks_class(ours, c) for c in case.classes)
        for metric, values in worst.items():
            summary = ours.summary(metric)
            if metric == "equalized_odds_difference" and lacking:
                continue
            expected = max(values) if summary.summary == "difference" else min(values)
            assert abs(summary.worst.value - expected) <= TOL, (slicing, metric)
            compared += 1
    assert compared > 20


def _some_group_lacks_class(result: Any, c: str) -> bool:
    column = result.classes.index(c)
    used = [g for g, n in enumerate(result.n) if n > 0]
    tpr, fpr = result.metrics["true_positive_rate"]["value"], result.metrics["false_positive_rate"]["value"]
    return any(tpr[g][column] is None or fpr[g][column] is None for g in used)


def test_empty_declared_group_and_absent_class_are_reported_not_dropped() -> None:
    classes = ["a", "b", "c", "d"]
    frame = generated(21, 4000, classes, weighted=True)
    policy = fairgate.Policy.from_mapping(
        {
            "fairness_checker": {
                "sensitive_attributes": [{"name": "region", "values": ["north", "south", "east", "west"]}],
                "metrics": [{"name": "demographic_parity_difference", "threshold": 0.1}],
                "intersectional_analysis": {"min_group_size": 1},
                "columns": {"weight": "w"},
                "statistics": {"n_bootstrap": 50},
            }
        }
    )
    cube = build_multiclass_cube(frame, policy, MulticlassOptions(classes=classes))
    result = compute_multiclass_slicing(cube, ("region",), policy)
    groups = [g["region"] for g in result.groups]
    west, east = groups.index("west"), groups.index("east")
    assert result.n[west] == 0
    assert not result.sufficient[west]
    assert all(v is None for v in result.metrics["selection_rate"]["value"][west])
    assert result.metrics["true_positive_rate"]["value"][east][3] is None  # no true "d" in east
    assert result.metrics["selection_rate"]["value"][east][3] == 0.0  # never predicted there: 0, defined
    # Class d's TPR gap is read over the groups that have true d's, but it gets no interval (as the binary
    # engine: a component undefined in a judged group), and neither does the worst case over classes.
    summary = result.summary("equalized_odds_difference")
    assert summary.by_class["d"].value is not None
    assert summary.by_class["d"].ci_low is None
    assert "undefined in region=east" in (summary.by_class["d"].reason or "") or "east (0)" in (
        summary.by_class["d"].reason or ""
    )
    assert summary.worst.ci_low is None
    assert summary.worst.reason is not None
    assert summary.by_class["a"].ci_low is not None  # the other classes keep theirs


def test_ordered_outcome_cube_equals_the_binary_cube_exactly(h: Any) -> None:
    """COMPAS tiers judged as "Medium or High" vs not: the binary engine sees the very cube it builds itself."""
    frame = compas_tiers(COMPAS_CSV)
    policy = h.make_policy(["race", "sex", "age_cat"], n_bootstrap=200)
    options = MulticlassOptions(classes=TIERS, adverse_classes=["Medium", "High"])
    ours = to_binary_cube(build_multiclass_cube(frame, policy, options), options.adverse_classes or [])
    adverse = pl.col("y_true").is_in(["Medium", "High"]), pl.col("y_pred").is_in(["Medium", "High"])
    favourable_coded = frame.with_columns(
        (~adverse[0]).cast(pl.Int64).alias("y_true"), (~adverse[1]).cast(pl.Int64).alias("y_pred")
    )
    theirs = fairgate.build_cube(favourable_coded, policy)
    assert ours.cells.equals(theirs.cells)
    assert ours.cells.schema == theirs.cells.schema
    assert (ours.attributes, ours.calibration_bins, ours.has_scores) == (
        theirs.attributes,
        theirs.calibration_bins,
        theirs.has_scores,
    )
    # COMPAS's own coding (1 = flagged Medium/High, favourable label 0) audits to the very same results.
    adverse_coded = frame.with_columns(
        adverse[0].cast(pl.Int64).alias("y_true"), adverse[1].cast(pl.Int64).alias("y_pred")
    )
    compas_policy = h.make_policy(["race", "sex", "age_cat"], n_bootstrap=200, favorable_label=0)
    binary = fairgate.build_cube(adverse_coded, compas_policy)
    slicings = fairgate.plan_slicings(binary, compas_policy)
    assert slicings == fairgate.plan_slicings(ours, compas_policy)
    for slicing in slicings:
        expected = _exact(fairgate.compute_slicing(binary, slicing, compas_policy))
        assert _exact(fairgate.compute_slicing(ours, slicing, compas_policy)) == expected


def _exact(result: Any) -> str:
    """A slicing result as text, arrays (the gate's pairwise families) included: equal text, equal results."""
    return json.dumps(dataclasses.asdict(result), default=lambda o: o.tolist(), sort_keys=True)


def test_cubes_add_and_row_order_does_not_matter(h: Any) -> None:
    frame = compas_tiers(COMPAS_CSV)
    policy = h.make_policy(["race", "sex"], n_bootstrap=0)
    options = MulticlassOptions(classes=TIERS)
    whole = build_multiclass_cube(frame, policy, options)
    halves = build_multiclass_cube(frame[:3000], policy, options) + build_multiclass_cube(frame[3000:], policy, options)
    shuffled = build_multiclass_cube(frame.sample(fraction=1.0, shuffle=True, seed=3), policy, options)
    assert whole.cells.equals(halves.cells)
    assert whole.cells.equals(shuffled.cells)
    assert whole.n_rows == frame.height


def test_scaling_the_weights_changes_nothing(h: Any) -> None:
    """Intervals rest on Kish effective sizes: weights all 2.5 give the unweighted audit's numbers."""
    frame = generated(5, 3000, ["a", "b", "c"], weighted=False)
    plain = h.make_policy(["region", "band"], n_bootstrap=200)
    scaled = h.make_policy(["region", "band"], n_bootstrap=200, columns={"weight": "w"})
    options = MulticlassOptions(classes=["a", "b", "c"])
    one = audit_multiclass(frame, plain, options)
    two = audit_multiclass(frame.with_columns(pl.lit(2.5).alias("w")), scaled, options)
    for a, b in zip(one.slicings, two.slicings, strict=True):
        left, right = a.to_dict(), b.to_dict()
        left.pop("confusion"), right.pop("confusion")
        h.assert_close_tree(left, right, tol=1e-9)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [("y_true", "Severe", "'Severe' in 1 row(s)"), ("y_pred", None, "no value in 1 row(s)")],
)
def test_bad_labels_are_refused_with_the_column_and_the_fix(
    h: Any, column: str, value: str | None, message: str
) -> None:
    frame = compas_tiers(COMPAS_CSV)
    frame = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 5).then(pl.lit(value)).otherwise(pl.col(column)).alias(column)
    )
    policy = h.make_policy(["race"], n_bootstrap=0)
    with pytest.raises(DataError, match=column) as error:
        build_multiclass_cube(frame, policy, MulticlassOptions(classes=TIERS))
    assert message in error.value.message
    assert "multiclass.classes" in error.value.message or "fill or drop" in error.value.message


def test_integral_float_labels_read_as_declared_integers(h: Any) -> None:
    frame = pl.DataFrame({"sex": ["F", "M", "F", "M"], "y_true": [0.0, 1.0, 2.0, 1.0], "y_pred": [0, 1, 1, 2]})
    cube = build_multiclass_cube(frame, h.make_policy(["sex"], n_bootstrap=0), MulticlassOptions(classes=[0, 1, 2]))  # type: ignore[list-item]
    assert cube.n_rows == 4
    assert cube.classes == ("0", "1", "2")


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"task": "multiclass"}, "needs a multiclass: section"),
        ({"task": "binary", "multiclass": {"classes": ["a", "b"]}}, "only read with task: multiclass"),
        ({"task": "multiclass", "multiclass": {"classes": ["a", "a"]}}, "lists a class twice"),
        ({"task": "multiclass", "multiclass": {"classes": ["a", "b"], "adverse_classes": ["c"]}}, "not in multiclass"),
        ({"task": "multiclass", "multiclass": {"classes": ["a", "b"], "adverse_classes": ["a", "b"]}}, "not all"),
        ({"task": "multiclass", "multiclass": {"classes": ["a", "b"], "extra": 1}}, "xtra"),
        ({"task": "multi"}, "task"),
    ],
)
def test_policy_refuses_inconsistent_task_sections(section: dict[str, Any], message: str) -> None:
    document = {
        "sensitive_attributes": [{"name": "sex"}],
        "metrics": [{"name": "demographic_parity_difference", "threshold": 0.1}],
        **section,
    }
    with pytest.raises(PolicyError, match=message):
        fairgate.Policy.from_mapping({"fairness_checker": document})


def test_plan_covers_population_attributes_and_pairs(case: Case) -> None:
    cube: MulticlassCube = build_multiclass_cube(case.frame, case.policy, case.options)
    planned = plan_multiclass_slicings(cube, case.policy)
    assert planned == [(), *_slicings(case)]
    population = case.results[()]
    assert population.rows == [case.frame.height]
