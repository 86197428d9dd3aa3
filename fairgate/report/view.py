"""The report's view model: plain dataclasses built from the audit result document.

Templates and charts read only this: numbers are already rounded and formatted, and every cell covering fewer
than ``min_cell_size`` people is suppressed here, once, so no table or chart can leak it. Pure: no I/O.

Suppression follows statistical agencies' practice: a group under the minimum is primary-suppressed (its size
and every metric hidden); if exactly one group of a slicing is suppressed, the next smallest is hidden too
(secondary suppression), so the hidden size cannot be recovered as total minus the others.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fairgate.mitigation.advice import priority_note, recommend

#: Group metrics shown in the by-group tables, in reading order.
TABLE_METRICS: tuple[str, ...] = (
    "selection_rate",
    "base_rate",
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "positive_predictive_value",
    "accuracy",
    "roc_auc",
    "expected_calibration_error",
)
METRIC_LABELS: dict[str, str] = {
    "selection_rate": "Selection rate",
    "base_rate": "Base rate",
    "true_positive_rate": "TPR",
    "false_positive_rate": "FPR",
    "false_negative_rate": "FNR",
    "true_negative_rate": "TNR",
    "positive_predictive_value": "PPV",
    "negative_predictive_value": "NPV",
    "false_discovery_rate": "FDR",
    "false_omission_rate": "FOR",
    "accuracy": "Accuracy",
    "roc_auc": "AUC",
    "expected_calibration_error": "ECE",
    "demographic_parity_difference": "Demographic parity difference",
    "demographic_parity_ratio": "Demographic parity ratio",
    "disparate_impact_ratio": "Disparate impact ratio",
    "equal_opportunity_difference": "Equal opportunity difference",
    "equal_opportunity_ratio": "Equal opportunity ratio",
    "equalized_odds_difference": "Equalized odds difference",
    "equalized_odds_ratio": "Equalized odds ratio",
    "predictive_parity_difference": "Predictive parity difference",
    "calibration_difference": "Calibration difference",
    "auc_difference": "AUC difference",
    "theil_index": "Theil index",
    "generalized_entropy_index": "Generalized entropy index",
}
SUPPRESSED = "suppressed"
#: Rows of an intersection's group table in the PDF; the HTML lists every group, the heatmap shows them all.
PDF_ROW_LIMIT = 30


def metric_label(name: str) -> str:
    """Human name of a metric.

    >>> metric_label("false_positive_rate_difference")
    'False positive rate difference'
    """
    return METRIC_LABELS.get(name) or name.replace("_", " ").capitalize()


def base_metrics(name: str) -> tuple[str, ...]:
    """The group metrics a policy metric summarises (``equalized_odds_difference`` -> TPR and FPR)."""
    try:
        from fairgate.engine.metrics import policy_metric

        return tuple(policy_metric(name).bases)
    except (ImportError, ValueError, AttributeError):
        for suffix in ("_difference", "_ratio"):
            if name.endswith(suffix):
                return (name.removesuffix(suffix),)
        return ()


def fmt(value: float | None, digits: int = 3) -> str:
    """A number for a table: fixed digits, an en dash when undefined.

    >>> fmt(0.123456), fmt(None), fmt(float("nan"))
    ('0.123', '–', '–')
    """
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.{digits}f}"


def _round(value: Any, digits: int = 4) -> float | None:
    if value is None or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return round(float(value), digits)


def fmt_count(n: int | float | None) -> str:
    if n is None:
        return "–"
    return f"{int(round(n)):,}"


def slicing_key(slicing: Sequence[str]) -> str:
    return " × ".join(slicing) if slicing else "whole population"


def group_label(group: Mapping[str, Any] | None, slicing: Sequence[str] | None = None) -> str:
    """``{"sex": "Female", "race": "Black"}`` -> ``"Female · Black"`` (values only: the columns say which)."""
    if not group:
        return "all"
    keys = list(slicing) if slicing else list(group)
    return " · ".join(str(group.get(k, "")) for k in keys)


# ------------------------------------------------------------------------------------------- dataclasses
@dataclass(frozen=True)
class Cell:
    text: str
    ci: str = ""
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


@dataclass(frozen=True)
class GroupRow:
    label: str
    group: dict[str, str]
    n: int | None  # None when suppressed
    n_text: str
    suppressed: bool
    sufficient: bool
    is_reference: bool
    cells: list[Cell]


@dataclass(frozen=True)
class ResultRow:
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
    status: str  # pass | fail | insufficient_data
    mark: str  # PASS | FAIL | N/A
    uncertain: bool
    critical: bool
    gap_text: str  # how far past (or inside) the threshold
    worst_group: str
    best_group: str
    excluded: str
    override_reasons: list[str]
    severity: float


@dataclass(frozen=True)
class SlicingSection:
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
    # The groups the PDF lists when the intersection is large: the furthest from the median on the judged
    # metrics, in size order (all groups when there are at most PDF_ROW_LIMIT).
    highlight: list[GroupRow]


@dataclass(frozen=True)
class Curve:
    label: str
    x: list[float]
    y: list[float]
    n: int


@dataclass(frozen=True)
class CurveSet:
    key: str
    curves: list[Curve]
    n_hidden: int


@dataclass(frozen=True)
class Recommendation:
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
    text: str
    status: str
    uncertain: bool


@dataclass(frozen=True)
class ScoreRow:
    slicing_label: str
    anchor: str
    cells: list[ScoreCell]


@dataclass(frozen=True)
class ScoreCard:
    """Every judged result at a glance: one row per slicing, one column per policy metric."""

    metric_labels: list[str]
    thresholds: list[str]
    critical: list[bool]
    rows: list[ScoreRow]


@dataclass(frozen=True)
class KeyValue:
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
class NoteRow:
    slicing_label: str
    text: str


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


@dataclass(frozen=True)
class Breakdown:
    attribute: str
    labels: list[str]
    counts: list[int | None]  # None: suppressed
    shares: list[float | None]


@dataclass(frozen=True)
class ReportView:
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
    recommendations: list[Recommendation]
    use_case_note: str
    priority_metrics: list[str]
    sections: list[SlicingSection]
    base_rates: list[KeyValue]
    impossibility: list[NoteRow]
    simpson: list[NoteRow]
    worst_subgroups: list[NoteRow]
    insufficient: list[KeyValue]
    individual_fairness: list[KeyValue]
    alignment: list[KeyValue]
    validation: list[KeyValue]
    validation_checks: list[CheckRow]
    validation_warnings: list[str]
    proxy: list[KeyValue]
    inputs: list[KeyValue]
    trail: list[KeyValue]
    policy_text: str
    roc: list[CurveSet]
    calibration: list[CurveSet]
    heatmaps: list[Heatmap]
    breakdowns: list[Breakdown]
    n_suppressed_total: int
    extra: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------- building
def build_view(doc: Mapping[str, Any], *, min_cell_size: int = 10, use_case: str | None = None) -> ReportView:
    """The view model of one audit result document.

    Recommendations come from :func:`fairgate.mitigation.advice.recommend` with this ``min_cell_size``.
    """
    policy = doc.get("policy") or {}
    if use_case is None:
        use_case = doc.get("use_case") or (policy.get("use_case") if isinstance(policy, Mapping) else None)
    model = doc.get("model") or {}
    groups_by_slicing = _groups_by_slicing(doc.get("groups") or [])
    hidden = {key: _suppressed_groups(rows, min_cell_size) for key, rows in groups_by_slicing.items()}
    sizes = {(tuple(g["slicing"]), _gkey(g["group"])): g.get("n") for g in doc.get("groups") or []}

    def hide(slicing: Sequence[str], group: Mapping[str, Any] | None) -> bool:
        if not group:
            return False
        key = tuple(slicing)
        gk = _gkey(group)
        if gk in hidden.get(key, set()):
            return True
        n = sizes.get((key, gk))
        return n is not None and n < min_cell_size

    results = [_result_row(r, hide) for r in doc.get("results") or []]
    failures = sorted((r for r in results if r.status == "fail"), key=lambda r: (not r.critical, -r.severity))
    watch = [r for r in results if r.status == "pass" and r.uncertain]

    # Recomputed rather than read from doc["recommendations"]: same function, but with this report's
    # min_cell_size, so a reason never names a group the report suppresses.
    recs_raw = recommend(dict(doc), use_case, min_cell_size=min_cell_size)
    priority = next((r for r in recs_raw if r.get("kind") == "use_case_priority"), None) or priority_note(use_case)
    recommendations = [
        Recommendation(
            metric_label=metric_label(r["metric"]),
            slicing_label=slicing_key(r.get("slicing", [])),
            title=r["title"],
            stage=r.get("stage", ""),
            summary=r.get("summary") or r["reason"],
            reason=r["reason"],
            how=r.get("how", ""),
            critical=bool(r.get("critical")),
            prioritised=bool(r.get("prioritised_for_use_case")),
        )
        for r in recs_raw
        if r.get("kind", "mitigation") == "mitigation"
    ]

    reference = _reference_groups(doc)
    sections = []
    slicing_order = [tuple(s) for s in doc.get("slicings") or []] or list(groups_by_slicing)
    for slicing in slicing_order:
        rows = groups_by_slicing.get(slicing, [])
        section_results = [r for r in results if tuple(r.slicing) == slicing]
        if not rows and not section_results:
            continue
        sections.append(
            _section(
                slicing,
                rows,
                section_results,
                hidden.get(slicing, set()),
                min_cell_size,
                reference.get(slicing),
            )
        )

    n_suppressed_total = sum(s.n_suppressed for s in sections)
    verdict = str(doc.get("verdict", "unknown")).lower()
    detail = doc.get("verdict_detail") or {}
    n_failed = int(detail.get("n_failed", len(failures)))
    n_results = int(detail.get("n_results", len(results)))
    fav = doc.get("favorable_label", policy.get("favorable_label", 1) if isinstance(policy, Mapping) else 1)
    conf = doc.get("confidence_level")
    return ReportView(
        title=f"Fairness audit: {model.get('name', 'model')} {model.get('version', '')}".strip(),
        model_name=str(model.get("name", "unnamed model")),
        model_version=str(model.get("version", "–")),
        run_id=str(doc.get("run_id") or "–"),
        created_at=str(doc.get("created_at") or "–"),
        fairgate_version=str(doc.get("fairgate_version") or "–"),
        verdict=verdict,
        verdict_text=verdict.upper(),
        verdict_sentence=_verdict_sentence(verdict, n_failed, n_results, detail.get("fail_on"), failures),
        fail_on=str(detail.get("fail_on", "any")),
        n_failed=n_failed,
        n_results=n_results,
        n_uncertain=sum(1 for r in results if r.uncertain),
        n_rows_text=fmt_count(doc.get("n_rows")),
        data_window=_data_window(doc),
        favorable_label=str(fav),
        favorable_note=str(doc.get("favorable_label_note") or "")
        or (
            "The favourable outcome is label 1: selection rate and disparate impact count positive predictions."
            if str(fav) == "1"
            else f"The favourable outcome is label {fav} (e.g. 'low risk'): selection rate and disparate "
            f"impact count predictions of {fav}, as AIF360 does."
        ),
        confidence_level_text=f"{conf:.0%}" if isinstance(conf, int | float) else "95%",
        min_cell_size=min_cell_size,
        use_case=str(use_case or "not stated"),
        failures=failures,
        headline_failures=_headline(failures),
        scorecard=_scorecard(results, sections),
        actions=_actions(recommendations),
        watch=watch,
        recommendations=recommendations,
        use_case_note=str(priority.get("note", "")),
        priority_metrics=[metric_label(m) for m in priority.get("priority_metrics", [])],
        sections=sections,
        base_rates=_base_rates(doc, hide),
        impossibility=_impossibility(doc.get("diagnostics") or {}),
        simpson=_notes((doc.get("diagnostics") or {}).get("simpson")),
        worst_subgroups=_worst_subgroups((doc.get("diagnostics") or {}).get("worst_subgroups"), hide),
        insufficient=_insufficient(doc, hide, min_cell_size),
        individual_fairness=[
            KeyValue(metric_label(k), fmt(v, 4))
            for k, v in (doc.get("individual_fairness") or {}).items()
            if not isinstance(v, Mapping | list)
        ],
        alignment=flatten(doc.get("alignment")),
        validation=flatten(_without(doc.get("validation"), "checks", "results", "warnings")),
        validation_checks=_checks(doc.get("validation")),
        validation_warnings=[str(w) for w in (doc.get("validation") or {}).get("warnings") or []]
        if isinstance(doc.get("validation"), Mapping)
        else [],
        proxy=flatten(doc.get("proxy")),
        inputs=flatten(doc.get("inputs")),
        trail=[
            KeyValue("Run id", str(doc.get("run_id") or "–")),
            KeyValue("Policy SHA-256", str(doc.get("policy_sha256") or "–")),
            KeyValue("Schema version", str(doc.get("schema_version") or "–")),
            KeyValue("fairgate version", str(doc.get("fairgate_version") or "–")),
            KeyValue("Created at", str(doc.get("created_at") or "–")),
            *(
                KeyValue(k.replace("_", " ").capitalize(), str(doc[k]))
                for k in ("previous_hash", "content_hash", "run_hash")
                if doc.get(k)
            ),
        ],
        policy_text=_policy_text(policy),
        roc=_curve_sets(doc, "roc", hide, min_cell_size),
        calibration=_curve_sets(doc, "calibration", hide, min_cell_size),
        heatmaps=_heatmaps(sections, failures, results),
        breakdowns=_breakdowns(sections),
        n_suppressed_total=n_suppressed_total,
    )


def _headline(failures: list[ResultRow]) -> list[ResultRow]:
    seen: set[str] = set()
    out = []
    for r in failures:
        if r.metric not in seen:
            seen.add(r.metric)
            out.append(r)
    return out


def _scorecard(results: list[ResultRow], sections: list[SlicingSection]) -> ScoreCard:
    metrics: list[str] = []
    for r in results:
        if r.metric not in metrics:
            metrics.append(r.metric)
    by_key = {(r.metric, tuple(r.slicing)): r for r in results}
    first = {m: next(r for r in results if r.metric == m) for m in metrics}
    anchors = {tuple(s.attributes): s.anchor for s in sections}
    slicings: list[tuple[str, ...]] = []
    for r in results:
        if tuple(r.slicing) not in slicings:
            slicings.append(tuple(r.slicing))
    slicings.sort(key=len)
    rows = []
    for slicing in slicings:
        cells = []
        for m in metrics:
            found = by_key.get((m, slicing))
            cells.append(
                ScoreCell(
                    "" if found is None else found.value_text,
                    "none" if found is None else found.status,
                    bool(found and found.uncertain),
                )
            )
        rows.append(ScoreRow(slicing_key(slicing), anchors.get(slicing, ""), cells))
    return ScoreCard(
        [metric_label(m) for m in metrics],
        [first[m].threshold_text for m in metrics],
        [any(r.critical for r in results if r.metric == m) for m in metrics],
        rows,
    )


def _actions(recommendations: list[Recommendation]) -> list[Action]:
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


def _gkey(group: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in group.items()))


def _groups_by_slicing(groups: Iterable[Mapping[str, Any]]) -> dict[tuple[str, ...], list[Mapping[str, Any]]]:
    out: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for g in groups:
        out.setdefault(tuple(g.get("slicing") or ()), []).append(g)
    return out


def _suppressed_groups(rows: Sequence[Mapping[str, Any]], k: int) -> set[tuple[tuple[str, str], ...]]:
    """Primary suppression (n < k) plus secondary suppression of the next smallest when only one is hidden.

    >>> rows = [{"group": {"a": "x"}, "n": 5}, {"group": {"a": "y"}, "n": 40}, {"group": {"a": "z"}, "n": 90}]
    >>> sorted(v for ((_, v),) in _suppressed_groups(rows, 10))
    ['x', 'y']
    """
    primary = {_gkey(r["group"]) for r in rows if r.get("n") is not None and r["n"] < k}
    if len(primary) == 1 and len(rows) > 2:
        others = sorted((r for r in rows if _gkey(r["group"]) not in primary), key=lambda r: r.get("n") or 0)
        primary.add(_gkey(others[0]["group"]))
    return primary


def _reference_groups(doc: Mapping[str, Any]) -> dict[tuple[str, ...], tuple[tuple[str, str], ...]]:
    refs: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}
    for c in doc.get("comparisons") or []:
        if c.get("reference"):
            refs.setdefault(tuple(c["slicing"]), _gkey(c["reference"]))
    return refs


def _cell(entry: Any) -> Cell:
    if not isinstance(entry, Mapping):
        return Cell(fmt(_round(entry)), value=_round(entry))
    value, low, high = _round(entry.get("value")), _round(entry.get("ci_low")), _round(entry.get("ci_high"))
    ci = f"{fmt(low, 2)}–{fmt(high, 2)}" if low is not None and high is not None else ""
    return Cell(fmt(value), ci, value, low, high)


def _section(
    slicing: tuple[str, ...],
    rows: Sequence[Mapping[str, Any]],
    results: list[ResultRow],
    hidden: set[tuple[tuple[str, str], ...]],
    k: int,
    reference: tuple[tuple[str, str], ...] | None,
) -> SlicingSection:
    present = {m for r in rows for m in (r.get("metrics") or {})}
    metric_names = [m for m in TABLE_METRICS if m in present]
    if len(slicing) > 1:
        # Intersections can hold hundreds of groups: their tables keep the metrics the policy judges (and the
        # selection rate), which is what a reviewer compares there; the attribute tables carry the rest.
        judged = {"selection_rate"} | {b for r in results for b in base_metrics(r.metric)}
        metric_names = [m for m in metric_names if m in judged]
    group_rows = []
    for r in sorted(rows, key=lambda r: -(r.get("n") or 0)):
        gk = _gkey(r["group"])
        suppressed = gk in hidden
        n = r.get("n")
        cells = (
            [Cell(SUPPRESSED) for _ in metric_names]
            if suppressed
            else [_cell((r.get("metrics") or {}).get(m)) for m in metric_names]
        )
        group_rows.append(
            GroupRow(
                label=group_label(r["group"], slicing),
                group={str(a): str(v) for a, v in r["group"].items()},
                n=None if suppressed or n is None else int(round(n)),
                n_text=(f"<{k}" if n is not None and n < k else SUPPRESSED) if suppressed else fmt_count(n),
                suppressed=suppressed,
                sufficient=bool(r.get("sufficient", True)),
                is_reference=reference == gk,
                cells=cells,
            )
        )
    highlight = group_rows if len(group_rows) <= PDF_ROW_LIMIT else _furthest(group_rows, PDF_ROW_LIMIT)
    anchor = "s-" + "-".join("".join(c if c.isalnum() else "_" for c in a) for a in slicing)
    return SlicingSection(
        key=slicing_key(slicing),
        anchor=anchor,
        attributes=list(slicing),
        intersection=len(slicing) > 1,
        results=results,
        metric_names=metric_names,
        metric_labels=[metric_label(m) for m in metric_names],
        groups=group_rows,
        n_suppressed=sum(g.suppressed for g in group_rows),
        n_insufficient=sum(not g.sufficient and not g.suppressed for g in group_rows),
        failed=any(r.status == "fail" for r in results),
        highlight=highlight,
    )


def _furthest(rows: list[GroupRow], limit: int) -> list[GroupRow]:
    """The ``limit`` visible groups furthest from the median of any metric column, kept in size order."""
    visible = [g for g in rows if not g.suppressed]
    n_columns = len(visible[0].cells) if visible else 0
    medians = []
    for j in range(n_columns):
        values = sorted(v for g in visible if (v := g.cells[j].value) is not None)
        medians.append(values[len(values) // 2] if values else None)

    def distance(g: GroupRow) -> float:
        gaps = [
            abs(c.value - m) for c, m in zip(g.cells, medians, strict=True) if c.value is not None and m is not None
        ]
        return max(gaps, default=0.0)

    keep = {id(g) for g in sorted(visible, key=lambda g: (-distance(g), -(g.n or 0)))[:limit]}
    return [g for g in rows if id(g) in keep]


def _result_row(r: Mapping[str, Any], hide: Any) -> ResultRow:
    slicing = list(r.get("slicing") or [])
    value, threshold = _round(r.get("value")), _round(r.get("threshold"))
    low, high = _round(r.get("ci_low")), _round(r.get("ci_high"))
    higher = r.get("direction") == "higher_is_better"
    status = str(r.get("status", "insufficient_data"))
    gap_text, severity = "", 0.0
    if value is not None and threshold is not None:
        gap = (threshold - value) if higher else (value - threshold)
        severity = gap / abs(threshold) if threshold else gap
        if gap > 0:
            gap_text = f"{'below' if higher else 'above'} the threshold by {abs(gap):.3f}"
        else:
            gap_text = f"within the threshold by {abs(gap):.3f}"

    def name(group: Any) -> str:
        if not group:
            return "–"
        return "a suppressed small group" if hide(slicing, group) else group_label(group, slicing)

    excluded = "; ".join(group_label(g, slicing) for g in r.get("excluded_groups") or [])
    return ResultRow(
        metric=str(r["metric"]),
        metric_label=metric_label(str(r["metric"])),
        slicing=slicing,
        slicing_label=slicing_key(slicing),
        value=value,
        value_text=fmt(value),
        ci_text=f"{fmt(low)}–{fmt(high)}" if low is not None and high is not None else "",
        ci_low=low,
        ci_high=high,
        threshold=threshold,
        threshold_text=("≥ " if higher else "≤ ") + fmt(threshold) if threshold is not None else "–",
        status=status,
        mark={"pass": "PASS", "fail": "FAIL"}.get(status, "N/A"),
        uncertain=bool(r.get("uncertain")),
        critical=bool(r.get("critical")),
        gap_text=gap_text,
        worst_group=name(r.get("worst_group")),
        best_group=name(r.get("best_group")),
        excluded=excluded,
        override_reasons=[str(x) for x in r.get("override_reasons") or []],
        severity=severity,
    )


def _verdict_sentence(verdict: str, n_failed: int, n_results: int, fail_on: Any, failures: list[ResultRow]) -> str:
    if verdict == "pass":
        extra = f" {n_failed} result(s) failed but the gate (fail_on: {fail_on}) allows it." if n_failed else ""
        return f"All gating checks passed: {n_results - n_failed} of {n_results} results within policy.{extra}"
    worst = failures[0] if failures else None
    head = f"{n_failed} of {n_results} fairness results are outside the policy (fail_on: {fail_on})."
    if worst:
        head += f" Most severe: {worst.metric_label} on {worst.slicing_label} = {worst.value_text}, {worst.gap_text}."
    return head + " Do not deploy until the failures below are mitigated or explicitly overridden."


def _data_window(doc: Mapping[str, Any]) -> str:
    """The time span of the predictions: the pipeline's provenance (timestamp column), or a stated window."""
    spans = [p for p in doc.get("predictions_provenance") or [] if isinstance(p, Mapping)]
    starts = sorted(str(p["first_prediction_at"]) for p in spans if p.get("first_prediction_at"))
    ends = sorted(str(p["last_prediction_at"]) for p in spans if p.get("last_prediction_at"))
    if starts and ends:
        return f"{starts[0]} to {ends[-1]}"
    for source in (doc, doc.get("inputs") or {}, doc.get("alignment") or {}):
        if not isinstance(source, Mapping):
            continue
        window = source.get("data_window") or source.get("window")
        if isinstance(window, Mapping):
            start, end = window.get("start") or window.get("from"), window.get("end") or window.get("to")
            return f"{start or '…'} to {end or '…'}"
        if window:
            return str(window)
    return "not stated in the inputs"


