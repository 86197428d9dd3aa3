"""The JSON document as it is written beside the report: every value, or the report's suppression applied.

``reporting.json`` chooses. ``full`` (the default) keeps every value: the JSON is the machine-readable record
that CI, the audit trail, later re-rendering and other tools read, and an audit that silently dropped numbers
from it would break them; it belongs where the model's data may be read. ``suppressed`` applies exactly the
report's suppression (:class:`fairgate.report.suppress.Suppression`, complementary across every table and
count) to every part that states a number about a group: hidden sizes, group metrics (so counts: a rate with
the size is a count), comparisons with the reference, base rates, worst-off subgroups, small-group notes and
curves become null (curves empty), each entry marked ``"suppressed": true``. The judged summaries and results
(max - min across groups) stay: they are the verdict, and they state rates, never a size or count.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Literal

from fairgate.document.document import AuditDocument
from fairgate.report.count_cells import class_unit
from fairgate.report.suppress import Suppression

JsonContent = Literal["full", "suppressed"]

METHOD = (
    "primary suppression of every group size and confusion count under min_cell_size, then complementary "
    "suppression across every slicing, count and the population jointly until no hidden size or count is a "
    "linear function of the published ones, nor bounded under min_cell_size by them (counts are non-negative); "
    "a group with a hidden count has its rates hidden"
)


def json_content(document: AuditDocument | Mapping[str, Any]) -> JsonContent:
    """The policy's ``reporting.json`` as the document records it (``full`` when absent)."""
    policy = document.policy if isinstance(document, AuditDocument) else document.get("policy") or {}
    value = (policy.get("reporting") or {}).get("json", "full")
    return "suppressed" if value == "suppressed" else "full"


def json_note(content: JsonContent, min_cell_size: int) -> str:
    """The report's line saying which JSON was written beside it."""
    if content == "suppressed":
        return (
            f"The JSON document written with this report is suppressed the same way: the numbers of hidden groups "
            f'are null and marked "suppressed" (reporting.json: suppressed; cells under {min_cell_size}).'
        )
    return (
        "The JSON document written with this report holds every value, suppressed groups included "
        "(reporting.json: full): keep it where the underlying data may be read, or set reporting.json: "
        "suppressed."
    )


def published_document(document: Mapping[str, Any], min_cell_size: int, content: JsonContent) -> dict[str, Any]:
    """The document to write: a copy with its ``suppression`` block, and with hidden numbers null if asked.

    The full document's copy shares its values with ``document`` (nothing in it changes); a suppressed one is
    a deep copy.
    """
    typed = AuditDocument.model_validate(document)
    suppression = Suppression.of_document(typed, min_cell_size)
    out = copy.deepcopy(dict(document)) if content == "suppressed" else dict(document)
    out["suppression"] = {
        "content": content,
        "min_cell_size": min_cell_size,
        "n_groups_suppressed": suppression.n_hidden,
        "method": METHOD,
    }
    if content == "suppressed":
        _hide(out, suppression)
    return out


def _hide(out: dict[str, Any], suppression: Suppression) -> None:
    def hidden(item: Mapping[str, Any], group: str = "group") -> bool:
        return suppression.hides(item.get("slicing") or [], item.get(group))

    _hide_groups(out.get("groups", []), suppression)
    for comparison in out.get("comparisons", []):
        if hidden(comparison) or hidden(comparison, "reference"):
            _hide_comparison(comparison)
    _hide_diagnostics(out.get("diagnostics") or {}, suppression)
    curves = out.get("curves") or {}
    for item in curves.get("roc", []):
        if hidden(item):
            item.update(fpr=[], tpr=[], suppressed=True)
    for item in curves.get("calibration", []):
        if hidden(item):
            item.update(bins=[], suppressed=True)
    for item in (out.get("ranking") or {}).get("curves", []):
        if hidden(item):  # a small group's exposure curve (ranking audits)
            item.update(share_at_position=[], cumulative_exposure_share=[], items=[], suppressed=True)
    _hide_regression(out.get("regression") or {}, suppression)
    _hide_multiclass(out.get("multiclass") or {}, suppression)


def _hide_groups(groups: list[dict[str, Any]], suppression: Suppression) -> None:
    """Hidden groups' metrics; their size too unless only a count of theirs is hidden."""
    for entry in groups:
        slicing, group = entry.get("slicing") or [], entry.get("group")
        if suppression.hides(slicing, group):
            if suppression.hides_size(slicing, group):
                entry.update(n=None, rows=None)
            entry.update(suppressed=True)
            entry["metrics"] = {name: {"value": None, "ci_low": None, "ci_high": None} for name in entry["metrics"]}


def _hide_multiclass(block: Mapping[str, Any], suppression: Suppression) -> None:
    """A multiclass document's matrices and per-class rates of hidden groups: each part withheld goes null."""
    null = {"value": None, "ci_low": None, "ci_high": None}
    for item in block.get("groups", []):
        slicing, group = item.get("slicing") or [], item.get("group")
        if not suppression.hides(slicing, group):
            continue
        if suppression.hides_size(slicing, group):
            item.update(n=None, rows=None)
        if suppression.hides_unit(slicing, group, "matrix"):
            item["confusion"] = None
        if suppression.hides_unit(slicing, group, "accuracy"):
            item["accuracy"] = dict(null)
        for estimates in item.get("rates", {}).values():
            for c, _ in enumerate(estimates):
                if suppression.hides_unit(slicing, group, class_unit(c)):
                    estimates[c] = dict(null)
        item.update(suppressed=True)


def _hide_regression(block: Mapping[str, Any], suppression: Suppression) -> None:
    """A regression document's per-group residual deciles, CDFs and distances of hidden groups."""
    for item in block.get("groups", []):
        if suppression.hides(item.get("slicing") or [], item.get("group")):
            item.update(binned=[], cdf=[], suppressed=True)
    for item in block.get("distances", []):
        if suppression.hides(item.get("slicing") or [], item.get("group")):
            for key in ("ks_distance", "ks_error_bound", "ks_p_value", "ks_at"):
                item[key] = None
            item.update(wasserstein_distance=None, wasserstein_error_bound=None, suppressed=True)


def _hide_comparison(comparison: dict[str, Any]) -> None:
    for key in list(comparison):
        if key.startswith(("difference", "ratio", "p_value")) and key != "p_value_family":
            comparison[key] = None
    comparison.update(significant=None, suppressed=True)


def _hide_diagnostics(diagnostics: Mapping[str, Any], suppression: Suppression) -> None:
    for item in diagnostics.get("base_rates", []):
        for g in item.get("groups", []):
            if suppression.hides(item.get("slicing") or [], g.get("group")):
                g.update(base_rate=None, n=None, ci_low=None, ci_high=None, suppressed=True)
    for item in diagnostics.get("worst_subgroups", []):
        if suppression.hides(item.get("slicing") or [], item.get("group")):
            item.update(value=None, n=None, ci_low=None, ci_high=None, suppressed=True)
    for item in diagnostics.get("insufficient_groups", []):
        if suppression.hides(item.get("slicing") or [], item.get("group")):
            item.update(n=None, suppressed=True)
