"""Hypothesis properties of the engine, and explicit edge cases (empty group, no positives, one group, ties).

Properties: row order and partitioning do not change a result; cube(A) + cube(B) = cube(A u B); ratios lie in
[0, 1] and differences are >= 0; weights of 1 change nothing; integer weights equal duplicated rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import fairgate
from fairgate.engine.cube import BIN, PRED, SCORE, SCORE_SUM, TRUE, WEIGHT
from fairgate.engine.cube import ROWS as ROWS_COLUMN

# No shrinking: an audit per example makes shrinking take minutes; the explicit tests below pin down the
# minimal cases found while writing these properties.
FAST = settings(
    max_examples=50,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
METRICS = [
    {"name": "demographic_parity_difference", "threshold": 0.1},
    {"name": "disparate_impact_ratio", "threshold": 0.8},
    {"name": "equalized_odds_difference", "threshold": 0.1},
    {"name": "equalized_odds_ratio", "threshold": 0.8},
    {"name": "predictive_parity_difference", "threshold": 0.1},
    {"name": "auc_difference", "threshold": 0.1},
    {"name": "calibration_difference", "threshold": 0.1},
    {"name": "theil_index", "threshold": 1.0},
]

ROW = st.tuples(
    st.sampled_from(["x", "y", "z"]),  # attribute grp
    st.sampled_from(["p", "q"]),  # attribute k
    st.integers(0, 1),  # y_true
    st.integers(0, 1),  # y_pred
    st.integers(0, 20).map(lambda i: i / 20),  # score (ties likely)
    st.integers(1, 3),  # integer weight
)
ROWS = st.lists(ROW, min_size=2, max_size=60)


def _frame(rows: list[tuple[Any, ...]]) -> pl.DataFrame:
    g, k, y, p, s, w = zip(*rows, strict=True)
    return pl.DataFrame(
        {"grp": list(g), "k": list(k), "y_true": list(y), "y_pred": list(p), "score": list(s), "w": list(w)},
        schema={
            "grp": pl.String,
            "k": pl.String,
            "y_true": pl.Int64,
            "y_pred": pl.Int64,
            "score": pl.Float64,
            "w": pl.Int64,
        },
    )


def _policy(h: Any, **extra: Any) -> fairgate.Policy:
    return h.make_policy(["grp", "k"], METRICS, n_bootstrap=extra.pop("n_bootstrap", 10), **extra)


def _sorted_cells(cube: fairgate.Cube) -> pl.DataFrame:
    keys = [*cube.attributes, TRUE, PRED, BIN]
    return cube.cells.select(*keys, ROWS_COLUMN, WEIGHT, SCORE_SUM).sort(keys)


def _assert_cells_equal(left: pl.DataFrame, right: pl.DataFrame) -> None:
    assert left.drop(SCORE_SUM, WEIGHT).equals(right.drop(SCORE_SUM, WEIGHT))
    np.testing.assert_allclose(left[WEIGHT].to_numpy(), right[WEIGHT].to_numpy(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(left[SCORE_SUM].to_numpy(), right[SCORE_SUM].to_numpy(), rtol=0, atol=1e-9)


# --------------------------------------------------------------------------------------------- invariance
@FAST
@given(rows=ROWS, seed=st.integers(0, 2**32 - 1))
def test_row_order_does_not_change_the_audit(h: Any, rows: list[tuple[Any, ...]], seed: int) -> None:
    frame = _frame(rows)
    policy = _policy(h)
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)
    first = h.stable_view(fairgate.audit(frame, policy).to_dict())
    second = h.stable_view(fairgate.audit(shuffled, policy).to_dict())
    h.assert_close_tree(first, second)


@FAST
@given(rows=st.lists(ROW, min_size=2, max_size=60), cut=st.floats(0.0, 1.0))
def test_cube_of_union_is_sum_of_cubes(h: Any, rows: list[tuple[Any, ...]], cut: float) -> None:
    frame = _frame(rows)
    split = min(max(1, int(cut * frame.height)), frame.height - 1)
    policy = _policy(h)
    part_a, part_b = frame.head(split), frame.tail(frame.height - split)
    union = fairgate.build_cube(frame, policy)
    summed = fairgate.build_cube(part_a, policy) + fairgate.build_cube(part_b, policy)
    _assert_cells_equal(_sorted_cells(union), _sorted_cells(summed))
    assert summed.n_rows == frame.height
    # The exact-AUC score tables add as well: the same weight per (group, score, label).
    assert _score_weights(union).equals(_score_weights(summed))


def _score_weights(cube: fairgate.Cube) -> pl.DataFrame:
    """The score table as weight per (attribute values, score, y_true), whatever its storage (codes, rows)."""
    assert cube.scores is not None
    table = cube.scores
    decoded = table.with_columns(
        pl.Series(a, cube.levels(a)).gather(table[a].cast(pl.Int64)) if table[a].dtype.is_integer() else pl.col(a)
        for a in cube.attributes
    )
    keys = [*cube.attributes, SCORE, TRUE]
    return decoded.group_by(keys).agg(pl.col(WEIGHT).sum()).sort(keys)


@FAST
@given(rows=st.lists(ROW, min_size=2, max_size=60), cut=st.floats(0.0, 1.0))
def test_partitioning_does_not_change_any_slicing(h: Any, rows: list[tuple[Any, ...]], cut: float) -> None:
    frame = _frame(rows)
    split = min(max(1, int(cut * frame.height)), frame.height - 1)
    policy = _policy(h, n_bootstrap=0)
    union = fairgate.build_cube(frame, policy)
    summed = fairgate.build_cube(frame.head(split), policy) + fairgate.build_cube(
        frame.tail(frame.height - split), policy
    )
    for slicing in fairgate.plan_slicings(union, policy):
        whole = fairgate.compute_slicing(union, slicing, policy)
        parts = fairgate.compute_slicing(summed, slicing, policy)
        h.assert_close_tree(whole.metrics, parts.metrics)
        h.assert_close_tree(whole.summaries, parts.summaries)
        h.assert_close_tree(whole.results, parts.results)


# --------------------------------------------------------------------------------------------- ranges
@FAST
@given(rows=ROWS)
def test_ratios_in_unit_interval_and_differences_non_negative(h: Any, rows: list[tuple[Any, ...]]) -> None:
    document = fairgate.audit(_frame(rows), _policy(h, n_bootstrap=20)).to_dict()
    for summary in document["summaries"]:
        for key in ("difference", "difference_ci_low", "difference_ci_high"):
            assert summary[key] is None or summary[key] >= 0.0, (summary["metric"], key, summary[key])
        for key in ("ratio", "ratio_ci_low", "ratio_ci_high"):
            assert summary[key] is None or 0.0 <= summary[key] <= 1.0, (summary["metric"], key, summary[key])
    for result in document["results"]:
        if result["value"] is None:
            continue
        if result["metric"].endswith("_ratio"):
            assert 0.0 <= result["value"] <= 1.0
        elif result["metric"].endswith("_difference"):
            assert result["value"] >= 0.0
    for group in document["groups"]:
        for name, value in group["metrics"].items():
            if name in ("theil_index", "generalized_entropy_index") or value["value"] is None:
                continue
            assert 0.0 <= value["value"] <= 1.0, (name, value)
            if value["ci_low"] is not None:
                assert value["ci_low"] <= value["value"] + 1e-12 or name == "roc_auc"


# --------------------------------------------------------------------------------------------- weights
def _without_weights(document: dict[str, Any]) -> dict[str, Any]:
    view = {k: v for k, v in document.items() if k not in ("run_id", "created_at", "policy", "policy_sha256")}
    return view


@FAST
@given(rows=ROWS)
def test_weights_of_one_equal_no_weights(h: Any, rows: list[tuple[Any, ...]]) -> None:
    frame = _frame(rows).with_columns(pl.lit(1).alias("w"))
    plain = fairgate.audit(frame.drop("w"), _policy(h)).to_dict()
    weighted = fairgate.audit(frame, _policy(h, columns={"weight": "w"})).to_dict()
    assert weighted["weighted"] is False
    h.assert_close_tree(_without_weights(plain), _without_weights(weighted))


def _point_view(document: dict[str, Any]) -> dict[str, Any]:
    """What does not depend on the bootstrap: values, n, Wilson intervals, comparisons' point tests."""
    groups = [
        {
            "slicing": g["slicing"],
            "group": g["group"],
            "n": g["n"],
            "metrics": {
                name: (m if name != "roc_auc" and _is_rate(name) else {"value": m["value"]})
                for name, m in g["metrics"].items()
            },
        }
        for g in document["groups"]
    ]
    comparisons = [
        {k: c[k] for k in ("metric", "slicing", "group", "reference", "difference", "ratio")}
        | ({k: c[k] for k in ("difference_ci_low", "difference_ci_high", "p_value")} if _is_rate(c["metric"]) else {})
        for c in document["comparisons"]
    ]
    summaries = [{k: s[k] for k in ("metric", "slicing", "difference", "ratio")} for s in document["summaries"]]
    # Not ``status``: a value equal to its threshold up to the last bit (sums in another order) may flip it.
    results = [{k: r[k] for k in ("metric", "slicing", "value")} for r in document["results"]]
    return {"groups": groups, "comparisons": comparisons, "summaries": summaries, "results": results}


