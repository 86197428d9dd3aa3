"""What ``fairgate mitigate --method thresholds`` writes: the thresholds file, the mitigated predictions, the
frontier chart, and the summary of the audits before and after (each file atomically, beside the audit).

The numbers come from ``tasks.mitigation.thresholds.ThresholdMitigation``; here: file names, columns and the summary's
shape (accuracy cost overall and per group, in-sample and on the held-out half).
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.policy.core import Policy
from tasks.mitigation.thresholds import ThresholdMitigation, thresholds_json
from tasks.mitigation.training import audits_digest
from tasks.outputs import write_atomic, write_frame
from tasks.render.frontier_chart import frontier_chart

OUTPUT_KINDS = ("thresholds", "predictions", "frontier")


def split_small_groups(
    rows: pa.Table, policy: Policy, attributes: list[str]
) -> tuple[pa.Table, pa.Table, list[dict[str, Any]]]:
    """The rows of groups the audit judges (at least ``min_group_size`` people) and those of smaller groups.

    The audit leaves a smaller group out of its judgement, and a threshold fitted on a few dozen people is
    noise: on COMPAS, fitting the 18 Native American defendants too made the held-out TPR gap worse than
    before. Those people keep their audited decisions; the summary lists their groups.
    """
    frame = pl.from_arrow(rows)
    assert isinstance(frame, pl.DataFrame)
    present = [a for a in attributes if a in frame.columns]  # a missing column is the fit's to name
    if not present:
        return rows, frame.clear().to_arrow(), []
    minimum = policy.intersectional_analysis.min_group_size
    small = frame.group_by(present).len().filter(pl.col("len") < minimum)
    keys = small.select(present)
    judged = frame.join(keys, on=present, how="anti", nulls_equal=True)
    kept = frame.join(keys, on=present, how="semi", nulls_equal=True)
    listed = [{"group": {a: row[a] for a in present}, "n": row["len"]} for row in small.sort(present).to_dicts()]
    return judged.to_arrow(), kept.to_arrow(), listed


@task(name="write thresholds", cache_policy=NO_CACHE)
def write_thresholds(
    mitigation: ThresholdMitigation, unchanged: pa.Table, policy: Policy, output: Path
) -> dict[str, str]:
    """``thresholds_<run>.json`` (group -> rule), ``thresholds_<run>_predictions.parquet`` (id, score, y_pred:
    the audited rows with the mitigated decisions, and the ``unchanged`` rows of small groups as audited) and
    ``thresholds_<run>_frontier.svg``; returns their paths and the run id."""
    run_id = uuid.uuid4().hex[:12]
    stem = output / f"thresholds_{run_id}"
    columns = policy.columns
    kept = [columns.id, columns.score, columns.y_pred]
    parts = [_frame(table).select(kept) for table in (mitigation.mitigated, unchanged)]
    rows = pl.concat(parts, how="vertical_relaxed")
    threshold = {rule.name: rule.threshold for rule in policy.metrics}[mitigation.metric]
    written = {
        "thresholds": write_atomic(Path(f"{stem}.json"), thresholds_json(mitigation)),
        "predictions": write_frame(
            rows.select(columns.id, columns.score, columns.y_pred), Path(f"{stem}_predictions.parquet")
        ),
        "frontier": write_atomic(
            Path(f"{stem}_frontier.svg"), frontier_chart(mitigation.to_dict(), threshold=threshold).encode()
        ),
    }
    return {"run_id": run_id, **{kind: str(path) for kind, path in written.items()}}


def _frame(table: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def discard_thresholds(files: dict[str, str]) -> None:
    """Remove what :func:`write_thresholds` wrote (the re-audit refused the mitigated predictions)."""
    for kind in OUTPUT_KINDS:
        Path(files[kind]).unlink(missing_ok=True)


def _change(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Accuracy before, after and the change, overall and per group (one ``Performance.to_dict`` pair)."""
    groups = {
        name: {
            "n": after["groups"][name]["n"],
            "before": before["groups"][name]["accuracy"],
            "after": after["groups"][name]["accuracy"],
            "change": after["groups"][name]["accuracy"] - before["groups"][name]["accuracy"],
        }
        for name in after["groups"]
    }
    return {
        "overall": {
            "before": before["accuracy"],
            "after": after["accuracy"],
            "change": after["accuracy"] - before["accuracy"],
        },
        "groups": groups,
        "gap": {"before": before["gap"], "after": after["gap"]},
    }


