"""The multiclass engine (issue 15): K x K confusion cubes, per-class metrics, summaries with intervals.

``audit_multiclass`` runs it all on a frame: one cube, every slicing as its marginal. With the ordered-outcome
option (``multiclass.adverse_classes``) :func:`to_binary_cube` turns the cube into the binary cube of the
decision "adverse class or not", which the binary engine audits unchanged.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

from fairgate.engine.cube import Cube
from fairgate.engine.multiclass.cube import MulticlassCube, build_multiclass_cube, to_binary_cube
from fairgate.engine.multiclass.slicing import (
    SUMMARIES,
    ClassSummary,
    MulticlassSlicingResult,
    SummaryValue,
    compute_multiclass_slicing,
    plan_multiclass_slicings,
)
from fairgate.policy.core import Policy
from fairgate.policy.task import MulticlassOptions


@dataclass(frozen=True)
class MulticlassAudit:
    """A multiclass audit's cube, its slicings' results and, with adverse classes, the binary decision's cube."""

    cube: MulticlassCube
    slicings: list[MulticlassSlicingResult]
    binary_cube: Cube | None


def audit_multiclass(
    data: Any, policy: Policy, options: MulticlassOptions, *, source: str = "the audited data"
) -> MulticlassAudit:
    """Cube the rows once and compute every planned slicing (population, attributes, pairs, triples)."""
    cube = build_multiclass_cube(data, policy, options, source=source)
    # Slicings are independent (each draws its own replicates) and numpy releases the GIL: two threads keep both
    # cores busy, as in the binary ``audit``.
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(
            pool.map(partial(compute_multiclass_slicing, cube, policy=policy), plan_multiclass_slicings(cube, policy))
        )
    binary = to_binary_cube(cube, options.adverse_classes) if options.adverse_classes else None
    return MulticlassAudit(cube, results, binary)


__all__ = [
    "SUMMARIES",
    "ClassSummary",
    "MulticlassAudit",
    "MulticlassCube",
    "MulticlassSlicingResult",
    "SummaryValue",
    "audit_multiclass",
    "build_multiclass_cube",
    "compute_multiclass_slicing",
    "plan_multiclass_slicings",
    "to_binary_cube",
]