def _is_rate(name: str) -> bool:
    from fairgate.engine.metrics import GroupMetric, Rate

    return issubclass(GroupMetric.registry[name], Rate)


@FAST
@given(rows=ROWS)
def test_integer_weights_equal_duplicated_rows(h: Any, rows: list[tuple[Any, ...]]) -> None:
    frame = _frame(rows)
    duplicated = frame.select(pl.all().repeat_by(pl.col("w")).explode())
    assert duplicated.height == frame["w"].sum()
    weighted = fairgate.audit(frame, _policy(h, columns={"weight": "w"})).to_dict()
    plain = fairgate.audit(duplicated.drop("w"), _policy(h)).to_dict()
    # Point estimates only: weights are not frequency weights. Group sizes and intervals use Kish's effective
    # size, which does not grow when weights are scaled (tests/engine/test_weights.py).
    h.assert_close_tree(_values_only(_point_view(weighted)), _values_only(_point_view(plain)))


def _values_only(view: Any) -> Any:
    """A point view without group sizes, intervals, p-values and the debiased calibration error (its bias
    correction depends on the effective number of people, which frequency weights do not give)."""
    if isinstance(view, dict):
        dropped = (
            "n",
            "ci_low",
            "ci_high",
            "difference_ci_low",
            "difference_ci_high",
            "p_value",
            "expected_calibration_error_debiased",
        )
        return {k: _values_only(v) for k, v in view.items() if k not in dropped}
    if isinstance(view, list):
        return [_values_only(v) for v in view if not (isinstance(v, dict) and v.get("metric") in _SIZE_DEPENDENT)]
    return view


