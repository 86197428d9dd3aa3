"""The report's "Proposed mitigation" section: the view of the document's ``mitigation`` block.

The block (``fairgate.document.mitigation.MitigationBlock``) holds a failing audit's proposed remedy: what was
fitted, the judged results before and after on the same measured rows, the price in accuracy and the files.
Here: labels, rounding, and suppression of per-group rows smaller than the report's ``min_cell_size``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairgate.document.mitigation import MitigationBlock
from fairgate.engine.metric_labels import metric_words
from fairgate.mitigation.advice import GROUP_SPECIFIC_METHODS, LAWFULNESS_CAVEAT
from fairgate.policy.outcomes import Outcomes
from fairgate.report.format import (
    STATUS_MARKS,
    fmt,
    fmt_count,
    fmt_signed,
    group_label,
    interval_text,
    metric_label,
    policy_metric_label,
    slicing_key,
)
from fairgate.report.mitigation_model import AccuracyRow, Fact, MitigationResultRow, MitigationView
from fairgate.report.model import SUPPRESSED
from fairgate.report.suppress import count_text

METHOD_TITLES = {
    "thresholds": "Group thresholds (post-processing, Hardt, Price & Srebro 2016)",
    "retrain": "Constrained retraining (Fairlearn ExponentiatedGradient)",
    "reweighing": "Reweighing of the training data (Kamiran & Calders 2012)",
}
#: Groups of the fitted table shown in the PDF (the JSON and the thresholds file have all).
MAX_FITTED_ROWS = 40


def mitigation_view(
    block: MitigationBlock | Mapping[str, Any] | None, words: Outcomes, min_cell_size: int
) -> MitigationView | None:
    """The section's view, or None when the document carries no proposed mitigation."""
    if block is None:
        return None
    block = block if isinstance(block, MitigationBlock) else MitigationBlock.model_validate(block)
    headers, rows = _fitted_table(block, min_cell_size)
    focus = (block.focus.metric, tuple(block.focus.slicing)) if block.focus else None
    results = [_result_row(r, words, (r.metric, tuple(r.slicing)) == focus) for r in block.results]
    results.sort(key=lambda r: (not r.focus, not r.changed))
    accuracy = block.accuracy
    return MitigationView(
        method=block.method,
        method_title=METHOD_TITLES[block.method],
        run_id=block.run_id,
        answers=block.answers,
        status=block.status,
        summary=block.summary,
        not_deployed=block.note,
        measured_note=block.measured.note,
        verdict_before=(block.verdict_before or "–").upper(),
        verdict_after=(block.verdict_after or "–").upper(),
        fitted_facts=_fitted_facts(block, min_cell_size),
        fitted_headers=headers,
        fitted_rows=rows[:MAX_FITTED_ROWS],
        n_fitted_hidden=max(0, len(rows) - MAX_FITTED_ROWS),
        results=results,
        n_pdf_results=sum(r.focus or r.changed for r in results),
        headline=_headline(results, block.measured.rows_measured),
        lawfulness=LAWFULNESS_CAVEAT if block.method in GROUP_SPECIFIC_METHODS else "",
        n_fixed=sum(r.fixed for r in results),
        n_broken=sum(r.broken for r in results),
        measure_label=(accuracy.measure if accuracy else "accuracy").replace("_", " "),
        overall=None if accuracy is None else _accuracy_row("all measured people", accuracy.overall, 0),
        groups=[]
        if accuracy is None
        else [_accuracy_row(name, change, min_cell_size) for name, change in accuracy.groups.items()],
        files=[Fact(kind, f"{path} (sha256 {block.sha256.get(kind, '')[:12]})") for kind, path in block.files.items()],
        frontier_caption=_frontier_caption(block.frontier),
        has_frontier=block.frontier is not None,
        frontier=block.frontier,
    )


def _headline(results: list[MitigationResultRow], measured: int) -> str:
    """The targeted result before and after; an inconclusive "after" explained (power, not the remedy)."""
    focus = next((r for r in results if r.focus), None)
    if focus is None:
        return ""
    text = (
        f"{focus.metric_label} on {focus.slicing_label}: {focus.before_text} {focus.before_ci} {focus.before_mark} "
        f"→ {focus.after_text} {focus.after_ci} {focus.after_mark} (threshold {focus.threshold_text})."
    )
    if focus.after_status == "inconclusive":
        text += (
            f" Inconclusive: on the {measured:,} measured people the interval is wider than the room under the "
            "threshold, so the remedy cannot yet be shown to pass; judge it on more people before adopting it."
        )
    return text


def _result_row(result: Any, words: Outcomes, focus: bool) -> MitigationResultRow:
    before, after = result.before, result.after
    return MitigationResultRow(
        metric_label=policy_metric_label(result.metric, words),
        slicing_label=slicing_key(result.slicing),
        threshold_text=fmt(result.threshold),
        critical=result.critical,
        before_text=fmt(before.value),
        before_ci=_interval(before.ci_low, before.ci_high),
        before_status=before.status,
        before_mark=STATUS_MARKS[before.status],
        after_text=fmt(after.value),
        after_ci=_interval(after.ci_low, after.ci_high),
        after_status=after.status,
        after_mark=STATUS_MARKS[after.status],
        fixed=before.status == "fail" and after.status == "pass",
        broken=before.status == "pass" and after.status == "fail",
        focus=focus,
        changed=before.status != after.status,
    )


