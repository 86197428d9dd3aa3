"""Group thresholds as Prefect tasks: the audited rows in; the rules, the mitigated rows and the frontier out.

The mitigation flow calls :func:`fit_thresholds_task` on the aligned rows of the audit it answers, re-audits
``ThresholdMitigation.mitigated`` (the same rows, ``y_pred`` replaced by the mitigated decisions) under the same
policy, and writes :func:`thresholds_json` beside the audit (``tasks.outputs.write_atomic``). The engine work is
``fairgate.mitigation.thresholds`` / ``frontier``; here: columns, defaults from the policy, errors as exit 2.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.errors import DataError, PolicyError
from fairgate.mitigation.frontier import Frontier, frontier_of
from fairgate.mitigation.rates import CostMatrix, Objective, performance_of
from fairgate.mitigation.thresholds import (
    METRIC_CONSTRAINTS,
    ThresholdFit,
    ThresholdProblem,
    constraint_for_metric,
    fit_prepared,
    fit_thresholds,
)
from fairgate.policy.core import Policy

GROUP_SEPARATOR = " × "  # an intersection's group name: its attribute values in the order given


@dataclass(frozen=True)
class ThresholdMitigation:
    """The fitted rules, the frontier and the audited rows with the mitigated predictions."""

    metric: str
    attributes: list[str]
    seed: int
    fit: ThresholdFit
    frontier: Frontier
    mitigated: pa.Table
    held_out: dict[str, Any] | None  # rules fit on one half, decisions drawn and measured on the other

    def to_dict(self) -> dict[str, Any]:
        """The thresholds file's content."""
        return {
            "metric": self.metric,
            "attributes": self.attributes,
            "group_name": f"the values of {GROUP_SEPARATOR.join(self.attributes)}, joined by {GROUP_SEPARATOR!r}",
            "seed": self.seed,
            **self.fit.to_dict(),
            "frontier": self.frontier.to_dict(),
            "held_out_check": self.held_out,
        }


def thresholds_json(mitigation: ThresholdMitigation) -> bytes:
    """The thresholds file as UTF-8 JSON bytes (for ``write_atomic``)."""
    return json.dumps(mitigation.to_dict(), indent=2, ensure_ascii=False).encode("utf-8")


def parse_objective(value: str | dict[str, float] | None) -> Objective:
    """``accuracy``, ``balanced_accuracy`` or a cost matrix mapping {fp, fn[, tp, tn]}; PolicyError otherwise."""
    if value is None:
        return "accuracy"
    if value in ("accuracy", "balanced_accuracy"):
        return value  # type: ignore[return-value]
    if isinstance(value, dict):
        unknown = set(value) - {"fp", "fn", "tp", "tn"}
        if unknown or not {"fp", "fn"} <= set(value):
            raise PolicyError(
                f"a cost matrix needs keys fp and fn (tp and tn optional), positive = favourable label; got {value}"
            )
        try:
            return CostMatrix(**{k: float(v) for k, v in value.items()})
        except (TypeError, ValueError) as exc:
            raise PolicyError(f"cost matrix {value}: {exc}") from None
    raise PolicyError(f"objective must be accuracy, balanced_accuracy or a cost matrix {{fp, fn}}; got {value!r}")


def chosen_metric(policy: Policy, metric: str | None) -> tuple[str, float]:
    """The metric to bound and its policy threshold: the one named, else the first critical, else first listed."""
    rules = {rule.name: rule.threshold for rule in policy.metrics}
    if metric is None:
        candidates = [m for m in [*policy.ci_cd_gate.critical_metrics, *rules] if m in METRIC_CONSTRAINTS]
        if not candidates:
            raise PolicyError(
                f"group thresholds bound one of {sorted(METRIC_CONSTRAINTS)}; the policy judges none of them "
                f"(metrics: {sorted(rules)}). Add one, or use reweighing or retraining"
            )
        metric = candidates[0]
    try:
        constraint_for_metric(metric)
    except ValueError as exc:
        raise PolicyError(str(exc)) from None
    if metric not in rules:
        raise PolicyError(f"metric {metric!r} is not judged by the policy; its metrics: {sorted(rules)}")
    return metric, rules[metric]


#: The gap the thresholds allow when neither the command nor the policy names one: none (exact equality, as
#: Hardt et al. and Fairlearn's ThresholdOptimizer equalise). The re-audit judges the mitigated gap by its
#: interval, not its point, so every bit of tolerance is room the interval no longer has. Measured on the COMPAS
#: demo (race, equal opportunity, threshold 0.10, 1000 replicates, in sample): tolerance 0.10 -> gap 0.103,
#: inconclusive; 0.05 (half the threshold) -> 0.056 [0.015, 0.123], still inconclusive; 0.025 -> 0.029
#: [0, 0.100], a pass by a hair; 0 -> 0.001 [0, 0.093], pass. The price of the last step is small (accuracy
#: 0.6504 at 0.05, 0.6464 at 0); the report's frontier shows it for every tolerance, and ``--tolerance`` /
#: ``mitigation.tolerance`` buys accuracy back where the sample is large enough.
DEFAULT_TOLERANCE = 0.0


