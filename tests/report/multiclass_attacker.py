"""What a multiclass report publishes, as the attacker of suppression_attacker.py reads it.

Written apart from fairgate.report.suppress: a multiclass group's people split by true class i and predicted
class j (the K x K outcomes "i>j"). A reader sees, per slicing, every group's label, each printed size, each
printed confusion matrix (its cells), and for each class c whose rates a group prints, that class's one-vs-rest
rates (predicted share, base rate, recall, FNR, FPR, precision) read at full precision: each an equation over
the group's cells. The population's matrix is taken as published (every class total over all groups), and a
judged gap between two named groups gives one side's rate from the other's. ``adverse.`` rates (the decision
"not an adverse class") of groups the report does not mark are published in the JSON's group metrics.
"""

from __future__ import annotations

import re
from typing import Any

from suppression_attacker import POPULATION, Publication, cell_of

from fairgate.report.format import group_label, slicing_key


def outcomes(k: int) -> tuple[str, ...]:
    return tuple(f"{i}>{j}" for i in range(k) for j in range(k))


def class_sums(k: int, c: int) -> dict[str, tuple[str, ...]]:
    """Class c's one-vs-rest counts as sums of cells."""
    cells = [(i, j) for i in range(k) for j in range(k)]
    pick = {
        "tp": lambda i, j: i == c and j == c,
        "fn": lambda i, j: i == c and j != c,
        "fp": lambda i, j: i != c and j == c,
        "tn": lambda i, j: i != c and j != c,
    }
    return {name: tuple(f"{i}>{j}" for i, j in cells if f(i, j)) for name, f in pick.items()}


