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

Choosing which cell to add hides the least: the smallest published cell of at least k (a zero or small cell
widens no bound; by size, the finest slicing first on a tie, then by key, so the pattern is deterministic) of an
equation that exposes a protected cell. The whole population (its size and counts) is never suppressed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from threadpoolctl import threadpool_limits

from fairgate.engine.labels import group_key
from fairgate.report.bounds import Programme, below

#: A cell: the set of attributes of its slicing (order-free) and its group key. ``(frozenset(), "{}")`` is the
#: whole population.
CellKey = tuple[frozenset[str], str]
POPULATION: CellKey = (frozenset(), group_key({}))

#: A null-space component below this counts as zero (the sums have coefficients of +-1).
_TOL = 1e-7


@dataclass(frozen=True)
class Line:
    """One published equation: ``total`` equals the sum of ``parts``.

    With ``weights`` (one per member, the total first) it is the weighted equation ``sum(w * cell) = 0``
    instead: a rate known to full precision, ``rate * denominator - numerator = 0`` over a group's counts.
    """

    total: CellKey
    parts: tuple[CellKey, ...]
    weights: tuple[float, ...] = ()

    @property
    def members(self) -> tuple[CellKey, ...]:
        """Every cell of the equation, its total first."""
        return (self.total, *self.parts)

    @property
    def coefficients(self) -> tuple[float, ...]:
        """Each member's coefficient: +1 for the total and -1 for each part of a sum."""
        return self.weights or (1.0, *(-1.0 for _ in self.parts))


#: Counts per group: the size cell's key -> count name -> value (None: not known here).
Counts = Mapping[CellKey, Mapping[str, float | None]]


def group_of(cell: CellKey) -> CellKey:
    """The size cell of a count cell's group (a size cell is its own)."""
    return cell[0], cell[1].split("#", 1)[0]


def count_cell(cell: CellKey, name: str) -> CellKey:
    """The cell of one count (``name``: tp, fp, ... or a confusion cell) of a group's cell."""
    return cell[0], f"{cell[1]}#{name}"


@dataclass(frozen=True)
class Tables:
    """The published cells with their sizes, the virtual margins linking them, and the sums between them."""

    values: dict[CellKey, float | None]  # None: the size is not known here (read back from a suppressed JSON)
    published: frozenset[CellKey]
    lines: tuple[Line, ...]
    #: Each published group's count cells (empty without counts): a hidden size hides them with it.
    counts_of: Mapping[CellKey, tuple[CellKey, ...]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        groups: Iterable[tuple[Iterable[str], Mapping[str, object], float | None]],
        n_rows: float,
        counts: Counts | None = None,
    ) -> Tables:
        """The linked tables of ``(slicing, group, n)`` triples, the population size and the groups' counts.

        ``counts`` is keyed by the group's cell; every group needs the same count names, or none are used.

        >>> t = Tables.of([(["a"], {"a": "x"}, 3), (["a"], {"a": "y"}, 40)], 43)
        >>> [(sorted(line.total[0]), len(line.parts)) for line in t.lines]
        [([], 2)]
        """
        values: dict[CellKey, float | None] = {POPULATION: float(n_rows)}
        published: set[CellKey] = {POPULATION}
        by_slicing: dict[frozenset[str], dict[str, Mapping[str, str]]] = {}
        for slicing, group, n in groups:
            attributes = frozenset(slicing)
            if not attributes:
                continue  # the population is n_rows
            text_group = {str(a): str(v) for a, v in group.items()}
            key = (attributes, group_key(text_group))
            values[key] = None if n is None else float(n)
            published.add(key)
            by_slicing.setdefault(attributes, {})[key[1]] = text_group
        lines: list[Line] = []
        for attributes, members in by_slicing.items():
            for size in range(len(attributes)):
                for subset in itertools.combinations(sorted(attributes), size):
                    lines += _margin_lines(frozenset(subset), attributes, members, values)
        size_cells = list(values)  # the published groups, the virtual margins and the population
        names = _count_names(counts or {}, published - {POPULATION})
        for name in names:
            _count_values(name, counts or {}, by_slicing, values, published)
            for attributes, members in by_slicing.items():
                for size in range(len(attributes)):
                    for subset in itertools.combinations(sorted(attributes), size):
                        lines += _margin_lines(frozenset(subset), attributes, members, values, name)
        counts_of: dict[CellKey, tuple[CellKey, ...]] = {}
        for cell in size_cells if names else []:
            parts = tuple(count_cell(cell, name) for name in names)
            lines.append(Line(cell, parts))
            if cell in published and cell != POPULATION:
                counts_of[cell] = parts
        return cls(values, frozenset(published), tuple(lines), counts_of)


