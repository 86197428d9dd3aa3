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

Choosing which cell to add hides the least: the smallest published cell (by size; the finest slicing first on a
tie, then by key, so the pattern is deterministic) of an equation that exposes a protected cell. The whole
population is never suppressed. Every size, count and rate of a group is a sum over the same tables, so one
pattern on group sizes protects them all: the same null-space vector that hides a size hides each count.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from fairgate.engine.labels import group_key

#: A cell: the set of attributes of its slicing (order-free) and its group key. ``(frozenset(), "{}")`` is the
#: whole population.
CellKey = tuple[frozenset[str], str]
POPULATION: CellKey = (frozenset(), group_key({}))

#: A null-space component below this counts as zero (the sums have coefficients of +-1).
_TOL = 1e-7


@dataclass(frozen=True)
class Line:
    """One published sum: ``total`` equals the sum of ``parts``."""

    total: CellKey
    parts: tuple[CellKey, ...]

    @property
    def members(self) -> tuple[CellKey, ...]:
        """Every cell of the sum, its total first."""
        return (self.total, *self.parts)


@dataclass(frozen=True)
class Tables:
    """The published cells with their sizes, the virtual margins linking them, and the sums between them."""

    values: dict[CellKey, float | None]  # None: the size is not known here (read back from a suppressed JSON)
    published: frozenset[CellKey]
    lines: tuple[Line, ...]

    @classmethod
    def of(cls, groups: Iterable[tuple[Iterable[str], Mapping[str, object], float | None]], n_rows: float) -> Tables:
        """The linked tables of ``(slicing, group, n)`` triples and the population size ``n_rows``.

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
        return cls(values, frozenset(published), tuple(lines))


def _margin_lines(
    margin: frozenset[str],
    attributes: frozenset[str],
    members: Mapping[str, Mapping[str, str]],
    values: dict[CellKey, float | None],
) -> list[Line]:
    """The sums that make each cell of ``margin`` the total of its children in the ``attributes`` table."""
    children: dict[str, list[CellKey]] = {}
    for key, group in members.items():
        parent = group_key({a: group[a] for a in margin})
        children.setdefault(parent, []).append((attributes, key))
    lines = []
    for parent, parts in sorted(children.items()):
        total = (margin, parent)
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
        if line.total in column:
            matrix[i, column[line.total]] += 1.0
        for part in line.parts:
            if part in column:
                matrix[i, column[part]] -= 1.0
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


def suppress(tables: Tables, min_cell_size: int) -> Pattern:
    """The suppression pattern (see :func:`_suppress`), its small dense algebra on one BLAS thread.

    The matrices have a few hundred rows: threads only contend (ten times slower on a loaded machine).
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _suppress(tables, min_cell_size)


def _suppress(tables: Tables, min_cell_size: int) -> Pattern:
    """Primary suppression under ``min_cell_size``, then complementary suppression to a fixed point.

    Every suppressed cell and every virtual margin under the minimum is protected: at the end none of them is
    derivable from the published cells. Cells whose size is unknown (already suppressed in a suppressed JSON)
    stay suppressed; empty groups (n = 0) are published.
    """
    values = tables.values
    primary = {c for c in tables.published if c != POPULATION and _small(values[c], min_cell_size, unknown=True)}
    virtual = set(values) - tables.published
    protected = set(primary) | {c for c in virtual if _small(values[c], min_cell_size, unknown=False)}
    unknown = virtual | primary

    def hide(cell: CellKey) -> None:
        unknown.add(cell)
        protected.add(cell)

    while True:
        _close_singletons(tables.lines, unknown, protected, values, hide)
        exposed = sorted(derivable(unknown, tables.lines) & protected, key=_order)
        if not exposed:
            break
        cell = _complement(exposed, unknown, tables.lines, values)
        if cell is None:  # nothing left to hide (cannot happen while a sum has a published part)
            break
        hide(cell)
    complements = {c for c in unknown if c in tables.published and c not in primary}
    _prune(tables.lines, unknown, protected, complements, values)
    suppressed = frozenset(c for c in unknown if c in tables.published)
    return Pattern(suppressed, frozenset(primary))


def _prune(
    lines: tuple[Line, ...],
    unknown: set[CellKey],
    protected: set[CellKey],
    complements: set[CellKey],
    values: Mapping[CellKey, float | None],
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
    for cell in sorted(complements, key=lambda c: _cost(c, values), reverse=True):
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


def _cost(cell: CellKey, values: Mapping[CellKey, float | None]) -> tuple[float, int, list[str], str]:
    # The smallest cell first; on a tie the finest slicing (it carries the least), then by key: deterministic.
    return (values[cell] or 0.0, -len(cell[0]), sorted(cell[0]), cell[1])


def _close_singletons(
    lines: Iterable[Line],
    unknown: set[CellKey],
    protected: set[CellKey],
    values: Mapping[CellKey, float | None],
    hide: Callable[[CellKey], None],
) -> None:
    """The cheap part of the fixed point: a sum with a single unknown, protected cell gets a second one."""
    changed = True
    while changed:
        changed = False
        for line in lines:
            hidden = [m for m in line.members if m in unknown]
            if len(hidden) != 1 or hidden[0] not in protected:
                continue
            candidates = [m for m in line.members if m not in unknown and m != POPULATION]
            if candidates:
                hide(min(candidates, key=lambda c: _cost(c, values)))
                changed = True


def _complement(
    exposed: list[CellKey],
    unknown: set[CellKey],
    lines: Iterable[Line],
    values: Mapping[CellKey, float | None],
) -> CellKey | None:
    """The published cell to hide next: the cheapest in the sums an attacker combines to derive an exposed cell."""
    lines = list(lines)
    for cell in exposed:
        candidates = {
            m for line in witness(cell, unknown, lines) for m in line.members if m not in unknown and m != POPULATION
        }
        if candidates:
            return min(candidates, key=lambda c: _cost(c, values))
    # No witness names a published cell (not seen in practice): widen to every sum through an unknown cell, so
    # the pattern still grows until nothing protected is exposed.
    candidates = {
        m
        for line in lines
        if any(u in unknown for u in line.members)
        for m in line.members
        if m not in unknown and m != POPULATION
    }
    return min(candidates, key=lambda c: _cost(c, values)) if candidates else None
