"""Adapters of ``fairgate compare``: pair the two models' aligned rows, compare them, write the document."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.document.comparison import ComparisonDocument
from fairgate.engine.labels import slicing_label
from fairgate.mitigation.compare import JointCube, compare, joint_cube
from tasks.audit import artifact_slug
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


@task(name="publish comparison", cache_policy=NO_CACHE)
def publish_comparison(document: dict[str, Any]) -> None:
    """The decision (markdown) and the table of changes as Prefect artifacts of the flow run."""
    candidate = document["models"]["candidate"]
    accuracy = document["accuracy"]
    lines = [
        f"# Comparison: **{document['decision'].replace('_', ' ').upper()}**",
        "",
        f"Candidate `{candidate.get('name') or 'candidate'}` vs baseline, run `{document['run_id']}`, "
        f"{document['n_rows']} people; rule `{document['rule']['rule']}`. Accuracy change "
        f"{_signed(accuracy['change'])} ({accuracy['status'].replace('_', ' ')}).",
        *[f"- {reason}" for reason in document["reasons"]],
    ]
    slug = artifact_slug(str(candidate.get("name") or "candidate"))
    create_markdown_artifact("\n".join(lines), key=f"comparison-{slug}", description="fairgate compare decision")
    rows = [
        {
            "metric": r["metric"],
            "slicing": slicing_label(r["slicing"]),
            "baseline": _rounded(r["baseline"]),
            "candidate": _rounded(r["candidate"]),
            "change": _rounded(r["change"]),
            "ci_low": _rounded(r["ci_low"]),
            "ci_high": _rounded(r["ci_high"]),
            "status": r["status"],
        }
        for r in [accuracy, *document["changes"]]
    ]
    create_table_artifact(rows, key=f"comparison-changes-{slug}", description="fairgate compare: each change")


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.4f}"
