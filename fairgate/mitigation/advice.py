"""Recommendations: the mitigation that fits each failed metric, and which metric the use case puts first.

Each recommendation carries its reason. Pure: reads the audit result document (``AuditResult.to_dict()``)
and returns plain dicts, so the same advice goes into the JSON document, the report and the email. The prose
(techniques, what each failure means, the use-case notes) is data: ``fairgate/data/mitigation_advice.yaml``,
read once from the package.

>>> doc = {"results": [{"metric": "equal_opportunity_difference", "slicing": ["sex"], "value": 0.21,
...                     "threshold": 0.1, "direction": "lower_is_better", "status": "fail",
...                     "uncertain": False, "worst_group": {"sex": "Female"}}]}
>>> recs = recommend(doc, "hiring")
>>> [(r["kind"], r.get("technique")) for r in recs]
[('mitigation', 'group_specific_thresholds'), ('use_case_priority', None)]
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from fairgate.engine.kinds import DEFAULT_KIND, Kind, kind_of
from fairgate.engine.labels import group_key, slicing_label, withheld_label
from fairgate.engine.metric_labels import metric_label
from fairgate.engine.multiclass.catalogue import adverse_label, binary_name
from fairgate.engine.tasks import metric_units
from fairgate.engine.text import ValueLabels, fmt, group_name, policy_labels
from fairgate.policy.labels import LABEL_DISAGREEMENT
from fairgate.policy.outcomes import Outcomes, fill, wrong_decision_metrics

ADVICE_RESOURCE = ("data", "mitigation_advice.yaml")
#: Remedies whose rules name a group (one decision threshold per group): the sensitive attribute is used when
#: deciding about each person, so every report places this caveat next to them.
GROUP_SPECIFIC_METHODS = frozenset({"thresholds"})
LAWFULNESS_CAVEAT = (
    "These rules treat people differently by a sensitive attribute at decision time: check that this is lawful "
    "for the use case before using them (anti-discrimination law often forbids it); otherwise prefer retraining "
    "under a fairness constraint."
)

GroupSizes = dict[tuple[tuple[str, ...], str], Any]  # (slicing, group_key) -> n
#: Whether the report hides a group of a slicing (fairgate.report.suppress.Suppression.hides).
Hidden = Callable[[Sequence[str], dict[str, str] | None], bool]


@functools.lru_cache(maxsize=1)
def advice_text() -> dict[str, Any]:
    """The advice prose shipped with the package (techniques, metrics, use cases), read once.

    >>> advice_text()["techniques"]["reweighing"]["stage"]
    'pre-processing'
    """
    text = resources.files("fairgate").joinpath(*ADVICE_RESOURCE).read_text(encoding="utf-8")
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def _group_label(group: dict[str, str] | None, labels: ValueLabels | None = None) -> str | None:
    """A group by the one group name (the policy's value labels), None for none."""
    return group_name(group, labels=labels) if group else None


@dataclass(frozen=True)
class _Context:
    """What every recommendation of one document reads: its outcome words, value labels and kind."""

    words: Outcomes
    labels: ValueLabels
    kind: Kind
    units: Mapping[str, str]


def _kind_of_doc(result_doc: dict[str, Any]) -> Kind:
    """The document's kind (binary when it names none or one not registered)."""
    try:
        return kind_of(str(result_doc.get("task") or DEFAULT_KIND))
    except ValueError:
        return kind_of(DEFAULT_KIND)


def _known_use_case(use_case: str | None) -> str | None:
    if use_case is None:
        return None
    key = use_case.strip().lower().replace("-", "_").replace(" ", "_")
    key = advice_text()["use_case_aliases"].get(key, key)
    return key if key in advice_text()["use_cases"] else None


def outcome_words(result_doc: dict[str, Any]) -> Outcomes:
    """The outcome words of an audit document: its ``outcomes`` block, else its policy's, else the defaults."""
    block = result_doc.get("outcomes") or (result_doc.get("policy") or {}).get("outcomes") or {}
    return Outcomes(**{k: v for k, v in block.items() if k in Outcomes.model_fields})


# Stand-ins in a use case's priority_metrics for the metrics that judge one kind of wrong decision.
_WRONG_DECISION = {"wrong_unfavorable_decision": False, "wrong_favorable_decision": True}


def resolve_priority_metrics(listed: list[str]) -> list[str]:
    """The use case's priority metrics with the wrong-decision stand-ins resolved (no repeats)."""
    out: list[str] = []
    for name in listed:
        resolved = wrong_decision_metrics(favourable=_WRONG_DECISION[name]) if name in _WRONG_DECISION else [name]
        out.extend(m for m in resolved if m not in out)
    return out


def priority_note(use_case: str | None, words: Outcomes | None = None) -> dict[str, Any]:
    """Which metrics to prioritise for the use case, in plain language and the policy's outcome words.

    >>> priority_note("hiring")["priority_metrics"][0]
    'disparate_impact_ratio'
    >>> priority_note(None)["known"]
    False
    >>> compas = Outcomes(favorable_decision="not flagged high-risk", unfavorable_decision="flagged high-risk",
    ...                   favorable_truth="did not reoffend", unfavorable_truth="reoffended")
    >>> note = priority_note("pretrial_risk_assessment", compas)
    >>> note["priority_metrics"][:2]
    ['false_negative_rate_difference', 'equal_opportunity_difference']
    >>> "equal FNR (flagged high-risk among those who did not reoffend)" in note["note"]
    True
    """
    words = words or Outcomes()
    key = _known_use_case(use_case)
    if key is None:
        unknown = advice_text()["unknown_use_case"]
        note = unknown["note"]
        if use_case:
            note = unknown["unnamed_prefix"].format(use_case=repr(use_case)) + note
        return {"kind": "use_case_priority", "use_case": use_case, "known": False, "priority_metrics": [], "note": note}
    guidance = advice_text()["use_cases"][key]
    return {
        "kind": "use_case_priority",
        "use_case": key,
        "known": True,
        "priority_metrics": resolve_priority_metrics(guidance["priority_metrics"]),
        "note": fill(guidance["note"], words),
    }


def recommend(
    result_doc: dict[str, Any], use_case: str | None = None, *, min_cell_size: int = 10, hidden: Hidden | None = None
) -> list[dict[str, Any]]:
    """One mitigation per failed (metric, slicing), most severe first, then the use-case priority note.

    ``use_case`` falls back to the document's (``use_case`` or ``policy.use_case``). A worst-off group with
    fewer than ``min_cell_size`` people is not named (the report suppresses it too), nor one ``hidden`` says
    the report hides (a group suppressed so that a small one cannot be derived).
    """
    if use_case is None:
        use_case = result_doc.get("use_case") or (result_doc.get("policy") or {}).get("use_case")
    words = outcome_words(result_doc)
    priority = priority_note(use_case, words)
    prioritised = set(priority["priority_metrics"])
    base_rates_differ = _base_rates_differ(result_doc)
    failed = [
        result
        for result in result_doc.get("results", [])
        if result.get("status") == "fail" and _advised(result, result_doc)
    ]
    advised = {tuple(result.get("slicing", [])) for result in failed}  # only their groups' sizes are read
    sizes: GroupSizes = {
        (slicing, group_key(g.get("group"))): g.get("n")
        for g in result_doc.get("groups", [])
        if (slicing := tuple(g.get("slicing", []))) in advised
    }
    policy = result_doc.get("policy") or {}
    kind = _kind_of_doc(result_doc)
    context = _Context(words, policy_labels(policy), kind, metric_units(kind.name, policy))
    recs = [
        _mitigation(result, sizes, base_rates_differ, prioritised, min_cell_size, context, hidden) for result in failed
    ]
    recs.sort(key=lambda r: (not r["critical"], not r["prioritised_for_use_case"], -r["_severity"]))
    for rec in recs:
        del rec["_severity"]
    return [*recs, priority]


def _advised(result: dict[str, Any], result_doc: dict[str, Any]) -> bool:
    """Whether a failing result gets model advice.

    Not the label-bias finding (the labels, not the model, are in question), nor an estimated result the verdict
    does not rest on (``labels.estimated_results: report_only``).
    """
    if result.get("metric") == LABEL_DISAGREEMENT:
        return False
    rule = (result_doc.get("label_free") or {}).get("estimated_results")
    return not result.get("estimated") or rule == "judge"


def _base_rates_differ(result_doc: dict[str, Any]) -> bool:
    diagnostics = result_doc.get("diagnostics") or {}
    return bool(diagnostics.get("impossibility")) or any(
        isinstance(item, dict) and item.get("differ") for item in diagnostics.get("base_rates") or []
    )


def _metric_advice(metric: str, words: Outcomes) -> tuple[str, str, str]:
    """(technique, constraint, why) for a metric; the general remedy for metrics without their own advice.

    A multiclass ``adverse.<metric>`` rule judges a binary decision: it gets that metric's advice.
    """
    known = advice_text()["metrics"].get(metric) or advice_text()["metrics"].get(binary_name(metric) or "")
    if known is not None:
        return known["technique"], known["constraint"], fill(known["why"], words)
    other = advice_text()["other_metric"]
    return other["technique"], metric.removesuffix("_difference").removesuffix("_ratio"), other["why"]


def _mitigation(
    result: dict[str, Any],
    sizes: GroupSizes,
    base_rates_differ: bool,
    prioritised: set[str],
    min_cell_size: int,
    context: _Context,
    hidden: Hidden | None = None,
) -> dict[str, Any]:
    """The recommendation for one failed result (with a ``_severity`` key for sorting)."""
    metric = result["metric"]
    technique, constraint, why = _metric_advice(metric, context.words)
    levels_differ = context.kind.levels_differ if base_rates_differ else ""
    info = advice_text()["techniques"][technique]
    slicing = list(result.get("slicing", []))
    worst_n = sizes.get((tuple(slicing), group_key(result.get("worst_group"))))
    worst = _group_label(result.get("worst_group"), context.labels)
    small = worst_n is not None and worst_n < min_cell_size
    if worst is not None and (small or (hidden is not None and hidden(slicing, result.get("worst_group")))):
        worst = withheld_label(worst)  # named, with the report's one mark (never "small": that tells a size)
    return {
        "kind": "mitigation",
        "metric": metric,
        "slicing": slicing,
        "technique": technique,
        "stage": info["stage"],
        "title": info["title"],
        "constraint": constraint,
        "summary": why[0].upper() + why[1:] + ".",
        "reason": _reason(
            result,
            slicing,
            why,
            worst,
            levels_differ if technique != "reweighing" else "",
            context.units.get(metric, ""),
        ),
        "how": info["how"],
        "critical": bool(result.get("critical")),
        "prioritised_for_use_case": metric in prioritised,
        "_severity": _severity(result),
    }


def _reason(
    result: dict[str, Any], slicing: list[str], why: str, worst: str | None, levels_differ: str, unit: str = ""
) -> str:
    """Why this mitigation: the failure, what it means, who is worst off, and the cautions that apply.

    ``levels_differ``: "" when no trade-off warning applies, else the kind's words ("Base rates differ");
    ``unit``: the metric's unit ("" for a rate, share or ratio), after the value and the threshold.
    """
    inner = binary_name(result["metric"])
    label = metric_label(result["metric"]) if inner is None else adverse_label(metric_label(inner))
    reason = f"{label} fails on {slicing_label(slicing)}"
    if result.get("value") is not None and result.get("threshold") is not None:
        suffix = f" {unit}" if unit else ""
        reason += f" ({fmt(result['value'])}{suffix} against a threshold of {result['threshold']:g}{suffix})"
    reason += f": {why}."
    if worst:
        reason += f" The worst-off group is {worst}."
    if result.get("uncertain"):
        reason += " The confidence interval crosses the threshold: confirm on more data before changing the model."
    if levels_differ:
        reason += (
            f" {levels_differ} between groups here, so equalising this metric will move others "
            "(see the impossibility note): re-audit after mitigating."
        )
    return reason


def _severity(result: dict[str, Any]) -> float:
    """How far past its threshold a result is, relative to the threshold (0 when unknown)."""
    value, threshold = result.get("value"), result.get("threshold")
    if value is None or threshold is None:
        return 0.0
    gap = value - threshold if result.get("direction") != "higher_is_better" else threshold - value
    return float(gap / abs(threshold) if threshold else gap)
