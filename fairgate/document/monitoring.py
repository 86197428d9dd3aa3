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
from fairgate.document.labels import EstimateCheck, LabelFree

# 1.1: the headline (windows' verdict, new alerts, open episodes), exit_on, open episodes, under-powered rules,
# each window's verdict and coincidence, each result's deciding interval and status reason
# 1.2: exit_code 4, a night whose windows judged nothing under ci_cd_gate.insufficient: block
# 1.3: nights without labels (labels_given, estimated_windows, label_free, each result's estimated mark) and the
# estimates checked when the labels arrive (estimate_checks with the running coverage)
# 1.4: each window's group sizes (small-cell suppressed), the command line run, the policy's model card section
MONITORING_SCHEMA_VERSION = "1.4"
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
    status_reason: str | None = Field(default=None, description="Why the result has its status (the gate's words).")
    decision_ci_low: float | None = Field(
        default=None,
        description="The interval the status was decided on (the audit gate's: Holm over the window's results on "
        "the violation side, 1 - alpha on the other); the reporting interval ci_low/ci_high can differ.",
    )
    decision_ci_high: float | None = Field(default=None)
    decision_level: float | None = Field(
        default=None, description="One-sided confidence of the deciding interval's violation-side end."
    )
    baseline_value: float | None
    baseline_standard_error: float | None
    change: float | None = Field(description="value - baseline_value.")
    change_standard_error: float | None = Field(description="sqrt(se_window^2 + se_baseline^2): independent samples.")
    z: float | None
    p_value: float | None = Field(description="Two-sided, not adjusted.")
    significant: bool | None = Field(description="Holm-adjusted p-value over the window's changes <= alpha.")
    reason: str | None = Field(default=None, description="Why a value or the change is missing.")
    estimated: bool = Field(
        default=False, description="Estimated from the scores (rows without labels yet), not measured."
    )
    estimate_reasons: dict[str, str] | None = Field(
        default=None, description="Groups left out of an estimate (calibration refused, too few events), and why."
    )


class WindowGroup(Part):
    """One group's size in a window: the people of the window's periods in it (a count 1..k-1 never published)."""

    slicing: list[str]
    group: dict[str, str]
    n: int | None = Field(description="People of the window in the group; null when withheld (small-cell rule).")


class WindowSummary(Part):
    """One window: the stored periods it sums and its results."""

    window: str = Field(description="Its length in days, or since_deployment.")
    start: str | None = Field(description="First day summed (ISO date); null when no period is stored.")
    end: str | None
    periods: int = Field(description="Stored period cubes summed (never re-read rows).")
    rows: int
    verdict: Literal["pass", "fail", "insufficient"] | None = Field(
        default=None,
        description="The policy's gate on the window's results, as an audit of its rows; insufficient: nothing "
        "could be judged.",
    )
    n_judged: int = 0
    n_failed: int = Field(default=0, description="Results failing the gate under its decision rule.")
    n_inconclusive: int = Field(default=0, description="Results the data can neither fail nor pass.")
    same_as: str | None = Field(
        default=None, description="An earlier-listed window summing the same periods: the same numbers, not new."
    )
    results: list[WindowResult]
    groups: list[WindowGroup] = Field(
        default_factory=list,
        description="Each judged slicing's groups and their sizes in the window, after small-cell suppression "
        "(reporting.min_cell_size, complementary over the slicings and the window's total).",
    )
    estimated: bool = Field(
        default=False,
        description="The window's periods without labels yet: label-free results measured, label-dependent ones "
        "estimated from the scores.",
    )


class PeriodCheck(Part):
    """A period estimated before its labels arrived: each estimate against the value its labels give."""

    period_start: str = Field(description="First day of the period (ISO date).")
    estimate_run_id: str = Field(description="The monitoring run whose estimates are checked.")
    results: list[EstimateCheck]
    n_compared: int = Field(ge=0)
    n_covered: int = Field(ge=0, description="Estimates whose interval holds the measured value.")


