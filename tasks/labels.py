"""Late and contested labels in the audit flow: the reference audit for label-free estimation, and the audit's
labels against external labels (the same staging and id join as the audit's own inputs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.engine.audit import slicings_binary
from fairgate.engine.cube import build_cube
from fairgate.engine.kinds import kind_of
from fairgate.engine.label_bias import disagreement_policy, label_bias
from fairgate.engine.label_checks import LabelEvidence, estimate_check
from fairgate.engine.label_free import Reference, estimated_entries
from fairgate.errors import FairgateError
from tasks.inputs.align import align_inputs, release, stage
from tasks.store.history import last_estimated_document, last_labelled_document


def check_label_request(policy: fairgate.Policy, runner: str, labels: str | None, external: str | None) -> None:
    """Before any computing: an audit without labels, or with external labels, is binary and runs in this process;
    external labels need the audit's own and attributes given, not inferred (FairgateError: exit 2)."""
    if labels and not external:
        return
    asked = "--external-labels" if external else "an audit without --labels"
    if external and not labels:
        raise FairgateError("--external-labels compares two labels: give the audit's own with --labels as well")
    if external and policy.proxy is not None:
        raise FairgateError(
            "--external-labels needs the sensitive attributes in the attributes input; the policy infers one "
            "(proxy section): leave --external-labels out, or audit with the attribute given"
        )
    if not kind_of(policy.task).binary_outcomes or runner == "dask":
        raise FairgateError(
            f"{asked} works on binary audits in this process only (task {policy.task}, runner {runner}); "
            "give --labels, leave --external-labels out, or set execution.runner: local"
        )


@task(name="label-free estimates", cache_policy=NO_CACHE)
def label_free_evidence(
    cube: fairgate.Cube, policy: fairgate.Policy, trail_path: Path, model_name: str
) -> LabelEvidence:
    """Estimated results of an audit without labels, calibrated on the model's last labelled audit in the trail."""
    document = last_labelled_document(trail_path, model_name)
    if document is None:
        note = (
            f"no labelled audit of model {model_name!r} with reliability bins in the audit trail {trail_path}: "
            "audit the model once with --labels (same --model and --trail) to calibrate its scores"
        )
        return LabelEvidence(
            labels_absent=True, estimated=estimated_entries(cube, None, policy, note), reference_note=note
        )
    reference = Reference.of(document)
    return LabelEvidence(
        labels_absent=True, estimated=estimated_entries(cube, reference, policy), reference_run_id=reference.run_id
    )


@task(name="external labels", cache_policy=NO_CACHE)
def external_label_evidence(
    policy: fairgate.Policy, predictions: str, labels: str, external: str, attributes: str
) -> LabelEvidence:
    """Disagreement between the audit's labels and the external ones per group, and the metrics under both."""
    # The policy was checked before any computing (flows/audit.py check_label_request): binary, no proxy.
    ours = _aligned(policy, predictions, labels, attributes)
    theirs = _aligned(policy, predictions, external, attributes)
    y_true = policy.columns.y_true
    both = theirs.join(ours.select("id", pl.col(y_true).alias("__audit_label")), on="id", how="inner")
    if both.height == 0:
        raise FairgateError(f"no id of the external labels {external} matches an id of the labels {labels}")
    disagreement = both.with_columns(pl.col(y_true).alias("__external_label"))
    cube = build_cube(disagreement, disagreement_policy(policy), source=external, exact_auc=False)
    groups, entries = label_bias(cube, policy)
    external_cube = build_cube(theirs, policy, source=external, exact_auc=False)
    keys = ("metric", "slicing", "value", "ci_low", "ci_high")
    results = [{k: e[k] for k in keys} for part in slicings_binary(external_cube, policy) for e in part.results]
    return LabelEvidence(bias_entries=entries, bias_groups=groups, external_results=results, external_source=external)


def check_estimates(document: dict[str, Any], trail_path: Path, model_name: str) -> dict[str, Any] | None:
    """The estimates an earlier audit without labels made of these people (same model, same predictions) against
    what this labelled audit measured; None when there was no such audit. Recorded with the run in the trail."""
    sha = ((document.get("inputs") or {}).get("predictions") or {}).get("sha256")
    earlier = last_estimated_document(trail_path, model_name, sha) if sha else None
    return None if earlier is None else estimate_check(earlier, document)


def _aligned(policy: fairgate.Policy, predictions: str, labels: str, attributes: str) -> pl.DataFrame:
    """The aligned rows of predictions, one labels input and attributes (the audit's staging and join)."""
    staged = stage(policy, predictions, labels, attributes)
    try:
        frame = pl.from_arrow(align_inputs.fn(staged).table)
    finally:
        release(staged)
    assert isinstance(frame, pl.DataFrame)
    return frame
