"""The comparison document of ``fairgate compare``: typed models of its versioned JSON, and its schema.

Generated, never hand-written: ``tools/write_document_schema.py`` writes ``COMPARISON_SCHEMA_PATH`` beside the
audit document's schema, and a test fails when the shipped file and these models disagree. The flow validates
every document against these models before writing it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from fairgate.document.common import Direction, Part, Slicing

# 2.0: several candidates (``candidates``), the chosen one, the accuracy-fairness plane, ``baseline``.
# 2.1: each candidate's own audit (``audit``, ``passes_policy``, ``promoted_failing``), ``chosen_fails_policy``,
# ``rule.promote_failing_if_better``; gap and ratio changes' intervals from a joint simultaneous family.
# 2.2: the evaluation set's group sizes (small-cell suppressed), the command run, the policy's model card section.
COMPARISON_SCHEMA_VERSION = "2.2"
COMPARISON_SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "comparison.schema.json"

ChangeStatus = Literal["worse", "better", "no_evidence_of_change", "undefined", "insufficient_data"]


class Change(Part):
    """One metric's change, candidate - baseline, on one slicing, with its paired bootstrap intervals."""

    metric: str
    slicing: Slicing
    direction: Direction
    baseline: float | None
    candidate: float | None
    change: float | None = Field(description="candidate - baseline; null where either is undefined.")
    ci_low: float | None = Field(
        description="Interval at statistics.confidence_level: for a gap or ratio, from the joint simultaneous "
        "family of both models' pairwise differences and their changes; else percentile."
    )
    ci_high: float | None
    decision_ci_low: float | None = Field(description="The interval the rule decides on (simultaneous if set).")
    decision_ci_high: float | None
    status: ChangeStatus
    reason: str


class Rule(Part):
    """The policy's ``comparison:`` section as applied."""

    rule: Literal["no_worse_fairness", "no_worse_fairness_or_accuracy"]
    margin: float
    accuracy_margin: float
    simultaneous: bool
    promote_failing_if_better: bool


class ComparisonStatistics(Part):
    """How the intervals were computed."""

    method: str
    n_bootstrap: int
    seed: int
    confidence_level: float
    decision_level: float = Field(description="The deciding intervals' level (Bonferroni over judged changes).")
    n_judged_changes: int = Field(description="Judged changes of every candidate (the Bonferroni count).")
    n_candidates: int
    multiplicity: str = Field(description="How the deciding intervals account for many changes and candidates.")


class NotCompared(Part):
    """A judged metric left out of the comparison, and why."""

    metric: str
    reason: str


class Agreement(Part):
    """How many people the two models decide alike, and how many only one of them favours."""

    same_decision: int
    favourable_only_baseline: int
    favourable_only_candidate: int


class ComparedModel(Part):
    """One compared model: its name and version (when the predictions carry them) and its inputs."""

    name: str | None
    version: str | None
    run: dict[str, Any] | None = Field(default=None, description="The audit run the model was given as, if so.")
    inputs: dict[str, dict[str, Any]] = Field(description="Per input: source, sha256 and row count.")
    alignment: dict[str, Any] = Field(description="The join report of the model's inputs.")


class CandidateAudit(Part):
    """The candidate's own audit against the policy: it is promotable only when the verdict is ``pass``."""

    verdict: str = Field(description="The audit's verdict under the gate's decision rule (pass, fail, ...).")
    failed: list[str] = Field(description="Each failing result: metric (slicing) value [interval], limit.")
    n_judged: int
    source: str = Field(description="What was audited: the model's own rows, or its decisions only.")


class CandidateComparison(Part):
    """One candidate against the baseline: its decision, and each change with its paired intervals."""

    name: str = Field(description="The candidate's name in this comparison (model name, run or file).")
    model: ComparedModel
    decision: Literal["promote", "do_not_promote"]
    reasons: list[str]
    audit: CandidateAudit
    passes_policy: bool = Field(description="Its own audit's verdict is exactly pass.")
    promoted_failing: bool = Field(
        description="Promoted although it fails the policy (comparison.promote_failing_if_better)."
    )
    n_rows: int
    accuracy: Change
    changes: list[Change]
    agreement: Agreement


class PlanePoint(Part):
    """One model on the accuracy-fairness plane."""

    name: str
    role: Literal["baseline", "candidate"]
    x: float = Field(description="The plane's metric at its worst slicing.")
    y: float = Field(description="Overall accuracy.")
    decision: Literal["promote", "do_not_promote"] | None
    pareto: bool = Field(description="No other model compared is at least as fair and accurate, better in one.")


class Plane(Part):
    """The accuracy-fairness plane: x one judged metric at its worst slicing, y accuracy."""

    metric: str
    direction: Direction
    points: list[PlanePoint]


class ComparedGroup(Part):
    """One group's size in the evaluation set (a count 1..k-1 never published)."""

    slicing: list[str]
    group: dict[str, str]
    n: int | None = Field(description="People compared in the group; null when withheld (small-cell rule).")


class ComparisonDocument(Part):
    """The ``fairgate compare`` result: a decision per candidate, the overall decision and the chosen one."""

    schema_version: Literal["2.2"]
    kind: Literal["comparison"]
    run_id: str
    created_at: str
    fairgate_version: str
    policy_sha256: str
    baseline: ComparedModel
    decision: Literal["promote", "do_not_promote"] = Field(description="promote when any candidate may be.")
    exit_code: Literal[0, 1]
    chosen: str | None = Field(
        description="The promotable candidate chosen: a significant accuracy gain, else the first given."
    )
    chosen_fails_policy: bool = Field(description="The chosen candidate fails the policy (promote_failing_if_better).")
    reasons: list[str]
    rule: Rule
    n_rows: int
    favorable_label: Literal[0, 1]
    statistics: ComparisonStatistics
    candidates: list[CandidateComparison]
    not_compared: list[NotCompared]
    plane: Plane | None
    groups: list[ComparedGroup] = Field(
        default_factory=list,
        description="Each compared slicing's groups and their sizes in the evaluation set, after small-cell "
        "suppression (reporting.min_cell_size, complementary over the slicings and the total).",
    )
    command_line: str | None = Field(default=None, description="The command that ran the comparison.")
    model_card: dict[str, Any] | None = Field(
        default=None, description="The policy's model_card section as applied; null when the policy has none."
    )
    min_cell_size: int = Field(default=10, description="The small-cell rule's k (reporting.min_cell_size).")


def comparison_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the comparison document, as generated from the models."""
    return ComparisonDocument.model_json_schema()