def _interval(low: float | None, high: float | None) -> str:
    return f"[{interval_text(low, high)}]" if interval_text(low, high) else "–"


def _points(change: float | None) -> str:
    return "–" if change is None else f"{fmt_signed(100 * change, 1)} pts"


def _accuracy_row(label: str, change: Any, min_cell_size: int) -> AccuracyRow:
    hidden = change.n is not None and change.n < min_cell_size
    if hidden:
        return AccuracyRow(label, SUPPRESSED, SUPPRESSED, SUPPRESSED, "–", True)  # one label, no "< k"
    return AccuracyRow(
        label,
        fmt_count(change.n),
        fmt(change.before),
        fmt(change.after),
        _points(change.change),
        False,
    )


def _fitted_facts(block: MitigationBlock, min_cell_size: int) -> list[Fact]:
    fitted = block.fitted
    facts: list[Fact] = []
    if block.method == "thresholds" and fitted:
        facts += [
            Fact("metric bounded", f"{metric_label(fitted['metric'])} ({fitted['constraint'].replace('_', ' ')})"),
            Fact("tolerance", f"{fitted['tolerance']:g}"),
            Fact("objective", str(fitted["objective"])),
            Fact("groups", " × ".join(fitted["attributes"])),
            Fact("scores", str(fitted["score_scale"])),
        ]
        left = ", ".join(  # their sizes under the one small-count rule: 1 to k-1 never printed
            f"{group_label(g['group'])} (n = {count_text(g['n'], min_cell_size)})"
            for g in fitted.get("unchanged_groups", [])
        )
        if left:
            facts.append(Fact("kept as audited (under min_group_size)", left))
    elif block.method == "retrain" and fitted:
        constraint = fitted["constraint"]
        bound = constraint["difference_bound"] if constraint["ratio_bound"] is None else constraint["ratio_bound"]
        facts += [
            Fact("estimator", str(fitted["estimator"])),
            Fact(
                "constraint",
                f"{constraint['family'].replace('_', ' ')} (from {metric_words(constraint['metric'])}, bound {bound})",
            ),
            Fact("trained on", f"{fitted['training']} ({fmt_count(fitted['rows_trained'])} rows)"),
            Fact("features", ", ".join(fitted["features"])),
        ]
    elif block.method == "reweighing" and fitted:
        facts += [
            Fact("training data", str(fitted["training"])),
            Fact("groups", " × ".join(fitted["attributes"])),
            Fact("label", str(fitted["label"])),
        ]
    return facts


def rule_text(rule: Mapping[str, Any]) -> str:
    """A group's rule in words: one threshold, or a random choice between two (or more)."""
    if "threshold" in rule:
        return f"favourable above {_threshold(rule['threshold'])}"
    if "t_low" in rule:
        return (
            f"favourable above {_threshold(rule['t_high'])} with probability {fmt(rule['p_high'])}, "
            f"else above {_threshold(rule['t_low'])}"
        )
    parts = [f"{_threshold(p['threshold'])} (p {fmt(p['probability'])})" for p in rule["mixture"]]
    return "favourable above a threshold drawn from " + ", ".join(parts)


def _threshold(value: Any) -> str:
    if value == "inf":
        return "nothing (never favourable)"
    if value == "-inf":
        return "any score (always favourable)"
    return fmt(float(value), 4)


def _fitted_table(block: MitigationBlock, min_cell_size: int) -> tuple[list[str], list[list[str]]]:
    fitted = block.fitted
    if block.method == "thresholds" and fitted:
        return ["Group", "Rule on the favourable score"], [
            [name, rule_text(rule)] for name, rule in fitted["groups"].items()
        ]
    if block.method == "reweighing" and fitted:
        label = fitted["label"]
        rows = []
        for cell in fitted["cells"]:
            group = group_label({a: cell[a] for a in fitted["attributes"]})
            small = cell["rows"] < min_cell_size  # an empty cell has no weight either
            rows.append(
                [
                    group,
                    str(cell[label]),
                    count_text(cell["rows"], min_cell_size),
                    SUPPRESSED if small else fmt(cell["weight"], 4),  # a weight with the margins gives the count
                ]
            )
        return ["Group", label, "Training rows", "Weight"], rows
    return [], []


def _frontier_caption(frontier: Mapping[str, Any] | None) -> str:
    if frontier is None:
        return ""
    current, chosen = frontier["current"], frontier["chosen"]
    return (
        f"Best accuracy at each allowed {frontier['metric'].replace('_', ' ')} (tolerance swept from 0 to the audited "
        f"model's gap, on the rows the thresholds were fitted on). The audited model: gap {fmt(current['gap'])}, "
        f"accuracy {fmt(current['accuracy'])}; the chosen thresholds (tolerance {chosen['tolerance']:g}): gap "
        f"{fmt(chosen['gap'])}, accuracy {fmt(chosen['accuracy'])}. The dotted line is the policy threshold "
        f"{frontier['threshold']:g}."
    )