def _notes(items: Any) -> list[NoteRow]:
    out = []
    for item in items or []:
        if isinstance(item, Mapping):
            text = item.get("message") or item.get("note") or item.get("text") or _inline(item)
            out.append(NoteRow(slicing_key(item.get("slicing") or []), str(text)))
        else:
            out.append(NoteRow("", str(item)))
    return out


def _inline(item: Mapping[str, Any]) -> str:
    return "; ".join(f"{k}: {_short(v)}" for k, v in item.items() if k != "slicing")


def _short(v: Any) -> str:
    if isinstance(v, float):
        return fmt(v)
    if isinstance(v, Mapping):
        return ", ".join(f"{k}={_short(x)}" for k, x in v.items())
    if isinstance(v, list):
        return ", ".join(_short(x) for x in v)
    return str(v)


def _worst_subgroups(items: Any, hide: Any) -> list[NoteRow]:
    out = []
    for item in items or []:
        if isinstance(item, Mapping) and hide(item.get("slicing") or [], item.get("group")):
            continue
        if isinstance(item, Mapping) and item.get("metric") and item.get("group"):
            slicing = item.get("slicing") or []
            n = item.get("n")
            out.append(
                NoteRow(
                    slicing_key(slicing),
                    f"{group_label(item['group'], slicing)}: lowest "
                    f"{metric_label(str(item['metric']))} = {fmt(_round(item.get('value')))}"
                    + (f" (n = {fmt_count(n)})" if n is not None else ""),
                )
            )
            continue
        out.extend(_notes([item]))
    return out


