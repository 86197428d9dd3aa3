"""What the gate judges when a sensitive attribute is inferred: the attenuation-corrected estimate where it exists.

A proxy-weighted gap is attenuated: each inferred group's rate is a weighted average of the true groups' rates
(fairgate/proxy/attenuation.py), so the measured (naive) range of group rates is never larger than the true one.
Judging it lets unfair models pass. So, on every slicing that contains the inferred attribute:

- the attribute alone, a metric the mixing matrix corrects, posteriors declared calibrated (``proxy.calibrated``)
  and the correction identifiable: the result's value, interval and pairwise family are the corrected ones
  (``judged: corrected``), the measured ones are kept beside them (``naive``);
- otherwise the measured result is judged (``judged: naive``) and a ``pass`` is withheld (``pass_withheld``,
  read by the core's adjudication): the attenuated gap can show that the true gap is beyond a threshold, never
  that it is within one. Such a result is ``fail`` or ``inconclusive``, with the reason.

Either way the core's one decision rule (fairgate/engine/adjudicate.py, Holm over the audit) judges it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fairgate.engine.slicing import SlicingResult
from fairgate.engine.summaries import summary_bounds
from fairgate.policy.core import Policy
from fairgate.proxy.attenuation import CORRECTABLE, corrected_family

CORRECTED_METHOD = (
    "attenuation-corrected through the mixing matrix (calibrated posteriors): sandwich covariance, "
    "simultaneous max-t over group pairs"
)


def judged_on_correction(
    parts: Sequence[SlicingResult], proxy: Mapping[str, Any] | None, policy: Policy
) -> list[SlicingResult]:
    """The slicings with their results on the inferred attribute made judgeable (see the module's docstring).

    ``proxy`` is the document's ``proxy`` block (with its ``attenuation``); without one the parts are unchanged.
    """
    if not proxy or policy.proxy is None:
        return list(parts)
    attribute = policy.proxy.attribute_name
    block = proxy.get("attenuation") or {}
    settings = _Settings(policy.proxy.calibrated, policy.reporting.confidence_level, policy.statistics.seed)
    corrections = {e["metric"]: e for e in block.get("metrics", [])}
    out = []
    for part in parts:
        if attribute not in part.slicing:
            out.append(part)
            continue
        results = [
            _judged_entry(entry, part.slicing == (attribute,), corrections.get(entry["metric"]), block, settings)
            for entry in part.results
        ]
        out.append(dataclasses.replace(part, results=results))
    return out


@dataclasses.dataclass(frozen=True)
class _Settings:
    calibrated: bool  # proxy.calibrated
    level: float  # reporting.confidence_level: the interval shown
    seed: int  # statistics.seed: the max-t null's draws (the attenuation block's, so its interval is the same)


def _judged_entry(
    entry: dict[str, Any],
    alone: bool,
    correction: Mapping[str, Any] | None,
    block: Mapping[str, Any],
    settings: _Settings,
) -> dict[str, Any]:
    if entry.get("_family") is None:
        return entry  # nothing measured to judge: stays insufficient, with its reason
    why = _no_correction(entry, alone, correction, block, settings.calibrated)
    corrected = None if why else _corrected(entry, correction, block, settings)
    if corrected is None:
        why = why or "the corrected rates give no valid interval over the judged groups"
        naive = {k: entry[k] for k in ("value", "ci_low", "ci_high")}
        return entry | {
            "judged": "naive",
            "naive": naive,
            "pass_withheld": (
                f"judged on the measured value, which the proxy's mixing attenuates ({why}): it can show a "
                "disparity beyond the threshold, never one within it"
            ),
        }
    return corrected


def _no_correction(
    entry: dict[str, Any],
    alone: bool,
    correction: Mapping[str, Any] | None,
    block: Mapping[str, Any],
    calibrated: bool,
) -> str | None:
    """Why the measured value is judged instead of the corrected one; None when the corrected one is judged."""
    if not calibrated:
        return "proxy.calibrated is false, so the mixing matrix cannot be estimated from the posteriors"
    if not alone:
        return "the correction is made for the inferred attribute alone, not for its intersections"
    if entry["metric"] not in CORRECTABLE:
        return "the mixing matrix corrects rates' differences and ratios, not this metric"
    if block.get("reason"):
        return str(block["reason"])
    if correction is None or not correction.get("corrected"):
        return str((correction or {}).get("reason") or "no corrected estimate")
    return None


def _corrected(
    entry: dict[str, Any], correction: Mapping[str, Any] | None, block: Mapping[str, Any], settings: _Settings
) -> dict[str, Any] | None:
    """The entry with the corrected value, interval and family over the groups the measured result judged."""
    assert correction is not None
    summary, bases = CORRECTABLE[entry["metric"]]
    fitted = correction["corrected"]
    groups = [str(g) for g in block["groups"]]
    left_out = {_label(g) for g in [*entry.get("excluded_groups", []), *entry.get("insufficient_groups", [])]}
    kept = [i for i, g in enumerate(groups) if g not in left_out]
    if len(kept) < 2:
        return None
    index = [b * len(groups) + i for b in range(len(bases)) for i in kept]
    estimates = np.array([fitted["by_group"][base][groups[i]]["value"] for base in bases for i in kept], dtype=float)
    covariance = np.asarray(fitted["covariance"], dtype=float)[np.ix_(index, index)]
    family = corrected_family(estimates, covariance, [len(kept)] * len(bases), summary=summary, seed=settings.seed)
    if family is None:
        return None
    point = float(np.max(family.gap))
    value = float(np.exp(-point)) if summary == "ratio" else point
    low, high = summary_bounds(family, family.critical(settings.level), summary, bases, value)
    first = estimates[: len(kept)]
    worst_se = float(family.se[int(np.argmax(family.gap))])
    return entry | {
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "_family": family,
        "_summary": summary,
        "max_group": {entry["slicing"][0]: groups[kept[int(np.argmax(first))]]},
        "min_group": {entry["slicing"][0]: groups[kept[int(np.argmin(first))]]},
        "standard_error": worst_se * value if summary == "ratio" else worst_se,
        "interval_method": CORRECTED_METHOD,
        "judged": "corrected",
        "naive": {k: entry[k] for k in ("value", "ci_low", "ci_high")},
    }


def _label(group: Any) -> str:
    """A group of the one-attribute slicing as its label ({race: Black} -> Black)."""
    if isinstance(group, Mapping):
        return str(next(iter(group.values())))
    return str(group)
