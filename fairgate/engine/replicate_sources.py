"""Where a binary slicing's bootstrap replicates come from: its own draws, or sums of a larger slicing's.

A slicing contained in a larger planned one sums its replicates from that parent's drawn cells
(engine/planning.py, ``replicate_parents``; the law: engine/bootstrap.py). The parents' draws are shared through
``fairgate.engine.bootstrap.shared_draws`` by every slicing that reads them, wherever it runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

import numpy as np

from fairgate.engine.bootstrap import draw_ahead, draw_counts, shared_draws, slicing_seed
from fairgate.engine.cube import PERSON_SQ, ROWS, WEIGHT, WEIGHT_SQ, Cube
from fairgate.engine.groups import declared_for
from fairgate.engine.kept import PerObject
from fairgate.engine.planning import plan_slicings, replicate_parents
from fairgate.engine.slicing_cells import flat_cells, slicing_groups, summing_matrix
from fairgate.policy.core import Policy

Slicing = tuple[str, ...]

# Per cube (by the id of its cells, dropped with them) and policy: each planned slicing's replicate parent and
# how many slicings read that parent's draws (engine/planning.py, replicate_parents); empty when not shared.
_SOURCES: PerObject[list[tuple[Policy, dict[Slicing, tuple[Slicing, int]]]]] = PerObject(list)
_SOURCES_LOCK = threading.Lock()
#: The most cell replicates (occupied cells x replicates, 8 bytes each) the parents' draws may hold at once.
SHARED_DRAWS_BUDGET = 2**25


def replicate_source(
    cube: Cube, slicing: Slicing, policy: Policy
) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """How the slicing gets its replicates' row counts: summed from its parent's shared draws, or None (its own).

    Only unweighted cubes share draws (a weighted slicing draws Kish units of its own cells, which are not
    sums of finer cells' units); and only while the parents' draws fit in :data:`SHARED_DRAWS_BUDGET`, decided
    from the plan, so the same cube and policy always give the same replicates.
    """
    slicing = tuple(slicing)  # some kinds pass their slicings as lists
    entry = _sources(cube, policy).get(slicing)
    if entry is None:
        return None
    parent, readers = entry

    def summed(flat: np.ndarray, occupied: np.ndarray) -> np.ndarray:
        key = _draws_key(parent, policy)
        parent_flat, parent_occupied, drawn = shared_draws(
            cube.cells, key, readers, _parent_draws(cube, parent, policy)
        )
        if slicing == parent:
            return drawn.T
        # Each parent cell lies in one of this slicing's cells: found through the cube cells in it.
        live = cube.cells[ROWS].to_numpy() > 0
        mapping = np.empty(parent_occupied.size, dtype=np.int64)
        mapping[np.searchsorted(parent_occupied, parent_flat[live])] = np.searchsorted(occupied, flat[live])
        into = summing_matrix(mapping, np.arange(mapping.size), np.ones(mapping.size), (occupied.size, mapping.size))
        summed_drawn: np.ndarray = np.asarray(into @ drawn)
        return summed_drawn.T

    return summed


def replicate_parent(cube: Cube, slicing: Slicing, policy: Policy) -> Slicing | None:
    """The slicing whose draws this one's replicates are (or are summed from); None when it draws its own."""
    entry = _sources(cube, policy).get(tuple(slicing))
    return None if entry is None else entry[0]


def shared_parents(cube: Cube, policy: Policy) -> list[Slicing]:
    """The slicings whose draws others sum, in the order they are drawn ahead (:func:`_draw_order`); or none."""
    return [slicing for slicing, (parent, _) in _sources(cube, policy).items() if parent == slicing]


def draw_parent_ahead(cube: Cube, parent: Slicing, policy: Policy) -> None:
    """Draw a shared parent's replicates before (or while) its readers ask for them.

    Run on one thread beside the slicings (``fairgate.engine.audit.ReadyOrder``): the draws release the GIL,
    the slicings' statistics mostly hold it, so the two overlap. The same draws as the readers' own
    (``fairgate.engine.bootstrap.draw_ahead``).
    """
    readers = _sources(cube, policy)[parent][1]
    draw_ahead(cube.cells, _draws_key(parent, policy), readers, _parent_draws(cube, parent, policy))


def _draws_key(parent: Slicing, policy: Policy) -> tuple[Slicing, int, int]:
    return parent, policy.statistics.seed, policy.statistics.n_bootstrap


def _parent_draws(
    cube: Cube, parent: Slicing, policy: Policy
) -> Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """How to draw a parent's replicates: its cube cells' flat cells, its occupied cells and the draws."""

    def draw() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        stats = policy.statistics
        flat, rows = slicing_cells(cube, parent, policy)
        occupied = np.flatnonzero(rows)
        drawn = draw_counts(rows[occupied], stats.n_bootstrap, slicing_seed(stats.seed, parent))
        return flat, occupied, drawn.T  # (cells x replicates), contiguous

    return draw


def slicing_cells(cube: Cube, slicing: Slicing, policy: Policy) -> tuple[np.ndarray, np.ndarray]:
    """The cube cells' flat slicing cells and the rows of every slicing cell."""
    declared = declared_for(policy, slicing)
    groups, group_index = slicing_groups(cube, slicing, declared)
    flat = flat_cells(cube, group_index)
    size = groups.height * 4 * cube.calibration_bins
    return flat, np.bincount(flat, weights=cube.cells[ROWS].to_numpy(), minlength=size)


def _sources(cube: Cube, policy: Policy) -> dict[Slicing, tuple[Slicing, int]]:
    """The planned slicings' replicate parents and their readers, worked out once per cube and policy."""
    with _SOURCES_LOCK:
        known = _SOURCES.of(cube.cells)
        for planned_for, sources in known:
            if planned_for is policy:
                return sources
    sources = _plan_sources(cube, policy)
    with _SOURCES_LOCK:
        known.append((policy, sources))
    return sources


def _plan_sources(cube: Cube, policy: Policy) -> dict[Slicing, tuple[Slicing, int]]:
    cells = cube.cells
    squares = [c for c in (WEIGHT_SQ, PERSON_SQ) if c in cells.columns]
    rows = cells[ROWS].to_numpy()
    if any(not np.array_equal(cells[c].to_numpy(), rows) for c in [WEIGHT, *squares]):
        return {}  # weighted: every slicing draws its own Kish units
    plan = plan_slicings(cube, policy)
    parents = replicate_parents(plan)
    tops = list(dict.fromkeys(parents.values()))  # in the order they are first read: the most read first
    cells_of = {top: np.count_nonzero(slicing_cells(cube, top, policy)[1]) for top in tops}
    if sum(cells_of.values()) * policy.statistics.n_bootstrap > SHARED_DRAWS_BUDGET:
        return {}
    # The longest slicings no other reads are their own readers (the same draws as drawing alone) when they fit
    # too, so that they are drawn ahead with the parents (draw_parent_ahead).
    alone = [s for s in plan if parents and len(s) == len(tops[0]) and s not in cells_of]
    cells_of |= {s: np.count_nonzero(slicing_cells(cube, s, policy)[1]) for s in alone}
    if sum(cells_of.values()) * policy.statistics.n_bootstrap <= SHARED_DRAWS_BUDGET:
        tops += alone
    readers = {top: 1 + sum(1 for p in parents.values() if p == top) for top in _draw_order(tops, cells_of)}
    return {top: (top, count) for top, count in readers.items()} | {
        child: (parent, readers[parent]) for child, parent in parents.items()
    }


def _draw_order(tops: list[Slicing], cells: Mapping[Slicing, int | np.integer]) -> list[Slicing]:
    """The order the shared parents are drawn ahead in (``fairgate.engine.audit.ReadyOrder``).

    The most read first (``tops``' order), and second the one with the most cells: while no slicing is ready both
    threads draw, so the longest draw is best drawn then, beside the first, rather than later beside the slicings'
    statistics; then the others, the most read first. The order changes no draw (each parent has its own stream).
    """
    if len(tops) < 3:
        return tops
    longest = max(tops[1:], key=lambda top: cells[top])
    return [tops[0], longest, *(top for top in tops[1:] if top != longest)]