def _count_names(counts: Counts, cells: set[CellKey]) -> list[str]:
    """The count names every published group carries (none when a group has none or they differ)."""
    names = [tuple(counts[c]) if c in counts else () for c in sorted(cells, key=_order)]
    if not names or not names[0] or any(n != names[0] for n in names):
        return []
    return list(names[0])


def _count_values(
    name: str,
    counts: Counts,
    by_slicing: Mapping[frozenset[str], Mapping[str, Mapping[str, str]]],
    values: dict[CellKey, float | None],
    published: set[CellKey],
) -> None:
    """The published count cells of one count name, and the population's (the sum over any one slicing)."""
    total: float | None = 0.0
    for i, (attributes, members) in enumerate(sorted(by_slicing.items(), key=lambda item: sorted(item[0]))):
        for key in members:
            value = counts[(attributes, key)][name]
            value = None if value is None else round(float(value), 6)
            values[count_cell((attributes, key), name)] = value
            published.add(count_cell((attributes, key), name))
            if i == 0:
                total = None if total is None or value is None else total + value
    values[count_cell(POPULATION, name)] = total
    published.add(count_cell(POPULATION, name))


def _margin_lines(
    margin: frozenset[str],
    attributes: frozenset[str],
    members: Mapping[str, Mapping[str, str]],
    values: dict[CellKey, float | None],
    name: str | None = None,
) -> list[Line]:
    """The sums that make each cell of ``margin`` the total of its children in the ``attributes`` table.

    Of the sizes, or of the count ``name`` when given.
    """
    children: dict[str, list[CellKey]] = {}
    for key, group in members.items():
        parent = group_key({a: group[a] for a in margin})
        child = (attributes, key)
        children.setdefault(parent, []).append(child if name is None else count_cell(child, name))
    lines = []
    for parent, parts in sorted(children.items()):
        total = (margin, parent) if name is None else count_cell((margin, parent), name)
        if total not in values:  # a virtual margin: its size is the sum of its children where all are known
            sizes = [values[p] for p in parts]
            values[total] = None if any(s is None for s in sizes) else float(sum(s for s in sizes if s is not None))
        lines.append(Line(total, tuple(sorted(parts, key=_order))))
    return lines


def _order(cell: CellKey) -> tuple[int, list[str], str]:
    return (len(cell[0]), sorted(cell[0]), cell[1])


def derivable(unknown: Iterable[CellKey], lines: Iterable[Line]) -> set[CellKey]:
    """The unknown cells whose value follows from the published ones through the sums (exact, by rank).

    >>> a, b, t = (frozenset("a"), "x"), (frozenset("a"), "y"), (frozenset(), "{}")
    >>> sorted(derivable({a}, [Line(t, (a, b))]))
    [(frozenset({'a'}), 'x')]
    >>> sorted(derivable({a, b}, [Line(t, (a, b))]))
    []
    """
    unknown = set(unknown)
    rows = [line for line in lines if any(m in unknown for m in line.members)]
    out: set[CellKey] = set()
    for block_unknown, block_rows in _blocks(unknown, rows):
        matrix = _matrix(block_unknown, block_rows)
        out |= {block_unknown[j] for j in _determined_columns(matrix)}
    return out


