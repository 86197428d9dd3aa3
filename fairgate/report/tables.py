"""The published tables of people as linear equations: cells, the sums linking them, and their rank.

A cell is a group of a slicing (its size) or one of its confusion counts; a table of a finer slicing sums to
each coarser one (every margin, published or not), and each group's counts sum to its size. A rate known to
full precision is one more (weighted) equation over a group's counts. Which unknown cells these equations
determine is exact linear algebra (:func:`derivable`, an SVD per connected block of unknowns). Used by the
complementary suppression of :mod:`fairgate.report.disclosure`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.linalg
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from fairgate.engine.labels import group_key

#: A cell: the set of attributes of its slicing (order-free) and its group key. ``(frozenset(), "{}")`` is the
#: whole population.
CellKey = tuple[frozenset[str], str]
POPULATION: CellKey = (frozenset(), group_key({}))

#: A null-space component below this counts as zero (the sums have coefficients of +-1).
TOL = 1e-7


@dataclass(frozen=True)
class Line:
    """One published equation: ``total`` equals the sum of ``parts``.

    With ``weights`` (one per member, the total first) it is the weighted equation ``sum(w * cell) = 0``
    instead: a rate known to full precision, ``rate * denominator - numerator = 0`` over a group's counts.
    """

    total: CellKey
    parts: tuple[CellKey, ...]
    weights: tuple[float, ...] = ()

    @cached_property
    def members(self) -> tuple[CellKey, ...]:
        """Every cell of the equation, its total first."""
        return (self.total, *self.parts)

    @cached_property
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
        derived: Mapping[str, tuple[str, ...]] | None = None,
    ) -> Tables:
        """The linked tables of ``(slicing, group, n)`` triples, the population size and the groups' counts.

        ``counts`` is keyed by the group's cell; every group needs the same count names, or none are used.
        ``derived`` names counts that are sums of those (a multiclass class's one-vs-rest TP, FP, FN, TN over
        the K x K cells): each published group and the population publish them too, one sum each, and they
        are not parts of the group's size.

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
        counts_of = _count_lines(size_cells if names else [], names, derived or {}, values, published, lines)
        return cls(values, frozenset(published), tuple(lines), counts_of)


def _count_lines(
    size_cells: Iterable[CellKey],
    names: list[str],
    derived: Mapping[str, tuple[str, ...]],
    values: dict[CellKey, float | None],
    published: set[CellKey],
    lines: list[Line],
) -> dict[CellKey, tuple[CellKey, ...]]:
    """Each size as the sum of its counts, and each published group's derived counts (added to ``lines``).

    Returns each published group's count cells, derived ones included.
    """
    counts_of: dict[CellKey, tuple[CellKey, ...]] = {}
    for cell in size_cells:
        parts = tuple(count_cell(cell, name) for name in names)
        lines.append(Line(cell, parts))
        if cell in published:
            sums = _derived_lines(cell, derived, values, published)
            lines += sums
            if cell != POPULATION:
                counts_of[cell] = parts + tuple(line.total for line in sums)
    return counts_of


def _derived_lines(
    cell: CellKey,
    derived: Mapping[str, tuple[str, ...]],
    values: dict[CellKey, float | None],
    published: set[CellKey],
) -> list[Line]:
    """A published group's derived counts (see :meth:`Tables.of`): published, each the sum of its parts."""
    lines = []
    for name, parts in derived.items():
        members = tuple(count_cell(cell, p) for p in parts)
        known = [values[m] for m in members]
        total = count_cell(cell, name)
        values[total] = None if any(v is None for v in known) else round(sum(v or 0.0 for v in known), 6)
        published.add(total)
        lines.append(Line(total, members))
    return lines


def _count_names(counts: Counts, cells: set[CellKey]) -> list[str]:
    """The count names every published group carries (none when a group has none or they differ)."""
    names = [tuple(counts[c]) if c in counts else () for c in sorted(cells, key=order)]
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
        lines.append(Line(total, tuple(sorted(parts, key=order))))
    return lines


def order(cell: CellKey) -> tuple[int, list[str], str]:
    """The order cells are visited in: coarser slicings first, then by attributes and key (deterministic)."""
    return (len(cell[0]), sorted(cell[0]), cell[1])


def split(unknown: Iterable[CellKey], lines: Iterable[Line]) -> list[tuple[list[CellKey], list[Line]]]:
    """The unknowns' independent :func:`blocks`, each with the sums through it."""
    unknown = set(unknown)
    return blocks(unknown, [line for line in lines if any(m in unknown for m in line.members)])


