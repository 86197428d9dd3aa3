"""What late or contested labels change in an audit.

Estimated results, the label-bias finding, and a document without label-dependent numbers when the labels have
not arrived.

:class:`LabelEvidence` is handed to ``adjudicate``: it drops the measured results a label-free audit cannot have
(their cube's labels are placeholders), adds the estimated ones (``fairgate.engine.label_free``) and the label-bias
findings (``fairgate.engine.label_bias``), decides which of them count in the verdict
(``labels.estimated_results``: ``judge`` or ``report_only``) and writes the ``label_free`` and ``label_bias`` blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fairgate.engine.label_bias import MEANING
from fairgate.engine.label_free import METHOD, METHOD_TEXT, estimable
from fairgate.engine.metrics import policy_metric
from fairgate.policy.core import Policy
from fairgate.policy.labels import DEFAULT_LABEL_RULES

#: Group metrics that read no label: measured as usual in an audit without labels.
LABEL_FREE_BASES = frozenset({"selection_rate"})


def needs_labels(metric: str) -> bool:
    """Whether a policy metric (or group metric) reads the labels.

    >>> needs_labels("disparate_impact_ratio"), needs_labels("equal_opportunity_difference")
    (False, True)
    """
    if metric in LABEL_FREE_BASES:
        return False
    try:
        return not set(policy_metric(metric).bases) <= LABEL_FREE_BASES
    except (KeyError, ValueError):
        return True


@dataclass
class LabelEvidence:
    """The label checks of one audit: estimated entries (labels absent), label-bias entries (external labels)."""

    labels_absent: bool = False
    estimated: list[dict[str, Any]] = field(default_factory=list)
    reference_run_id: str | None = None
    reference_note: str | None = None
    bias_entries: list[dict[str, Any]] = field(default_factory=list)
    bias_groups: list[dict[str, Any]] = field(default_factory=list)
    external_results: list[dict[str, Any]] = field(default_factory=list)
    external_source: str | None = None

    def judged_entries(self, entries: list[dict[str, Any]], policy: Policy) -> list[dict[str, Any]]:
        """The entries of the audit's Holm family.

        The measured ones the labels allow, the findings, and the estimated ones under ``estimated_results: judge``.
        """
        if self.labels_absent:
            entries = [e for e in entries if not needs_labels(e["metric"])] + self._unestimable(policy)
        entries = entries + self.bias_entries
        return entries + self.estimated if _rule(policy) == "judge" else entries

    def _unestimable(self, policy: Policy) -> list[dict[str, Any]]:
        """Label-dependent policy metrics that cannot be estimated from scores: insufficient, saying why."""
        return [
            {
                "metric": rule.name,
                "slicing": [a.name],
                "value": None,
                "ci_low": None,
                "ci_high": None,
                "reason": "needs labels: the audit has none, and this metric cannot be estimated from the scores",
            }
            for rule in policy.metrics
            if needs_labels(rule.name) and not estimable(rule.name) and not policy_metric(rule.name).population_level
            for a in policy.sensitive_attributes
        ]

    def report_only(self, policy: Policy) -> list[dict[str, Any]]:
        """The estimated entries judged in a family of their own (``report_only``): shown, never in the verdict."""
        return self.estimated if _rule(policy) == "report_only" else []

    def counted(self, results: list[dict[str, Any]], policy: Policy) -> list[dict[str, Any]]:
        """The results the verdict is reached from."""
        if _rule(policy) == "judge":
            return results
        return [r for r in results if not r.get("estimated")]

    def blocks(self, policy: Policy, document: dict[str, Any]) -> dict[str, Any]:
        """The document's ``label_free`` and ``label_bias`` blocks (null when not used)."""
        label_free = None
        if self.labels_absent:
            label_free = {
                "method": METHOD,
                "method_text": METHOD_TEXT,
                "reference_run_id": self.reference_run_id,
                "reference_note": self.reference_note,
                "estimated_results": _rule(policy),
                "n_estimated": sum(bool(r.get("estimated")) for r in document["results"]),
            }
        label_bias = None
        if self.bias_groups or self.bias_entries:
            label_bias = {
                "source": self.external_source,
                "meaning": MEANING,
                "groups": self.bias_groups,
                "external_results": self.external_results,
            }
        return {"label_free": label_free, "label_bias": label_bias}


def _rule(policy: Policy) -> str:
    return (policy.labels or DEFAULT_LABEL_RULES).estimated_results


def without_label_numbers(document: dict[str, Any]) -> None:
    """Remove what a label-free audit's placeholder labels computed.

    Label-dependent group metrics, comparisons, summaries, base rates, curves and the individual-fairness indices.
    """
    for group in document["groups"]:
        group["metrics"] = {k: v for k, v in group["metrics"].items() if k in LABEL_FREE_BASES}
    document["comparisons"] = [c for c in document["comparisons"] if c["metric"] in LABEL_FREE_BASES]
    document["summaries"] = [s for s in document["summaries"] if s["metric"] in LABEL_FREE_BASES]
    diagnostics = document["diagnostics"]
    diagnostics["base_rates"], diagnostics["worst_subgroups"], diagnostics["simpson"] = [], [], []
    document["curves"] = {"roc": [], "calibration": []}
    document["individual_fairness"] = {"theil_index": None, "generalized_entropy_index": None}


def estimate_check(estimated: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """The ``label_free_check`` block: an earlier audit's estimates of these people against what their labels show.

    ``estimated``: the audit without labels (same model, same predictions); ``document``: this labelled audit.
    Each estimated result with an interval is compared with the measured value of the same metric and slicing.
    """
    measured = {(r["metric"], tuple(r["slicing"])): r for r in document["results"] if not r.get("estimated")}
    rows = []
    for r in estimated["results"]:
        now = measured.get((r["metric"], tuple(r["slicing"])))
        if not r.get("estimated") or r.get("ci_low") is None or now is None or now.get("value") is None:
            continue
        covered = r["ci_low"] <= now["value"] <= r["ci_high"]
        keys = ("metric", "slicing", "value", "ci_low", "ci_high")
        rows.append({k: r[k] for k in keys} | {"measured": now["value"], "covered": covered})
    return {
        "estimate_run_id": str(estimated.get("run_id")),
        "results": rows,
        "n_compared": len(rows),
        "n_covered": sum(row["covered"] for row in rows),
    }