def _matrix(unknown: list[CellKey], rows: list[Line]) -> np.ndarray:
    """One equation per sum over the unknown cells: +1 for the total, -1 for each part."""
    column = {cell: j for j, cell in enumerate(unknown)}
    matrix = np.zeros((len(rows), len(unknown)))
    for i, line in enumerate(rows):
        for member, weight in zip(line.members, line.coefficients, strict=True):
            if member in column:
                matrix[i, column[member]] += weight
    return matrix


def witness(cell: CellKey, unknown: Iterable[CellKey], lines: Iterable[Line]) -> list[Line]:
    """The sums an attacker combines to derive ``cell`` (those with a non-zero weight in the combination)."""
    unknown = set(unknown)
    rows = [line for line in lines if any(m in unknown for m in line.members)]
    for block_unknown, block_rows in _blocks(unknown, rows):
        if cell in block_unknown:
            matrix = _matrix(block_unknown, block_rows)
            target = np.zeros(len(block_unknown))
            target[block_unknown.index(cell)] = 1.0
            weights = np.linalg.lstsq(matrix.T, target, rcond=None)[0]
            return [line for line, w in zip(block_rows, weights, strict=True) if abs(w) > _TOL]
    return []


def _determined_columns(matrix: np.ndarray) -> list[int]:
    """Columns j whose unit vector lies in the row space: every null-space vector is zero at j."""
    if matrix.shape[0] == 0:
        return []
    null = _null_space(matrix)
    if null.shape[1] == 0:
        return list(range(matrix.shape[1]))
    norms = np.sqrt((null**2).sum(axis=1))
    return [j for j, norm in enumerate(norms) if norm < _TOL]


def _blocks(unknown: set[CellKey], rows: list[Line]) -> list[tuple[list[CellKey], list[Line]]]:
    """Unknowns split into independent blocks (connected through shared sums), each with its sums."""
    parent: dict[CellKey, CellKey] = {cell: cell for cell in unknown}

    def find(cell: CellKey) -> CellKey:
        while parent[cell] != cell:
            parent[cell] = parent[parent[cell]]
            cell = parent[cell]
        return cell

    for line in rows:
        cells = [m for m in line.members if m in unknown]
        for other in cells[1:]:
            parent[find(other)] = find(cells[0])
    members: dict[CellKey, list[CellKey]] = {}
    for cell in sorted(unknown, key=_order):
        members.setdefault(find(cell), []).append(cell)
    block_rows: dict[CellKey, list[Line]] = {}
    for line in rows:
        root = find(next(m for m in line.members if m in unknown))
        block_rows.setdefault(root, []).append(line)
    return [(cells, block_rows.get(root, [])) for root, cells in members.items()]


@dataclass(frozen=True)
class Pattern:
    """A suppression pattern: the published cells hidden, and which of them are under the minimum."""

    suppressed: frozenset[CellKey]
    primary: frozenset[CellKey]


