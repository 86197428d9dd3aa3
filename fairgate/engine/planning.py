"""Which slicings an audit computes, for every kind: the population, each attribute, the pairs and triples.

Kind-neutral: a kind passes its own group counter (``candidate_slicings``, ``within_group_limit``); the binary
cube's counter is here too (``plan_slicings``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fairgate.engine.cube import Cube
from fairgate.engine.groups import declared_for
from fairgate.engine.kept import PerObject
from fairgate.engine.labels import slicing_label
from fairgate.engine.packing import packed_codes
from fairgate.engine.slicing_cells import GROUP as GROUP  # re-exported: the slicings' group column
from fairgate.policy.core import Policy

Slicing = tuple[str, ...]
Group = dict[str, str]


def plan_slicings(cube: Cube, policy: Policy) -> list[Slicing]:
    """The slicings to audit: the population, each attribute, the pairs, and triples that can be compared.

    Pairs are the configured ``attribute_pairs`` (all pairs when none are listed). A triple is audited when
    at least two of its groups reach ``min_group_size``, so a comparison inside it is possible. A slicing with
    more groups than ``limits.max_groups_per_slicing`` is left out (see :func:`skipped_slicings`).
    """
    planned, _ = _planned(cube, policy)
    return list(planned)


def replicate_parents(plan: Sequence[Slicing]) -> dict[Slicing, Slicing]:
    """For each planned slicing inside a larger planned one, the slicing whose drawn replicates it sums.

    The first of the longest planned slicings that contain it, in plan order (fairgate/engine/bootstrap.py): a
    pair or attribute takes a triple's draws when triples are planned, the population the first longest slicing.

    >>> replicate_parents([(), ("a",), ("b",), ("a", "b")])
    {(): ('a', 'b'), ('a',): ('a', 'b'), ('b',): ('a', 'b')}
    """
    longest = max((len(s) for s in plan), default=0)
    tops = [s for s in plan if len(s) == longest]
    parents: dict[Slicing, Slicing] = {}
    for slicing in plan:
        if len(slicing) < longest:
            parent = next((top for top in tops if set(slicing) <= set(top)), None)
            if parent is not None:
                parents[slicing] = parent
    return parents


def skipped_slicings(cube: Cube, policy: Policy) -> list[dict[str, Any]]:
    """The slicings :func:`plan_slicings` leaves out for having more groups than the policy allows.

    Each as ``{"slicing", "groups", "max_groups_per_slicing", "reason"}`` (the document's
    ``diagnostics.skipped_slicings``).
    """
    _, skipped = _planned(cube, policy)
    return [{**entry, "slicing": list(entry["slicing"])} for entry in skipped]


# Per cube (by id, dropped with the cube) and policy (frozen: the same object plans the same): the planned and
# the skipped slicings. An audit plans several times (the slicings, the shared draws, the diagnostics); the
# candidate triples' effective sizes are a group-by of the cube's cells each.
_PLANS: PerObject[list[tuple[Policy, tuple[list[Slicing], list[dict[str, Any]]]]]] = PerObject(list)


def _planned(cube: Cube, policy: Policy) -> tuple[list[Slicing], list[dict[str, Any]]]:
    known = _PLANS.of(cube)
    for planned_for, plan in list(known):
        if planned_for is policy:
            return plan
    plan = within_group_limit(_candidate_slicings(cube, policy), policy, _counter(cube, policy))
    known.append((policy, plan))
    return plan


# Per cube (by id, dropped with the cube): the group count of each slicing, as its declared values extend it.
# plan_slicings and skipped_slicings both count every candidate; each count is a pass over the cube's cells.
_GROUP_COUNTS: PerObject[dict[tuple[Slicing, tuple[str, ...] | None], int]] = PerObject(dict)


def _counter(cube: Cube, policy: Policy) -> Callable[[Slicing], int]:
    counts = _GROUP_COUNTS.of(cube)

    def count(slicing: Slicing) -> int:
        declared = declared_for(policy, slicing)
        key = (slicing, None if declared is None else tuple(declared))
        if key not in counts:
            counts[key] = slicing_group_count(cube, slicing, policy)
        return counts[key]

    return count


def within_group_limit(
    candidates: list[Slicing], policy: Policy, group_count: Callable[[Slicing], int]
) -> tuple[list[Slicing], list[dict[str, Any]]]:
    """The candidates with at most ``limits.max_groups_per_slicing`` groups, and those left out with the reason.

    The left-out ones are the document's ``diagnostics.skipped_slicings`` (``{"slicing", "groups",
    "max_groups_per_slicing", "reason"}``). Every task plans its slicings with this and :func:`candidate_slicings`.
    """
    limit = policy.limits.max_groups_per_slicing
    planned: list[Slicing] = []
    skipped: list[dict[str, Any]] = []
    for slicing in candidates:
        groups = group_count(slicing) if slicing else 1
        if groups <= limit:
            planned.append(slicing)
            continue
        reason = (
            f"{slicing_label(slicing)} has {groups:,} groups, more than limits.max_groups_per_slicing "
            f"({limit:,}); it was not audited. Raise the limit, or leave the pair out of attribute_pairs"
        )
        skipped.append({"slicing": list(slicing), "groups": groups, "max_groups_per_slicing": limit, "reason": reason})
    return planned, skipped


def slicing_group_count(cube: Cube, slicing: Slicing, policy: Policy) -> int:
    """How many groups a slicing has: its value combinations present in the cube (and declared values)."""
    if not slicing:
        return 1
    declared = declared_for(policy, slicing)
    if declared is not None:  # a declared value with no rows is a group too (see slicing_groups)
        return len(set(declared) | set(cube.cells[slicing[0]].unique().to_list()))
    # The cells' groups as integers: counted without a Polars query.
    packed = packed_codes(cube.cell_codes, slicing, cube.cells.height)
    return cube.cells.select(list(slicing)).n_unique() if packed is None else int(np.unique(packed).size)


def _candidate_slicings(cube: Cube, policy: Policy) -> list[Slicing]:
    return candidate_slicings(cube.attributes, policy, cube.effective_sizes)


def candidate_slicings(
    attributes: Sequence[str], policy: Policy, effective_sizes: Callable[[list[str]], Any]
) -> list[Slicing]:
    """The population, each attribute, the pairs (configured, else all) and the triples that can be compared.

    A triple is a candidate when at least two of its groups reach ``min_group_size`` (``effective_sizes`` gives
    the Kish sizes of a slicing's groups, as min_group_size is judged). Every task plans with this.
    """
    attributes = list(attributes)
    slicings: list[Slicing] = [(), *[(a,) for a in attributes]]
    options = policy.intersectional_analysis
    if not options.enabled or len(attributes) < 2:
        return slicings
    pairs = options.attribute_pairs
    slicings += [tuple(p) for p in pairs] if pairs is not None else list(itertools.combinations(attributes, 2))
    if options.include_triples:
        for triple in itertools.combinations(attributes, 3):
            if int((effective_sizes(list(triple)) >= options.min_group_size).sum()) >= 2:
                slicings.append(triple)
    return slicings