_SIZE_DEPENDENT = ("expected_calibration_error_debiased", "calibration_difference")


# --------------------------------------------------------------------------------------------- explicit cases
def _rows_frame(spec: list[tuple[str, int, int, int]], score: float | None = None) -> pl.DataFrame:
    """spec: (group, y_true, y_pred, how many rows)."""
    g, y, p = [], [], []
    for group, y_true, y_pred, count in spec:
        g += [group] * count
        y += [y_true] * count
        p += [y_pred] * count
    frame = pl.DataFrame({"grp": g, "y_true": y, "y_pred": p})
    rng = np.random.default_rng(0)
    scores = np.full(frame.height, score) if score is not None else rng.random(frame.height)
    return frame.with_columns(pl.Series("score", scores))


def test_group_without_favourable_labels_has_null_tpr_not_zero(h: Any) -> None:
    frame = _rows_frame(
        [
            ("x", 1, 1, 30),
            ("x", 1, 0, 10),
            ("x", 0, 0, 20),
            ("y", 0, 1, 5),
            ("y", 0, 0, 25),
            ("z", 1, 1, 20),
            ("z", 0, 0, 20),
            ("z", 1, 0, 20),
        ]
    )
    policy = h.make_policy(["grp"], [{"name": "equal_opportunity_difference", "threshold": 0.1}])
    document = fairgate.audit(frame, policy).to_dict()
    tpr = {g["group"]["grp"]: g["metrics"]["true_positive_rate"] for g in document["groups"] if g["slicing"] == ["grp"]}
    assert tpr["y"] == {"value": None, "ci_low": None, "ci_high": None}
    assert tpr["x"]["value"] == pytest.approx(0.75)
    assert tpr["z"]["value"] == pytest.approx(0.5)
    # The summary is taken over the groups where TPR is defined: 0.75 - 0.5, not 0.75 - 0.
    result = next(r for r in document["results"] if r["slicing"] == ["grp"])
    assert result["value"] == pytest.approx(0.25)
    comparison = next(
        c for c in document["comparisons"] if c["metric"] == "true_positive_rate" and c["group"] == {"grp": "y"}
    )
    assert comparison["difference"] is None
    assert comparison["p_value"] is None
    assert '"NaN"' not in fairgate.audit(frame, policy).to_json()


def test_declared_group_without_rows_is_reported_not_dropped(h: Any) -> None:
    """A value declared in the policy but absent from the data: the audit runs on the others and says so."""
    frame = _rows_frame([("x", 1, 1, 30), ("x", 0, 0, 30), ("y", 1, 0, 30), ("y", 0, 1, 30)])
    policy = h.make_policy([{"name": "grp", "values": ["x", "y", "z"], "reference_group": "x"}])
    document = fairgate.audit(frame, policy).to_dict()
    result = next(r for r in document["results"] if r["slicing"] == ["grp"])
    assert result["value"] == pytest.approx(0.0)  # x and y both select half
    insufficient = [entry["group"] for entry in document["diagnostics"]["insufficient_groups"]]
    assert {"grp": "z"} in insufficient, (
        "declared group grp=z has no rows; DESIGN.md: groups too small to judge are listed, never dropped"
    )