def _base_rates(doc: Mapping[str, Any], hide: Any) -> list[KeyValue]:
    out = []
    for item in (doc.get("diagnostics") or {}).get("base_rates") or []:
        if not isinstance(item, Mapping):
            continue
        slicing = item.get("slicing") or []
        if isinstance(item.get("groups"), list):  # engine shape: one item per slicing with its groups
            parts = []
            for g in item["groups"]:
                if hide(slicing, g.get("group")):
                    continue
                parts.append(f"{group_label(g.get('group'), slicing)} {fmt(_round(g.get('base_rate')))}")
            hidden = len(item["groups"]) - len(parts)
            text = "; ".join(parts) + (f"; {hidden} suppressed" if hidden else "")
            if item.get("differ") is not None:
                text += " (differ significantly)" if item["differ"] else " (no significant difference)"
            out.append(KeyValue(slicing_key(slicing), text))
        elif "group" in item:
            if hide(slicing, item["group"]):
                continue
            label = f"{slicing_key(slicing)}: {group_label(item['group'], slicing)}"
            value = item.get("base_rate", item.get("value"))
            out.append(KeyValue(label, fmt(_round(value)) if not isinstance(value, Mapping) else _short(value)))
        else:
            out.append(KeyValue(slicing_key(slicing), _inline(item)))
    return out


