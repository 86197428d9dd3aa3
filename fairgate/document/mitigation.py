"""The ``mitigation`` block of the audit document (schema 1.3): the remedy a failing audit proposes.

Written when the policy's ``mitigation.auto`` is true and the verdict fails (``flows/proposed_mitigation.py``).
The candidate is proposed, never deployed: the document's own ``verdict`` and ``exit_code`` stay the audited
model's. The judged results before and after are measured on the same held-out people (thresholds: the rows
the rules were not fitted on; retraining: the evaluation set), so the two columns differ only by the remedy.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from fairgate.document.common import Direction, Part, Slicing, Status, Verdict


class MeasuredEstimate(Part):
    """One judged result of one model (before or after) on the measured rows."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    status: Status


class MitigationResult(Part):
    """One judged (metric, slicing) before and after the remedy, on the same rows and under the same policy."""

    metric: str
    slicing: Slicing
    threshold: float
    direction: Direction
    critical: bool = False
    before: MeasuredEstimate
    after: MeasuredEstimate


class AccuracyChange(Part):
    """Accuracy (or the objective) before and after, and the change (after - before; negative is the cost)."""

    n: int | None = None
    before: float | None
    after: float | None
    change: float | None


class MitigationAccuracy(Part):
    """The price of the remedy: overall and per group (the groups it was fitted on), on the measured rows."""

    measure: str = Field(description="accuracy, or the objective the remedy maximised (balanced_accuracy).")
    overall: AccuracyChange
    groups: dict[str, AccuracyChange]


class MeasuredRows(Part):
    """Which rows the remedy was fitted on and which it was judged on."""

    kind: Literal["holdout", "evaluation_set", "in_sample", "none"]
    share_measured: float | None = Field(default=None, description="Thresholds: the share of rows held out.")
    seed: int | None = None
    rows_fitted: int
    rows_measured: int
    note: str


class MitigationFocus(Part):
    """The result the remedy targets: the metric it bounds or constrains, on the attributes it groups by."""

    metric: str
    slicing: Slicing


class MitigationBlock(Part):
    """The remedy proposed for a failing audit, its verdict before and after, its price and its files."""

    method: Literal["thresholds", "reweighing", "retrain"]
    run_id: str = Field(description="The mitigation run (its row in the trail's mitigations table).")
    answers: str = Field(description="The audit run this mitigation answers (this document's run_id).")
    status: Literal["proposed", "not_possible"] = Field(
        description="proposed: for a reviewer, never deployed by fairgate; not_possible: the data does not allow it."
    )
    deployed: Literal[False] = Field(description="Always false: the audit's verdict stays the audited model's.")
    note: str = Field(description="What 'proposed' means for this audit's verdict and exit code.")
    summary: str = Field(description="One sentence: what was fitted and what it changes.")
    fitted: dict[str, Any] = Field(
        description="What was fitted: thresholds (rule per group), weights per group x label, or the estimator."
    )
    measured: MeasuredRows
    focus: MitigationFocus | None = Field(default=None, description="The result the remedy targets.")
    verdict_before: Verdict | None = Field(description="The policy's verdict on the measured rows, audited model.")
    verdict_after: Verdict | None = Field(description="The same on the measured rows with the remedy applied.")
    results: list[MitigationResult]
    accuracy: MitigationAccuracy | None
    frontier: dict[str, Any] | None = Field(
        default=None, description="Thresholds: the fairness-accuracy sweep, the audited model and the chosen point."
    )
    files: dict[str, str] = Field(description="Kind -> path of every file the mitigation wrote.")
    sha256: dict[str, str] = Field(default_factory=dict, description="Kind -> sha256 of each file.")