def derivable(
    unknown: Iterable[CellKey], lines: Iterable[Line], parts: list[tuple[list[CellKey], list[Line]]] | None = None
) -> set[CellKey]:
    """The unknown cells whose value follows from the published ones through the sums (exact, by rank).

    A block of unknowns answers the same whatever else is hidden, so each block's answer is kept
    (:func:`_block_determined`): a pattern that grows, or a trial that changes one block, recomputes that block only.
    ``parts``: the :func:`split` of ``unknown`` and ``lines`` when the caller has it already.

    >>> a, b, t = (frozenset("a"), "x"), (frozenset("a"), "y"), (frozenset(), "{}")
    >>> sorted(derivable({a}, [Line(t, (a, b))]))
    [(frozenset({'a'}), 'x')]
    >>> sorted(derivable({a, b}, [Line(t, (a, b))]))
    []
    """
    out: set[CellKey] = set()
    for block_unknown, block_rows in split(unknown, lines) if parts is None else parts:
        out |= {block_unknown[j] for j in _block_determined(block_unknown, block_rows)}
    return out


def _block_determined(block_unknown: list[CellKey], block_rows: list[Line]) -> tuple[int, ...]:
    """The determined columns of one block (:func:`determined_columns`), kept by the block's full input."""
    return _determined(tuple(block_unknown), tuple(block_rows))


@functools.lru_cache(maxsize=1024)  # the blocks ranked last (thread-safe; Lines are frozen, compared by value)
def _determined(block_unknown: tuple[CellKey, ...], block_rows: tuple[Line, ...]) -> tuple[int, ...]:
    return tuple(determined_columns(equations(list(block_unknown), list(block_rows))))


def clear_blocks() -> None:
    """Forget the blocks kept by :func:`derivable` (benches time a fresh computation)."""
    _determined.cache_clear()


def equations(unknown: list[CellKey], rows: list[Line]) -> np.ndarray:
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
    for block_unknown, block_rows in blocks(unknown, rows):
        if cell in block_unknown:
            matrix = equations(block_unknown, block_rows)
            target = np.zeros(len(block_unknown))
            target[block_unknown.index(cell)] = 1.0
            weights = np.linalg.lstsq(matrix.T, target, rcond=None)[0]
            return [line for line, w in zip(block_rows, weights, strict=True) if abs(w) > TOL]
    return []


def determined_columns(matrix: np.ndarray) -> list[int]:
    """Columns j whose unit vector lies in the row space: every null-space vector is zero at j.

    >>> determined_columns(np.array([[1.0, -1.0, -1.0, 0.0], [0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0]]))
    [0]
    >>> determined_columns(np.array([[1.0, -1.0, -1.0, -1.0], [0.0, 1.0, 1.0, 0.0]]))
    []
    """
    if matrix.shape[0] == 0:
        return []
    null = null_space(matrix)
    if null.shape[1] == 0:
        return list(range(matrix.shape[1]))
    norms = np.sqrt((null**2).sum(axis=1))
    return [j for j, norm in enumerate(norms) if norm < TOL]


def blocks(unknown: set[CellKey], rows: list[Line]) -> list[tuple[list[CellKey], list[Line]]]:
    """Unknowns split into independent blocks (connected through shared sums), each with its sums.

    Blocks in the order of their first cell, cells in :func:`order`, sums in the order given.

    >>> a, b, c, t = (frozenset("a"), "x"), (frozenset("a"), "y"), (frozenset("a"), "z"), (frozenset(), "{}")
    >>> [(len(cells), len(sums)) for cells, sums in blocks({a, b, c}, [Line(t, (a, b))])]
    [(2, 1), (1, 0)]
    """
    cells = sorted(unknown, key=order)
    index = {cell: i for i, cell in enumerate(cells)}
    firsts, heads, tails = [], [], []
    for line in rows:
        members = [index[m] for m in line.members if m in index]
        firsts.append(members[0])
        heads += [members[0]] * (len(members) - 1)
        tails += members[1:]
    links = coo_matrix((np.ones(len(heads)), (heads, tails)), shape=(len(cells), len(cells)))
    labels = connected_components(links, directed=False)[1].tolist()
    members_of: dict[int, list[CellKey]] = {}
    for cell, label in zip(cells, labels, strict=True):
        members_of.setdefault(label, []).append(cell)
    block_rows: dict[int, list[Line]] = {}
    for line, first in zip(rows, firsts, strict=True):
        block_rows.setdefault(labels[first], []).append(line)
    return [(block, block_rows.get(label, [])) for label, block in members_of.items()]


def null_space(matrix: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the null space, as columns (one row per unknown cell).

    The trailing columns of Q in a rank-revealing QR of the transpose (column pivoting): the orthogonal
    complement of the row space, a third of an SVD's work on these matrices.

    >>> np.abs(null_space(np.array([[1.0, -1.0, -1.0], [0.0, 1.0, 1.0]]))).round(6).tolist()
    [[0.0], [0.707107], [0.707107]]
    """
    if matrix.shape[0] == 0:
        return np.eye(matrix.shape[1])
    q, r, _ = scipy.linalg.qr(matrix.T, pivoting=True, mode="full")
    diagonal = np.abs(np.diag(r))
    tol = max(matrix.shape) * (diagonal[0] if diagonal.size else 0.0) * np.finfo(float).eps * 10
    return np.asarray(q[:, int(np.sum(diagonal > tol)) :])