def _impossibility(diagnostics: Mapping[str, Any]) -> list[NoteRow]:
    """Impossibility notes: the engine's per-slicing texts, with their shared explanation stated once."""
    notes = _notes(diagnostics.get("impossibility"))
    texts = [
        (item.get("slicing") or [], str(item["impossibility"]))
        for item in diagnostics.get("base_rates") or []
        if isinstance(item, Mapping) and item.get("impossibility")
    ]
    if not texts:
        return notes
    heads, tails = [], []
    for slicing, text in texts:
        head, _, tail = text.partition(". ")
        heads.append(NoteRow(slicing_key(slicing), head + "."))
        tails.append(tail)
    if len(set(tails)) == 1 and tails[0]:
        return [*notes, *heads, NoteRow("", tails[0])]
    return [*notes, *(NoteRow(slicing_key(sl), t) for sl, t in texts)]


def _insufficient(doc: Mapping[str, Any], hide: Any, k: int) -> list[KeyValue]:
    """Insufficient groups, one row per slicing; suppressed groups show as "n < k", never their size."""
    by_slicing: dict[str, list[str]] = {}
    for item in (doc.get("diagnostics") or {}).get("insufficient_groups") or []:
        if not isinstance(item, Mapping):
            continue
        slicing = item.get("slicing") or []
        n = item.get("n")
        small = hide(slicing, item.get("group")) or (n is not None and n < k)
        size = f"n < {k}" if small else f"n = {fmt_count(n)}"
        by_slicing.setdefault(slicing_key(slicing), []).append(f"{group_label(item.get('group'), slicing)} ({size})")
    return [KeyValue(key, "; ".join(items)) for key, items in by_slicing.items()]


