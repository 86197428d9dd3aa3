"""The monitoring report's frame (:class:`~fairgate.report.model.ReportFrame`, as every report type has it).

What to do, what was not judged, the groups' sizes per window under the small-cell rule, the model card, the
command to reproduce the night and the glossary in words, in a monitoring night's terms; the shared words are
:mod:`fairgate.report.frame`'s. Kept apart from :mod:`fairgate.report.monitoring` (the windows and the detector)
so each reads on its own; the view carries it as ``MonitoringView.frame``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fairgate.engine.labels import group_key, slicing_label
from fairgate.report.format import fmt_count, metric_label
from fairgate.report.frame import ABSENT, group_text, not_judged_text, report_frame, size_text
from fairgate.report.model import GlossaryRow, ReportFrame, SizeRow

#: The monitoring report's own words, after the judged metrics in the glossary.
TERMS = [
    GlossaryRow("Window", "the last 7, 28, … days", "the stored periods summed and judged as one audit of their rows"),
    GlossaryRow(
        "Baseline",
        "deployment audit",
        "what each window is compared with: the audit the model was deployed on, or the policy's reference window",
    ),
    GlossaryRow(
        "Change",
        "window − baseline",
        "how far the window's value moved; significant when its Holm-"
        "adjusted p-value is at most the policy's significance level",
    ),
    GlossaryRow(
        "Drift detector",
        "CUSUM per group",
        "adds up each night's change of a group's gap to the "
        "reference group, and alerts when the sum passes a threshold set for few false alarms",
    ),
]


def monitoring_frame(document: Mapping[str, Any], window_labels: Sequence[str], decision: str, why: str) -> ReportFrame:
    """The frame of a monitoring document.

    ``window_labels``: its windows as the report names them; ``decision`` and ``why``: the night's badge and
    headline sentence.
    """
    windows = list(document.get("windows") or [])
    named = {part for a in document.get("alerts") or [] for part in str(a.get("group", "")).split(" vs ")}
    return report_frame(
        document,
        decision=decision,
        why=[why],
        what_to_do=_what_to_do(document.get("headline") or {}),
        not_judged=_not_judged(windows, window_labels, document),
        sizes=(window_labels, *_size_rows(windows, named)),
        card=(_facts_line(document), "this monitoring run"),
        metrics=(r["metric"] for w in windows for r in w.get("results") or []),
        terms=TERMS,
    )


def _facts_line(document: Mapping[str, Any]) -> str:
    model = document.get("model") or {}
    rows = sum(int(p.get("labelled_rows") or 0) for p in document.get("stored") or [])
    head = document.get("headline") or {}
    return (
        f"model {model.get('name', '')} version {model.get('version', '')} · night {document.get('night', '')} · "
        f"{fmt_count(rows)} labelled rows stored tonight · policy {str(document.get('policy_sha256', ''))[:16]}… · "
        f"{head.get('badge', '')}"
    )


def _what_to_do(head: Mapping[str, Any]) -> str:
    """The night's next step, from the headline's verdict and drift words."""
    steps = []
    if head.get("windows") == "fail":
        steps.append(
            "a window fails the policy: take the failing results below to the model's owner, and audit that "
            "window's rows (fairgate audit) to see which groups are behind them before the model keeps deciding"
        )
    if head.get("drift") == "new_alert":
        steps.append(
            "a drift alert fired: check tonight's inputs for a data problem first, then treat it as a change in "
            "how the model treats the group named"
        )
    if head.get("windows") == "insufficient":
        steps.append("no window had enough labelled people to judge: wait for late labels or lengthen the windows")
    if not steps:
        return "Nothing to act on tonight: the windows pass and no drift alert fired; the next night continues."
    return "What to do: " + "; ".join(steps) + "."


def _not_judged(windows: Sequence[Mapping[str, Any]], labels: Sequence[str], document: Mapping[str, Any]) -> str:
    """The results and streams the night could not judge, counted per window."""
    parts = []
    for label, window in zip(labels, windows, strict=False):
        if window.get("same_as"):
            continue  # the same numbers as a window already counted
        undecided = [r for r in window.get("results") or [] if r.get("status") in ("inconclusive", "insufficient_data")]
        if undecided:
            names = ", ".join(dict.fromkeys(f"{metric_label(r['metric'])} on {slicing_label(r['slicing'])}"
                                            for r in undecided))  # fmt: skip
            parts.append(f"{label}: {len(undecided)} result(s) neither pass nor fail ({names})")
    skipped = len((document.get("detector") or {}).get("skipped") or [])
    if skipped:
        parts.append(
            f"the drift detector left out {skipped} stream(s) tonight for too few people (listed under Method)"
        )
    if document.get("detector") is None:
        parts.append("no drift detector ran (the policy sets no alert rule, or there is no baseline)")
    return not_judged_text(parts, "Every window result was judged.")


def _size_rows(windows: Sequence[Mapping[str, Any]], alerted: set[str]) -> tuple[list[SizeRow], int]:
    """Each group's size per window, in the document's order; how many sizes are withheld."""
    order: dict[tuple[str, str], tuple[list[str], dict[str, str]]] = {}
    sizes: dict[tuple[str, str], dict[int, Any]] = {}
    withheld = 0
    for index, window in enumerate(windows):
        for entry in window.get("groups") or []:
            key = (slicing_label(entry["slicing"]), group_key(entry["group"]))
            order.setdefault(key, (entry["slicing"], entry["group"]))
            sizes.setdefault(key, {})[index] = entry.get("n")
            withheld += entry.get("n") is None and not window.get("same_as")
    rows = []
    widest = max(windows, key=lambda w: len(w.get("groups") or []), default={})  # its order: every group
    rank = {(slicing_label(e["slicing"]), group_key(e["group"])): i for i, e in enumerate(widest.get("groups") or [])}
    for key, (slicing, group) in sorted(order.items(), key=lambda item: rank.get(item[0], len(rank))):
        label = group_text(slicing, group)
        texts = [_size_text(sizes[key], i) for i in range(len(windows))]
        rows.append(SizeRow(key[0], label, texts, label in alerted))
    return rows, withheld


def _size_text(sizes: Mapping[int, Any], index: int) -> str:
    return size_text(sizes[index]) if index in sizes else ABSENT
