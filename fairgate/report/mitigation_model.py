"""The "Proposed mitigation" section's view dataclasses (built by :mod:`fairgate.report.mitigation`; no logic)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fact:
    """One labelled fact of the section (what was fitted, a file); the templates' key/value tables read it."""

    key: str
    value: str


@dataclass(frozen=True)
class MitigationResultRow:
    """One judged (metric, slicing) before and after the remedy."""

    metric_label: str
    slicing_label: str
    threshold_text: str
    critical: bool
    before_text: str
    before_ci: str
    before_status: str  # pass | fail | inconclusive | insufficient_data
    before_mark: str  # PASS, FAIL, INCONCLUSIVE, NO DATA
    after_text: str
    after_ci: str
    after_status: str
    after_mark: str
    fixed: bool  # failed before, passes after
    broken: bool  # passed before, fails after
    focus: bool  # the result the remedy targets
    changed: bool  # its status differs before and after


@dataclass(frozen=True)
class AccuracyRow:
    """The price for one group (or overall): accuracy before, after, and the change in points."""

    label: str
    n_text: str
    before_text: str
    after_text: str
    change_text: str
    suppressed: bool


@dataclass(frozen=True)
class MitigationView:
    """Everything the section shows, formatted."""

    method: str
    method_title: str
    run_id: str  # the mitigation run
    answers: str  # the audit run it answers
    status: str  # proposed | not_possible
    summary: str
    not_deployed: str
    measured_note: str
    verdict_before: str
    verdict_after: str
    fitted_facts: list[Fact]
    fitted_headers: list[str]
    fitted_rows: list[list[str]]
    n_fitted_hidden: int
    results: list[MitigationResultRow]  # the targeted result first, then those whose status changed
    n_pdf_results: int  # the PDF lists the first n (targeted or changed); the HTML and JSON all
    headline: str  # the targeted result before and after, and what an inconclusive "after" means
    lawfulness: str  # the caveat beside group-specific rules ("" for a remedy without them)
    n_fixed: int
    n_broken: int
    measure_label: str
    overall: AccuracyRow | None
    groups: list[AccuracyRow]
    files: list[Fact]
    frontier_caption: str
    has_frontier: bool
    frontier: dict[str, Any] | None  # the sweep as the block holds it, for the chart (tasks/render/frontier_chart.py)