def flatten(value: Any, prefix: str = "", limit: int = 60) -> list[KeyValue]:
    """Nested facts (alignment, validation, inputs) as key/value rows, for a table whatever their shape.

    >>> [(kv.key, kv.value) for kv in flatten({"a": {"b": 1, "c": [1, 2]}, "d": 0.12345})]
    [('a.b', '1'), ('a.c', '1, 2'), ('d', '0.123')]
    """
    out: list[KeyValue] = []
    if value is None:
        return out
    if not isinstance(value, Mapping):
        return [KeyValue(prefix or "value", _short(value))]
    for k, v in value.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.extend(flatten(v, key, limit))
        elif isinstance(v, list) and v and isinstance(v[0], Mapping):
            out.append(
                KeyValue(
                    key,
                    f"{len(v)} item(s): " + " | ".join(_inline(x) for x in v[:5]) + (" | …" if len(v) > 5 else ""),
                )
            )
        else:
            out.append(KeyValue(key, _short(v)))
        if len(out[-1].value) > 240:  # a report cell, not a dump: the JSON document has the rest
            out[-1] = KeyValue(out[-1].key, out[-1].value[:239] + "…")
        if len(out) >= limit:
            out.append(KeyValue("…", "truncated; see the JSON document"))
            break
    return out


