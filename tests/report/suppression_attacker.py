"""An attacker on the published group tables, written independently of fairgate.report.disclosure.

It knows what a reader of the report knows: every slicing's group labels (suppressed rows are listed, as
"suppressed"), each visible group's size, the population size, and that every table is a margin of the same
people. It tries two attacks on the sizes (a rate with its size is a count, and every count is a sum over the
same tables, so a size it cannot find is a count it cannot find either):

- ``subtraction``: every parent (a published or already derived cell, or the population) minus any subset of its
  published or derived children in any finer table, and the other way round (a parent as the sum of its
  children), repeated until nothing new is found;
- ``linear``: the exact test. People are split into atoms (one per combination of every attribute's values); a
  published cell is the sum of its atoms; a hidden cell is derivable iff its atom vector lies in the row space
  of the published cells' vectors (numpy rank).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Cell = tuple[frozenset[str], str]  # (attributes, canonical group text)


def cell_of(slicing: Sequence[str], group: Mapping[str, str]) -> Cell:
    return frozenset(slicing), json.dumps(sorted((str(a), str(v)) for a, v in group.items()))


POPULATION = cell_of([], {})


@dataclass
class Publication:
    """What the report publishes: each table's group list, the visible sizes and the population size."""

    groups: dict[Cell, dict[str, str]]  # every listed group (visible or not), with its values
    visible: dict[Cell, float]  # published sizes (the population included)

    @property
    def hidden(self) -> set[Cell]:
        return set(self.groups) - set(self.visible)


def subtraction(pub: Publication) -> dict[Cell, float]:
    """Hidden cells found by differences and sums of parents and children, iterated to a fixed point."""
    known = dict(pub.visible)
    # Every cell the tables are sums of: the listed groups and their margins on fewer attributes, published
    # or not (a margin the report does not print can still be summed up from a finer table, then subtracted).
    cells: dict[Cell, dict[str, str]] = {POPULATION: {}}
    for group in pub.groups.values():
        for size in range(1, len(group) + 1):
            for subset in itertools.combinations(sorted(group), size):
                margin = {a: group[a] for a in subset}
                cells.setdefault(cell_of(subset, margin), margin)
    tables: dict[frozenset[str], list[Cell]] = {}
    for c in cells:
        tables.setdefault(c[0], []).append(c)
    found: dict[Cell, float] = {}
    changed = True
    while changed:
        changed = False
        for parent, values in cells.items():
            for finer, members in tables.items():
                if not parent[0] < finer:
                    continue
                children = [c for c in members if all(cells[c].get(a) == v for a, v in values.items())]
                unknown = [c for c in children if c not in known]
                if parent in known and len(unknown) == 1:
                    # The parent minus every other (published or derived) child: any subset that leaves one.
                    value = known[parent] - sum(known[c] for c in children if c in known)
                    known[unknown[0]] = found[unknown[0]] = value
                    changed = True
                elif parent not in known and children and not unknown:
                    known[parent] = found[parent] = sum(known[c] for c in children)
                    changed = True
    return {c: v for c, v in found.items() if c in pub.hidden}


def linear(pub: Publication, levels: Mapping[str, Sequence[str]], targets: Iterable[Cell] = ()) -> set[Cell]:
    """Hidden cells (and ``targets``, e.g. margins the report does not print) whose atom vector is in the span
    of the published cells' vectors."""
    names = sorted(levels)
    atoms = list(itertools.product(*(levels[a] for a in names)))

    def vector(cell: Cell) -> np.ndarray:
        values = dict(json.loads(cell[1]))
        return np.array([all(atom[names.index(a)] == v for a, v in values.items()) for atom in atoms], dtype=float)

    # A combination a table does not list is empty, and the reader knows it: a published zero.
    listed = set(pub.groups)
    zeros = []
    for attributes in {c[0] for c in pub.groups}:
        ordered = sorted(attributes)
        for combo in itertools.product(*(levels[a] for a in ordered)):
            cell = cell_of(ordered, dict(zip(ordered, combo, strict=True)))
            if cell not in listed:
                zeros.append(cell)
    published = np.array([vector(c) for c in [*sorted(pub.visible, key=str), *zeros]])
    rank = np.linalg.matrix_rank(published)
    return {
        c
        for c in sorted(pub.hidden | set(targets), key=str)
        if np.linalg.matrix_rank(np.vstack([published, vector(c)])) == rank
    }


def from_view(view: object, n_rows: float) -> Publication:
    """The publication as the report's view model states it (tables, sizes and the population)."""
    groups: dict[Cell, dict[str, str]] = {}
    visible: dict[Cell, float] = {POPULATION: float(n_rows)}
    for section in view.sections:  # type: ignore[attr-defined]
        for g in section.groups:
            c = cell_of(section.attributes, g.group)
            groups[c] = dict(g.group)
            if g.n is not None:
                visible[c] = float(g.n)
    return Publication(groups, visible)


def from_rows(
    rows: Sequence[tuple[Sequence[str], Mapping[str, str], float]], hidden: set[Cell], n_rows: float
) -> Publication:
    """A publication from (slicing, group, n) rows with a given set of hidden cells (e.g. the old rule's)."""
    groups = {cell_of(s, g): {str(a): str(v) for a, v in g.items()} for s, g, _ in rows if s}
    visible = {cell_of(s, g): float(n) for s, g, n in rows if s and cell_of(s, g) not in hidden}
    visible[POPULATION] = float(n_rows)
    return Publication(groups, visible)
