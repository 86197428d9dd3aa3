"""The monitoring document of ``fairgate monitor run``: typed models of its versioned JSON, and its schema.

One document per monitoring run (one night): the periods it stored, each window's judged values with their
intervals and their change against the baseline, the drift detector's streams and the alerts it raised.
The report's monitoring section renders from it (``tasks/render/monitor_report.py``). Generated, never hand-written:
``tools/write_document_schema.py`` writes ``MONITORING_SCHEMA_PATH`` beside the audit document's schema, and
the flow validates every document against these models before writing it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from fairgate.document.common import Direction, Part, Slicing, Status

MONITORING_SCHEMA_VERSION = "1.0"
MONITORING_SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "monitoring.schema.json"


class MonitoredModel(Part):
    """The monitored model."""

    name: str
    version: str


class StoredPeriod(Part):
    """One period cube this run stored: new, or a rebuilt version (late labels) superseding an older one."""

    start: str = Field(description="First day of the period (ISO date).")
    end: str = Field(description="Last day of the period (ISO date, inclusive).")
    version: int = Field(description="1 for the first cube of the period; higher when rebuilt.")
    rows: int = Field(description="Prediction rows of the period in this run's inputs.")
    labelled_rows: int = Field(description="Rows with a label (and attributes): the rows the cube counts.")
    supersedes: int | None = Field(description="The version this one replaces (late labels); null when new.")
    unchanged: bool = Field(description="True when the stored current cube already had these inputs (not stored).")


class Baseline(Part):
    """What the windows are compared with."""

    kind: Literal["deployment_audit", "reference_window"]
    label: str = Field(description="The audit run id, or the reference window's dates.")
    rows: int


class WindowResult(Part):
    """One judged metric on one slicing over one window, and its change against the baseline."""

    metric: str
    slicing: Slicing
    direction: Direction
    threshold: float | None
    value: float | None
    ci_low: float | None
    ci_high: float | None
    standard_error: float | None = Field(description="The value's bootstrap standard error.")
    status: Status | None = Field(description="The audit's judgement of the window's value against the threshold.")
    baseline_value: float | None
    baseline_standard_error: float | None
    change: float | None = Field(description="value - baseline_value.")
    change_standard_error: float | None = Field(description="sqrt(se_window^2 + se_baseline^2): independent samples.")
    z: float | None
    p_value: float | None = Field(description="Two-sided, not adjusted.")
    significant: bool | None = Field(description="Holm-adjusted p-value over the window's changes <= alpha.")
    reason: str | None = Field(default=None, description="Why a value or the change is missing.")


class WindowSummary(Part):
    """One window: the stored periods it sums and its results."""

    window: str = Field(description="Its length in days, or since_deployment.")
    start: str | None = Field(description="First day summed (ISO date); null when no period is stored.")
    end: str | None
    periods: int = Field(description="Stored period cubes summed (never re-read rows).")
    rows: int
    results: list[WindowResult]


class StreamPath(Part):
    """One detector stream (metric, slicing, group): its statistic per night and its decision threshold."""

    stream: str
    metric: str
    slicing: str
    group: str
    threshold: float
    nights: list[str] = Field(description="ISO dates of the stream's observations, oldest first.")
    statistic: list[float] = Field(description="The detector statistic after each night.")
    estimate: list[float] = Field(description="Each night's change against the baseline.")
    standard_error: list[float]
    predicted_delay: float | None = Field(description="Expected nights to detect a change of min_change.")


class Alert(Part):
    """A drift alert raised on this run's night."""

    stream: str
    metric: str
    slicing: str
    group: str
    night: str
    statistic: float
    threshold: float
    change: float
    detail: str


class Detector(Part):
    """The sequential detector as applied: method, settings per alert rule, its streams."""

    method: str
    rules: list[dict[str, Any]] = Field(description="Each alert rule's plain settings as the detector took them.")
    streams: list[StreamPath]
    n_observations: int = Field(description="Stored nightly observations replayed.")
    skipped: list[str] = Field(default_factory=list, description="Streams left out tonight (too few events), and why.")


class MonitoringDocument(Part):
    """The ``fairgate monitor run`` result of one night."""

    schema_version: Literal["1.0"]
    kind: Literal["monitoring"]
    run_id: str
    created_at: str
    night: str = Field(description="The night (ISO date) this run monitors.")
    fairgate_version: str
    policy_sha256: str
    model: MonitoredModel
    period: Literal["day", "week"]
    inputs: dict[str, dict[str, Any]] = Field(description="Per input: source, sha256 and row count.")
    stored: list[StoredPeriod]
    baseline: Baseline | None = Field(description="Null when no baseline is available yet (no audit recorded).")
    windows: list[WindowSummary]
    confidence_level: float
    alpha: float = Field(description="Significance level of the window-vs-baseline changes (Holm).")
    detector: Detector | None = Field(description="Null when the policy has no alert rules or no baseline.")
    alerts: list[Alert]
    exit_code: Literal[0, 1] = Field(description="1 when tonight raised an alert.")
    notes: list[str] = Field(default_factory=list)


def monitoring_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the monitoring document, as generated from the models."""
    return MonitoringDocument.model_json_schema()