def _without(value: Any, *keys: str) -> Any:
    """The mapping without bulky raw entries (the JSON document keeps them)."""
    if not isinstance(value, Mapping):
        return value
    return {k: v for k, v in value.items() if k not in keys}


def _checks(validation: Any) -> list[CheckRow]:
    if not isinstance(validation, Mapping):
        return []
    rows = []
    for check in validation.get("checks") or []:
        if not isinstance(check, Mapping):
            continue
        count = check.get("unexpected_count")
        source = str(check.get("input") or "")
        rows.append(
            CheckRow(
                input=source.replace("\\", "/").rsplit("/", 1)[-1],
                column=str(check.get("column") or "–"),
                expectation=str(check.get("expectation") or "–").removeprefix("expect_").replace("_", " "),
                severity=str(check.get("severity") or ""),
                passed=bool(check.get("success")),
                detail="" if not count else f"{fmt_count(count)} unexpected",
            )
        )
    return rows


def _policy_text(policy: Any) -> str:
    if isinstance(policy, str):
        return policy
    try:
        import yaml

        return yaml.safe_dump({"fairness_checker": policy}, sort_keys=False, allow_unicode=True, width=100)
    except Exception:  # noqa: BLE001 - any dump failure falls back to JSON, the report must still render
        return json.dumps(policy, indent=2, default=str)


