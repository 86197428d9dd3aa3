"""The report's view model: plain frozen dataclasses that templates and charts read (no logic here).

Numbers in it are already rounded and formatted, and every cell covering fewer than ``min_cell_size`` people
is already suppressed (see :mod:`fairgate.report.suppress`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fairgate.report.individual_model import IndividualView
from fairgate.report.mitigation_model import MitigationView
from fairgate.report.trend_model import TrendView

#: The text of a suppressed cell.
SUPPRESSED = "suppressed"
#: Rows of an intersection's group table in the PDF; the HTML lists every group, the heatmap shows them all.
PDF_ROW_LIMIT = 30


@dataclass(frozen=True)
class Cell:
    """A table cell: formatted value and interval, and the rounded numbers behind them."""

    text: str
    ci: str = ""
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


@dataclass(frozen=True)
class GroupRow:
    """One group of a slicing's table (sizes and metrics hidden when suppressed)."""

    label: str
    group: dict[str, str]
    n: int | None  # None when suppressed
    n_text: str
    suppressed: bool
    sufficient: bool
    is_reference: bool
    cells: list[Cell]
    # TP, FP, TN, FN (favourable = positive) as texts, hidden exactly when the rates are; empty if unknown.
    counts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ResultRow:
    """One judged policy result as the report shows it."""

    metric: str
    metric_label: str
    slicing: list[str]
    slicing_label: str
    value: float | None
    value_text: str
    ci_text: str
    ci_low: float | None
    ci_high: float | None
    threshold: float | None
    threshold_text: str  # "≤ 0.100" / "≥ 0.800"
    status: str  # pass | fail | inconclusive | insufficient_data
    mark: str  # PASS | FAIL | INCONCLUSIVE | NO DATA
    reason: str  # why an inconclusive or insufficient result has its status ("" when judged)
    uncertain: bool
    critical: bool
    gap_text: str  # how far past (or inside) the threshold
    worst_group: str
    best_group: str
    excluded: str
    override_reasons: list[str]
    severity: float  # the gap past the threshold divided by the threshold (the gap itself when the threshold is 0)
    severity_text: str  # "7.05 × the threshold" ("" when not past it)
    judged_note: str = ""  # on an inferred (proxy) attribute: which estimate was judged, the measured one beside it
    estimated: bool = False  # estimated from the scores before the labels arrived (fairgate/engine/label_free.py)
    counted: bool = (
        True  # counts in the verdict (False: an estimated result under labels.estimated_results report_only)
    )
    # The disparity the result would have caught with 80% power, in words ("0.159 or more"; "" without one).
    detectable_text: str = ""
    # A failure whose worst-off group's rates are withheld: why, in words ("" otherwise).
    withheld_why: str = ""


@dataclass(frozen=True)
class SlicingSection:
    """The section of one slicing: its results and its group table."""

    key: str
    anchor: str
    attributes: list[str]
    intersection: bool
    results: list[ResultRow]
    metric_names: list[str]
    metric_labels: list[str]
    groups: list[GroupRow]
    n_suppressed: int
    n_insufficient: int
    failed: bool
    # The groups the PDF lists when the intersection is large (fairgate.report.selection): every group named in
    # a failure and every large group, the rest of PDF_ROW_LIMIT furthest from the median on the judged metrics,
    # furthest first (all groups, largest first, when few).
    highlight: list[GroupRow]
    count_labels: list[str] = field(default_factory=list)  # TP, FP, TN, FN when the groups carry counts
    counts_note: str = ""  # what the counts are (people, or effective sizes under weights)


@dataclass(frozen=True)
class Curve:
    """One group's curve, rounded for a chart."""

    label: str
    x: list[float]
    y: list[float]
    n: int


@dataclass(frozen=True)
class CurveSet:
    """The curves of one slicing, with how many suppressed groups were left out."""

    key: str
    curves: list[Curve]
    n_hidden: int
    # Axis titles in the policy's outcome words ("" for the chart's generic titles).
    x_label: str = ""
    y_label: str = ""

    # Groups drawn with too few people per bin to form a curve, and groups left out, each with its reason.
    sparse: list[str] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class GlossaryRow:
    """One glossary entry: a term, its formula, and what it means in the policy's outcome words."""

    term: str
    formula: str
    meaning: str


#: The glossary's word for a withheld size: one definition for every report type. It does not say "1 to k − 1":
#: a size is also withheld when it would reveal a small one, and the mark must not tell the two apart.
SUPPRESSED_ROW = GlossaryRow(
    SUPPRESSED.capitalize(),
    "withheld",
    "a group size withheld by the small-cell rule: a small count, or one from which a small count would follow",
)


@dataclass(frozen=True)
class Recommendation:
    """One mitigation for one failed (metric, slicing)."""

    metric_label: str
    slicing_label: str
    title: str
    stage: str
    summary: str
    reason: str
    how: str
    critical: bool
    prioritised: bool


@dataclass(frozen=True)
class Action:
    """A first-page action: one mitigation for one metric, over every slicing where that metric failed."""

    title: str
    stage: str
    metric_label: str
    slicings: list[str]
    summary: str
    reason: str  # the full reason for the most severe of its failures
    how: str
    critical: bool
    prioritised: bool


