"""Engine adapters: load the policy, hand the aligned rows to the engine step by step, publish artifacts.

Each task is a thin call into ``fairgate``; the metric task is mapped once per slicing by the flow. Steps that
take a few milliseconds and mean nothing to an operator on their own (parsing the policy, planning the
slicings, publishing the artifacts) are plain functions in the audit flow: a task run costs the Prefect server
tens of milliseconds of CPU and three events (docs/benchmarks/speed.md).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.engine.cube import add_score_histogram
from fairgate.engine.label_checks import LabelEvidence
from fairgate.engine.labels import slicing_label
from fairgate.errors import POLICY_TOO_LARGE, PolicyError
from fairgate.policy.loader import MAX_POLICY_BYTES

if TYPE_CHECKING:  # the individual engine loads scikit-learn (seconds): only audits with features import it
    from fairgate.engine.individual import IndividualResult

Slicing = tuple[str, ...]


def load_policy(path: Path) -> tuple[fairgate.Policy, str]:
    """Read and parse the policy file; return the policy and its text (recorded verbatim in the trail)."""
    if not path.exists():
        raise PolicyError(f"policy file {str(path)!r} does not exist; pass --policy with a fairgate policy YAML")
    if not path.is_file():
        raise PolicyError(f"--policy {str(path)!r} is not a file")
    size = path.stat().st_size
    if size > MAX_POLICY_BYTES:  # before reading: the file could be any size
        raise PolicyError(POLICY_TOO_LARGE.format(source=path, size=size, limit=MAX_POLICY_BYTES))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PolicyError(f"policy file {path} is not UTF-8 text; save it as UTF-8 YAML") from None
    if not text.strip():
        raise PolicyError(f"policy file {path} is empty; see the policy reference, docs/reference/policy.md")
    return fairgate.Policy.from_yaml(text, source=str(path)), text


# The other flows' first step (monitor, compare, mitigation): the same reading, as a task run of their own.
read_policy = task(name="read policy", cache_policy=NO_CACHE)(load_policy)


@task(name="build cube", cache_policy=NO_CACHE)
def build_cube(frame: pa.Table, policy: fairgate.Policy) -> fairgate.Cube:
    """The cube of the aligned rows, which carry the policy's column names (``sql/matched.sql``).

    AUC exact from the score table, or from the score histogram when ``execution.auc`` asks for it.
    """
    source = "the aligned rows"
    if not (policy.statistics.exact_auc and policy.execution.histogram_auc(frame.num_rows)):
        return fairgate.build_cube(frame, policy, source=source)
    cube = fairgate.build_cube(frame, policy, source=source, exact_auc=False)
    return add_score_histogram(cube, frame, policy, policy.execution.auc_bins, source=source)


@task(name="metrics", task_run_name="metrics {slicing}", cache_policy=NO_CACHE)
def compute_slicing(cube: fairgate.Cube, slicing: Slicing, policy: fairgate.Policy) -> fairgate.SlicingResult:
    return fairgate.compute_slicing(cube, slicing, policy)


@task(name="adjudicate", cache_policy=NO_CACHE)
def adjudicate(
    cube: fairgate.Cube,
    parts: list[fairgate.SlicingResult],
    policy: fairgate.Policy,
    model: fairgate.ModelInfo,
    run_id: str,
    context: dict[str, Any],
    individual: IndividualResult | None = None,
    labels: LabelEvidence | None = None,
) -> dict[str, Any]:
    audited = fairgate.adjudicate(
        cube, parts, policy, model=model, run_id=run_id, context=context, individual=individual, labels=labels
    )
    return audited.to_dict()


def cube_cells(cube: fairgate.Cube) -> list[dict[str, Any]]:
    """The cube's cells as plain rows, for the audit trail (small: its size depends on cardinalities only)."""
    return cube.cells.to_dicts()


def artifact_slug(model_name: str) -> str:
    """The model name as Prefect allows in an artifact key (lowercase letters, digits, dashes), so each model
    keeps its own ``fairness-verdict-<model>`` history in the artifact list.

    >>> artifact_slug("Credit Scoring_v2 (EU)"), artifact_slug("Kreditwürdigkeit"), artifact_slug("__")
    ('credit-scoring-v2-eu', 'kreditwurdigkeit', 'model')
    """
    ascii_name = unicodedata.normalize("NFKD", model_name).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:_MAX_SLUG].rstrip("-") or "model"


_MAX_SLUG = 80  # artifact keys stay readable in the UI's list


def publish_artifacts(document: dict[str, Any]) -> None:
    """The verdict (markdown) and the metric table as Prefect artifacts of the flow run (called in the flow: two
    requests, no task run of its own)."""
    detail = document.get("verdict_detail") or {}
    model = document.get("model") or {}
    lines = [
        f"# Fairness verdict: **{str(document.get('verdict')).upper()}**",
        "",
        f"Model `{model.get('name')}` version `{model.get('version')}`, run `{document.get('run_id')}`, "
        f"{document.get('n_rows')} rows.",
        f"{detail.get('n_failed', 0)} of {detail.get('n_results', 0)} results failed (fail_on: "
        f"{detail.get('fail_on')}).",
    ]
    slug = artifact_slug(str(model.get("name") or "model"))
    create_markdown_artifact("\n".join(lines), key=f"fairness-verdict-{slug}", description="fairgate verdict")
    table = [
        {
            "metric": r.get("metric"),
            "slicing": slicing_label(r.get("slicing") or []),
            "value": _round(r.get("value")),
            "ci_low": _round(r.get("ci_low")),
            "ci_high": _round(r.get("ci_high")),
            "threshold": r.get("threshold"),
            "status": r.get("status"),
            "uncertain": r.get("uncertain"),
            "worst_group": str(r.get("worst_group")),
        }
        for r in document.get("results", [])
    ]
    create_table_artifact(table, key=f"fairness-metrics-{slug}", description="fairgate metric results")


def _round(value: Any) -> Any:
    return None if value is None else round(float(value), 4)
