"""The audit's steps per kind of model (policy ``task:``), in ONE table the flow dispatches through.

Binary audits do not go through this table (flows/audit.py keeps their path, with streaming, Dask and proxy
inference). Every other kind registers its ``KindSteps`` here: its engine's pure steps and its validation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.document.result import AuditResult
from fairgate.engine.adjudicate import ModelInfo
from fairgate.engine.multiclass.audit import adjudicate_multiclass, count_multiclass, slicings_multiclass
from fairgate.engine.multiclass.cube import MulticlassCube
from fairgate.engine.ranking.audit import adjudicate_ranking, count_ranking, slicings_ranking
from fairgate.engine.ranking.cube import RankingCube
from fairgate.engine.regression.audit import (
    RegressionCounts,
    adjudicate_regression,
    count_regression,
    slicings_regression,
)
from fairgate.errors import PolicyError
from fairgate.policy.core import Policy
from tasks.align import Staged
from tasks.validate import Validation
from tasks.validate_multiclass import validate_multiclass
from tasks.validate_ranking import validate_ranking
from tasks.validate_regression import validate_regression


@dataclass(frozen=True)
class KindSteps:
    """One kind's audit steps.

    ``count(rows, policy, *, source) -> cube``; ``slicings(cube, policy) -> parts``;
    ``adjudicate(cube, parts, policy, *, model, run_id, context) -> AuditResult``; ``cube_cells(cube)`` the
    rows the trail's ``cubes`` table stores; ``validate(staged, validation, roles)`` the kind's Great
    Expectations suites on the staged inputs (raises DataError).
    """

    count: Callable[..., Any]
    slicings: Callable[..., Any]
    adjudicate: Callable[..., AuditResult]
    cube_cells: Callable[[Any], list[dict[str, Any]]]
    validate: Callable[[Staged, Validation, tuple[str, ...]], None]


def multiclass_cells(cube: MulticlassCube) -> list[dict[str, Any]]:
    """The multiclass cube's cells with the classes as their labels (the codes are positions in the policy)."""
    classes = list(cube.classes)
    rows = cube.cells.to_dicts()
    for row in rows:
        row["__y_true"], row["__y_pred"] = classes[row["__y_true"]], classes[row["__y_pred"]]
    return rows


def regression_cells(counts: RegressionCounts) -> list[dict[str, Any]]:
    """The regression cube's cells (attributes x bootstrap bucket: rows, weights, moment sums)."""
    return counts.cube.cells.to_dicts()


def ranking_cells(cube: RankingCube) -> list[dict[str, Any]]:
    """The ranking cube's cells: per (attributes x list bucket), rows, weights, top-k counts, exposure, relevance."""
    rows: list[dict[str, Any]] = cube.cells.to_dicts()
    return rows


KINDS: dict[str, KindSteps] = {
    "multiclass": KindSteps(
        count=count_multiclass,
        slicings=slicings_multiclass,
        adjudicate=adjudicate_multiclass,
        cube_cells=multiclass_cells,
        validate=validate_multiclass,
    ),
    "regression": KindSteps(
        count=count_regression,
        slicings=slicings_regression,
        adjudicate=adjudicate_regression,
        cube_cells=regression_cells,
        validate=validate_regression,
    ),
    "ranking": KindSteps(
        count=count_ranking,
        slicings=slicings_ranking,
        adjudicate=adjudicate_ranking,
        cube_cells=ranking_cells,
        validate=validate_ranking,
    ),
}


def require_binary(policy: Policy, command: str) -> None:
    """Refuse (exit 2) a command that works on binary audits only when the policy's task is another kind."""
    if policy.task != "binary":
        raise PolicyError(
            f"{command} works on binary audits only; the policy's task is {policy.task}. Use fairgate audit for "
            f"a {policy.task} model"
        )


def steps_of(task: str) -> KindSteps:
    """The steps of a non-binary task (a policy of a kind this installation lacks is refused, exit 2)."""
    if task not in KINDS:
        raise PolicyError(f"task: {task} is not available in this installation; kinds available: {sorted(KINDS)}")
    return KINDS[task]


# Prefect tasks: each a thin call into the kind's engine, so a run's steps show in the UI as a binary audit's do.
@task(name="validate inputs", task_run_name="validate {staged.policy.task} inputs", cache_policy=NO_CACHE)
def validate_kind(
    staged: Staged, validation: Validation, roles: tuple[str, ...] = ("predictions", "labels", "attributes")
) -> Validation:
    """The kind's own Great Expectations suites on the staged inputs, after the shared ones (ids, attributes)."""
    steps_of(staged.policy.task).validate(staged, validation, roles)
    return validation


@task(name="build cube", task_run_name="build {policy.task} cube", cache_policy=NO_CACHE)
def count_kind(rows: Any, policy: Policy) -> Any:
    """The kind's cube of the aligned rows (which carry the policy's column names)."""
    return steps_of(policy.task).count(rows, policy, source="the aligned rows")


@task(name="metrics", task_run_name="{policy.task} metrics", cache_policy=NO_CACHE)
def slicings_kind(cube: Any, policy: Policy) -> Any:
    """Every slicing of the kind's cube (the population, attributes, pairs, triples)."""
    return steps_of(policy.task).slicings(cube, policy)


@task(name="adjudicate", cache_policy=NO_CACHE)
def adjudicate_kind(
    cube: Any, parts: Any, policy: Policy, model: ModelInfo, run_id: str, context: dict[str, Any]
) -> dict[str, Any]:
    """The judged document of a non-binary audit (the same statistical rules as a binary one)."""
    result = steps_of(policy.task).adjudicate(cube, parts, policy, model=model, run_id=run_id, context=context)
    return result.to_dict()
