"""Audit against an external label: how often the audit's labels and an independent label disagree, per group.

An audit can only be as fair as its labels. When the labels under-record one group's favourable outcomes (a
"did not repay" that was in truth a loan never given a chance, a re-arrest that reflects policing), a model that
reproduces them looks accurate and fair while it is not: the label's bias masks true unfairness. An external
label for the same people (an independent bureau outcome, a reviewer's judgement) shows it: where the two labels
disagree more often in one group than in another, at least one of them treats the groups differently.

The *disagreement cube* is the ordinary cube of the aligned people with the audit's label in the decision's place
and the external label in the truth's place (``fairgate.build_cube`` with :func:`disagreement_policy`), so its
false positives and false negatives are the two ways the labels disagree. Per group: the disagreement rate with
its Wilson interval, and each direction apart. The finding ``label_disagreement_difference`` (the largest gap in
disagreement rate between the groups of a slicing) is a result like every other: its pairwise family (Wilson-type
variances, exact tails for few events) is judged in the audit's Holm family against ``labels.
label_disagreement_difference``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from fairgate.engine.columns import PRED, TRUE, WEIGHT
from fairgate.engine.cube import Cube
from fairgate.engine.exact import rate_variance
from fairgate.engine.groups import declared_for
from fairgate.engine.slicing import slicing_groups
from fairgate.engine.stats import Component, pair_family, wilson_interval, z_value
from fairgate.engine.summaries import as_number, summary_bounds
from fairgate.policy.core import Policy
from fairgate.policy.labels import LABEL_DISAGREEMENT

#: What the finding means, in words (the report's paragraph and the document's ``label_bias.meaning``).
MEANING = (
    "The audit's labels and the external labels disagree more often for some groups than for others. A label "
    "that under-records one group's favourable outcomes makes a model that copies it look accurate and fair for "
    "that group: the labels' bias hides true unfairness. The metrics measured against the audit's labels should "
    "be read with the external labels' values beside them, and the labels' provenance checked for that group."
)


def disagreement_policy(policy: Policy) -> Policy:
    """The policy whose cube of (audit label as decision, external label as truth) counts the disagreements."""
    columns = policy.columns.model_copy(update={"y_pred": "__audit_label", "y_true": "__external_label"})
    return policy.model_copy(update={"columns": columns})


def disagreement_groups(cube: Cube, slicing: tuple[str, ...], policy: Policy) -> list[dict[str, Any]]:
    """Per group of the slicing: size, disagreements (each direction apart), rate and Wilson interval."""
    declared = declared_for(policy, slicing)
    groups, index = slicing_groups(cube, slicing, declared)
    cells = cube.cells
    n_groups = groups.height
    weight = cells[WEIGHT].to_numpy()
    truth, label = cells[TRUE].to_numpy(), cells[PRED].to_numpy()
    size = np.bincount(index, weights=weight, minlength=n_groups)
    effective = _aligned_sizes(cube, slicing, groups)
    missed = np.bincount(index, weights=weight * ((truth == 1) & (label == 0)), minlength=n_groups)
    extra = np.bincount(index, weights=weight * ((truth == 0) & (label == 1)), minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(size > 0, (missed + extra) / np.where(size > 0, size, 1.0), np.nan)
    low, high = wilson_interval(rate * effective, effective, z_value(policy.reporting.confidence_level))
    names = [{k: str(v) for k, v in row.items() if k in slicing} for row in groups.iter_rows(named=True)]
    return [
        {
            "slicing": list(slicing),
            "group": names[g],
            "n": float(size[g]),
            "n_effective": float(effective[g]),
            "disagreements": float(missed[g] + extra[g]),
            "external_favourable_audit_not": float(missed[g]),
            "audit_favourable_external_not": float(extra[g]),
            "rate": as_number(rate[g]),
            "ci_low": as_number(low[g]),
            "ci_high": as_number(high[g]),
            "sufficient": bool(effective[g] >= policy.intersectional_analysis.min_group_size),
        }
        for g in range(n_groups)
    ]


def _aligned_sizes(cube: Cube, slicing: tuple[str, ...], groups: Any) -> np.ndarray:
    """Kish effective sizes of the slicing's groups in the order of ``slicing_groups`` (0 for empty groups)."""
    keys = list(slicing)
    squares = cube.squares_column(keys)
    sums = cube.cells.group_by(keys).agg(pl.col(WEIGHT).sum(), pl.col(squares).sum().alias("__sq"))
    joined = groups.join(sums, on=keys, how="left", maintain_order="left")
    w, sq = joined[WEIGHT].fill_null(0.0).to_numpy(), joined["__sq"].fill_null(0.0).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(sq > 0, w**2 / np.where(sq > 0, sq, 1.0), 0.0))


def disagreement_entry(rows: list[dict[str, Any]], policy: Policy) -> dict[str, Any]:
    """The label-bias finding of one slicing, as a result entry for ``judge_results``."""
    slicing = rows[0]["slicing"] if rows else []
    used = [r for r in rows if r["sufficient"]]
    entry: dict[str, Any] = {
        "metric": LABEL_DISAGREEMENT,
        "slicing": slicing,
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "n_groups_judged": len(used),
        "insufficient_groups": [r["group"] for r in rows if not r["sufficient"]],
        "interval_method": "simultaneous intervals of all pairwise differences of Wilson-type rates "
        "(studentized range critical value), folded into the range",
    }
    if len(used) < 2:
        entry["reason"] = f"fewer than 2 groups can be compared ({len(used)} with min_group_size people)"
        return entry
    trials = np.array([r["n_effective"] for r in used])
    rate = np.array([r["rate"] for r in used], dtype=float)
    successes = rate * trials
    variance = rate_variance(successes, trials)
    component = Component(rate, np.empty((0, rate.size)), variance, counts=(successes, trials))
    family = pair_family([component])
    entry["value"] = float(rate.max() - rate.min())
    if family is None:
        entry["reason"] = "the disagreement rates have no spread to judge"
        return entry
    level = policy.reporting.confidence_level
    entry["ci_low"], entry["ci_high"] = summary_bounds(family, family.critical(level), "difference", (), entry["value"])
    entry["_family"], entry["_summary"] = family, "difference"
    entry["worst_group"] = used[int(np.argmax(rate))]["group"]
    entry["best_group"] = used[int(np.argmin(rate))]["group"]
    return entry


def label_bias(cube: Cube, policy: Policy) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per-group disagreement rows and the finding's entries, on each one-attribute slicing of the policy."""
    rows, entries = [], []
    for attribute in policy.sensitive_attributes:
        groups = disagreement_groups(cube, (attribute.name,), policy)
        rows.extend(groups)
        entries.append(disagreement_entry(groups, policy))
    return rows, entries
