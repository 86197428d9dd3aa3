"""Hypothesis properties of the multiclass engine on small random data.

Rates lie in [0, 1] or are undefined; differences are >= 0 and ratios in [0, 1]; the worst case over classes is
the largest per-class difference (smallest ratio); confusion matrices sum to the group sizes; integer weights
equal duplicated rows; the ordered-outcome cube audits as the binary decision with the same rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import fairgate
from fairgate.engine.multiclass import audit_multiclass, build_multiclass_cube, to_binary_cube
from fairgate.policy.task import MulticlassOptions

FAST = settings(
    max_examples=40,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
CLASSES = ["low", "mid", "high", "top"]
ROW = st.tuples(
    st.sampled_from(["x", "y", "z"]),
    st.sampled_from(["p", "q"]),
    st.sampled_from(CLASSES),
    st.sampled_from(CLASSES),
    st.integers(1, 3),
)
ROWS = st.lists(ROW, min_size=2, max_size=80)


def _frame(rows: list[tuple[Any, ...]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["grp", "k", "y_true", "y_pred", "w"], orient="row")


@FAST
@given(rows=ROWS)
def test_values_lie_in_their_ranges_and_the_worst_case_is_the_worst_class(h: Any, rows: list[tuple[Any, ...]]) -> None:
    frame = _frame(rows)
    policy = h.make_policy(["grp", "k"], n_bootstrap=30, statistics={"n_bootstrap": 30, "min_events": 1})
    audit = audit_multiclass(frame, policy, MulticlassOptions(classes=CLASSES))
    for result in audit.slicings:
        assert np.allclose([np.sum(m) for m in result.confusion], result.rows)
        for table in result.metrics.values():
            for row in table["value"]:
                assert all(v is None or 0.0 <= v <= 1.0 for v in row)
        for summary in result.summaries:
            per_class = [v.value for v in summary.by_class.values()]
            for entry in [*summary.by_class.values(), summary.worst]:
                if entry.value is not None:
                    assert 0.0 <= entry.value <= 1.0 + 1e-12
                # Ratio intervals come from continuity-corrected log rates (the binary engine's), which can miss a
                # ratio of exactly 0; differences' folded intervals always hold their estimate.
                if entry.ci_low is not None and summary.summary == "difference":
                    assert entry.ci_high is not None
                    assert entry.ci_low <= entry.value + 1e-12 <= entry.ci_high + 2e-12  # type: ignore[operator]
            if all(v is not None for v in per_class):
                pick = max if summary.summary == "difference" else min
                assert summary.worst.value is not None
                assert math.isclose(summary.worst.value, pick(v for v in per_class if v is not None))


@FAST
@given(rows=ROWS)
def test_integer_weights_equal_duplicated_rows(h: Any, rows: list[tuple[Any, ...]]) -> None:
    frame = _frame(rows)
    weighted = h.make_policy(["grp", "k"], n_bootstrap=0, columns={"weight": "w"})
    plain = h.make_policy(["grp", "k"], n_bootstrap=0)
    options = MulticlassOptions(classes=CLASSES)
    duplicated = frame.select(pl.all().repeat_by("w").explode()).drop("w")
    one = audit_multiclass(frame, weighted, options)
    two = audit_multiclass(duplicated, plain, options)
    for a, b in zip(one.slicings, two.slicings, strict=True):
        assert np.allclose(a.confusion, b.confusion)
        for name in a.metrics:
            left = np.array(a.metrics[name]["value"], dtype=float)
            right = np.array(b.metrics[name]["value"], dtype=float)
            assert np.allclose(left, right, equal_nan=True)


@FAST
@given(rows=ROWS, adverse=st.sets(st.sampled_from(CLASSES), min_size=1, max_size=3))
def test_ordered_outcome_is_the_binary_decision_on_the_same_rows(
    h: Any, rows: list[tuple[Any, ...]], adverse: set[str]
) -> None:
    frame = _frame(rows)
    policy = h.make_policy(["grp", "k"], n_bootstrap=0)
    chosen = [c for c in CLASSES if c in adverse]
    binary = to_binary_cube(build_multiclass_cube(frame, policy, MulticlassOptions(classes=CLASSES)), chosen)
    recoded = frame.with_columns((~pl.col(c).is_in(chosen)).cast(pl.Int64).alias(c) for c in ("y_true", "y_pred"))
    assert binary.cells.equals(fairgate.build_cube(recoded, policy).cells)
