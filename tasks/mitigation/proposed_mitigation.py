"""The proposed-mitigation steps of a failing audit (policy ``mitigation.auto``): split, fit, judge, write.

``flows/proposed_mitigation.py`` is the recipe. Here: the seeded holdout split, the engine audit of the measured
rows before and after the remedy (the same policy, the same people), the files written into the audit's staging
folder (moved into place with the audit's own outputs, or discarded with them) and the block the audit document
carries (``fairgate.document.mitigation.MitigationBlock``).

Checked when the policy is loaded (:func:`check_mitigation_policy`), before any computing: the method's inputs
exist, the metric can be bounded, the groups are policy attributes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.errors import PolicyError
from fairgate.mitigation.rates import performance_of
from fairgate.policy.core import Policy
from tasks.inputs.io import parse_source
from tasks.mitigation.thresholds import ThresholdMitigation, chosen_metric, group_labels
from tasks.mitigation.training import require_mitigation_extra
from tasks.outputs import write_atomic


def wants_mitigation(policy: Policy) -> bool:
    """Whether a failing audit under this policy proposes a remedy."""
    return policy.mitigation is not None and policy.mitigation.auto


def mitigation_groups(policy: Policy) -> list[str]:
    """The attributes the remedy groups by: the section's ``groups``, else the policy's first attribute."""
    section = policy.mitigation
    assert section is not None
    return list(section.groups or [policy.sensitive_attributes[0].name])


def check_mitigation_policy(policy: Policy, source: str = "policy") -> None:
    """Refuse, before any computing, a ``mitigation:`` section the audit could not carry out (exit 2)."""
    if not wants_mitigation(policy):
        return
    section = policy.mitigation
    assert section is not None
    names = policy.attribute_names
    unknown = [g for g in section.groups or [] if g not in names]
    if unknown:
        raise PolicyError(
            f"{source}: mitigation.groups names {unknown}, which are not sensitive attributes; declared: {names}"
        )
    if section.metric is not None and section.metric not in {m.name for m in policy.metrics}:
        raise PolicyError(
            f"{source}: mitigation.metric {section.metric!r} is not judged by the policy; its metrics: "
            f"{sorted(m.name for m in policy.metrics)}"
        )
    if section.method == "thresholds":
        if policy.proxy is not None:
            raise PolicyError(
                f"{source}: mitigation.method thresholds needs each person's group; with a proxy section the "
                "groups are inferred probabilities. Use method reweighing or retrain, or drop mitigation.auto"
            )
        chosen_metric(policy, section.metric)  # PolicyError naming the metrics thresholds can bound
        return
    if section.method == "retrain":
        require_mitigation_extra()
        from fairgate.mitigation.retraining import choose_constraint

        choose_constraint(policy)
    assert section.retrain is not None  # the section's own validator requires it for these methods
    for role in ("training", "evaluation", "estimator"):
        value = getattr(section.retrain, role)
        if value is None:
            continue
        parsed = parse_source(f"mitigation.retrain.{role}", value) if role != "estimator" else None
        path = Path(value) if parsed is None else None
        if path is not None and not path.is_file():
            raise PolicyError(f"{source}: mitigation.retrain.estimator {value!r} does not exist")


def split_rows(rows: pa.Table, share: float, seed: int) -> tuple[pa.Table, pa.Table]:
    """The rows the remedy is fitted on and the held-out rows it is judged on (``share`` of them, seeded)."""
    held_out = np.random.default_rng(seed).random(rows.num_rows) < share
    mask = pa.array(held_out)
    return rows.filter(pa.compute.invert(mask)), rows.filter(mask)


def with_decisions(rows: pa.Table, mitigation: ThresholdMitigation, policy: Policy, seed: int) -> pa.Table:
    """``rows`` with ``y_pred`` replaced by the fitted rules' decisions (drawn with ``seed``)."""
    frame = _frame(rows)
    if frame.height == 0:
        return rows
    columns = policy.columns
    groups = group_labels(frame, mitigation.attributes)
    decisions = mitigation.fit.apply(frame[columns.score].to_numpy(), groups, np.random.default_rng(seed))
    dtype = frame.schema.get(columns.y_pred, pl.Int8)
    return frame.with_columns(pl.Series(columns.y_pred, decisions).cast(dtype)).to_arrow()


