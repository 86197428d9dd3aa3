"""Rates shown by parts: which parts of a withheld group's rates can be published after all.

A binary group's rates are one part: any hidden count withholds them all. A multiclass group's rates are one
part per class: class c's one-vs-rest rates (predicted share, recall, FPR, ...) with the group's size state
exactly four sums of its K x K cells, its one-vs-rest TP, FN, FP and TN. So a small cell withholds what it
makes a count of, not every rate of the group.

The pattern over the K x K cells (:func:`fairgate.report.disclosure.suppress`) withholds every rate of a group
with a hidden cell. Each part of such a group (largest group first) is then published again when its four
sums, with everything published so far, let no protected cell be worked out, nor bounded under k:

- protected are the cells from 1 to k-1 (a matrix cell, a class's sum, a margin the report does not print),
  every hidden size, and every sum of a part still withheld;
- a protected cell under k (a withheld part's zero included) keeps an upper bound of at least k over the
  non-negative solutions, as in the pattern.

A part with a sum from 1 to k-1 is never published (the primary rule); the parts of the largest groups are
tried first, at most :data:`TRIES` of them. Publishing only ever adds equations,
so each check is against the final publication of everything released before it, and the result is safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from scipy.sparse import csr_matrix
from threadpoolctl import threadpool_limits

from fairgate.report.bounds import Programme, below
from fairgate.report.disclosure import _known
from fairgate.report.tables import TOL, CellKey, Line, Tables, blocks, derivable, equations, group_of, order

#: How many withheld parts are tried (the largest groups' first): each try is a rank test and bounds over the
#: linked tables, so an audit with many withheld groups would otherwise take minutes.
TRIES = 24

#: One part of a group's rates: the group's size cell and the cells of the sums it states.
Part = tuple[CellKey, tuple[CellKey, ...]]


def release(tables: Tables, hidden: Iterable[CellKey], parts: Sequence[Part], k: int) -> set[int]:
    """The indices of ``parts`` that can be published, given the ``hidden`` cells of the pattern.

    ``tables`` holds the derived sums (:meth:`Tables.of` with ``derived``); ``hidden`` the pattern's cells.
    A part is withheld when its group has a hidden cell. A withheld part is published when that lets no cell
    from 1 to k-1 nor hidden size be worked out, and no hidden cell under k be bounded under k; with it, every
    withheld part its sums (and those published before) determine (it states nothing more).

    Its small dense algebra runs on one BLAS thread, as the pattern's (threads only contend on these matrices).
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _release(tables, set(hidden), parts, k)


def _release(tables: Tables, hidden: set[CellKey], parts: Sequence[Part], k: int) -> set[int]:
    """:func:`release`'s trials, largest group first."""
    withheld = [i for i, (group, _) in enumerate(parts) if any(group_of(c) == group for c in hidden)]
    unknown = hidden | (set(tables.values) - tables.published)
    unknown |= {c for i in withheld for c in parts[i][1] if c in tables.published}
    small = {c for c, v in tables.values.items() if v is not None and 0 < v < k}
    protected = {c for c in unknown if c in small or ("#" not in c[1] and c in tables.published)}
    targets = {c for c in unknown if (tables.values.get(c) or 0.0) < k and (c in tables.published or c in small)}
    lines = tuple(tables.lines)
    released = _determined(withheld, parts, derivable(unknown, lines))
    unknown -= {c for i in released for c in parts[i][1]}
    by_size = sorted(withheld, key=lambda i: (-(tables.values.get(parts[i][0]) or 0.0), order(parts[i][0])))
    candidates = [
        i
        for i in by_size
        if i not in released and parts[i][0] not in unknown and not any(c in small for c in parts[i][1])
    ]  # not a hidden size, nor a sum from 1 to k-1 (the primary rule)
    for i in candidates[:TRIES]:
        cells = parts[i][1]
        if i in released:
            continue
        trial = unknown - set(cells)
        found = derivable(trial, lines)
        if found & protected or _bounded_below(lines, trial, targets & trial, tables.values, k):
            continue
        more = {i} | _determined([j for j in withheld if j not in released], parts, found)
        released |= more
        unknown = trial - {c for j in more for c in parts[j][1]}
    return released


def _determined(candidates: Iterable[int], parts: Sequence[Part], known: set[CellKey]) -> set[int]:
    """The parts whose every sum is among the ``known`` (derivable) cells."""
    return {i for i in candidates if all(c in known for c in parts[i][1])}


def _bounded_below(
    lines: tuple[Line, ...],
    unknown: set[CellKey],
    targets: set[CellKey],
    values: Mapping[CellKey, float | None],
    k: int,
) -> bool:
    """Whether a hidden cell of ``targets`` has an upper bound under k over the non-negative solutions."""
    rows = [line for line in lines if any(m in unknown for m in line.members)]
    for block_unknown, block_rows in blocks(unknown, rows):
        targets_here = [c for c in block_unknown if c in targets]
        if not targets or not block_rows:
            continue
        matrix = csr_matrix(equations(block_unknown, block_rows))
        rhs = np.array([-_known(line, unknown, values) for line in block_rows])
        programme = Programme(matrix, rhs)
        safe: set[CellKey] = set()
        for cell in targets_here:
            if cell in safe:
                continue
            bound = programme.upper(block_unknown.index(cell))
            if below(bound, k):
                return True
            safe.update(c for c, x in zip(block_unknown, bound.solution, strict=False) if x >= k - TOL)
    return False