def group_labels(rows: pl.DataFrame, attributes: Sequence[str]) -> np.ndarray:
    """Each row's group over ``attributes`` as one label; DataError when an attribute column or value is missing."""
    missing = [a for a in attributes if a not in rows.columns]
    if missing:
        raise DataError(f"attribute column(s) {missing} are missing from the audited rows; present: {rows.columns}")
    nulls = {a: rows[a].null_count() for a in attributes if rows[a].null_count()}
    if nulls:
        raise DataError(
            f"attribute values are missing in {nulls} row(s); group thresholds need every row's group. "
            "Set the policy's missing-value rule for the attribute (e.g. an 'Unknown' group) and audit again"
        )
    label = pl.concat_str([pl.col(a).cast(pl.String) for a in attributes], separator=GROUP_SEPARATOR)
    return rows.select(label.alias("group"))["group"].to_numpy()


@task(name="fit group thresholds", cache_policy=NO_CACHE)
def fit_thresholds_task(
    rows: pa.Table | pl.DataFrame,
    policy: Policy,
    *,
    metric: str | None = None,
    attributes: Sequence[str] | None = None,
    tolerance: float | None = None,
    objective: str | dict[str, float] | None = None,
    seed: int | None = None,
    frontier_steps: int = 21,
) -> ThresholdMitigation:
    """Fit group thresholds on the audited rows and apply them to the same rows; sweep the frontier.

    Defaults from the policy: the metric is the first critical (else first) of equal opportunity / equalized
    odds difference, the tolerance :data:`DEFAULT_TOLERANCE` (0), the groups the first
    sensitive attribute, the seed the statistics seed. Bad columns, labels or options raise
    ``DataError``/``PolicyError`` (exit 2). Besides the fit on all rows (whose numbers are in-sample),
    ``held_out`` fits on a random half and measures the other.
    """
    frame = rows if isinstance(rows, pl.DataFrame) else pl.from_arrow(rows)
    assert isinstance(frame, pl.DataFrame)
    metric, _ = chosen_metric(policy, metric)
    constraint = constraint_for_metric(metric)
    tolerance = DEFAULT_TOLERANCE if tolerance is None else tolerance
    attributes = list(attributes or [policy.sensitive_attributes[0].name])
    columns = policy.columns
    for role, column in (("score", columns.score), ("y_true", columns.y_true)):
        if column not in frame.columns:
            raise DataError(
                f"group thresholds need the {role} column {column!r}; the audited rows have {frame.columns}. "
                + ("Supply the model's scores (columns.score in the policy)" if role == "score" else "")
            )
    groups = group_labels(frame, attributes)
    scores, y_true = frame[columns.score].to_numpy(), frame[columns.y_true].to_numpy()
    if columns.y_pred in frame.columns:
        y_pred = frame[columns.y_pred].to_numpy()
    else:  # as the engine does without a prediction column: the score against the policy's decision threshold
        y_pred = (np.nan_to_num(scores, nan=-np.inf) >= columns.decision_threshold).astype(np.int8)
    chosen = parse_objective(objective)
    seed = policy.statistics.seed if seed is None else seed
    try:
        problem = ThresholdProblem.prepare(scores, y_true, groups, favorable_label=policy.favorable_label)
        fit = fit_prepared(
            problem, y_true, groups, y_pred=y_pred, constraint=constraint, tolerance=tolerance, objective=chosen
        )
        curve = frontier_of(problem, fit.before, constraint=constraint, objective=chosen, steps=frontier_steps)
        decisions = fit.apply(scores, groups, np.random.default_rng(seed))
        held_out = _held_out_check(scores, y_true, groups, y_pred, fit, np.random.default_rng(seed))
    except ValueError as exc:
        raise DataError(f"group thresholds on {GROUP_SEPARATOR.join(attributes)}: {exc}") from None
    dtype = frame.schema.get(columns.y_pred, pl.Int8)
    mitigated = frame.with_columns(pl.Series(columns.y_pred, decisions).cast(dtype))
    return ThresholdMitigation(metric, attributes, int(seed), fit, curve, mitigated.to_arrow(), held_out)


def _held_out_check(
    scores: np.ndarray,
    y_true: np.ndarray,
    groups: np.ndarray,
    y_pred: np.ndarray,
    fit: ThresholdFit,
    rng: np.random.Generator,
) -> dict[str, Any] | None:
    """Fit the same thresholds on a random half and measure them on the other half: the in-sample numbers of
    ``fit`` are optimistic, this is what new people would see. None when a half lacks a group or an outcome."""
    half = rng.random(scores.size) < 0.5
    try:
        on_half = fit_thresholds(
            scores[half],
            y_true[half],
            groups[half],
            y_pred=y_pred[half],
            constraint=fit.constraint,
            tolerance=fit.tolerance,
            objective=fit.objective,
            favorable_label=fit.favorable_label,
        )
        other = ~half
        decisions = on_half.apply(scores[other], groups[other], rng)
        label = fit.favorable_label
        before = performance_of(y_true[other], y_pred[other], groups[other], favorable_label=label)
        after = performance_of(y_true[other], decisions, groups[other], favorable_label=label)
    except ValueError:
        return None
    if set(after.groups) != set(fit.rules) or any(not (g.positives and g.negatives) for g in after.groups.values()):
        return None  # a group or an outcome missing from the measured half: its rates would be undefined
    return {
        "rows_fit": int(half.sum()),
        "rows_measured": int((~half).sum()),
        "before": before.to_dict(fit.constraint),
        "after": after.to_dict(fit.constraint),
    }
