"""The policy's smaller sections, each the ``fairness_checker:`` key of the same name.

Intersections, reporting, the CI/CD gate, statistics, overrides, columns, the audit trail and the size limits.
Unknown keys are errors, as everywhere in the policy (:mod:`fairgate.policy.core`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fairgate.policy.base import STRICT
from fairgate.verdicts import InsufficientRule

FailOn = Literal["any", "majority", "critical_only"]
# What an inconclusive result (interval straddling the threshold) means for the gate (docs/concepts/index.md).
Decision = Literal["evidence_of_violation", "evidence_of_compliance", "point_estimate"]
ReportFormat = Literal["json", "html", "pdf", "junit", "model_card"]
JsonContent = Literal["full", "suppressed"]


class _Strict(BaseModel):
    model_config = STRICT


class IntersectionalAnalysis(_Strict):
    """Which attribute pairs and triples are audited, and the group size they need."""

    enabled: bool = True
    """Audit intersections of attributes (pairs, triples) besides each attribute alone."""
    min_group_size: int = Field(default=30, ge=1)
    """The people (effective size) a group needs to be judged; smaller groups are reported, not judged."""
    attribute_pairs: list[tuple[str, str]] | None = None
    """The pairs to audit, e.g. `[[gender, caste_category]]`; default: every pair."""
    include_triples: bool = True
    """Audit triples of attributes too (a triple is audited when at least two of its groups reach `min_group_size`)."""


class Reporting(_Strict):
    """Report formats, interval level, output folder, smallest cell shown, what the JSON holds, trend length."""

    # ``json`` in YAML (a pydantic model cannot have a field called json); written back under that name.
    model_config = ConfigDict(**STRICT, serialize_by_alias=True)

    format: list[ReportFormat] = ["json"]
    """The files written: `json` (always), `junit`, `html`, `pdf`, `model_card` (opt-in, like `junit`)."""
    include_confidence_intervals: bool = True
    """Show confidence intervals in the report."""
    confidence_level: float = Field(default=0.95, gt=0.5, lt=1.0)
    """The level of the reporting intervals (between 0.5 and 1)."""
    output_dir: str = "./fairness_reports/"
    """Where reports are written (the CLI's `--out` overrides it)."""
    min_cell_size: int = Field(default=10, ge=1)
    """Cells with fewer people than this are suppressed in every report table and chart (with the complementary cells
    that would reveal them)."""
    json_content: JsonContent = Field(default="full", alias="json")
    """What the JSON beside the report holds: `full` (every value: for CI, the trail and re-rendering) or `suppressed`
    (the report's suppression applied: hidden groups' numbers null, marked `"suppressed": true`)."""
    trend_runs: int = Field(default=10, ge=2, le=100)
    """The trend section shows each judged result over at most this many runs of the model (the current one included),
    read from the audit trail."""


class CiCdGate(_Strict):
    """The CI/CD gate: whether it is on, which failures fail it, and how an interval near the threshold is read."""

    enabled: bool = True
    """Whether the verdict gates: off, the audit reports its verdict but exits 0 (bad input still exits 2)."""
    fail_on: FailOn = "any"
    """Which failing results fail the audit: `any`, `majority` or `critical_only` (those in `critical_metrics`)."""
    critical_metrics: list[str] = []
    """Metrics whose failure fails the audit under `fail_on: critical_only` (overrides can mark more)."""
    decision: Decision = "evidence_of_violation"
    """What an inconclusive result means: `evidence_of_violation` (default: only a result whose interval lies beyond the
    threshold fails), `evidence_of_compliance` (a result passes only when its interval lies within: inconclusive
    fails) or `point_estimate` (the naive rule by the point estimate, biased towards failing with many groups)."""
    fail_flow_run: bool = False
    """True: a gate failure also ends the Prefect flow run `Failed` (state `PolicyFailed`), for automations that see
    only states. The verdict is in the `fairgate.audit.completed` event and the run's result either way."""
    insufficient: InsufficientRule = "block"
    """An audit in which nothing could be judged has the verdict insufficient, never a pass: `block` (default) exits 4,
    `allow` exits 0 (the verdict stays insufficient)."""


class Statistics(_Strict):
    """Statistical settings: bootstrap size and seed, calibration bins, significance levels, min events, AUC."""

    n_bootstrap: int = Field(default=1000, ge=0, le=100_000)
    """Bootstrap replicates (multinomial draws from the cube) for intervals of metrics other than rates and of gaps
    between groups."""
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    """The seed of every random draw (bootstrap, holdouts, randomised decisions): the same seed gives the same audit."""
    calibration_bins: int = Field(default=10, ge=2, le=1000)
    """Equal-width score bins of the expected calibration error."""
    significance_level: float = Field(default=0.05, gt=0.0, lt=1.0)
    """The level of the per-comparison tests (each group against the reference) after Benjamini-Hochberg adjustment."""
    alpha: float = Field(default=0.05, gt=0.0, lt=0.5)
    """The gate's audit-wide false-fail rate: the chance that a model with no disparity fails, however many results are
    judged (Holm over the results' one-sided tests)."""
    min_events: int = Field(default=10, ge=1)
    """A rate whose denominator (positives for TPR, negatives for FPR, predicted positives for PPV, ...) has fewer
    people than this in a group is not judged for that group."""
    exact_auc: bool = True
    """Compute exact per-group ROC AUC (a pass over the scored rows sorted once); turn it off for very large audits that
    do not judge AUC."""


class Override(_Strict):
    """A change to the base policy for one metric, slicing, group set or use case. ``reason`` is required."""

    reason: str = Field(min_length=3)
    """Why the override exists (required; shown in the report)."""
    metric: str | None = None
    """The metric it applies to; absent: every metric."""
    slicing: list[str] | None = None
    """The slicing it applies to, e.g. `[gender]` or `[gender, caste_category]`; absent: every slicing."""
    use_case: str | None = None
    """The use case it applies to (the policy's `use_case`); absent: every use case."""
    threshold: float | None = None
    """The threshold to use instead of the metric's."""
    critical: bool | None = None
    """Mark the matched results critical (true) or not (false) for `fail_on: critical_only`."""
    exclude_groups: list[dict[str, str]] = []
    """Groups left out of the judgement of the matched results (each a mapping attribute -> value), listed as
    excluded."""

    @field_validator("exclude_groups", mode="before")
    @classmethod
    def _group_values_as_strings(cls, groups: Any) -> Any:
        if isinstance(groups, list):
            return [{str(k): str(v) for k, v in g.items()} if isinstance(g, dict) else g for g in groups]
        return groups

    def matches(self, metric: str, slicing: tuple[str, ...], use_case: str | None) -> bool:
        """Whether the override applies: each of metric, slicing and use case it sets must be equal."""
        return (
            (self.metric is None or self.metric == metric)
            and (self.slicing is None or tuple(self.slicing) == slicing)
            and (self.use_case is None or self.use_case == use_case)
        )


class Columns(_Strict):
    """Names of the input columns after alignment."""

    id: str = "id"
    """The id column the three inputs are joined on."""
    y_true: str = "y_true"
    """The ground truth: 0/1 (binary), a class (multiclass), a number (regression) or a relevance >= 0 (ranking)."""
    y_pred: str = "y_pred"
    """The prediction: 0/1 (binary; derived from the score when absent), a class or a number."""
    score: str = "score"
    """The score, a probability in [0, 1] (binary); needed for AUC, calibration and group thresholds."""
    weight: str | None = None
    """A column of per-row weights (survey, sampling or inverse-propensity weights), read from the predictions, else the
    labels, else the attributes; finite and >= 0."""
    decision_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    """Predictions from a score when `y_pred` is absent: `y_pred = score >= decision_threshold`."""
    list_id: str = "list_id"
    """`task: ranking`: the predictions' list (a query, a job opening, a cohort)."""
    rank: str = "rank"
    """`task: ranking`: each item's position in its list (1 = top)."""


class AuditTrail(_Strict):
    """Where the audit trail (one row per audit) is stored."""

    path: str = "./fairness_reports/audit_trail.duckdb"
    """The audit trail's DuckDB file (the CLI's `--trail` overrides it)."""


class Limits(_Strict):
    """Size limits of an audit (the ``limits:`` section); raise them deliberately.

    They keep a mistaken policy or an id-like column from producing an audit of thousands of groups (hours of
    work and a report nobody can read).
    """

    max_values_per_attribute: int = Field(default=100, ge=1, le=1_000_000)
    """An attribute without declared `values` may hold at most this many distinct values in the data (exit 2 beyond)."""
    max_groups_per_slicing: int = Field(default=5_000, ge=1, le=10_000_000)
    """A slicing (attribute, pair, triple) with more groups than this is skipped, with a warning and an entry in
    `diagnostics.skipped_slicings`."""
    max_list_length: int = Field(default=1_000, ge=1, le=100_000)
    """The most entries of any list in the policy (values, metrics, attribute_pairs, overrides, ...)."""
