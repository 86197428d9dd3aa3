"""The proposed-mitigation block's numbers, from two audits of the same rows (pure: documents in, dicts out).

A failing audit with ``mitigation.auto`` judges the audited predictions and the remedied ones on the same
measured rows under the same policy; :func:`paired_results` lines their judged results up, and
:func:`accuracy_change` states the price, overall and per group. The block's shape is
``fairgate.document.mitigation.MitigationBlock``.

>>> before = {"results": [{"metric": "m", "slicing": ["race"], "value": 0.3, "ci_low": 0.2, "ci_high": 0.4,
...            "status": "fail", "threshold": 0.1, "direction": "lower_is_better", "critical": True}]}
>>> after = {"results": [{"metric": "m", "slicing": ["race"], "value": 0.02, "ci_low": 0.0, "ci_high": 0.07,
...           "status": "pass", "threshold": 0.1, "direction": "lower_is_better", "critical": True}]}
>>> row = paired_results(before, after)[0]
>>> row["before"]["status"], row["after"]["status"], row["after"]["value"]
('fail', 'pass', 0.02)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fairgate.mitigation.rates import Performance

NOT_DEPLOYED = (
    "The candidate is proposed for review, never deployed by fairgate: the verdict and exit code of this audit "
    "remain those of the audited model."
)


def _estimate(result: Mapping[str, Any] | None) -> dict[str, Any]:
    if result is None:  # the slicing was not judged on the measured rows (too few people there)
        return {"value": None, "ci_low": None, "ci_high": None, "status": "insufficient_data"}
    return {k: result.get(k) for k in ("value", "ci_low", "ci_high", "status")}


def paired_results(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each judged (metric, slicing) of either document, with its estimate and status before and after."""
    keyed_after = {(r["metric"], tuple(r["slicing"])): r for r in after["results"]}
    rows = []
    seen = set()
    for result in [*before["results"], *after["results"]]:
        key = (result["metric"], tuple(result["slicing"]))
        if key in seen:
            continue
        seen.add(key)
        earlier = next((r for r in before["results"] if (r["metric"], tuple(r["slicing"])) == key), None)
        rows.append(
            {
                "metric": result["metric"],
                "slicing": list(result["slicing"]),
                "threshold": result["threshold"],
                "direction": result["direction"],
                "critical": bool(result.get("critical", False)),
                "before": _estimate(earlier),
                "after": _estimate(keyed_after.get(key)),
            }
        )
    return rows


def accuracy_change(before: Performance, after: Performance, measure: str = "accuracy") -> dict[str, Any]:
    """``measure`` (accuracy or balanced_accuracy) before and after, overall and per group, with the change.

    Per group the accuracy is shown (a group's balanced accuracy is not what the objective sums).
    """

    def overall(performance: Performance) -> float:
        return performance.balanced_accuracy if measure == "balanced_accuracy" else performance.accuracy

    groups = {}
    for name, group in after.groups.items():
        old = before.groups[name].accuracy
        groups[name] = {"n": group.n, "before": old, "after": group.accuracy, "change": group.accuracy - old}
    total = sum(g.n for g in after.groups.values())
    first, second = overall(before), overall(after)
    return {
        "measure": measure,
        "overall": {"n": total, "before": first, "after": second, "change": second - first},
        "groups": groups,
    }


def verdict_sentence(method: str, verdict_before: str | None, verdict_after: str | None, measured: str) -> str:
    """The block's one-sentence summary.

    >>> verdict_sentence("thresholds", "fail", "pass", "the held-out half")
    'Group thresholds turn the verdict on the held-out half from FAIL to PASS.'
    """
    name, turn, leave = {
        "thresholds": ("Group thresholds", "turn", "leave"),
        "retrain": ("Constrained retraining", "turns", "leaves"),
        "reweighing": ("Reweighing", "turns", "leaves"),
    }[method]
    if verdict_after is None:
        return f"{name}: fitted, not re-audited (see below)."
    if verdict_before == verdict_after:
        return f"{name} {leave} the verdict on {measured} at {str(verdict_after).upper()}."
    return (
        f"{name} {turn} the verdict on {measured} from {str(verdict_before).upper()} to {str(verdict_after).upper()}."
    )


#: The result fields a proposal carries of the audited model's document (``before``), for :func:`paired_results`.
RESULT_FIELDS = ("metric", "slicing", "value", "ci_low", "ci_high", "status", "threshold", "direction", "critical")


def slim_results(document: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict and judged results of an audit document, as a proposal's ``before`` carries them."""
    results = [{k: r.get(k) for k in RESULT_FIELDS} for r in document["results"]]
    return {"verdict": document["verdict"], "results": results}


def completed_proposal(proposal: Mapping[str, Any], document: Mapping[str, Any]) -> dict[str, Any]:
    """A ``fairgate mitigate`` proposal made whole by the audit of its candidate (``document``).

    That audit's results are the "after", the proposal's ``before`` (:func:`slim_results`) the audited model's.
    """
    before = proposal["before"]
    block = {key: value for key, value in proposal.items() if key != "before"}
    block["verdict_before"], block["verdict_after"] = before["verdict"], document["verdict"]
    block["results"] = paired_results(before, document)
    block["summary"] = verdict_sentence(block["method"], before["verdict"], document["verdict"], "the audited people")
    return block
