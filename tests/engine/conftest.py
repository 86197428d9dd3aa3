"""Fixtures for the engine's tests: the COMPAS frame, generated data, policies built in code, quiet oracles.

Oracles (Fairlearn, sklearn, AIF360) are run inside ``quiet_oracles()`` so that their own deprecation noise
does not trip ``pytest -W error``; the engine is always called outside it, so an engine warning still fails.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import fairgate

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
COMPAS_CSV = DATA / "compas" / "compas-scores-two-years.csv"

# Attributes of the generated data: 3, 4, 4 and 5 values (as in the engine issue's benchmark).
GENERATED_LEVELS: dict[str, list[str]] = {
    "a": ["a0", "a1", "a2"],
    "b": ["b0", "b1", "b2", "b3"],
    "c": ["c0", "c1", "c2", "c3"],
    "d": ["d0", "d1", "d2", "d3", "d4"],
}


@contextlib.contextmanager
def quiet_oracles() -> Iterator[None]:
    """Silence third-party warnings (pandas/sklearn/aif360 deprecations) around oracle calls only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def load_compas() -> pl.DataFrame:
    """COMPAS two-year file as the engine's input: race, sex, age_cat, y_true, y_pred, score."""
    raw = pl.read_csv(COMPAS_CSV)
    # The header has decile_score twice; polars renames the second copy, the first one is the score.
    assert "decile_score_duplicated_0" in raw.columns
    return raw.select(
        pl.col("race"),
        pl.col("sex"),
        pl.col("age_cat"),
        pl.col("two_year_recid").cast(pl.Int64).alias("y_true"),
        pl.col("score_text").is_in(["Medium", "High"]).cast(pl.Int64).alias("y_pred"),
        (pl.col("decile_score") / 10.0).alias("score"),
    )


@pytest.fixture(scope="session")
def compas() -> pl.DataFrame:
    frame = load_compas()
    # Facts from shared/data/README.md: guard against reading the wrong file or column.
    assert frame.height == 7214
    assert abs(frame["y_true"].mean() - 0.4507) < 1e-4  # type: ignore[operator]
    return frame


def generate(
    seed: int, n: int = 4000, *, ties: bool = False, levels: dict[str, list[str]] | None = None
) -> pl.DataFrame:
    """Synthetic audit data: skewed attribute frequencies, group-dependent base rates, an imperfect model.

    ``ties=True`` rounds scores to one decimal so that many rows share a score (exercises AUC tie handling).
    """
    levels = levels or GENERATED_LEVELS
    rng = np.random.default_rng(seed)
    columns: dict[str, Any] = {}
    shift = np.zeros(n)
    for i, (name, values) in enumerate(levels.items()):
        weights = rng.dirichlet(np.full(len(values), 3.0))
        codes = rng.choice(len(values), size=n, p=weights)
        columns[name] = np.array(values)[codes]
        shift += (codes - codes.mean()) * (0.3 if i < 2 else 0.1)
    y_true = (rng.random(n) < 1.0 / (1.0 + np.exp(-(shift - 0.2)))).astype(np.int64)
    logit = 1.4 * (y_true - 0.5) + 0.5 * shift + rng.normal(0.0, 1.0, n)
    score = 1.0 / (1.0 + np.exp(-logit))
    if ties:
        score = np.round(score, 1)
    y_pred = (score >= 0.5).astype(np.int64)
    flip = rng.random(n) < 0.05  # a model whose decisions do not follow its score exactly
    y_pred[flip] = 1 - y_pred[flip]
    return pl.DataFrame({**columns, "y_true": y_true, "y_pred": y_pred, "score": score})


def make_policy(
    attributes: list[str] | list[dict[str, Any]],
    metrics: list[dict[str, Any]] | None = None,
    *,
    min_group_size: int = 1,
    n_bootstrap: int = 50,
    **extra: Any,
) -> fairgate.Policy:
    """A policy built in code. ``extra`` keys go to the ``fairness_checker`` mapping (deep keys as dicts)."""
    document: dict[str, Any] = {
        "sensitive_attributes": [a if isinstance(a, dict) else {"name": a} for a in attributes],
        "metrics": metrics or [{"name": "demographic_parity_difference", "threshold": 0.1}],
        "intersectional_analysis": {"min_group_size": min_group_size},
        "statistics": {"n_bootstrap": n_bootstrap},
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(document.get(key), dict):
            document[key] = {**document[key], **value}
        else:
            document[key] = value
    return fairgate.Policy.from_mapping({"fairness_checker": document}, source="test-policy")


def group_key(slicing: list[str] | tuple[str, ...], group: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(slicing), tuple(group[a] for a in slicing)


def groups_by_key(document: dict[str, Any]) -> dict[tuple[tuple[str, ...], tuple[str, ...]], dict[str, Any]]:
    """The document's group entries keyed by (slicing, group values in slicing order)."""
    return {group_key(g["slicing"], g["group"]): g for g in document["groups"]}


def stable_view(document: dict[str, Any]) -> dict[str, Any]:
    """The parts of an audit document that must not depend on when or how it was run."""
    return {k: v for k, v in document.items() if k not in ("run_id", "created_at")}


def assert_close_tree(left: Any, right: Any, *, tol: float = 1e-9, path: str = "$") -> None:
    """Recursive equality with a tolerance for floats (sums in another order differ in the last bits)."""
    if isinstance(left, dict):
        assert isinstance(right, dict), path
        assert set(left) == set(right), f"{path}: keys {sorted(set(left) ^ set(right))} differ"
        for key in left:
            assert_close_tree(left[key], right[key], tol=tol, path=f"{path}.{key}")
    elif isinstance(left, list):
        assert isinstance(right, list), f"{path}: {left!r} != {right!r}"
        assert len(left) == len(right), f"{path}: {left!r} != {right!r}"
        for i, (a, b) in enumerate(zip(left, right, strict=True)):
            assert_close_tree(a, b, tol=tol, path=f"{path}[{i}]")
    elif isinstance(left, float) and not isinstance(right, bool) and isinstance(right, int | float):
        assert abs(left - right) <= tol * max(1.0, abs(left)), f"{path}: {left!r} != {right!r}"
    elif isinstance(left, np.ndarray):  # a family's gaps, standard errors, counts: the same tolerance, elementwise
        assert isinstance(right, np.ndarray), f"{path}: {left!r} != {right!r}"
        np.testing.assert_allclose(left, right, rtol=tol, atol=tol, equal_nan=True, err_msg=path)
    elif dataclasses.is_dataclass(left) and not isinstance(left, type):  # e.g. a PairFamily: field by field
        assert type(left) is type(right), f"{path}: {left!r} != {right!r}"
        for item in dataclasses.fields(left):
            assert_close_tree(getattr(left, item.name), getattr(right, item.name), tol=tol, path=f"{path}.{item.name}")
    else:
        assert left == right, f"{path}: {left!r} != {right!r}"


class Helpers:
    """Plain helpers handed to tests as one fixture (test modules do not import conftest)."""

    generate = staticmethod(generate)
    make_policy = staticmethod(make_policy)
    load_compas = staticmethod(load_compas)
    quiet_oracles = staticmethod(quiet_oracles)
    group_key = staticmethod(group_key)
    groups_by_key = staticmethod(groups_by_key)
    stable_view = staticmethod(stable_view)
    assert_close_tree = staticmethod(assert_close_tree)
    levels = GENERATED_LEVELS


@pytest.fixture(scope="session")
def h() -> type[Helpers]:
    return Helpers