@dataclass(frozen=True)
class Gap:
    """A judged result's two sides and one rate it compares, as counts: with one side's rate shown and the gap
    printed, the other side's rate is known to full precision (``rate * denominator = numerator``)."""

    sides: tuple[CellKey, CellKey]
    numerator: tuple[str, ...]  # count names (tp, fp, ...)
    denominator: tuple[str, ...]
    rates: tuple[float | None, float | None]  # each side's rate

    def lines(
        self, side: int, tag: int, values: Mapping[CellKey, float | None], k: int
    ) -> tuple[CellKey, float, tuple[Line, Line]] | None:
        """What one side's revealed rate adds (None: its rate is undefined): a cell for its denominator (the
        sum of its denominator's counts), and ``rate * denominator - numerator = 0``; with the denominator's
        threshold: the counts are whole, so the rate p/q in lowest terms leaves the denominator m * q and the
        numerator m * p for whole m. Its range must hold a second m, and one putting the numerator and the
        denominator's rest at k or more (as the true counts are a candidate, that is a larger m).
        """
        rate = self.rates[side]
        if rate is None or not np.isfinite(rate):
            return None
        cell = self.sides[side]
        denominator = (cell[0], f"{cell[1]}#rate{tag}")
        parts = tuple(count_cell(cell, name) for name in self.denominator)
        numerator = tuple(count_cell(cell, name) for name in self.numerator)
        line = Line(denominator, numerator, (rate, *(-1.0 for _ in numerator)))
        return denominator, _multiple(numerator, parts, values, k), (Line(denominator, parts), line)

    def degenerate(self, side: int) -> bool:
        """A rate of 0 or 1 pins counts at 0 whatever the denominator: no complement can hide them."""
        rate = self.rates[side]
        return rate is not None and (abs(rate) < _TOL or abs(rate - 1.0) < _TOL)


def _multiple(
    numerator: tuple[CellKey, ...], denominator: tuple[CellKey, ...], values: Mapping[CellKey, float | None], k: int
) -> float:
    """The value a revealed rate's denominator must be able to reach: (m + 1) * q at least, with m * q the true
    denominator, and enough that the numerator m * p and the rest m * (q - p) can each reach k.

    >>> cells = [(frozenset("a"), f"x#{n}") for n in ("tp", "fn")]
    >>> _multiple((cells[0],), tuple(cells), {cells[0]: 63.0, cells[1]: 7.0}, 10)  # 63/70 = 9/10: m = 7
    100.0
    """
    num = sum(float(values[c] or 0.0) for c in numerator)
    den = sum(float(values[c] or 0.0) for c in denominator)
    if any(values[c] is None for c in denominator) or den <= 0 or not float(den).is_integer():
        return float(k)  # weighted counts or a read-back JSON: the threshold of a small cell
    p, q = int(round(num)), int(round(den))
    divisor = math.gcd(p, q)
    p, q = p // divisor, q // divisor
    m = max(divisor + 1, *(math.ceil(k / share) for share in (p, q - p) if share > 0))
    return float(m * q)


