"""The first page: verdict sentence, headline failures, the score card and the actions to take."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fairgate.engine.multiclass.catalogue import adverse_label, binary_name
from fairgate.policy.outcomes import Outcomes
from fairgate.report.format import policy_metric_label, slicing_key
from fairgate.report.model import (
    Action,
    DetectableLine,
    Recommendation,
    ResultRow,
    ScoreCard,
    ScoreCell,
    ScoreRow,
    SlicingSection,
)
from fairgate.verdicts import insufficient_sentence, passed


def verdict_sentence(
    verdict: str,
    n_failed: int,
    n_results: int,
    fail_on: str,
    failures: list[ResultRow],
    insufficient: str | None = None,
) -> str:
    """One sentence that says what the verdict means and, on a fail, the most severe failure.

    ``insufficient`` (nothing could be judged): what that means and whether the policy's
    ``ci_cd_gate.insufficient`` (``insufficient``, default block) lets it block.

    The most severe failure is the one furthest past its threshold relative to the threshold (the gap divided
    by the threshold), so differences and ratios with different thresholds compare on one scale.
    """
    if verdict == "insufficient":
        return insufficient_sentence(insufficient or "block")
    if passed(verdict):
        extra = f" {n_failed} result(s) failed but the gate (fail_on: {fail_on}) allows it." if n_failed else ""
        return f"All gating checks passed: {n_results - n_failed} of {n_results} results within policy.{extra}"
    worst = most_severe(failures)
    head = f"{n_failed} of {n_results} fairness results are outside the policy (fail_on: {fail_on})."
    if worst:
        head += (
            f" Most severe (furthest past its threshold, relative to the threshold): {worst.metric_label} on "
            f"{worst.slicing_label} = {worst.value_text}, {worst.gap_text}"
            + (f" ({worst.severity_text})." if worst.severity_text else ".")
        )
    return head + " Do not deploy until the failures below are mitigated or explicitly overridden."


def most_severe(failures: list[ResultRow]) -> ResultRow | None:
    """The failure furthest past its threshold relative to the threshold (None when nothing failed)."""
    return max(failures, key=lambda r: r.severity, default=None)


def headline(failures: list[ResultRow]) -> list[ResultRow]:
    """Every failing metric once, at its most severe slicing, most severe first (severity relative to threshold)."""
    worst: dict[str, ResultRow] = {}
    for r in failures:
        if r.metric not in worst or r.severity > worst[r.metric].severity:
            worst[r.metric] = r
    return sorted(worst.values(), key=lambda r: -r.severity)


def scorecard(results: list[ResultRow], sections: list[SlicingSection]) -> ScoreCard:
    """Every result at a glance: one row per slicing (fewest attributes first), one column per metric."""
    metrics = list(dict.fromkeys(r.metric for r in results))
    slicings = sorted(dict.fromkeys(tuple(r.slicing) for r in results), key=len)
    by_key = {(r.metric, tuple(r.slicing)): r for r in results}
    anchors = {tuple(s.attributes): s.anchor for s in sections}
    rows = [
        ScoreRow(
            slicing_key(slicing), anchors.get(slicing, ""), [_score_cell(by_key.get((m, slicing))) for m in metrics]
        )
        for slicing in slicings
    ]
    first = {m: next(r for r in results if r.metric == m) for m in metrics}
    return ScoreCard(
        [first[m].metric_label for m in metrics],
        [first[m].threshold_text for m in metrics],
        [any(r.critical for r in results if r.metric == m) for m in metrics],
        rows,
    )


def detectable(results: list[ResultRow], sections: list[SlicingSection]) -> list[DetectableLine]:
    """Per slicing, in the score card's order: what its passes could have detected.

    A pass says the disparity is within the threshold; how large a true disparity it would have caught (80%
    power, at the audit's Holm level) says how much that pass is worth. Slicings without a pass carrying the
    figure are left out (an inconclusive result's figure is said beside it in the list of results not judged).
    """
    shown = [r for r in results if r.status == "pass" and r.detectable_text]
    slicings = sorted(dict.fromkeys(tuple(r.slicing) for r in shown), key=len)
    anchors = {tuple(s.attributes): s.anchor for s in sections}
    return [
        DetectableLine(
            slicing_key(slicing), anchors.get(slicing, ""), [r for r in shown if tuple(r.slicing) == slicing]
        )
        for slicing in slicings
    ]


def detectable_note(decision: str) -> str:
    """What the figures of :func:`detectable` mean under the policy's ``ci_cd_gate.decision``.

    Under the point-estimate rule a pass is a point within the threshold, so a smaller violation can pass; under
    the interval rules a pass needs its whole interval within the threshold, so a violation below the figure more
    likely comes out inconclusive than passes or fails.
    """
    figure = "with 80% power the audit would have failed a true disparity of the size shown"
    if decision == "point_estimate":
        return f"{figure}; a pass here is by the point estimate, so a smaller violation could pass unseen."
    return (
        f"{figure}. A pass rests on its interval lying within the threshold; a true violation smaller than the "
        "figure would more likely come out inconclusive than fail."
    )


def _score_cell(found: ResultRow | None) -> ScoreCell:
    if found is None:
        return ScoreCell("", "none", False)
    return ScoreCell(found.value_text, found.status, found.uncertain, found.reason)


def recommendation_rows(advice: Sequence[Mapping[str, Any]], words: Outcomes | None = None) -> list[Recommendation]:
    """The mitigation advice as report rows (the use-case priority note is shown elsewhere)."""
    return [
        Recommendation(
            metric_label=_metric_label(r["metric"], words or Outcomes()),
            slicing_label=slicing_key(r.get("slicing", [])),
            title=r["title"],
            stage=r.get("stage", ""),
            summary=r.get("summary") or r["reason"],
            reason=r["reason"],
            how=r.get("how", ""),
            critical=bool(r.get("critical")),
            prioritised=bool(r.get("prioritised_for_use_case")),
        )
        for r in advice
        if r.get("kind", "mitigation") == "mitigation"
    ]


def _metric_label(metric: str, words: Outcomes) -> str:
    """A recommended metric's label; a multiclass ``adverse.<metric>`` rule as its results table names it."""
    inner = binary_name(metric)
    return policy_metric_label(metric, words) if inner is None else adverse_label(policy_metric_label(inner, words))


def actions(recommendations: list[Recommendation]) -> list[Action]:
    """One action per (metric, mitigation), over every slicing where that metric failed."""
    grouped: dict[tuple[str, str], list[Recommendation]] = {}
    for rec in recommendations:
        grouped.setdefault((rec.metric_label, rec.title), []).append(rec)
    return [
        Action(
            title=recs[0].title,
            stage=recs[0].stage,
            metric_label=recs[0].metric_label,
            slicings=[r.slicing_label for r in recs],
            summary=recs[0].summary,
            reason=recs[0].reason,
            how=recs[0].how,
            critical=any(r.critical for r in recs),
            prioritised=recs[0].prioritised,
        )
        for recs in grouped.values()
    ]
