"""Judged policy results and the verdict's detail."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fairgate.document.common import Direction, Estimate, FailOn, Group, Part, Slicing, Status


class PolicyResult(Part):
    """One policy metric on one slicing, judged against its threshold."""

    metric: str
    slicing: Slicing
    value: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float
    direction: Direction
    status: Status
    uncertain: bool = Field(description="The confidence interval contains the threshold.")
    critical: bool = False
    worst_group: Group | None = None
    best_group: Group | None = None
    n_groups_judged: int | None = None
    excluded_groups: list[Group] = Field(default_factory=list)
    insufficient_groups: list[Group] = Field(default_factory=list)
    override_reasons: list[str] = Field(default_factory=list)
    unavailable: str | None = Field(default=None, description="Why the metric could not be computed.")
    reason: str | None = Field(default=None, description="Why the result has its status (e.g. inconclusive).")
    interval_method: str | None = None
    standard_error: float | None = Field(
        default=None, description="Bootstrap standard deviation of the value (1.2; the trend's change test)."
    )
    p_value_violation: float | None = Field(
        default=None, description="One-sided p-value of 'the disparity lies beyond the threshold'."
    )
    p_value_violation_adjusted: float | None = Field(
        default=None, description="Holm-adjusted over every judged result of the audit (the gate's error control)."
    )
    detectable_disparity: float | None = Field(
        default=None, description="The smallest disparity this slicing could have detected (80% power)."
    )
    decision_ci_low: float | None = Field(
        default=None,
        description="The interval the gate decided the status on (1.8): its end on the violation side is the "
        "Holm-adjusted one-sided bound (level decision_level), its other end the bound a pass needs (1 - alpha). "
        "Null under decision: point_estimate or without an interval.",
    )
    decision_ci_high: float | None = Field(default=None, description="The deciding interval's upper end (1.8).")
    decision_level: float | None = Field(
        default=None,
        description="One-sided confidence of the deciding interval's violation-side end: 1 - alpha / the result's "
        "Holm multiplier (1.8).",
    )
    judged: Literal["corrected", "naive"] | None = Field(
        default=None,
        description="On an inferred (proxy) attribute: which estimate the gate judged, the attenuation-corrected "
        "one or the measured one (which can fail but never pass); absent otherwise.",
    )
    naive: Estimate | None = Field(
        default=None, description="On an inferred (proxy) attribute: the measured (attenuated) value and interval."
    )
    estimated: bool | None = Field(
        default=None,
        description="True: estimated from the scores before the labels arrived, not measured (1.9); absent otherwise.",
    )
    estimate_method: str | None = Field(default=None, description="How it was estimated (1.9).")
    reference_run_id: str | None = Field(default=None, description="The labelled audit it was calibrated on (1.9).")
    estimate_reasons: dict[str, str] | None = Field(
        default=None, description="Groups without an estimate and why (e.g. scores not calibrated there) (1.9)."
    )


class FailedResult(Part):
    """A failed (or inconclusive) result as the verdict lists it."""

    metric: str
    slicing: Slicing
    value: float | None
    threshold: float
    critical: bool
    ci_low: float | None = None
    ci_high: float | None = None
    status: Status | None = None


class VerdictDetail(Part):
    """How the verdict was reached from the results under the policy's gate."""

    fail_on: FailOn
    gate_enabled: bool = True
    critical_metrics: list[str] = Field(default_factory=list)
    n_results: int
    n_judged: int | None = None
    n_failed: int
    n_uncertain: int | None = None
    n_insufficient: int | None = None
    nothing_judged: bool | None = None
    insufficient: Literal["block", "allow"] | None = Field(
        default=None,
        description="ci_cd_gate.insufficient: whether an audit with nothing judged blocks (exit 4) or not "
        "(schema 1.8).",
    )
    failed: list[FailedResult]
    decision: Literal["evidence_of_violation", "evidence_of_compliance", "point_estimate"] | None = None
    alpha: float | None = Field(default=None, description="The family-wise false-fail rate the gate holds.")
    multiplicity: str | None = None
    n_tests: int | None = None
    n_inconclusive: int | None = None
    inconclusive: list[FailedResult] = Field(default_factory=list)