@dataclass(frozen=True)
class ScoreCell:
    """One cell of the score card."""

    text: str
    status: str  # a result status, or "none" where the metric is not judged on the slicing
    uncertain: bool
    reason: str = ""


@dataclass(frozen=True)
class ScoreRow:
    """One slicing's row of the score card."""

    slicing_label: str
    anchor: str
    cells: list[ScoreCell]


@dataclass(frozen=True)
class DetectableLine:
    """Page 1: what the passes of one slicing could have detected (80% power)."""

    slicing_label: str
    anchor: str
    results: list[ResultRow]  # passes carrying a detectable disparity, in policy order


@dataclass(frozen=True)
class ScoreCard:
    """Every judged result at a glance: one row per slicing, one column per policy metric."""

    metric_labels: list[str]
    thresholds: list[str]
    critical: list[bool]
    rows: list[ScoreRow]


@dataclass(frozen=True)
class KeyValue:
    """A key/value row of a facts table."""

    key: str
    value: str


@dataclass(frozen=True)
class CheckRow:
    """One data-validation check (Great Expectations) as the pipeline recorded it."""

    input: str
    column: str
    expectation: str
    severity: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class AttenuationRow:
    """One proxy-weighted disparity: as measured, corrected for misclassification, and the attenuation."""

    metric: str
    naive: str
    corrected: str
    factor: str
    note: str


@dataclass(frozen=True)
class NoteRow:
    """A note under a slicing label (empty label: a note for the whole section)."""

    slicing_label: str
    text: str


@dataclass(frozen=True)
class WorstRow:
    """The worst-off subgroup on one rate: a row of the compact worst-off table."""

    slicing_label: str
    group: str
    adverse: str  # "highest" or "lowest": which end of the rate is worse
    rate: str  # the rate's short name with what it counts in the policy's words
    value_text: str
    ci_text: str  # "" when the engine gave no interval
    n_text: str
    # Further (adverse, rate) pairs whose worst-off subgroup is the same withheld group: the table's one row for them
    # (fairgate.report.notes.worst_table).
    also: tuple[tuple[str, str], ...] = ()

    @property
    def text(self) -> str:
        """The row as one sentence (the email and plain-text readers)."""
        ci = f" [{self.ci_text}]" if self.ci_text else ""
        return f"{self.group}: {self.adverse} {self.rate} = {self.value_text}{ci} (n = {self.n_text})"


@dataclass(frozen=True)
class Heatmap:
    """The worst failing metric's base value over an intersection: rows = first attribute, columns = rest."""

    key: str
    metric_label: str
    base_metric: str
    row_labels: list[str]
    col_labels: list[str]
    values: list[list[float | None]]  # None: suppressed or undefined
    suppressed: list[list[bool]]
    excluded: list[list[bool]] = field(default_factory=list)  # below the minimum group size: not judged
    component_note: str = ""  # why this rate is shown (the component the failure runs through)


@dataclass(frozen=True)
class Breakdown:
    """Group sizes and shares of one attribute (None where suppressed)."""

    attribute: str
    labels: list[str]
    counts: list[int | None]  # None: suppressed
    shares: list[float | None]


@dataclass(frozen=True)
class ModelCardView:
    """The report's model card block: the owner's fields given, the ones missing, and the audit's facts."""

    stated: list[KeyValue]
    missing: list[str]  # labels of the fields the policy leaves out ("Owner", "Intended use", ...)
    missing_note: str  # one sentence naming them, "" when every field is given
    facts: list[KeyValue]
    facts_line: str = ""  # the facts in one line for the page ("evaluation window ... · 7,214 rows · ...")
    facts_source: str = "the audit"  # whose facts they are: "the audit", "this monitoring run", "this comparison"


@dataclass(frozen=True)
class SizeRow:
    """One group's size in each of the frame's size columns, and whether a failure or alert names it."""

    slicing: str
    group: str
    sizes: list[str]  # a count, "suppressed" where withheld, "–" where the group is absent from the column
    named: bool = False


@dataclass(frozen=True)
class ReportFrame:
    """The parts every report type shows around its own pages (fairgate/report/frame.py builds their words).

    Page 1: the decision and why, what to do, what was not judged, the groups' sizes under the small-cell rule
    and the model card; the closing pages: the command that ran it, the glossary in words and the sign-off of
    the run. Audit, monitoring and comparison reports each build one from their own document; the templates
    show it through ``reports/partials/frame.html.j2``.
    """

    decision: str  # the badge: PASS, FAIL, PROMOTE, ...
    why: list[str]  # the sentences that say why
    what_to_do: str
    not_judged: str
    size_columns: list[str]  # the size table's columns: the windows, or "people"
    size_rows: list[SizeRow]
    size_note: str  # the small-cell rule when it withholds a size here, "" otherwise
    model_card: ModelCardView | None
    command: str  # the command that ran it, one option a line ("" when not recorded)
    glossary: list[GlossaryRow]
    run_id: str  # the run the sign-off names