def suppress(
    tables: Tables,
    min_cell_size: int,
    pairs: Iterable[tuple[CellKey, CellKey]] = (),
    gaps: Iterable[Gap] = (),
) -> Pattern:
    """The suppression pattern (see :func:`_suppress`), its small dense algebra on one BLAS thread.

    The matrices have a few hundred rows: threads only contend (ten times slower on a loaded machine).
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _suppress(tables, min_cell_size, frozenset(pairs), tuple(gaps))


def _suppress(
    tables: Tables,
    min_cell_size: int,
    pairs: frozenset[tuple[CellKey, CellKey]] = frozenset(),
    gaps: tuple[Gap, ...] = (),
) -> Pattern:
    """Primary suppression under ``min_cell_size``, then complementary suppression to a fixed point.

    Every suppressed cell and every virtual margin under the minimum is protected: at the end none of them is
    derivable from the published cells, and none with a value under the minimum has an upper bound under it.
    Cells whose value is unknown (already suppressed in a suppressed JSON) stay suppressed; empty groups (n = 0)
    and zero counts of published groups are published.
    """
    k, values = min_cell_size, dict(tables.values)
    thresholds: dict[CellKey, float] = {}
    primary = {c for c in tables.published if c[0] and _small(values[c], k, unknown=True)}
    virtual = set(values) - tables.published
    protected = {c for c in virtual if _small(values[c], k, unknown=False)}
    unknown = set(virtual)

    def hide(cell: CellKey) -> None:
        for c in (cell, *tables.counts_of.get(cell, ())):  # a hidden size hides its group's counts
            unknown.add(c)
            protected.add(c)

    for cell in sorted(primary, key=_order):
        hide(cell)

    def cost(cell: CellKey) -> tuple[bool, bool, bool, float, float, int, list[str], str]:
        # What a reader loses: a count of a group already withheld first (its rates are gone already), then a
        # count of a shown group (its rates go, its size stays), a size last (it takes the counts with it). Then
        # a cell of at least k (a zero widens no bound); of a shown group, the smallest group (a large group keeps
        # its rates while a smaller one does the job); then the smallest cell; on a tie the finest slicing (it
        # carries the least), then by key: deterministic.
        value = values[cell] or 0.0
        group = group_of(cell)
        withheld = _withheld(group, unknown, tables.counts_of)
        size = 0.0 if withheld else values.get(group) or 0.0
        return (not withheld, cell == group and not withheld, value < k, size, value, -len(cell[0]), sorted(cell[0]), cell[1])

    def bounded() -> dict[CellKey, float]:
        # Hidden cells under k (zero counts of hidden groups included) and small virtual margins: their upper bound
        # over the non-negative solutions must reach k. A revealed rate's denominator: its own threshold.
        small = {c: float(k) for c in unknown & protected if (values[c] or 0.0) < k}
        return small | thresholds

    # The exact (linear) part of the tables first, pruned of what later complements made redundant; then the
    # bounds and the judged gaps' rates, which only ever add complements (each bound a warm-started programme).
    lines = list(tables.lines)
    revealed: set[tuple[int, int]] = set()

    def reveal() -> bool:
        # A judged gap with one side withheld and the other shown publishes the withheld side's rate: one more
        # equation over its counts. A rate no complement can protect (0 or 1) withholds the shown side instead.
        partners = _partners(pairs, unknown, tables.counts_of)
        added = _revealed(gaps, unknown, tables.counts_of, revealed)
        for i, side in added:
            revealed.add((i, side))
            gap = gaps[i]
            if gap.rates[side] is not None and gap.degenerate(side):
                partners |= _partners([gap.sides], unknown, tables.counts_of)
            elif (found := gap.lines(side, len(lines), values, k)) is not None:
                denominator, threshold, new = found
                values[denominator] = sum(float(values[c] or 0.0) for c in new[0].parts)
                unknown.add(denominator)
                protected.add(denominator)
                thresholds[denominator] = threshold
                lines.extend(new)
        for c in sorted(partners, key=_order):
            hide(c)
        return bool(partners or added)

    def grow(bounds: Callable[[], Mapping[CellKey, float]]) -> None:
        _grow(tuple(lines), unknown, protected, values, hide, cost, bounds, k)
        while reveal():  # the pattern only grows here
            _grow(tuple(lines), unknown, protected, values, hide, cost, bounds, k)

    _grow(tables.lines, unknown, protected, values, hide, cost, dict, k)
    complements = {c for c in unknown if c in tables.published and c not in primary}
    _prune(tables.lines, unknown, protected, complements, cost)
    grow(bounded)
    suppressed = frozenset(c for c in unknown if c in tables.published)
    return Pattern(suppressed, frozenset(primary))


def _withheld(cell: CellKey, unknown: set[CellKey], counts_of: Mapping[CellKey, tuple[CellKey, ...]]) -> bool:
    """Whether a group's rates are withheld: its size or one of its counts is hidden."""
    return cell in unknown or any(c in unknown for c in counts_of.get(cell, ()))


def _revealed(
    gaps: tuple[Gap, ...],
    unknown: set[CellKey],
    counts_of: Mapping[CellKey, tuple[CellKey, ...]],
    done: set[tuple[int, int]],
) -> list[tuple[int, int]]:
    """The gaps (index, side) whose side is withheld and whose other side shows its rate, not seen before."""
    return [
        (i, side)
        for i, gap in enumerate(gaps)
        for side in (0, 1)
        if (i, side) not in done
        and _withheld(gap.sides[side], unknown, counts_of)
        and not _withheld(gap.sides[1 - side], unknown, counts_of)
    ]


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