def _frame(table: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def concat_rows(*tables: pa.Table) -> pa.Table:
    """The tables one under the other (columns as in the first)."""
    return pl.concat([_frame(t) for t in tables], how="vertical_relaxed").to_arrow()


@task(name="judge measured rows", cache_policy=NO_CACHE)
def judge_rows(rows: pa.Table, policy: Policy, model: fairgate.ModelInfo, run_id: str) -> dict[str, Any]:
    """The engine's audit of the measured rows under the policy (no report, no trail: a part of this run)."""
    return fairgate.audit(rows, policy, model=model, run_id=run_id, source="the held-out rows").to_dict()


def accuracy_on(rows: pa.Table, policy: Policy, attributes: list[str], measure: str, after: pa.Table) -> dict[str, Any]:
    """The price on the measured rows of the fitted groups: ``measure`` overall and accuracy per group."""
    from fairgate.mitigation.proposal import accuracy_change

    columns = policy.columns
    first, second = _frame(rows), _frame(after)
    groups = group_labels(first, attributes)
    truth = first[columns.y_true].to_numpy()
    label = policy.favorable_label
    before_performance = performance_of(truth, first[columns.y_pred].to_numpy(), groups, favorable_label=label)
    after_performance = performance_of(truth, second[columns.y_pred].to_numpy(), groups, favorable_label=label)
    return accuracy_change(before_performance, after_performance, measure)


def frontier_block(mitigation: ThresholdMitigation, policy: Policy) -> dict[str, Any]:
    """The sweep, the audited model's point and the chosen point (fit rows), with the metric's threshold."""
    document = mitigation.to_dict()
    threshold = {rule.name: rule.threshold for rule in policy.metrics}[mitigation.metric]
    chosen = document["after_expected"]
    return {
        "metric": mitigation.metric,
        "threshold": threshold,
        **document["frontier"],
        "chosen": {"gap": chosen["gap"], "accuracy": chosen["accuracy"], "tolerance": mitigation.fit.tolerance},
    }


def fitted_thresholds(mitigation: ThresholdMitigation, unchanged: list[dict[str, Any]]) -> dict[str, Any]:
    """The block's ``fitted``: the rule of each group and the groups left as audited."""
    document = mitigation.to_dict()
    return {
        "kind": "group_thresholds",
        "metric": mitigation.metric,
        "constraint": mitigation.fit.constraint,
        "tolerance": mitigation.fit.tolerance,
        "objective": document["objective"],
        "attributes": mitigation.attributes,
        "group_name": document["group_name"],
        "favorable_label": mitigation.fit.favorable_label,
        "score_scale": document["score_scale"],
        "groups": document["groups"],
        "unchanged_groups": unchanged,
    }


@task(name="write proposed mitigation", cache_policy=NO_CACHE)
def write_files(
    contents: dict[str, tuple[str, bytes]], staging: Path, final: Path
) -> tuple[dict[str, str], dict[str, str]]:
    """Write each ``kind -> (file name, bytes)`` into the staging folder; return the final paths and sha256s.

    The paths are those the files have once the audit moves its staging folder into place (the document and
    the report name them before that happens)."""
    paths, digests = {}, {}
    for kind, (name, data) in contents.items():
        write_atomic(staging / name, data)
        paths[kind] = str(final / name)
        digests[kind] = hashlib.sha256(data).hexdigest()
    return paths, digests


def frame_bytes(table: pa.Table, columns: list[str]) -> bytes:
    """A Parquet file's bytes of ``columns`` of ``table``."""
    import io

    buffer = io.BytesIO()
    _frame(table).select(columns).write_parquet(buffer)
    return buffer.getvalue()


def json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def record_proposed_mitigation(trail_path: Path, block: dict[str, Any] | None, run_id: str) -> dict[str, Any] | None:
    """The block's row in the trail's ``mitigations`` chain, recorded after the audit run ``run_id`` when the block
    answers that run (mitigation.auto); a candidate's audit carries a block ``fairgate mitigate`` records."""
    if block is None or block["answers"] != run_id:
        return None
    from tasks.store import record_mitigation

    outputs = {kind: {"path": path, "sha256": block["sha256"][kind]} for kind, path in block["files"].items()}
    return record_mitigation(
        trail_path,
        mitigation_id=block["run_id"],
        answers=block["answers"],
        method=block["method"],
        status=block["status"],
        verdict_before=block["verdict_before"],
        verdict_after=block["verdict_after"],
        outputs=outputs,
    )