def thresholds_summary(
    mitigation: ThresholdMitigation,
    files: dict[str, str],
    audits: dict[str, dict[str, Any]],
    sources: dict[str, str],
    answers: dict[str, Any] | None,
    unchanged: list[dict[str, Any]],
) -> dict[str, Any]:
    """What the CLI prints and ``thresholds_<run>_summary.json`` keeps: the rules, the price in accuracy (on
    the fitted rows and on a held-out half), and the verdict before and after."""
    fit = mitigation.fit
    document = mitigation.to_dict()
    held_out = mitigation.held_out
    return {
        "method": "thresholds",
        "run_id": files["run_id"],
        "answers": answers,
        "sources": sources,
        "metric": mitigation.metric,
        "constraint": fit.constraint,
        "tolerance": fit.tolerance,
        "objective": document["objective"],
        "attributes": mitigation.attributes,
        "seed": mitigation.seed,
        "groups": document["groups"],
        "unchanged_groups": unchanged,  # smaller than min_group_size: not judged, decisions as audited
        "in_sample": _change(document["before"], document["after_expected"]),
        "held_out": None
        if held_out is None
        else {
            "rows_fit": held_out["rows_fit"],
            "rows_measured": held_out["rows_measured"],
            **_change(held_out["before"], held_out["after"]),
        },
        "audits": audits_digest(audits),
        "exit_code": audits["after"]["exit_code"],
        "outputs": {kind: files[kind] for kind in OUTPUT_KINDS},
    }


def thresholds_proposal(
    mitigation: ThresholdMitigation,
    files: dict[str, str],
    unchanged: list[dict[str, Any]],
    answered: dict[str, Any] | None,
    policy: Policy,
) -> dict[str, Any]:
    """The "Proposed mitigation" block the re-audit of the mitigated predictions carries (its report shows the
    rules, the in-sample price and the frontier); the audit adds the results before and after."""
    from fairgate.mitigation.proposal import accuracy_change
    from tasks.mitigation.proposed_mitigation import fitted_thresholds, frontier_block

    fit = mitigation.fit
    objective = fit.objective if isinstance(fit.objective, str) else "accuracy"
    rows = sum(g.n for g in fit.after.groups.values())
    before_run = None if answered is None else answered["run_id"]
    return {
        "method": "thresholds",
        "run_id": files["run_id"],
        "answers": before_run,  # None: the "before" audit of this mitigation run, filled in once it has run
        "status": "proposed",
        "summary": "",
        "deployed": False,
        "note": (
            "The candidate is proposed for review, never deployed by fairgate: this audit judges its decisions; "
            "the audited model's own audit (the run this mitigation answers) stands as recorded."
        ),
        "fitted": fitted_thresholds(mitigation, unchanged),
        "measured": {
            "kind": "in_sample",
            "rows_fitted": rows,
            "rows_measured": rows,
            "note": (
                f"The thresholds were fitted on the {rows:,} audited people of the judged groups and are judged on "
                "the same people (in sample: optimistic). The thresholds file's held_out_check fits on one half and "
                "measures the other; policy mitigation.auto reports that split in the audit itself."
            ),
        },
        "focus": {"metric": mitigation.metric, "slicing": mitigation.attributes},
        "accuracy": accuracy_change(fit.before, fit.after, objective),
        "frontier": frontier_block(mitigation, policy),
        "files": {kind: files[kind] for kind in OUTPUT_KINDS},
        "sha256": {kind: hashlib.sha256(Path(files[kind]).read_bytes()).hexdigest() for kind in OUTPUT_KINDS},
    }
