"""Adapters of ``fairgate compare``: pair the two models' aligned rows, compare them, write the document."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.document.comparison import ComparisonDocument
from fairgate.mitigation.compare import JointCube, compare, joint_cube
from tasks.outputs import write_atomic


@task(name="pair models", cache_policy=NO_CACHE)
def pair_models(baseline: pa.Table, candidate: pa.Table, policy: fairgate.Policy) -> JointCube:
    """The joint cube of both models' aligned rows (staged inputs name their id column ``id``)."""
    return joint_cube(baseline, candidate, policy, id_column="id")


@task(name="compare models", cache_policy=NO_CACHE)
def compare_models(joint: JointCube, policy: fairgate.Policy) -> dict[str, Any]:
    """Each judged metric's and accuracy's change with paired intervals, and the promotion decision."""
    return compare(joint, policy)


def comparison_path(out_dir: Path, run_id: str) -> Path:
    """Where a comparison document goes: ``comparison_<run id>.json`` in the output folder.

    >>> comparison_path(Path("out"), "a/b 1").as_posix()
    'out/comparison_a_b_1.json'
    """
    return out_dir / f"comparison_{re.sub(r'[^A-Za-z0-9._-]+', '_', run_id)}.json"


@task(name="write comparison", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1)
def write_comparison(document: dict[str, Any], out_dir: Path) -> str:
    """Write the comparison document atomically (a temporary sibling, then a rename); return its path.

    The document is first validated against its models (fairgate/document/comparison.py), so every file
    written matches the shipped schema.
    """
    ComparisonDocument.model_validate(document)
    path = comparison_path(out_dir, str(document["run_id"]))
    return str(write_atomic(path, (json.dumps(document, indent=2, allow_nan=False) + "\n").encode()))