def _curve_sets(doc: Mapping[str, Any], kind: str, hide: Any, k: int) -> list[CurveSet]:
    sets: dict[tuple[str, ...], CurveSet] = {}
    sizes = {(tuple(g["slicing"]), _gkey(g["group"])): g.get("n") for g in doc.get("groups") or []}
    for item in (doc.get("curves") or {}).get(kind) or []:
        slicing = tuple(item.get("slicing") or ())
        current = sets.setdefault(slicing, CurveSet(slicing_key(slicing), [], 0))
        group = item.get("group") or {}
        if hide(slicing, group):
            sets[slicing] = CurveSet(current.key, current.curves, current.n_hidden + 1)
            continue
        n = sizes.get((slicing, _gkey(group))) or 0
        if kind == "roc":
            xs, ys = item.get("fpr") or [], item.get("tpr") or []
        else:  # reliability: bins with fewer than k people are cells too, so they are dropped
            kept = [
                b
                for b in item.get("bins") or []
                if (b.get("n") or 0) >= k and b.get("mean_score") is not None and b.get("fraction_positive") is not None
            ]
            xs = [b["mean_score"] for b in kept]
            ys = [b["fraction_positive"] for b in kept]
        current.curves.append(
            Curve(
                group_label(group, slicing),
                [_round(x) or 0.0 for x in xs],
                [_round(y) or 0.0 for y in ys],
                int(n),
            )
        )
    return list(sets.values())


