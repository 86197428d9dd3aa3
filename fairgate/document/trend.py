"""The trend block: each judged result over the model's recent runs, and the change since the previous run."""

from __future__ import annotations

from pydantic import Field

from fairgate.document.common import Direction, Part, Slicing, Status


class TrendRun(Part):
    """One run of the series (the current run last; it has no trail ``seq`` yet when the document is written)."""

    run_id: str
    seq: int | None = Field(description="The run's seq in the audit trail; null for the current run.")
    recorded_at: str | None
    model_version: str | None
    verdict: str | None
    current: bool


class TrendPoint(Part):
    """One run's value of a judged result, with its interval, threshold and status."""

    run_id: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float | None
    status: Status | None


class TrendChange(Part):
    """The change of a judged result from the previous run that judged it to this one."""

    previous_run_id: str
    previous_value: float | None
    previous_status: Status | None
    value: float | None
    status: Status | None
    delta: float | None = Field(description="value - previous_value; null when either is undefined.")
    standard_error: float | None = Field(description="Standard error of delta (the two runs independent).")
    ci_low: float | None = Field(description="Lower end of delta's interval at 1 - alpha (not adjusted).")
    ci_high: float | None
    p_value: float | None = Field(description="Two-sided p-value of 'no change' (z-test).")
    p_value_adjusted: float | None = Field(description="Holm-adjusted over the run's tested changes.")
    tested: bool
    significant: bool = Field(description="p_value_adjusted <= alpha.")
    reason: str | None = Field(description="Why the change was not tested (same input files, no interval, ...).")


class TrendSeries(Part):
    """One judged (metric, slicing): its points, oldest first and the current run last, and its change."""

    metric: str
    slicing: Slicing
    direction: Direction | None
    critical: bool
    points: list[TrendPoint]
    change: TrendChange | None = Field(description="Null on the first run that judged this result.")


class Trend(Part):
    """The model's judged results over its last runs in the audit trail (``reporting.trend_runs``)."""

    model_name: str
    trail: str | None = Field(description="The audit trail the earlier runs were read from.")
    max_runs: int = Field(ge=1)
    alpha: float = Field(gt=0, lt=1)
    method: str = Field(description="How the change since the previous run is tested.")
    runs: list[TrendRun]
    same_data_as_previous: bool | None = Field(
        description="The previous run audited identical input files (null: no previous run)."
    )
    note: str | None = Field(description="E.g. the first audit of the model, or why the trail could not be read.")
    n_significant: int = Field(ge=0)
    series: list[TrendSeries]
