"""Oracle tests: every value Fairlearn, sklearn or AIF360 also computes agrees with fairgate to 1e-9.

Datasets: COMPAS with favourable label 1 and 0 (with 0, the oracles see recoded labels y == 0 and scores
1 - score), and generated data (several seeds; 4 attributes with 3, 4, 4 and 5 values; continuous scores and
scores with ties). Slicings: every attribute, every pair, every triple. ``min_group_size`` is 1, so no group
is left out. Fairgate leaves an undefined rate null where Fairlearn returns 0, so only defined values are
compared; each test also checks that it compared something.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, precision_score, roc_auc_score

import fairgate

TOL = 1e-9
POLICY_METRICS = [
    {"name": "demographic_parity_difference", "threshold": 0.1},
    {"name": "demographic_parity_ratio", "threshold": 0.8},
    {"name": "disparate_impact_ratio", "threshold": 0.8},
    {"name": "equalized_odds_difference", "threshold": 0.1},
    {"name": "equalized_odds_ratio", "threshold": 0.8},
    {"name": "equal_opportunity_difference", "threshold": 0.1},
    {"name": "theil_index", "threshold": 1.0},
    {"name": "generalized_entropy_index", "threshold": 1.0},
    # Judging AUC makes the engine compute exact AUC on intersections too (else single attributes only).
    {"name": "auc_difference", "threshold": 0.1},
]
# (dataset, seed or None, favourable label, ties in generated scores, audit triples)
# Triples are audited on COMPAS and on one generated seed only: with 4 attributes they hold ~250 groups and
# Fairlearn's per-group loop is slow.
CASES = [
    ("compas", None, 1, False, True),
    ("compas", None, 0, False, True),
    ("generated", 11, 1, False, True),
    ("generated", 12, 1, True, False),
    ("generated", 13, 0, False, False),
]


@dataclass
class Case:
    name: str
    frame: pl.DataFrame
    pandas: pd.DataFrame
    attributes: list[str]
    favorable: int
    y: np.ndarray  # favourable-outcome indicators, as the oracles must see them
    p: np.ndarray
    s: np.ndarray  # score of the favourable outcome
    policy: fairgate.Policy
    document: dict[str, Any]
    cube: fairgate.Cube
    triples: bool

    metric_frames: dict[tuple[str, ...], Any] = field(default_factory=dict)
    index_cache: dict[tuple[str, ...], dict[tuple[str, ...], np.ndarray]] = field(default_factory=dict)

    @property
    def all_slicings(self) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = []
        for k in (1, 2, 3) if self.triples else (1, 2):
            out += list(itertools.combinations(self.attributes, k))
        return out

    @property
    def slicings(self) -> list[tuple[str, ...]]:
        """The slicings the oracles check: every attribute, three pairs, and the first triple when audited.

        (Fairlearn's per-group loop is slow; a few intersections per dataset exercise the multi-column path.)
        """
        first_triple = [tuple(self.attributes[:3])] if self.triples else []
        singles: list[tuple[str, ...]] = [(a,) for a in self.attributes]
        # Consecutive pairs: (a, b), (b, c), (c, d) on generated data, all three pairs on COMPAS.
        pairs: list[tuple[str, ...]] = [s for s in self.all_slicings if len(s) == 2]
        if len(pairs) > 3:
            pairs = [tuple(self.attributes[i : i + 2]) for i in range(len(self.attributes) - 1)]
        return singles + pairs + first_triple

    def indices(self, slicing: tuple[str, ...]) -> dict[tuple[str, ...], np.ndarray]:
        """Row indices of each non-empty group of a slicing, keyed by the group's values in slicing order."""
        if slicing not in self.index_cache:
            codes = self.frame.select(pl.concat_str(list(slicing), separator="\x1f"))[:, 0].to_numpy()
            keys, inverse = np.unique(codes, return_inverse=True)
            order = np.argsort(inverse, kind="stable")
            bounds = np.searchsorted(inverse[order], np.arange(len(keys) + 1))
            self.index_cache[slicing] = {
                tuple(str(key).split("\x1f")): order[bounds[i] : bounds[i + 1]] for i, key in enumerate(keys)
            }
        return self.index_cache[slicing]


@pytest.fixture(
    scope="module",
    params=CASES,
    ids=[f"{c[0]}-{c[1]}-fav{c[2]}{'-ties' if c[3] else ''}" for c in CASES],
)
def case(request: pytest.FixtureRequest, h: Any, compas: pl.DataFrame) -> Case:
    dataset, seed, favorable, ties, triples = request.param
    if dataset == "compas":
        frame, attributes = compas, ["race", "sex", "age_cat"]
    else:
        frame, attributes = h.generate(seed, 3000, ties=ties), list(h.levels)
    policy = h.make_policy(
        attributes,
        POLICY_METRICS,
        n_bootstrap=20,
        favorable_label=favorable,
        intersectional_analysis={"include_triples": triples},
    )
    document = fairgate.audit(frame, policy).to_dict()
    y_raw, p_raw, s_raw = (frame[c].to_numpy() for c in ("y_true", "y_pred", "score"))
    flip = favorable == 0
    return Case(
        name=f"{dataset}-{seed}-fav{favorable}",
        frame=frame,
        pandas=frame.to_pandas(),
        attributes=attributes,
        favorable=favorable,
        y=((y_raw == 0) if flip else (y_raw == 1)).astype(np.int64),
        p=((p_raw == 0) if flip else (p_raw == 1)).astype(np.int64),
        s=(1.0 - s_raw) if flip else s_raw.astype(np.float64),
        policy=policy,
        document=document,
        cube=fairgate.build_cube(frame, policy),
        triples=triples,
    )


def _fairlearn_metrics() -> dict[str, Any]:
    from fairlearn.metrics import (
        count,
        false_negative_rate,
        false_positive_rate,
        selection_rate,
        true_negative_rate,
        true_positive_rate,
    )

    def ppv(y_true: Any, y_pred: Any) -> float:
        return float(precision_score(y_true, y_pred, zero_division=np.nan))

    return {
        "selection_rate": selection_rate,
        "true_positive_rate": true_positive_rate,
        "false_positive_rate": false_positive_rate,
        "false_negative_rate": false_negative_rate,
        "true_negative_rate": true_negative_rate,
        "accuracy": accuracy_score,
        "positive_predictive_value": ppv,
        "count": count,
    }


def _metric_frame(case: Case, slicing: tuple[str, ...], h: Any) -> Any:
    from fairlearn.metrics import MetricFrame

    if slicing in case.metric_frames:
        return case.metric_frames[slicing]
    with h.quiet_oracles():
        case.metric_frames[slicing] = MetricFrame(
            metrics=_fairlearn_metrics(),
            y_true=case.y,
            y_pred=case.p,
            sensitive_features=case.pandas[list(slicing)],
        )
    return case.metric_frames[slicing]


def _index_key(index: Any, slicing: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(str(v) for v in index) if len(slicing) > 1 else (str(index),)


def _summary(document: dict[str, Any], metric: str, slicing: tuple[str, ...]) -> dict[str, Any]:
    return next(s for s in document["summaries"] if s["metric"] == metric and tuple(s["slicing"]) == slicing)


def _result(document: dict[str, Any], metric: str, slicing: tuple[str, ...]) -> dict[str, Any]:
    return next(r for r in document["results"] if r["metric"] == metric and tuple(r["slicing"]) == slicing)


def test_every_slicing_up_to_triples_is_audited(case: Case) -> None:
    audited = {tuple(s) for s in case.document["slicings"]}
    assert audited == {(), *case.all_slicings}


def test_group_rates_match_fairlearn_metricframe(case: Case, h: Any) -> None:
    groups = h.groups_by_key(case.document)
    compared = undefined = 0
    for slicing in case.slicings:
        frame = _metric_frame(case, slicing, h)
        by_group = frame.by_group
        present = by_group[by_group["count"] > 0]
        ours = {key[1] for key in groups if key[0] == slicing}
        theirs = {_index_key(i, slicing) for i in present.index}
        assert ours == theirs, f"{slicing}: groups differ"
        for index, row in present.iterrows():
            entry = groups[(slicing, _index_key(index, slicing))]
            assert entry["n"] == pytest.approx(row["count"], abs=TOL)
            assert entry["rows"] == row["count"]
            for name in _fairlearn_metrics():
                if name == "count":
                    continue
                value = entry["metrics"][name]["value"]
                if value is None or math.isnan(row[name]):
                    undefined += 1
                    continue
                assert abs(value - row[name]) <= TOL, f"{name} {slicing} {index}: {value} vs {row[name]}"
                compared += 1
    assert compared > 100
    print(f"{case.name}: {compared} values compared, {undefined} undefined on one side")


def _with_degenerate_groups(case: Case) -> pl.DataFrame:
    """The case's rows plus two small groups of a new value of its first attribute.

    ``no-favourable-label`` has no favourable label (TPR and FNR undefined), ``no-favourable-decision`` no
    favourable prediction (PPV undefined): real data may hold no such group, so each case adds them.
    """
    first, rest = case.attributes[0], case.attributes[1:]
    favorable, other = case.favorable, 1 - case.favorable
    added = pl.DataFrame(
        {
            first: ["no-favourable-label"] * 6 + ["no-favourable-decision"] * 6,
            **{a: [case.frame[a][0]] * 12 for a in rest},
            "y_true": [other] * 6 + [favorable, other] * 3,
            "y_pred": [favorable, other] * 3 + [other] * 6,
            "score": [0.25, 0.75] * 6,
        }
    )
    return pl.concat([case.frame, added.cast(case.frame.schema)], how="vertical")


def test_undefined_rates_are_null_where_fairlearn_says_zero(case: Case, h: Any) -> None:
    """A TPR or FNR with no favourable label in the group, a PPV with no favourable decision, is null.

    Fairlearn reports 0 for the TPR there. Checked on the case's data and on two added degenerate groups, so
    that every case checks some undefined rates.
    """
    from fairlearn.metrics import MetricFrame, true_positive_rate

    frame = _with_degenerate_groups(case)
    policy = h.make_policy(
        case.attributes,
        POLICY_METRICS[:1],
        n_bootstrap=20,
        favorable_label=case.favorable,
        intersectional_analysis={"enabled": False},
    )
    document = fairgate.audit(frame, policy).to_dict()
    first = case.attributes[0]
    y = (frame["y_true"].to_numpy() == case.favorable).astype(np.int64)
    p = (frame["y_pred"].to_numpy() == case.favorable).astype(np.int64)
    with h.quiet_oracles():
        fairlearn_tpr = MetricFrame(
            metrics=true_positive_rate, y_true=y, y_pred=p, sensitive_features=frame[first].to_numpy()
        ).by_group
    checked = 0
    for entry in [*case.document["groups"], *document["groups"]]:
        rates = entry["metrics"]
        if entry["n"] > 0 and rates["base_rate"]["value"] == 0.0:
            assert rates["true_positive_rate"]["value"] is None
            assert rates["false_negative_rate"]["value"] is None
            checked += 1
        if entry["n"] > 0 and rates["selection_rate"]["value"] == 0.0:
            assert rates["positive_predictive_value"]["value"] is None
            checked += 1
    assert checked >= 2  # at least the two added groups went through the checks above
    added = {g["group"][first]: g["metrics"] for g in document["groups"] if g["slicing"] == [first]}
    no_label, no_decision = added["no-favourable-label"], added["no-favourable-decision"]
    assert no_label["base_rate"]["value"] == 0.0
    assert no_decision["selection_rate"]["value"] == 0.0
    assert fairlearn_tpr["no-favourable-label"] == 0.0  # Fairlearn's 0 ...
    assert no_label["true_positive_rate"]["value"] is None  # ... is our null
    assert no_decision["positive_predictive_value"]["value"] is None


def test_summaries_match_fairlearn_difference_and_ratio(case: Case, h: Any) -> None:
    compared = 0
    groups = h.groups_by_key(case.document)
    for slicing in case.slicings:
        frame = _metric_frame(case, slicing, h)
        present = frame.by_group[frame.by_group["count"] > 0]
        for name in _fairlearn_metrics():
            if name == "count":
                continue
            summary = _summary(case.document, name, slicing)
            defined = [
                _index_key(i, slicing)
                for i in present.index
                if groups[(slicing, _index_key(i, slicing))]["metrics"][name]["value"] is not None
            ]
            if len(defined) == len(present):
                with h.quiet_oracles():
                    expected_difference = frame.difference(method="between_groups")[name]
                    expected_ratio = frame.ratio(method="between_groups")[name]
            else:
                # Fairlearn counts an undefined rate as 0: compare with its values on defined groups only.
                values = np.array([present.loc[k if len(slicing) > 1 else k[0], name] for k in defined], float)
                expected_difference = values.max() - values.min() if len(values) >= 2 else np.nan
                expected_ratio = values.min() / values.max() if len(values) >= 2 and values.max() > 0 else np.nan
            for key, expected in (("difference", expected_difference), ("ratio", expected_ratio)):
                ours = summary[key]
                if np.isnan(expected):
                    assert ours is None, f"{name} {key} {slicing}: {ours} but undefined"
                    continue
                assert ours is not None, f"{name} {key} {slicing}: null but Fairlearn says {expected}"
                assert abs(ours - expected) <= TOL, f"{name} {key} {slicing}: {ours} vs {expected}"
                compared += 1
    assert compared >= len(case.slicings) * 10


def test_policy_metrics_match_fairlearn_functions(case: Case, h: Any) -> None:
    from fairlearn.metrics import (
        demographic_parity_difference,
        demographic_parity_ratio,
        equal_opportunity_difference,
        equalized_odds_difference,
        equalized_odds_ratio,
    )

    oracle = {
        "demographic_parity_difference": (demographic_parity_difference, ("selection_rate",)),
        "demographic_parity_ratio": (demographic_parity_ratio, ("selection_rate",)),
        "disparate_impact_ratio": (demographic_parity_ratio, ("selection_rate",)),
        "equalized_odds_difference": (
            equalized_odds_difference,
            ("true_positive_rate", "false_positive_rate"),
        ),
        "equalized_odds_ratio": (equalized_odds_ratio, ("true_positive_rate", "false_positive_rate")),
        "equal_opportunity_difference": (equal_opportunity_difference, ("true_positive_rate",)),
    }
    groups = h.groups_by_key(case.document)
    compared = skipped = 0
    expected_cache: dict[tuple[Any, tuple[str, ...]], float] = {}
    # Each Fairlearn function builds its own MetricFrame: check every attribute and the last intersection.
    for slicing in [s for s in case.slicings if len(s) == 1] + [case.slicings[-1]]:
        entries = [g for key, g in groups.items() if key[0] == slicing]
        for name, (function, bases) in oracle.items():
            result = _result(case.document, name, slicing)
            all_defined = all(g["metrics"][b]["value"] is not None for g in entries for b in bases)
            if not all_defined:  # Fairlearn would count the undefined rate as 0
                skipped += 1
                continue
            if (function, slicing) not in expected_cache:
                with h.quiet_oracles():
                    features = case.pandas[list(slicing)]
                    expected_cache[(function, slicing)] = function(case.y, case.p, sensitive_features=features)
            expected = expected_cache[(function, slicing)]
            assert result["value"] is not None
            assert abs(result["value"] - expected) <= TOL, f"{name} {slicing}: {result['value']} vs {expected}"
            compared += 1
    assert compared >= len(oracle) * len(case.attributes)
    print(f"{case.name}: {compared} policy values compared, {skipped} skipped (a rate undefined)")


def test_roc_auc_by_group_matches_sklearn(case: Case, h: Any) -> None:
    groups = h.groups_by_key(case.document)
    compared = 0
    with h.quiet_oracles():
        overall = roc_auc_score(case.y, case.s)
    assert abs(groups[((), ())]["metrics"]["roc_auc"]["value"] - overall) <= TOL
    for slicing in case.slicings:
        for key, rows in case.indices(slicing).items():
            value = groups[(slicing, key)]["metrics"]["roc_auc"]["value"]
            if len(np.unique(case.y[rows])) < 2:
                assert value is None, f"{slicing} {key}: AUC with one class must be null"
                continue
            with h.quiet_oracles():
                expected = roc_auc_score(case.y[rows], case.s[rows])
            assert abs(value - expected) <= TOL, f"{slicing} {key}: {value} vs {expected}"
            compared += 1
    assert compared > 20


def test_cube_counts_match_sklearn_confusion_matrix(case: Case, h: Any) -> None:
    for slicing in case.slicings[: len(case.attributes) + 2]:
        part = fairgate.compute_slicing(case.cube, slicing, case.policy)
        rows_by_group = case.indices(slicing)
        assert len(part.groups) == len(rows_by_group)
        for i, group in enumerate(part.groups):
            rows = rows_by_group[tuple(group[a] for a in slicing)]
            with h.quiet_oracles():
                (tn, fp), (fn, tp) = confusion_matrix(case.y[rows], case.p[rows], labels=[0, 1])
            got = [part.counts[k][i] for k in ("tp", "fp", "tn", "fn")]
            assert got == [tp, fp, tn, fn], f"{slicing} {group}"
            assert part.rows[i] == len(rows)


def _aif360_indices(y: np.ndarray, p: np.ndarray, favorable: int, h: Any) -> tuple[float, float]:
    """AIF360's ClassificationMetric theil_index and generalized_entropy_index(alpha=2) on raw labels."""
    with h.quiet_oracles():
        from aif360.datasets import BinaryLabelDataset
        from aif360.metrics import ClassificationMetric

        frame = pd.DataFrame({"protected": np.zeros(len(y)), "label": y.astype(float)})
        truth = BinaryLabelDataset(
            df=frame,
            label_names=["label"],
            protected_attribute_names=["protected"],
            favorable_label=float(favorable),
            unfavorable_label=float(1 - favorable),
        )
        predicted = truth.copy(deepcopy=True)
        predicted.labels = p.astype(float).reshape(-1, 1)
        metric = ClassificationMetric(truth, predicted)
        return float(metric.theil_index()), float(metric.generalized_entropy_index(alpha=2))


def test_individual_fairness_matches_aif360(case: Case, h: Any) -> None:
    # AIF360 sees raw labels and applies the favourable label itself: an independent check of the recoding.
    raw_y, raw_p = case.frame["y_true"].to_numpy(), case.frame["y_pred"].to_numpy()
    theil, entropy = _aif360_indices(raw_y, raw_p, case.favorable, h)
    individual = case.document["individual_fairness"]
    assert abs(individual["theil_index"] - theil) <= TOL
    assert abs(individual["generalized_entropy_index"] - entropy) <= TOL
    assert abs(_result(case.document, "theil_index", ())["value"] - theil) <= TOL
    assert abs(_result(case.document, "generalized_entropy_index", ())["value"] - entropy) <= TOL
    groups = h.groups_by_key(case.document)
    for attribute in case.attributes:
        for key, rows in case.indices((attribute,)).items():
            theil_g, entropy_g = _aif360_indices(raw_y[rows], raw_p[rows], case.favorable, h)
            metrics = groups[((attribute,), key)]["metrics"]
            assert abs(metrics["theil_index"]["value"] - theil_g) <= TOL, f"{attribute}={key}"
            assert abs(metrics["generalized_entropy_index"]["value"] - entropy_g) <= TOL, f"{attribute}={key}"


def _direct_ece(y: np.ndarray, s: np.ndarray, bins: int = 10) -> float:
    index = np.minimum(np.floor(s * bins), bins - 1).astype(int)
    total = 0.0
    for b in range(bins):
        inside = index == b
        if inside.any():
            total += inside.sum() / len(s) * abs(s[inside].mean() - y[inside].mean())
    return total


def test_expected_calibration_error_matches_direct_computation(case: Case, h: Any) -> None:
    groups = h.groups_by_key(case.document)
    assert abs(groups[((), ())]["metrics"]["expected_calibration_error"]["value"] - _direct_ece(case.y, case.s)) <= TOL
    compared = 0
    for slicing in case.slicings[:6]:
        for key, rows in case.indices(slicing).items():
            value = groups[(slicing, key)]["metrics"]["expected_calibration_error"]["value"]
            assert abs(value - _direct_ece(case.y[rows], case.s[rows])) <= TOL, f"{slicing} {key}"
            compared += 1
    assert compared > 10


def test_by_group_frame_matches_document(case: Case, h: Any) -> None:
    attribute = case.attributes[0]
    table = fairgate.AuditResult(case.document).by_group((attribute,))
    groups = h.groups_by_key(case.document)
    assert table.height == len(case.indices((attribute,)))
    for row in table.iter_rows(named=True):
        entry = groups[((attribute,), (row[attribute],))]
        assert row["n"] == entry["n"]
        assert row["selection_rate"] == entry["metrics"]["selection_rate"]["value"]