Cost = Callable[[CellKey], tuple[bool, bool, bool, float, float, int, list[str], str]]


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
        exposed = sorted(derivable(unknown, lines) & protected, key=_order)
        if exposed:
            chosen = _complements(exposed, unknown, lines, cost)
        else:
            chosen = _bound_complements(lines, unknown, values, bounded(), k, cost, safe)
        if not chosen:  # none exposed (or nothing left to hide: cannot happen while a sum has a published part)
            return
        for cell in sorted(chosen, key=_order):
            hide(cell)


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
    lines: tuple[Line, ...],
    unknown: set[CellKey],
    values: Mapping[CellKey, float | None],
    cells: Mapping[CellKey, float],
    k: int,
    cost: Cost,
    safe: set[CellKey],
) -> set[CellKey]:
    """Published cells to hide so that each small hidden cell's upper bound reaches k, or each cell of
    ``cells`` its own threshold (empty: all do).

    Hiding more only widens the non-negative solutions, so a cell found ``safe`` (a solution puts it at k or
    more) stays safe while the pattern grows: each is solved for until one solution reaches k. A cell bounded
    under k gets the cheapest published cell of the sums that bind it (non-zero duals).
    """
    rows = [line for line in lines if any(m in unknown for m in line.members)]
    chosen: set[CellKey] = set()
    for block_unknown, block_rows in _blocks(unknown, rows):
        targets = [c for c in block_unknown if c in cells and c not in safe]
        if not targets or not block_rows:
            safe.update(targets)
            continue
        matrix = csr_matrix(_matrix(block_unknown, block_rows))
        rhs = np.array([-_known(line, unknown, values) for line in block_rows])
        programme = Programme(matrix, rhs)
        for cell in targets:
            if cell in safe:
                continue
            bound = programme.upper(block_unknown.index(cell))
            if not below(bound, cells[cell]):
                safe.add(cell)
                safe.update(
                    c for c, x in zip(block_unknown, bound.solution, strict=False) if x >= cells.get(c, k) - _TOL
                )
                continue
            binding = [block_rows[i] for i in bound.binding] or [r for r in block_rows if cell in r.members]
            candidates = {m for line in binding for m in line.members if m not in unknown and m[0]}
            if not candidates:
                candidates = {m for r in block_rows for m in r.members if m not in unknown and m[0]}
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
    cells = sorted(unknown, key=_order)
    index = {cell: i for i, cell in enumerate(cells)}
    rows = [line for line in lines if any(m in unknown for m in line.members)]
    null = _null_space(_matrix(cells, rows))
    for cell in sorted(complements, key=cost, reverse=True):
        direction = null[index[cell]]
        norm = float(np.linalg.norm(direction))
        if norm < _TOL:
            continue
        direction = direction / norm
        residual = null - np.outer(null @ direction, direction)
        others = [index[p] for p in protected if p != cell]
        if others and float(np.min(np.linalg.norm(residual[others], axis=1))) < _TOL:
            continue  # publishing it would expose a protected cell
        unknown.discard(cell)
        protected.discard(cell)
        basis, singular, _ = np.linalg.svd(residual, full_matrices=False)
        null = basis[:, : max(int(np.sum(singular > _TOL)), 0)]


def _null_space(matrix: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the null space, as columns (one row per unknown cell)."""
    if matrix.shape[0] == 0:
        return np.eye(matrix.shape[1])
    # Every right-singular vector is needed; U only in part when there are more rows than unknowns.
    _, singular, vt = np.linalg.svd(matrix, full_matrices=matrix.shape[0] < matrix.shape[1])
    tol = max(matrix.shape) * (singular[0] if singular.size else 0.0) * np.finfo(float).eps * 10
    return np.asarray(vt[int(np.sum(singular > tol)) :].T)


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