def test_single_group_gives_insufficient_data(h: Any) -> None:
    frame = _rows_frame([("x", 1, 1, 30), ("x", 0, 0, 30), ("x", 1, 0, 5)])
    policy = h.make_policy(
        ["grp"],
        [
            {"name": "demographic_parity_difference", "threshold": 0.1},
            {"name": "disparate_impact_ratio", "threshold": 0.8},
        ],
    )
    document = fairgate.audit(frame, policy).to_dict()
    results = [r for r in document["results"] if r["slicing"] == ["grp"]]
    assert len(results) == 2  # one per policy metric: listed, not dropped
    for result in results:
        assert result["value"] is None
        assert result["ci_low"] is None
        assert result["ci_high"] is None
        assert result["status"] == "insufficient_data"
    # One group: nothing to compare it with, so no between-group summary at all.
    assert [s for s in document["summaries"] if s["slicing"] == ["grp"]] == []
    assert document["comparisons"] == []
    assert document["verdict_detail"]["n_judged"] == 0


def test_all_equal_scores_give_auc_one_half(h: Any) -> None:
    frame = _rows_frame([("x", 1, 1, 30), ("x", 0, 0, 20), ("y", 1, 0, 10), ("y", 0, 1, 40)], score=0.4)
    policy = h.make_policy(["grp"], [{"name": "auc_difference", "threshold": 0.1}])
    document = fairgate.audit(frame, policy).to_dict()
    for group in document["groups"]:
        assert group["metrics"]["roc_auc"]["value"] == 0.5
    assert next(r for r in document["results"] if r["slicing"] == ["grp"])["value"] == 0.0


def test_cubes_with_different_attributes_refuse_to_add(h: Any) -> None:
    frame = _frame([("x", "p", 1, 1, 0.5, 1), ("y", "q", 0, 0, 0.5, 1)])
    one = fairgate.build_cube(frame, h.make_policy(["grp"]))
    two = fairgate.build_cube(frame, h.make_policy(["grp", "k"]))
    with pytest.raises(fairgate.DataError):
        _ = one + two


@pytest.mark.parametrize("name", ["g", "positive", "rows"])
def test_any_attribute_name_works(h: Any, name: str) -> None:
    """An attribute may be called anything, including the engine's internal column names (``g`` is a
    natural name for a group column)."""
    frame = _rows_frame([("x", 1, 1, 30), ("x", 0, 0, 30), ("y", 1, 0, 30), ("y", 0, 1, 30)]).rename({"grp": name})
    document = fairgate.audit(frame, h.make_policy([name])).to_dict()
    assert next(r for r in document["results"] if r["slicing"] == [name])["value"] == pytest.approx(0.0)


def test_auc_intervals_stay_within_their_range(h: Any) -> None:
    """AUC lies in [0, 1]: its replicates, and so the summaries' and comparisons' intervals, must as well."""
    frame = pl.DataFrame(
        {
            "grp": ["x"] * 4 + ["y"] * 4,
            "y_true": [1, 0, 1, 0, 1, 0, 0, 0],
            "y_pred": [1, 0, 0, 0, 1, 0, 0, 1],
            "score": [0.5] * 8,
        }
    )
    document = fairgate.audit(frame, h.make_policy(["grp"], [{"name": "auc_difference", "threshold": 0.1}])).to_dict()
    summary = next(s for s in document["summaries"] if s["metric"] == "roc_auc")
    # Two positives per group are under min_events: no interval, and the summary says why.
    assert summary["ratio_ci_low"] is None
    assert summary["difference_ci_low"] is None
    assert "min_events" in summary["interval_reason"]
    summary = next(s for s in _auc_summaries(h) if s["metric"] == "roc_auc")
    assert 0.0 <= summary["ratio_ci_low"] <= summary["ratio_ci_high"] <= 1.0, summary
    assert 0.0 <= summary["difference_ci_low"] <= summary["difference_ci_high"] <= 1.0, summary
    comparison = next(c for c in document["comparisons"] if c["metric"] == "roc_auc")
    assert comparison["ratio_ci_low"] is None or comparison["ratio_ci_low"] >= 0.0, comparison
    assert -1.0 <= comparison["difference_ci_low"] <= comparison["difference_ci_high"] <= 1.0, comparison


def _auc_summaries(h: Any) -> list[dict[str, Any]]:
    """Summaries of an audit whose groups have enough positives and negatives for AUC intervals."""
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 200)
    frame = pl.DataFrame(
        {"grp": ["x", "y"] * 100, "y_true": y, "y_pred": y, "score": np.clip(0.5 * y + rng.random(200), 0, 1)}
    )
    policy = h.make_policy(["grp"], [{"name": "auc_difference", "threshold": 0.1}])
    return list(fairgate.audit(frame, policy).to_dict()["summaries"])
