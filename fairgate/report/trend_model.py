"""The trend section's view dataclasses (built by :mod:`fairgate.report.trend`; no logic here)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrendMark:
    """One run's value of one slicing in a chart (rounded)."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    failed: bool
    current: bool


@dataclass(frozen=True)
class TrendLine:
    """One slicing's values, aligned with the panel's runs (None where that run did not judge it)."""

    slicing_label: str
    colour: int  # the slicing's place among all slicings: the same colour in every chart
    marks: list[TrendMark | None]


@dataclass(frozen=True)
class TrendPanel:
    """The small multiple of one judged metric: its slicings over the runs, with the threshold."""

    key: str
    metric_label: str
    higher_is_better: bool
    run_labels: list[str]
    thresholds: list[float | None]  # per run: the threshold that run judged against
    lines: list[TrendLine]
    n_hidden: int  # slicings not drawn (the table has them)


@dataclass(frozen=True)
class ChangeRow:
    """The change of one judged result since the previous run."""

    metric_label: str
    slicing_label: str
    previous_text: str
    value_text: str
    delta_text: str
    ci_text: str
    p_text: str
    tested: bool
    significant: bool
    worse: bool  # the disparity grew
    status_text: str  # "PASS → FAIL", or the status when unchanged
    status_changed: bool
    note: str  # why it was not tested


@dataclass(frozen=True)
class TrendRunRow:
    """One run of the trend."""

    label: str
    recorded_at: str
    model_version: str
    verdict: str
    run_id: str
    current: bool


@dataclass(frozen=True)
class TrendView:
    """The trend section: a sentence, the runs, one chart per metric and the table of changes."""

    first_run: bool
    same_data: bool  # the previous run audited identical input files: no change is tested
    sentence: str
    note: str
    method: str
    runs: list[TrendRunRow]
    panels: list[TrendPanel]
    changes: list[ChangeRow]
    n_significant: int
    legend: list[str]  # the slicings in colour order (TrendLine.colour indexes it), for one legend for all charts
    n_changes_listed: int  # rows of the changes table the PDF lists (the HTML lists all)
