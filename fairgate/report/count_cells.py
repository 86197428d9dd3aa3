"""A document's confusion counts as the small-cell rule sees them, given by its kind's registry entry.

A binary group's TP, FP, TN, FN; a multiclass group's K x K cells, with each class's one-vs-rest TP, FN, FP and
TN as sums of them (derived counts), and the parts a report shows of a group, each with the counts it states
(its units: a class's rates, the matrix, the accuracy, the decision "adverse or not"). The same functions of
:mod:`fairgate.report.suppress` decide for every kind; only these cells differ.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from fairgate.document.document import AuditDocument
from fairgate.document.multiclass import MulticlassBlock
from fairgate.engine.kinds import kind_of
from fairgate.engine.labels import group_key
from fairgate.engine.multiclass.catalogue import binary_name
from fairgate.report.disclosure import CellKey, Counts

#: The confusion counts of a binary group (and of a class against the rest), favourable outcome = positive.
COUNT_NAMES = ("tp", "fp", "tn", "fn")


#: A printed gap of one unit's rate between two named groups: (slicing, (one side, the other), unit).
UnitGap = tuple[list[str], tuple[Mapping[str, object], Mapping[str, object]], str]


@dataclass(frozen=True)
class CountCells:
    """A document's confusion counts as the small-cell rule sees them, from its kind's registry entry.

    ``counts``: each group's cells (TP, FP, TN, FN; a multiclass group's K x K cells). ``derived``: counts that
    are sums of cells (a class's one-vs-rest TP, FP, FN, TN), published and protected like the cells.
    ``units``: what a report shows of a group, each with the counts it states (a class's rates state its
    one-vs-rest counts; the matrix its cells); empty: a group's rates are shown or withheld as one.
    ``gaps``: the printed gaps, each of one unit's rate (:data:`UnitGap`).
    """

    counts: Counts
    derived: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    units: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    gaps: tuple[UnitGap, ...] = ()

    @property
    def rates(self) -> dict[str, tuple[str, ...]]:
        """The units that state rates (a class's, the adverse decision's), each with the sums it states."""
        return {u: names for u, names in self.units.items() if u not in ("matrix", "accuracy")}


def document_count_cells(document: AuditDocument) -> CountCells:
    """The document's :class:`CountCells`, as its kind's registry entry gives them (none for a kind without)."""
    where = kind_of(document.task).count_cells
    if where is None:
        return CountCells({})
    module, function = where.split(":")
    cells: CountCells = getattr(importlib.import_module(module), function)(document)
    return cells


def class_unit(index: int) -> str:
    """The unit of a multiclass group's one-vs-rest rates of the class at ``index``."""
    return f"class:{index}"


def multiclass_count_cells(document: AuditDocument) -> CountCells:
    """A multiclass document's K x K cells, each class's one-vs-rest counts, and the units a report shows.

    Class c's rates (predicted share, recall, FPR, ...) with the group's size state its one-vs-rest TP
    (cell c>c), FN (row c but the diagonal), FP (column c but the diagonal) and TN (the rest): those four are
    its unit. The matrix states every cell, the accuracy every class's TP, and the decision "adverse or not"
    (``adverse_classes``) its own four sums.
    """
    block = document.multiclass
    if block is None:
        raise ValueError("a multiclass document needs its multiclass block")
    k = len(block.classes)
    cells = [(i, j) for i in range(k) for j in range(k)]
    derived: dict[str, tuple[str, ...]] = {}
    units: dict[str, tuple[str, ...]] = {"matrix": tuple(f"{i}>{j}" for i, j in cells)}
    for c in range(k):
        kinds = {"tp": (True, True), "fp": (False, True), "tn": (False, False), "fn": (True, False)}
        for name, (truth, decision) in kinds.items():
            derived[f"c{c}:{name}"] = tuple(f"{i}>{j}" for i, j in cells if (i == c) == truth and (j == c) == decision)
        units[class_unit(c)] = tuple(f"c{c}:{name}" for name in COUNT_NAMES)
    units["accuracy"] = tuple(f"c{c}:tp" for c in range(k))
    if block.adverse_classes:
        favourable = {i for i, name in enumerate(block.classes) if name not in block.adverse_classes}
        for name, (truth, decision) in {"tp": (True, True), "fp": (False, True), "tn": (False, False)}.items():
            derived[f"fav:{name}"] = tuple(
                f"{i}>{j}" for i, j in cells if (i in favourable) == truth and (j in favourable) == decision
            )
        derived["fav:fn"] = tuple(f"{i}>{j}" for i, j in cells if i in favourable and j not in favourable)
        units["adverse"] = tuple(f"fav:{name}" for name in COUNT_NAMES)
    return CountCells(multiclass_counts(block), derived, units, tuple(_class_gaps(document)))


def _class_gaps(document: AuditDocument) -> list[UnitGap]:
    """The judged gaps a multiclass document prints: each result's, of its worst class (or the adverse decision).

    As rule 3 of the binary rule, the judged results' sides; the per-class summaries' extreme groups are not
    closed here (the attacker reads their gaps as equations and recovers nothing on the demos).
    """
    block = document.multiclass
    assert block is not None
    out: list[UnitGap] = []
    every_class = [class_unit(i) for i in range(len(block.classes))]
    for r in document.results:
        if not (r.slicing and r.worst_group and r.best_group):
            continue
        worst = next((s.worst_class for s in block.summaries if s.metric == r.metric and s.slicing == r.slicing), None)
        if binary_name(r.metric) is not None:
            units = ["adverse"]
        elif worst in block.classes:
            units = [class_unit(block.classes.index(worst))]
        else:  # a gap of a class not stated: every class's rates, as a judged side's
            units = every_class
        out += [(list(r.slicing), (r.worst_group, r.best_group), unit) for unit in units]
    return out


def multiclass_counts(block: MulticlassBlock) -> Counts:
    """Each multiclass group's confusion cells (true class i predicted j), None where the block hides them."""
    out: dict[CellKey, dict[str, float | None]] = {}
    k = len(block.classes)
    for g in block.groups:
        if not g.slicing:
            continue
        matrix = g.confusion or [[None] * k for _ in range(k)]
        out[(frozenset(g.slicing), group_key(g.group))] = {f"{i}>{j}": matrix[i][j] for i in range(k) for j in range(k)}
    return out