class Coverage(Part):
    """The running coverage of the estimates' intervals over every check recorded so far."""

    n_compared: int = Field(ge=0)
    n_covered: int = Field(ge=0)
    rate: float | None = Field(description="n_covered / n_compared; null before any comparison.")
    ci_low: float | None = Field(description="Wilson interval at the report's confidence level.")
    ci_high: float | None


class EstimateChecks(Part):
    """Estimates of earlier periods against their labels: tonight's checks and the running coverage."""

    checks: list[PeriodCheck] = Field(description="The periods whose labels arrived tonight.")
    coverage: Coverage
    n_checks: int = Field(ge=0, description="Periods checked so far (the trail's and tonight's).")


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
    episode_since: str | None = Field(default=None, description="The open episode's alert night; null: none open.")


class Episode(Part):
    """A drift episode still open tonight: alerted on ``since``, its change not gone away since."""

    stream: str
    metric: str
    slicing: str
    group: str
    component: str
    direction: Literal["up", "down"]
    since: str = Field(description="The night of the episode's alert (ISO date).")
    change: float = Field(description="The change it alerted on.")
    last_night: str = Field(description="The stream's latest observed night.")
    confirmations: int = Field(description="Later alarms in the same direction (the change persisting).")


class RulePower(Part):
    """An alert rule that cannot be expected to catch its min_change within its horizon at the observed volume."""

    metric: str
    slicing: list[str] | None
    min_change: float
    horizon_nights: int
    stream: str = Field(description="The rule's weakest stream; empty when it watches none (groups too small).")
    threshold: float | None = Field(description="The weakest stream's CUSUM threshold; null without a stream.")
    peak: float = Field(description="The weakest stream's largest statistic so far.")
    predicted_delay: float | None = Field(description="Median periods to detect min_change; null: beyond the horizon.")
    detection_probability: float
    rows_per_period: float = Field(description="The labelled rows a period observed (median of the first periods).")
    rows_needed: int | None = Field(description="Rows a period the rule needs; null: no volume suffices.")
    detail: str


class Headline(Part):
    """The night in one line: the windows' verdict, the detector's news, the episodes still open."""

    windows: Literal["pass", "fail", "insufficient"]
    n_failed: int = Field(description="Failing results over the failing windows.")
    drift: Literal["new_alert", "no_new_alert", "off"]
    n_alerts: int
    ongoing: list[str] = Field(description="The open episodes in words.")
    badge: str = Field(description="The report's badge word.")
    text: str


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

    schema_version: Literal["1.4"]
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
    headline: Headline
    episodes: list[Episode] = Field(default_factory=list, description="Drift episodes still open tonight.")
    underpowered: list[RulePower] = Field(default_factory=list, description="Rules too weak for their min_change.")
    exit_on: Literal["any", "alerts"] = Field(
        default="any", description="What exits 1: any (failing windows or a new alert) or alerts (new alerts only)."
    )
    exit_code: Literal[0, 1, 4] = Field(
        description="1 when a new drift alert fired or (exit_on any, gate enabled) a window fails the policy; 4 "
        "when (exit_on any) no window could judge anything and ci_cd_gate.insufficient is block."
    )
    notes: list[str] = Field(default_factory=list)
    labels_given: bool = Field(default=True, description="False: a night without labels (--labels left out).")
    estimated_windows: list[WindowSummary] = Field(
        default_factory=list, description="The windows over periods without labels yet (estimated), shown apart."
    )
    label_free: LabelFree | None = Field(
        default=None, description="How the estimated windows' label-dependent results were estimated; null: none."
    )
    estimate_checks: EstimateChecks | None = Field(
        default=None, description="Earlier estimates against their labels, once arrived; null: none checked yet."
    )
    command_line: str | None = Field(
        default=None, description="The command that ran this night (the report's reproduce block prints it)."
    )
    model_card: dict[str, Any] | None = Field(
        default=None, description="The policy's model_card section as applied; null when the policy has none."
    )
    min_cell_size: int = Field(default=10, description="The small-cell rule's k (reporting.min_cell_size).")


def monitoring_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the monitoring document, as generated from the models."""
    return MonitoringDocument.model_json_schema()
