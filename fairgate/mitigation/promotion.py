"""Which candidate ``fairgate compare`` may promote, and which it chooses, on evidence.

A candidate is *promotable* only when its own audit passes the policy under the gate's decision rule
(``fairgate.engine.audit``: the same adjudication, Holm over every result, ``ci_cd_gate.decision`` and
``fail_on``) and no judged fairness change is worse than the baseline's. A verdict that is not exactly ``pass``
is not promotable. ``comparison.promote_failing_if_better`` may allow promoting a failing candidate that is
significantly better than the baseline on some fairness metric (a change whose deciding interval lies wholly on
the better side); the comparison then says that the promoted model still fails the policy.

Among promotable candidates the choice rests on a significant accuracy gain (the deciding interval of the
accuracy change wholly above ``comparison.accuracy_margin``); without one the first promotable candidate in the
order given is chosen, and the comparison says there is no evidence of a difference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from fairgate.engine.audit import audit
from fairgate.engine.labels import slicing_label
from fairgate.engine.metric_labels import in_sentence, metric_label, metric_words
from fairgate.engine.text import bracket_text, fmt, fmt_signed
from fairgate.policy.core import Policy
from fairgate.verdicts import passed

OWN_AUDIT = "the model's own audit of its predictions (scores included where given)"
DECISIONS_ONLY = "an audit of the model's decisions in the joint cube (no scores: metrics needing them not judged)"


@dataclass(frozen=True)
class ModelAudit:
    """A model's own audit verdict against the policy, and its failing results in words."""

    verdict: str
    failed: tuple[str, ...]
    n_judged: int
    source: str

    @property
    def passes(self) -> bool:
        """Whether the verdict is a pass (``fail``, ``insufficient`` or anything else is not): the core's rule."""
        return passed(self.verdict)

    def as_dict(self) -> dict[str, Any]:
        """The document's ``audit`` entry of a candidate."""
        return {"verdict": self.verdict, "failed": list(self.failed), "n_judged": self.n_judged, "source": self.source}


def model_audit(rows: Any, policy: Policy, *, source: str = OWN_AUDIT) -> ModelAudit:
    """Audit one model's rows (the audit's columns) against the policy; its verdict and failing results."""
    document = audit(rows, policy, source="the compared model's rows").to_dict()
    detail = document["verdict_detail"]
    return ModelAudit(str(document["verdict"]), tuple(_brief(r) for r in detail["failed"]), detail["n_judged"], source)


def _brief(result: Mapping[str, Any]) -> str:
    """'Disparate impact ratio (race) 0.601 [0.55, 0.65], limit 0.8' for a failing result."""
    value, low, high = (result.get(k) for k in ("value", "ci_low", "ci_high"))
    shown = "n/a" if value is None else fmt(value)
    interval = bracket_text(low, high)
    name = f"{metric_label(result['metric'])} ({slicing_label(result['slicing'])})"
    return f"{name} {shown}{' ' + interval if interval else ''}, limit {result['threshold']:g}"


def joint_rows(cells: pl.DataFrame, attributes: Sequence[str], policy: Policy, prediction: str) -> pl.DataFrame:
    """One model's rows rebuilt from a joint cube's cells (one row per person, decisions only)."""
    counts = cells["__rows"].to_numpy().astype(np.int64)
    favourable = policy.favorable_label

    def coded(column: str) -> np.ndarray:
        indicator = np.repeat(cells[column].to_numpy().astype(np.int8), counts)
        return indicator if favourable == 1 else (1 - indicator).astype(np.int8)

    columns = policy.columns
    return pl.DataFrame(
        {
            columns.id: np.arange(int(counts.sum())),
            columns.y_true: coded("__y_true"),
            columns.y_pred: coded(prediction),
            **{name: np.repeat(cells[name].to_numpy(), counts) for name in attributes},
        }
    )


def gate(entry: dict[str, Any], verdict: ModelAudit, allow_failing: bool) -> None:
    """Apply the policy to one candidate's entry (in place): its audit, whether it may still be promoted, why."""
    entry["audit"] = verdict.as_dict()
    entry["passes_policy"] = verdict.passes
    entry["promoted_failing"] = False
    if verdict.passes:
        return
    failing = _failing_text(verdict)
    if entry["decision"] != "promote":
        entry["reasons"].append(failing)
        return
    better = [r for r in entry["changes"] if r["status"] == "better"]
    if allow_failing and better:
        entry["promoted_failing"] = True
        entry["reasons"].append(
            f"promoted although it FAILS the policy ({failing.removeprefix('its own audit fails the policy: ')}): "
            f"comparison.promote_failing_if_better allows it, as it is significantly better than the baseline on "
            f"{_evidence(better[0])}"
        )
        return
    entry["decision"] = "do_not_promote"
    if allow_failing:
        tail = (
            " (no fairness metric is significantly better than the baseline's, which promote_failing_if_better needs)"
        )
    else:
        tail = " (comparison.promote_failing_if_better is false)"
    entry["reasons"].append(failing + tail)


def _failing_text(verdict: ModelAudit) -> str:
    if verdict.verdict != "fail":
        return f"its own audit's verdict is {verdict.verdict!r}, not 'pass'"
    more = f"; and {len(verdict.failed) - 3} more" if len(verdict.failed) > 3 else ""
    shown = "; ".join(in_sentence(failed) for failed in verdict.failed[:3]) + more
    return f"its own audit fails the policy: {shown or 'nothing could be judged'}"


def _evidence(row: Mapping[str, Any]) -> str:
    return (
        f"{metric_words(row['metric'])} ({slicing_label(row['slicing'])}): change {fmt_signed(row['change'])}, "
        f"deciding interval {_deciding(row)}"
    )


def _deciding(row: Mapping[str, Any]) -> str:
    """A change's deciding interval, ends rounded outward by the one rule."""
    return bracket_text(row["decision_ci_low"], row["decision_ci_high"], signed=True)


def choose(entries: Sequence[dict[str, Any]], decision_level: float) -> tuple[str | None, list[str]]:
    """The chosen candidate and why; or None and each candidate's first reason.

    A candidate that passes the policy is preferred to one promoted although it fails. Among them the one with a
    significant accuracy gain (the largest, when several have one); else the first given.
    """
    promotable = [e for e in entries if e["decision"] == "promote"]
    if not promotable:
        return None, [f"{e['name']}: {e['reasons'][0]}" for e in entries] if len(entries) > 1 else entries[0]["reasons"]
    preferred = [e for e in promotable if e["passes_policy"]] or promotable
    gains = [e for e in preferred if e["accuracy"]["status"] == "better"]
    if gains:
        best = max(gains, key=lambda e: e["accuracy"]["change"])
        accuracy = best["accuracy"]
        why = (
            f"{best['name']} is chosen for a significant accuracy gain of {fmt_signed(accuracy['change'])} (deciding "
            f"interval {_deciding(accuracy)} at level "
            f"{decision_level:.4g}, wholly above the accuracy margin)"
        )
        if len(gains) > 1:
            why += (
                "; the largest estimated gain of those with a significant one (candidates are not tested against "
                "each other)"
            )
    else:
        best = preferred[0]
        why = (
            f"{best['name']} is chosen: no evidence of a difference in accuracy from the baseline (every deciding "
            "interval of the accuracy change reaches the margin); chosen by the order given (the first promotable "
            "candidate)"
        )
    reasons = [why]
    others = [e["name"] for e in promotable if e is not best]
    if others:
        reasons.append(f"also promotable: {', '.join(others)}")
    if best["promoted_failing"]:
        reasons.append(f"{best['name']} is {best['reasons'][-1]}")
    return best["name"], reasons