def _heatmaps(sections: list[SlicingSection], failures: list[ResultRow], results: list[ResultRow]) -> list[Heatmap]:
    """One heatmap per intersection, of the base metric of its worst result (a failure if there is one)."""
    out = []
    for section in sections:
        if not section.intersection or not section.groups:
            continue
        candidates = [r for r in results if tuple(r.slicing) == tuple(section.attributes)]
        candidates.sort(key=lambda r: (r.status != "fail", -r.severity))
        base = next((b for r in candidates for b in base_metrics(r.metric) if b in section.metric_names), None)
        if base is None:
            base = "selection_rate" if "selection_rate" in section.metric_names else None
        if base is None:
            continue
        worst = next((r for r in candidates if base in base_metrics(r.metric)), None)
        col = section.metric_names.index(base)
        first, rest = section.attributes[0], section.attributes[1:]
        row_labels = sorted({g.group[first] for g in section.groups})
        col_labels = sorted({" · ".join(g.group[a] for a in rest) for g in section.groups})
        values: list[list[float | None]] = [[None] * len(col_labels) for _ in row_labels]
        suppressed = [[False] * len(col_labels) for _ in row_labels]
        for g in section.groups:
            i = row_labels.index(g.group[first])
            j = col_labels.index(" · ".join(g.group[a] for a in rest))
            suppressed[i][j] = g.suppressed
            values[i][j] = None if g.suppressed else g.cells[col].value
        out.append(
            Heatmap(
                section.key,
                metric_label(worst.metric) if worst else metric_label(base),
                base,
                row_labels,
                col_labels,
                values,
                suppressed,
            )
        )
    return out


def _breakdowns(sections: list[SlicingSection]) -> list[Breakdown]:
    out = []
    for section in sections:
        if section.intersection or not section.attributes:
            continue
        known = sum(g.n or 0 for g in section.groups)
        total = known if known else 1
        out.append(
            Breakdown(
                section.key,
                [g.label for g in section.groups],
                [g.n for g in section.groups],
                [None if g.n is None else round(g.n / total, 4) for g in section.groups],
            )
        )
    return out


def email_summary(view: ReportView, *, top: int = 5) -> str:
    """The plain-text email body: verdict, then the top failures, then the first recommendation."""
    lines = [
        f"fairgate verdict: {view.verdict_text} for {view.model_name} {view.model_version} (run {view.run_id})",
        "",
        view.verdict_sentence,
        "",
    ]
    if view.failures:
        lines.append("Top failures:")
        for r in view.failures[:top]:
            flag = " [critical]" if r.critical else ""
            unsure = " (uncertain)" if r.uncertain else ""
            lines.append(
                f"  - {r.metric_label} on {r.slicing_label}: {r.value_text} "
                f"(threshold {r.threshold_text}; {r.gap_text}){flag}{unsure}"
            )
        if len(view.failures) > top:
            lines.append(f"  ... and {len(view.failures) - top} more in the attached report.")
        lines.append("")
    if view.recommendations:
        first = view.recommendations[0]
        lines += [
            f"Recommended first step: {first.title} ({first.metric_label} on {first.slicing_label}).",
            "",
        ]
    lines.append(f"The full report is attached. Cells with fewer than {view.min_cell_size} people are suppressed.")
    return "\n".join(lines) + "\n"
