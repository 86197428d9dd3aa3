"""The audit's Prefect steps per kind of model (policy ``task:``): the engine's steps from the kind registry
(fairgate/engine/kinds.py), and here what only the tasks side has: each kind's validation suites and the cube
rows the trail stores.

Binary audits do not go through this table (flows/audit.py keeps their path, with streaming, Dask and proxy
inference).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.engine.adjudicate import ModelInfo
from fairgate.engine.kinds import Capability, KindSteps, kind_of, refusal
from fairgate.errors import PolicyError
from fairgate.policy.core import Policy
from tasks.audit import cube_cells as binary_cells
from tasks.inputs.staged import Staged
from tasks.validation.validate import Validation

if TYPE_CHECKING:  # a binary gate loads no other kind's modules: their cubes are annotations here
    from fairgate.engine.multiclass.cube import MulticlassCube
    from fairgate.engine.ranking.cube import RankingCube
    from fairgate.engine.regression.audit import RegressionCounts

Suites = Callable[[Staged, Validation, tuple[str, ...]], None]


@dataclass(frozen=True)
class KindTasks:
    """What the tasks side adds to a kind's engine steps.

    ``cube_cells(cube)`` the rows the trail's ``cubes`` table stores; ``validate(staged, validation, roles)``
    the kind's Great Expectations suites on the staged inputs (raises DataError); None for a kind whose inputs
    the shared suites check whole (binary), which then has no task run for it.
    """

    cube_cells: Callable[[Any], list[dict[str, Any]]]
    validate: Suites | None


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


def _suites_in(module: str) -> Suites:
    """A kind's suites (``validate_<kind>`` in ``tasks.validation.<module>``), imported when first run."""

    def run(staged: Staged, validation: Validation, roles: tuple[str, ...]) -> None:
        getattr(importlib.import_module(f"tasks.validation.{module}"), module)(staged, validation, roles)

    return run


KIND_TASKS: dict[str, KindTasks] = {
    # Binary labels and predictions are checked by tasks/validate.validate_inputs, which every flow runs.
    "binary": KindTasks(cube_cells=binary_cells, validate=None),
    "multiclass": KindTasks(cube_cells=multiclass_cells, validate=_suites_in("validate_multiclass")),
    "regression": KindTasks(cube_cells=regression_cells, validate=_suites_in("validate_regression")),
    "ranking": KindTasks(cube_cells=ranking_cells, validate=_suites_in("validate_ranking")),
}


def require_capability(policy: Policy, capability: Capability, command: str) -> None:
    """Refuse (exit 2) a command the policy's kind cannot run (the kind registry's capabilities)."""
    kind = kind_of(policy.task)
    if not kind.can(capability):
        raise PolicyError(f"{refusal(capability, kind, command)}. Use fairgate audit for a {kind.name} model")


def steps_of(task: str) -> KindSteps:
    """The engine steps of a kind (a policy of a kind this installation lacks is refused, exit 2)."""
    if task not in KIND_TASKS:
        raise PolicyError(f"task: {task} is not available in this installation; kinds available: {sorted(KIND_TASKS)}")
    return kind_of(task).steps()


def tasks_of(task: str) -> KindTasks:
    """The tasks-side pieces of a kind (validation, trail cells)."""
    steps_of(task)  # the same refusal for a kind this installation lacks
    return KIND_TASKS[task]


# Prefect tasks: each a thin call into the kind's engine, so a run's steps show in the UI as a binary audit's do.
@task(name="validate inputs", task_run_name="validate {staged.policy.task} inputs", cache_policy=NO_CACHE)
def validate_kind(
    staged: Staged, validation: Validation, roles: tuple[str, ...] = ("predictions", "labels", "attributes")
) -> Validation:
    """The kind's own Great Expectations suites on the staged inputs, after the shared ones (ids, attributes)."""
    suites = tasks_of(staged.policy.task).validate
    if suites is None:  # the flow asks has_own_suites first: no task run for a kind without suites
        raise ValueError(f"a {staged.policy.task} audit has no suites of its own to run")
    suites(staged, validation, roles)
    return validation


def has_own_suites(task: str) -> bool:
    """Whether a kind has validation suites beyond the shared ones (a ``validate_kind`` task run to make)."""
    return tasks_of(task).validate is not None


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
