"""Complementary small-cell suppression over every published table and margin jointly.

The report publishes, for each slicing (an attribute, a pair, a triple), each group's size and rates (and so,
with the size, its counts), and the whole population's size. These tables are linked: a group of one slicing is
the sum of its children in every finer slicing that contains it, and the population is the sum of the groups of
every slicing (rows with a missing attribute are left out of the cube, so of every slicing alike). A group under
``min_cell_size`` is suppressed (primary); but an attacker who knows the published cells and these sums can
solve for a suppressed one (Asian 32 minus Asian-Male 30 gives Asian-Female 2). So more cells are suppressed
(complementary) until no protected cell is a linear function of the published ones.

Cells are identified by (attribute set, group key). Margins the report does not publish (e.g. the pair
(sex, age_cat) when only the triple is audited) are *virtual* cells: unknowns to the attacker, which link the
tables they are a margin of; a virtual cell under ``min_cell_size`` is protected too (deriving it is as bad as
deriving a published one).

The test "is a suppressed cell derivable" is exact linear algebra: with the unknowns U (suppressed and virtual
cells) and one equation per sum (``total - sum(parts) = 0``, published terms moved to the right), a cell is
derivable iff its unit vector lies in the row space of the equations, i.e. iff every vector of the null space
is zero on it. The null space comes from an SVD per connected block of unknowns.

Counts are cells too. Each group's confusion counts (TP, FP, TN, FN, or a multiclass K x K matrix) form a
frequency table under its size: a count cell of every group, one table per count (the same margins as the sizes:
the FN of an attribute's group is the sum of its intersections' FN), and one sum per group (its size is the sum of
its counts). The threshold rule applies to each count cell as to each size (1 to k-1 is primary-suppressed), a
hidden size hides its group's counts, and complementary suppression runs over sizes and counts jointly.

Counts are not negative, so linear algebra is not all an attacker has: hidden cells whose sum is published as 0
are each 0, and a sum under k bounds each part under k. So every hidden cell with a value under k (a zero count
of a hidden group included) must keep an upper bound of at least k over the non-negative solutions of the sums
(a linear programme per cell, :mod:`fairgate.report.bounds`); one that does not gets another complement from the
sums that bind it.

A judged result prints the gap between two named groups: with one side withheld and the other shown, the
withheld side's rate would follow, so the shown side is withheld too (``pairs``). A rate a judged gap reveals
whatever is withheld is a weighted line of the tables (``rate * size - numerator = 0``): counts being whole, the
rate p/q in lowest terms leaves the size a multiple of q, so a withheld size with such a rate must keep a second
multiple in range (:func:`_multiple`), one that puts the numerator and the rest at k or more.

Choosing which cell to add hides the least (:meth:`_Run.cost`): a cell of a group already withheld, then a count
of a shown group, the fewest people whose rates go (the group's, and a judged side's shown partners') and then
the smallest cell of at least k first (a zero or small cell widens no bound; the finest slicing first on a
tie, then by key, so the pattern is deterministic), of an equation that exposes a protected cell. The whole
population is never suppressed.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from threadpoolctl import threadpool_limits

from fairgate.report.bounds import Programme, below
from fairgate.report.tables import (
    POPULATION,
    TOL,
    CellKey,
    Counts,
    Line,
    Tables,
    derivable,
    equations,
    group_of,
    null_space,
    order,
    split,
    witness,
)

__all__ = [
    "POPULATION",
    "CellKey",
    "Counts",
    "Line",
    "Pattern",
    "Tables",
    "clear_patterns",
    "derivable",
    "suppress",
]


@dataclass(frozen=True)
class Pattern:
    """A suppression pattern: the published cells hidden, and which of them are under the minimum."""

    suppressed: frozenset[CellKey]
    primary: frozenset[CellKey]


def _multiple(
    numerator: tuple[CellKey, ...], denominator: tuple[CellKey, ...], values: Mapping[CellKey, float | None], k: int
) -> float:
    """The value a revealed rate's denominator must be able to reach.

    (m + 1) * q at least, with m * q the true denominator, and enough that the numerator m * p and the rest
    m * (q - p) can each reach k.

    >>> cells = [(frozenset("a"), f"x#{n}") for n in ("tp", "fn")]
    >>> _multiple((cells[0],), tuple(cells), {cells[0]: 63.0, cells[1]: 7.0}, 10)  # 63/70 = 9/10: m = 7
    100.0
    """
    num = sum(float(values[c] or 0.0) for c in numerator)
    den = sum(float(values[c] or 0.0) for c in denominator)
    if any(values[c] is None for c in denominator) or den <= 0 or not float(den).is_integer():
        return float(k)  # weighted counts or a read-back JSON: the threshold of a small cell
    p, q = round(num), round(den)
    divisor = math.gcd(p, q)
    p, q = p // divisor, q // divisor
    m = max(divisor + 1, *(math.ceil(k / share) for share in (p, q - p) if share > 0))
    return float(m * q)


def suppress(
    tables: Tables,
    min_cell_size: int,
    pairs: Iterable[tuple[CellKey, CellKey]] = (),
    named: Iterable[CellKey] = (),
) -> Pattern:
    """The suppression pattern (see :func:`_suppress`), its small dense algebra on one BLAS thread.

    ``named`` are the groups a failing judged result names: their cells are hidden last of all.

    The matrices have a few hundred rows: threads only contend (ten times slower on a loaded machine).
    A run asks for the same pattern more than once (the JSON document and the report each suppress the
    document's groups): the last few patterns are kept by their full input, so the second ask is free.
    """
    frozen_pairs, frozen_named = frozenset(pairs), frozenset(named)
    key = (*_tables_key(tables), min_cell_size, frozen_pairs, frozen_named)
    with _PATTERNS_LOCK:
        pattern = _PATTERNS.get(key)
    if pattern is None:
        with threadpool_limits(limits=1, user_api="blas"):
            pattern = _suppress(tables, min_cell_size, frozen_pairs, frozen_named)
        with _PATTERNS_LOCK:
            _PATTERNS[key] = pattern
            while len(_PATTERNS) > _KEPT_PATTERNS:
                del _PATTERNS[next(iter(_PATTERNS))]
    return pattern


#: The patterns last computed, by their full input (a :class:`Pattern` is immutable, so it can be shared).
_PATTERNS: dict[tuple[object, ...], Pattern] = {}
_KEPT_PATTERNS = 8
_PATTERNS_LOCK = threading.Lock()  # a run's tasks may suppress from several threads


def _tables_key(tables: Tables) -> tuple[object, ...]:
    """Everything of ``tables`` a pattern depends on, hashable (the dicts as their items, in their order)."""
    return tuple(tables.values.items()), tables.published, tables.lines, tuple(tables.counts_of.items())


def clear_patterns() -> None:
    """Forget the patterns kept by :func:`suppress` (benches time a fresh computation)."""
    _PATTERNS.clear()


def _suppress(
    tables: Tables,
    min_cell_size: int,
    pairs: frozenset[tuple[CellKey, CellKey]] = frozenset(),
    named: frozenset[CellKey] = frozenset(),
) -> Pattern:
    """Primary suppression under ``min_cell_size``, then complementary suppression to a fixed point.

    Every suppressed cell and every virtual margin under the minimum is protected: at the end none of them is
    derivable from the published cells, and none with a value under the minimum has an upper bound under it.
    Cells whose value is unknown (already suppressed in a suppressed JSON) stay suppressed; empty groups (n = 0)
    and zero counts of published groups are published.
    """
    run = _Run(tables, min_cell_size, pairs, named)
    # The exact (linear) part of the tables first, pruned of what later complements made redundant; then the
    # bounds and the judged results' partners, which only ever add complements (each bound a warm-started programme).
    run.grow_once(tables.lines, dict)
    complements = {c for c in run.unknown if c in tables.published and c not in run.primary}
    _prune(tables.lines, run.unknown, run.protected, complements, run.cost)
    run.grow(run.bounded)
    suppressed = frozenset(c for c in run.unknown if c in tables.published)
    return Pattern(suppressed, frozenset(run.primary))


class _Run:
    """The pattern while it grows: the hidden (unknown) cells, the protected ones, the equations."""

    def __init__(
        self,
        tables: Tables,
        k: int,
        pairs: frozenset[tuple[CellKey, CellKey]],
        named: frozenset[CellKey] = frozenset(),
    ) -> None:
        self.tables, self.k, self.pairs, self.named = tables, k, pairs, named
        self.values = dict(tables.values)
        self.thresholds: dict[CellKey, float] = {}
        self.primary = {c for c in tables.published if c[0] and _small(self.values[c], k, unknown=True)}
        virtual = set(self.values) - tables.published
        self.protected = {c for c in virtual if _small(self.values[c], k, unknown=False)}
        self.unknown = set(virtual)
        self.lines = list(tables.lines)
        #: The sides of judged results: withholding one reveals or withholds the other (hidden last).
        self.sides = {side for pair in pairs for side in pair}
        self.partners: dict[CellKey, set[CellKey]] = {}
        for a, b in pairs:
            self.partners.setdefault(a, set()).add(b)
            self.partners.setdefault(b, set()).add(a)
        #: Sizes whose group has a rate published whatever is withheld (a judged gap's, see
        #: ``suppress.revealed_rates``): withheld last, and then with a second whole-number candidate in range.
        self.rated = {line.total for line in tables.lines if line.weights and line.total in tables.counts_of}
        for line in tables.lines:
            if line.total in self.rated:
                rest = tuple(c for c in tables.counts_of[line.total] if c not in line.parts)
                self.thresholds[line.total] = max(
                    self.thresholds.get(line.total, 0.0), _multiple(line.parts, (*line.parts, *rest), self.values, k)
                )
        for cell in sorted(self.primary, key=order):
            self.hide(cell)

    def hide(self, cell: CellKey) -> None:
        for c in (cell, *self.tables.counts_of.get(cell, ())):  # a hidden size hides its group's counts
            self.unknown.add(c)
            self.protected.add(c)

    def cost(self, cell: CellKey) -> tuple[bool, bool, bool, bool, float, float, int, list[str], str]:
        """What a reader loses by hiding a published cell (the cheapest is hidden first).

        A cell of a shown group a failing result names (or of its shown partners) last of all. Then a cell of a
        group already withheld first (its rates are gone already), then a count of a shown group (its
        rates go, its size stays); within each, a size after the counts (a reader keeps a printed size, and a
        shown group's takes its counts with it). Then a cell of at
        least k (a zero widens no bound); of a shown group, the fewest people whose rates go: the group's own and,
        for a side of a judged result, its shown partners' (withheld with it);
        then the smallest cell; on a tie the finest slicing (it carries the least), then by key: deterministic.
        """
        value = self.values[cell] or 0.0
        group = group_of(cell)
        withheld = _withheld(group, self.unknown, self.tables.counts_of)
        size = 0.0 if withheld else self.values.get(group) or 0.0
        is_size = cell == group
        # People whose rates go: the group's, and a judged side's shown partners' (withheld with it).
        people = size + sum(
            self.values.get(p) or 0.0
            for p in self.partners.get(group, ())
            if not withheld and not _withheld(p, self.unknown, self.tables.counts_of)
        )
        partners = {p for p in self.partners.get(group, ()) if not _withheld(p, self.unknown, self.tables.counts_of)}
        named = not withheld and bool({group, *partners} & self.named)
        key = (named, not withheld, is_size, value < self.k, people, value, -len(cell[0]), sorted(cell[0]))
        return (*key, cell[1])

    def bounded(self) -> dict[CellKey, float]:
        """The hidden cells whose upper bound must reach a threshold, with it.

        Hidden cells under k (zero counts of hidden groups included) and small virtual margins: k. A withheld
        size with a revealed rate: a second whole-number candidate (:func:`_multiple`).
        """
        small = {c: float(self.k) for c in self.unknown & self.protected if (self.values[c] or 0.0) < self.k}
        return small | self.thresholds

    def grow_once(self, lines: Iterable[Line], bounds: Callable[[], Mapping[CellKey, float]]) -> None:
        _grow(tuple(lines), self.unknown, self.protected, self.values, self.hide, self.cost, bounds, self.k)

    def grow(self, bounds: Callable[[], Mapping[CellKey, float]]) -> None:
        """Complements until nothing protected is exposed, the judged results' partners included (only grows)."""
        self.grow_once(self.lines, bounds)
        while self.withhold_partners():
            self.grow_once(self.lines, bounds)

    def withhold_partners(self) -> bool:
        """Withhold the shown side of each judged pair whose other side is withheld; whether any was."""
        partners = _partners(self.pairs, self.unknown, self.tables.counts_of)
        for c in sorted(partners, key=order):
            self.hide(c)
        return bool(partners)


def _withheld(cell: CellKey, unknown: set[CellKey], counts_of: Mapping[CellKey, tuple[CellKey, ...]]) -> bool:
    """Whether a group's rates are withheld: its size or one of its counts is hidden."""
    return cell in unknown or any(c in unknown for c in counts_of.get(cell, ()))


def _partners(
    pairs: Iterable[tuple[CellKey, CellKey]], unknown: set[CellKey], counts_of: Mapping[CellKey, tuple[CellKey, ...]]
) -> set[CellKey]:
    """The counts still published of each group paired with a withheld one, to protect.

    A judged result's worst-off and best-off groups are a pair: their printed gap with one's rate gives the other's.
    """
    out: set[CellKey] = set()
    for a, b in pairs:
        for side, other in ((a, b), (b, a)):
            if _withheld(other, unknown, counts_of) and not _withheld(side, unknown, counts_of):
                out.update(c for c in counts_of.get(side, ()) if c not in unknown)
    return out


Cost = Callable[[CellKey], tuple[bool, bool, bool, bool, float, float, int, list[str], str]]


def _grow(
    lines: tuple[Line, ...],
    unknown: set[CellKey],
    protected: set[CellKey],
    values: Mapping[CellKey, float | None],
    hide: Callable[[CellKey], None],
    cost: Cost,
    bounded: Callable[[], Mapping[CellKey, float]],
    k: int,
) -> None:
    """Hide complements until no protected cell is derivable and no small hidden cell is bounded under k."""
    safe: set[CellKey] = set()
    while True:
        _close_singletons(lines, unknown, protected, hide, cost)
        parts = split(unknown, lines)  # the blocks, for the rank test and the bounds alike
        exposed = sorted(derivable(unknown, lines, parts) & protected, key=order)
        costed = _kept_cost(cost)  # nothing is hidden while the complements are chosen
        if exposed:
            chosen = _complements(exposed, unknown, lines, costed)
        else:
            chosen = _bound_complements(parts, unknown, values, bounded(), k, costed, safe)
        if not chosen:  # none exposed (or nothing left to hide: cannot happen while a sum has a published part)
            return
        for cell in sorted(chosen, key=order):
            hide(cell)


def _kept_cost(cost: Cost) -> Cost:
    """``cost``, each cell's computed once (while nothing is hidden, a cell's cost does not change)."""
    kept: dict[CellKey, tuple[bool, bool, bool, bool, float, float, int, list[str], str]] = {}

    def costed(cell: CellKey) -> tuple[bool, bool, bool, bool, float, float, int, list[str], str]:
        if cell not in kept:
            kept[cell] = cost(cell)
        return kept[cell]

    return costed


def _complements(exposed: list[CellKey], unknown: set[CellKey], lines: tuple[Line, ...], cost: Cost) -> set[CellKey]:
    """A complement for each exposed cell, in one pass: the cheapest published cell of a sum through it.

    One per exposed cell keeps the number of rank tests (an SVD of the whole block each) small; the cells that
    the batch made redundant are published again by :func:`_prune`. A cell whose sums hold no published cell
    gets one from the sums an attacker combines to derive it (:func:`_complement`).
    """
    through: dict[CellKey, list[Line]] = {}
    for line in lines:
        for m in line.members:
            if m in unknown:
                through.setdefault(m, []).append(line)
    chosen: set[CellKey] = set()
    for cell in exposed:
        candidates = {m for line in through.get(cell, []) for m in line.members if m not in unknown and m[0]}
        if candidates:
            chosen.add(min(candidates, key=cost))
    if not chosen:
        witnessed = _complement(exposed, unknown, lines, cost)
        if witnessed is not None:
            chosen.add(witnessed)
    return chosen


def _bound_complements(
    parts: list[tuple[list[CellKey], list[Line]]],
    unknown: set[CellKey],
    values: Mapping[CellKey, float | None],
    cells: Mapping[CellKey, float],
    k: int,
    cost: Cost,
    safe: set[CellKey],
) -> set[CellKey]:
    """Published cells to hide so that each cell of ``cells`` has an upper bound reaching its threshold.

    Empty when all do (k for a small hidden cell, a revealed rate's denominator its own). ``parts`` are the blocks
    of the ``unknown`` cells with their sums (:func:`split`).

    Hiding more only widens the non-negative solutions, so a cell found ``safe`` (a solution puts it at k or
    more) stays safe while the pattern grows: each is solved for until one solution reaches k. A cell bounded
    under k gets the cheapest published cell of the sums that bind it (non-zero duals).
    """
    chosen: set[CellKey] = set()
    for block_unknown, block_rows in parts:
        targets = [c for c in block_unknown if c in cells and c not in safe]
        if not targets or not block_rows:
            safe.update(targets)
            continue
        matrix = csr_matrix(equations(block_unknown, block_rows))
        rhs = np.array([-_known(line, unknown, values) for line in block_rows])
        programme = Programme(matrix, rhs)
        index = {c: j for j, c in enumerate(block_unknown)}
        floors = np.array([cells.get(c, k) - TOL for c in block_unknown])
        shown = [{m for m in line.members if m not in unknown and m[0]} for line in block_rows]
        for cell in targets:
            if cell in safe:
                continue
            bound = programme.upper(index[cell])
            if not below(bound, cells[cell]):
                safe.add(cell)
                if bound.solution:  # an unbounded cell comes without a solution: it vouches for no other
                    safe.update(block_unknown[j] for j in np.flatnonzero(np.asarray(bound.solution) >= floors))
                continue
            binding = bound.binding or [i for i, r in enumerate(block_rows) if cell in r.members]
            candidates = set().union(*(shown[i] for i in binding)) or set().union(*shown)
            if candidates:
                chosen.add(min(candidates, key=cost))
    return chosen


def _known(line: Line, unknown: set[CellKey], values: Mapping[CellKey, float | None]) -> float:
    """The published part of an equation, total minus parts (the unknown part equals minus this)."""
    return sum(
        w * float(values[m] or 0.0) for m, w in zip(line.members, line.coefficients, strict=True) if m not in unknown
    )


def _prune(
    lines: tuple[Line, ...],
    unknown: set[CellKey],
    protected: set[CellKey],
    complements: set[CellKey],
    cost: Cost,
) -> None:
    """Publish again each complement (largest first) that the final pattern does not need.

    The greedy growth can pick a complement that later ones make redundant; a cell whose return exposes nothing
    protected goes back into the tables, so the pattern hides less and stays safe. With N the null space of the
    sums over the unknowns (one row per unknown cell), publishing cell c leaves the null vectors that are zero
    at c: a protected cell p becomes derivable iff its row N[p] is a multiple of N[c]. So one SVD, then a
    projection per candidate.
    """
    cells = sorted(unknown, key=order)
    index = {cell: i for i, cell in enumerate(cells)}
    rows = [line for line in lines if any(m in unknown for m in line.members)]
    null = null_space(equations(cells, rows))
    for cell in sorted(complements, key=cost, reverse=True):
        direction = null[index[cell]]
        norm = float(np.linalg.norm(direction))
        if norm < TOL:
            continue
        direction = direction / norm
        residual = null - np.outer(null @ direction, direction)
        others = [index[p] for p in protected if p != cell]
        if others and float(np.min(np.linalg.norm(residual[others], axis=1))) < TOL:
            continue  # publishing it would expose a protected cell
        unknown.discard(cell)
        protected.discard(cell)
        null = _without(null, direction)


def _without(null: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """The orthonormal basis ``null`` with the unit ``direction`` (in its coordinates) taken out of its span.

    A Householder reflection swaps the direction with the first coordinate; the other columns span the rest.

    >>> null = np.eye(3)[:, :2]
    >>> np.abs(_without(null, np.array([1.0, 0.0]))).tolist()
    [[0.0], [1.0], [0.0]]
    """
    reflector = direction.copy()
    reflector[0] -= 1.0
    norm = float(np.linalg.norm(reflector))
    if norm < TOL:  # the direction is the first coordinate already
        return null[:, 1:]
    reflector /= norm
    return (null - 2.0 * np.outer(null @ reflector, reflector))[:, 1:]


def _small(value: float | None, k: int, *, unknown: bool) -> bool:
    """Whether a cell is protected: 1 to k-1 people.

    An empty group is not (no one is described by it, and the tables leave out empty intersections anyway, so a
    reader knows those zeros).
    """
    if value is None:
        return unknown
    return 0 < value < k


def _close_singletons(
    lines: Iterable[Line],
    unknown: set[CellKey],
    protected: set[CellKey],
    hide: Callable[[CellKey], None],
    cost: Cost,
) -> None:
    """The cheap part of the fixed point: a sum with a single unknown, protected cell gets a second one."""
    changed = True
    while changed:
        changed = False
        for line in lines:
            hidden = [m for m in line.members if m in unknown]
            if len(hidden) != 1 or hidden[0] not in protected:
                continue
            candidates = [m for m in line.members if m not in unknown and m[0]]
            if candidates:
                hide(min(candidates, key=cost))
                changed = True


def _complement(
    exposed: list[CellKey],
    unknown: set[CellKey],
    lines: Iterable[Line],
    cost: Cost,
) -> CellKey | None:
    """The published cell to hide next: the cheapest in the sums an attacker combines to derive an exposed cell."""
    lines = list(lines)
    for cell in exposed:
        candidates = {m for line in witness(cell, unknown, lines) for m in line.members if m not in unknown and m[0]}
        if candidates:
            return min(candidates, key=cost)
    # No witness names a published cell (not seen in practice): widen to every sum through an unknown cell, so
    # the pattern still grows until nothing protected is exposed.
    candidates = {
        m
        for line in lines
        if any(u in unknown for u in line.members)
        for m in line.members
        if m not in unknown and m[0]
    }
    return min(candidates, key=cost) if candidates else None