@dataclass(frozen=True)
class ReportView:
    """Everything the report templates read, already formatted and suppressed."""

    title: str
    model_name: str
    model_version: str
    run_id: str
    created_at: str
    fairgate_version: str
    verdict: str  # pass | fail
    verdict_text: str
    verdict_sentence: str
    fail_on: str
    n_failed: int
    n_results: int
    n_uncertain: int
    n_rows_text: str
    data_window: str
    favorable_label: str
    favorable_note: str
    confidence_level_text: str
    min_cell_size: int
    use_case: str
    failures: list[ResultRow]
    headline_failures: list[ResultRow]  # the most severe failure of each metric
    scorecard: ScoreCard
    actions: list[Action]
    watch: list[ResultRow]  # passes whose CI crosses the threshold
    undecided: list[ResultRow]  # inconclusive or insufficient data: neither pass nor fail
    detectable: list[DetectableLine]  # per slicing: what its passes could have missed
    detectable_note: str  # what those figures mean under the policy's decision rule
    recommendations: list[Recommendation]
    use_case_note: str
    priority_metrics: list[str]
    priority_unjudged: list[str]  # of the priority metrics, those the policy does not judge
    sections: list[SlicingSection]
    base_rates: list[KeyValue]
    impossibility: list[NoteRow]
    simpson: list[NoteRow]
    worst_subgroups: list[WorstRow]  # one per rate
    insufficient: list[KeyValue]
    individual_fairness: list[KeyValue]
    alignment: list[KeyValue]
    validation: list[KeyValue]
    validation_checks: list[CheckRow]
    validation_warnings: list[str]
    proxy: list[KeyValue]
    proxy_attenuation_statement: str
    proxy_attenuation: list[AttenuationRow]
    inputs: list[KeyValue]
    trail: list[KeyValue]
    policy_text: str
    roc: list[CurveSet]
    calibration: list[CurveSet]
    heatmaps: list[Heatmap]
    breakdowns: list[Breakdown]
    n_suppressed_total: int
    # The policy's outcome words and every text derived from them (fairgate.policy.outcomes).
    outcome_words: list[KeyValue]  # the four phrases as the policy names them
    outcomes_named: bool  # False: the policy named none, the defaults are shown
    rate_phrases: dict[str, str]  # group rate -> what it counts ("flagged high-risk among those who ...")
    rate_abbreviations: dict[str, str]  # group rate -> its short name in the tables ("FNR")
    glossary_cells: list[GlossaryRow]
    glossary_rates: list[GlossaryRow]
    glossary_metrics: list[GlossaryRow]
    reference_note: str
    output_dir: str  # where this run wrote its files ("" when not recorded)
    few_events: list[KeyValue]  # results not judged: a group's rate rests on fewer than min_events events
    pdf_row_limit: int  # how many of a large intersection's furthest-from-median groups the PDF lists
    validation_line: str = ""  # "16/16 checks passed" (the failures are listed beneath)
    validation_failures: list[CheckRow] = field(default_factory=list)
    reproduce_command: str = ""
    reproduce_recorded: bool = False  # the command actually run (document command_line), not a reconstruction
    reproduce: list[KeyValue] = field(default_factory=list)
    # The remedy a failing audit proposes (policy mitigation.auto); None when the document has none.
    mitigation: MitigationView | None = None
    chart_captions: dict[str, str] = field(default_factory=dict)
    curves_notes: list[str] = field(default_factory=list)  # the PDF's curves block, under both rows (figures)
    extra: dict[str, Any] = field(default_factory=dict)
    json_note: str = ""  # which JSON was written beside the report (fairgate.report.published.json_note)
    suppression_note: str = ""  # the small-cell rule, stated once (fairgate.report.suppress.Suppression.note)
    trend: TrendView | None = None  # the model's earlier runs from the audit trail (fairgate.report.trend)
    # The kind of model (document ``task``); every kind but binary has its own pages, built by the kind's view
    # model (fairgate/report/<kind>.py) and shown by reports/partials/<kind>.html.j2.
    task: str = "binary"
    # The outcome levels' heading and "base rates differ" in the kind's words (kinds registry, outcome_level).
    levels_heading: str = "Base rates and what they imply"
    levels_differ: str = "base rates differ"
    kind_pages: Any = None
    # Said above a non-binary kind's pages when rows carry weights: their counts are weighted sums, n is Kish's.
    kind_weighted_note: str = ""
    # Consistency and counterfactual flips (a features input); None without (fairgate.report.individual).
    individual: IndividualView | None = None
    # What every report type shows (fairgate/report/frame.py): the decision in its words, the model card (the
    # policy's model_card fields, the missing ones, the audit's facts), the command and the run signed off.
    frame: ReportFrame | None = None
    # Estimated results (no labels) and the label-bias finding (external labels); None without (report/labels.py).
    labels: Any = None
    # The worst-off table's rows: one per rate, but one for all the rates of a withheld group (notes.worst_table).
    worst_table: list[WorstRow] = field(default_factory=list)