def rate_defs(k: int, favourable: set[int]) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Every rate a multiclass report or its JSON prints, as (numerator cells, denominator cells)."""
    out: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    every = outcomes(k)
    for c in range(k):
        s = class_sums(k, c)
        out[f"selection_rate[{c}]"] = (s["tp"] + s["fp"], every)
        out[f"base_rate[{c}]"] = (s["tp"] + s["fn"], every)
        out[f"true_positive_rate[{c}]"] = (s["tp"], s["tp"] + s["fn"])
        out[f"false_negative_rate[{c}]"] = (s["fn"], s["tp"] + s["fn"])
        out[f"false_positive_rate[{c}]"] = (s["fp"], s["fp"] + s["tn"])
        out[f"positive_predictive_value[{c}]"] = (s["tp"], s["tp"] + s["fp"])
    out["accuracy"] = (tuple(f"{c}>{c}" for c in range(k)), every)
    fav = tuple(f"{i}>{j}" for i in range(k) for j in range(k) if j in favourable)
    fav_truth_not = tuple(f"{i}>{j}" for i in range(k) for j in range(k) if i not in favourable)
    out["adverse.selection_rate"] = (fav, every)
    out["adverse.false_positive_rate"] = (tuple(o for o in fav if o in fav_truth_not), fav_truth_not)
    return out


RATE_NAMES = (
    "selection_rate",
    "base_rate",
    "true_positive_rate",
    "false_negative_rate",
    "false_positive_rate",
    "positive_predictive_value",
)


def publication(view: Any, doc: Any, marked: Any = None) -> Publication:
    """The publication of a multiclass report's view (its kind pages) and document.

    ``marked(slicing, group)``: whether the report marks the group (its JSON group metrics then null); the
    ``adverse.`` rates of an unmarked group are published.
    """
    block = doc.multiclass
    k = len(block.classes)
    favourable = {i for i, c in enumerate(block.classes) if c not in (block.adverse_classes or [])}
    pub = Publication({}, {POPULATION: float(doc.n_rows)}, {}, {}, True, outcomes=outcomes(k))
    pub.rate_defs = rate_defs(k, favourable)
    pages = {p.key: p for p in view.kind_pages.pages}
    for g in block.groups:
        if g.slicing:
            _read_group(pub, g, pages[slicing_key(list(g.slicing))], k)
        else:
            pub.counts |= _cells(cell_of([], {}), g)
    if marked is not None:
        for entry in doc.groups:
            if entry.slicing and not marked(entry.slicing, entry.group):
                for rate in ("adverse.selection_rate", "adverse.false_positive_rate"):
                    if rate in entry.metrics and entry.metrics[rate].value is not None:
                        pub.rates[(cell_of(entry.slicing, entry.group), rate)] = entry.metrics[rate].value
    return pub


def _cells(cell: Any, g: Any) -> dict[Any, float]:
    return {(cell, f"{i}>{j}"): float(v) for i, row in enumerate(g.confusion) for j, v in enumerate(row)}


def _read_group(pub: Publication, g: Any, page: Any, k: int) -> None:
    """One group's printed size, matrix, accuracy and classes' rates (each class printed in any rate table)."""
    cell = cell_of(g.slicing, g.group)
    pub.groups[cell] = dict(g.group)
    label = group_label(g.group, list(g.slicing))
    rows = [next(r for r in table.rows if r.group_label == label) for table in page.tables]
    if re.fullmatch(r"[0-9,]+", rows[0].n_text):
        assert float(rows[0].n_text.replace(",", "")) == g.n
        pub.visible[cell] = float(g.n)
    for confusion in page.confusions:
        if confusion.group_label == label and confusion.rows:
            pub.counts |= _cells(cell, g)
            if confusion.accuracy_text != "–":
                pub.rates[(cell, "accuracy")] = g.accuracy.value
    printed = (cell, "0>0") in pub.counts  # a printed matrix states every class's rates
    for c in range(k):
        if printed or any(row.cells[c] != "–" for row in rows):
            for rate in RATE_NAMES:
                if g.rates[rate][c].value is not None:
                    pub.rates[(cell, f"{rate}[{c}]")] = g.rates[rate][c].value


def with_class_gaps(pub: Publication, doc: Any) -> Publication:
    """Each printed per-class gap (difference or ratio) between two named groups: one side's rate from the
    other's (the attacker keeps the candidate equal to the truth, as a reader who knows which side is worse);
    the adverse results' gaps likewise."""
    block = doc.multiclass
    truth = {
        (cell_of(g.slicing, g.group), f"{rate}[{c}]"): g.rates[rate][c].value
        for g in block.groups
        for rate in RATE_NAMES
        for c in range(len(block.classes))
    }
    truth |= {
        (cell_of(g.slicing, g.group), m): e.value for g in doc.groups for m, e in g.metrics.items() if "adverse" in m
    }
    gaps = []
    for s in block.summaries:
        for name, v in s.by_class.items():
            if s.slicing and v.max_group and v.min_group and v.value is not None:
                c = block.classes.index(name)
                gaps += [(s.slicing, v.max_group, v.min_group, f"{base}[{c}]", v.value) for base in s.bases]
    adverse = {"adverse.disparate_impact_ratio": "adverse.selection_rate"}
    adverse["adverse.false_positive_rate_difference"] = "adverse.false_positive_rate"
    for r in doc.results:
        if r.metric in adverse and r.worst_group and r.best_group and r.value is not None:
            gaps.append((r.slicing, r.worst_group, r.best_group, adverse[r.metric], r.value))
    changed = True
    while changed:
        changed = False
        for slicing, a, b, rate, value in gaps:
            sides = (cell_of(slicing, a), cell_of(slicing, b))
            for known, other in (sides, sides[::-1]):
                if (known, rate) not in pub.rates or (other, rate) in pub.rates or (other, rate) not in truth:
                    continue
                x, true = pub.rates[(known, rate)], truth[(other, rate)]
                if true is None:
                    continue
                candidates = [x + value, x - value, x * value] + ([x / value] if value else [])
                derived = min(candidates, key=lambda d: abs(d - true))
                if abs(derived - true) < 1e-9:
                    pub.rates[(other, rate)] = derived
                    changed = True
    return pub
