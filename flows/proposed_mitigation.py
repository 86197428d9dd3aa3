"""The ``fairgate-proposed-mitigation`` subflow: the remedy a failing audit proposes (policy ``mitigation.auto``).

Called by the ``fairness-audit`` flow after the verdict and before the report, so the same report, e-mail and
JSON document carry the proposal. It reads the audit's inputs again (a subflow's parameters go through the
Prefect API, so it is handed paths, not rows), fits the remedy, judges the measured rows before and after with
the engine under the same policy, and writes its files into the audit's staging folder: they are moved into
place with the audit's outputs, or discarded with them. The candidate is proposed, never deployed.

- thresholds: group thresholds fitted on a seeded share of the rows, judged on the held-out rest;
- retrain: the estimator refitted as is and under the policy's constraint on ``retrain.training``, both judged
  on ``retrain.evaluation``;
- reweighing: Kamiran-Calders weights of ``retrain.training``; with an estimator and evaluation data, the
  estimator trained with and without them, both judged on the evaluation data.

A remedy the data does not allow (a group without both outcomes, an estimator that cannot be trained on the
features) is recorded as ``not_possible`` with the reason; the audit itself is unaffected.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from prefect import get_run_logger

import fairgate
from fairgate.errors import FairgateError
from fairgate.mitigation.proposal import NOT_DEPLOYED, paired_results, verdict_sentence
from fairgate.mitigation.retraining import accuracy_cost
from fairgate.policy.core import Policy
from flows.plain_flow import plain_flow
from tasks.audit import read_policy
from tasks.inputs.align import align_inputs, release, stage_inputs
from tasks.mitigation.proposed_mitigation import (
    accuracy_on,
    concat_rows,
    fitted_thresholds,
    frame_bytes,
    frontier_block,
    json_bytes,
    judge_rows,
    mitigation_groups,
    split_rows,
    wants_mitigation,
    with_decisions,
    write_files,
)
from tasks.mitigation.thresholds import fit_thresholds_task, thresholds_json
from tasks.mitigation.thresholds_outputs import split_small_groups
from tasks.outputs import discard_staging, staging_dir
from tasks.render.frontier_chart import frontier_svg


def propose_mitigation(
    document: dict[str, Any], policy: Policy, policy_path: str, sources: dict[str, str], output: Path
) -> dict[str, Any] | None:
    """The ``mitigation`` block of a failing audit whose policy asks for one (else None), its files staged."""
    if document["verdict"] != "fail" or not wants_mitigation(policy):
        return None
    staging = staging_dir(output, document["run_id"])
    try:
        return fairgate_proposed_mitigation(
            policy=policy_path,
            **sources,
            staging=str(staging),
            output=str(output),
            answers=document["run_id"],
            model_name=str(document["model"]["name"]),
            model_version=str(document["model"]["version"]),
        )
    except BaseException:
        discard_staging(staging)  # the audit fails with it: nothing of this run may stay behind
        raise


@plain_flow(name="fairgate-proposed-mitigation")
def fairgate_proposed_mitigation(
    policy: str,
    predictions: str,
    labels: str,
    attributes: str,
    staging: str,
    output: str,
    answers: str,
    model_name: str,
    model_version: str,
) -> dict[str, Any]:
    """Fit the policy's remedy, judge it before and after on the measured rows; return the document's block."""
    rules, _ = read_policy(Path(policy))
    section = rules.mitigation
    assert section is not None
    run_id = uuid.uuid4().hex[:12]
    context = {
        "run_id": run_id,
        "answers": answers,
        "staging": Path(staging),
        "output": Path(output),
        "model": fairgate.ModelInfo(name=model_name, version=model_version),
    }
    try:
        if section.method == "thresholds":
            block = _thresholds(
                rules, {"predictions": predictions, "labels": labels, "attributes": attributes}, context
            )
        else:
            block = _trained(rules, context)
    except FairgateError as exc:  # the data does not allow this remedy: say why, the audit stands
        get_run_logger().warning(f"proposed mitigation ({section.method}) not possible: {exc.message}")
        return _not_possible(section.method, context, exc.message)
    get_run_logger().info(f"proposed mitigation {run_id}: {block['summary']}")
    return block


def _thresholds(rules: Policy, sources: dict[str, str], context: dict[str, Any]) -> dict[str, Any]:
    """Group thresholds fitted on the rows outside the held-out share, judged on the held-out rows."""
    section = rules.mitigation
    assert section is not None
    seed = rules.statistics.seed
    chosen = mitigation_groups(rules)
    judged, unchanged, small = split_small_groups(_aligned_rows(rules, sources), rules, chosen)
    fit_rows, measured = split_rows(judged, section.holdout, seed)
    _, measured_small = split_rows(unchanged, section.holdout, seed)
    mitigation = fit_thresholds_task(
        fit_rows,
        rules,
        metric=section.metric,
        attributes=chosen,
        tolerance=section.tolerance,
        objective=section.objective,
    )
    after = with_decisions(measured, mitigation, rules, seed)
    before_doc, after_doc = _judge_both(
        concat_rows(measured, measured_small), concat_rows(after, measured_small), rules, context, "thresholds"
    )
    columns = rules.columns
    every_row = concat_rows(with_decisions(fit_rows, mitigation, rules, seed + 1), after, unchanged)
    frontier = frontier_block(mitigation, rules)
    stem = f"thresholds_{context['run_id']}"
    files = {
        "thresholds": (f"{stem}.json", thresholds_json(mitigation)),
        "predictions": (
            f"{stem}_predictions.parquet",
            frame_bytes(every_row, [columns.id, columns.score, columns.y_pred]),
        ),
        "frontier": (f"{stem}_frontier.svg", frontier_svg(frontier).encode()),
    }
    share = section.holdout
    measured_rows = {
        "kind": "holdout",
        "share_measured": share,
        "seed": seed,
        "rows_fitted": fit_rows.num_rows,
        "rows_measured": measured.num_rows + measured_small.num_rows,
        "note": (
            f"The thresholds were fitted on {fit_rows.num_rows} people ({1 - share:.0%} of the rows of the judged "
            f"groups, drawn with seed {seed}) and judged on the other {measured.num_rows + measured_small.num_rows}: "
            "the numbers below are what people the rules were not fitted on see. Groups under min_group_size "
            f"({', '.join(_group_text(s['group']) for s in small) or 'none'}) keep their audited decisions."
        ),
    }
    accuracy = accuracy_on(measured, rules, chosen, section.objective, after)
    context["focus"] = {"metric": mitigation.metric, "slicing": chosen}
    return _block(
        "thresholds",
        context,
        fitted_thresholds(mitigation, small),
        measured_rows,
        before_doc,
        after_doc,
        accuracy,
        files,
        frontier=frontier,
    )


def _aligned_rows(rules: Policy, sources: dict[str, str]) -> pa.Table:
    """The audit's inputs staged and aligned again, as the audit aligned them (it has validated them already in
    this run, so the Great Expectations suites are not run a second time)."""
    staged = stage_inputs(rules, sources["predictions"], sources["labels"], sources["attributes"])
    try:
        return align_inputs(staged).table
    finally:
        release(staged)


def _trained(rules: Policy, context: dict[str, Any]) -> dict[str, Any]:
    """Retraining, or reweighing (a weighted refit when an estimator and evaluation data are given)."""
    from tasks.mitigation.training import fit_models, read_table

    section = rules.mitigation
    assert section is not None
    assert section.retrain is not None
    inputs = section.retrain
    training = read_table("training", inputs.training)
    if section.method == "reweighing":
        return _reweighing(rules, context, training)
    plan = _evaluation_plan(rules, training, inputs)
    from fairgate.mitigation.retraining import choose_constraint

    choice = choose_constraint(rules)
    fitted = fit_models(plan["estimator"], plan["train"], choice, inputs.max_iter)
    context["focus"] = {"metric": choice.metric, "slicing": plan["attributes"]}
    description = {
        "kind": "exponentiated_gradient",
        "estimator": inputs.estimator,
        "constraint": choice.record(plan["attributes"]),
        "features": plan["features"],
        "training": inputs.training,
        "rows_trained": int(plan["train"].favourable.size),
    }
    return _judged_models(rules, context, plan, fitted.baseline, fitted.mitigated, "retrain", description)


def _evaluation_plan(rules: Policy, training: pl.DataFrame, inputs: Any) -> dict[str, Any]:
    """The training and evaluation sets and the estimator, checked (exit-2 errors name the policy key)."""
    from tasks.mitigation.training import feature_columns, load_estimator, read_table, require_columns, training_set

    groups = mitigation_groups(rules)
    evaluation = read_table("evaluation", str(inputs.evaluation))
    features = list(inputs.features) if inputs.features else feature_columns(training, rules, groups)
    audited = rules.attribute_names
    require_columns(evaluation, "evaluation", audited, "the re-audit judges every attribute of the policy")
    return {
        "attributes": groups,
        "features": features,
        "estimator": load_estimator(Path(str(inputs.estimator))),
        "train": training_set(training, "training", rules, groups, features),
        "eval": training_set(evaluation, "evaluation", rules, groups, features),
        "eval_frame": evaluation.select(rules.columns.id, rules.columns.y_true, *audited),
    }


def _reweighing(rules: Policy, context: dict[str, Any], training: pl.DataFrame) -> dict[str, Any]:
    """Kamiran-Calders weights; with an estimator and evaluation data, the model trained with and without them."""
    from fairgate.mitigation.reweighing import reweigh
    from tasks.mitigation.training import weights_frame

    section = rules.mitigation
    assert section is not None
    assert section.retrain is not None
    columns = rules.columns
    groups = mitigation_groups(rules)
    result = reweigh(training, groups, columns.y_true)
    fitted = {
        "kind": "reweighing",
        "attributes": list(result.attributes),
        "label": result.label,
        "training": section.retrain.training,
        "cells": result.table.to_dicts(),
    }
    selection = ("demographic_parity_difference", "disparate_impact_ratio", "demographic_parity_ratio")
    targeted = next((rule.name for rule in rules.metrics if rule.name in selection), None)
    if targeted is not None:  # the weights make the label independent of the group: selection rates
        context["focus"] = {"metric": targeted, "slicing": groups}
    stem = f"reweighing_{context['run_id']}"
    weights = weights_frame(training, result, columns.id)
    files = {"weights": (f"{stem}_weights.parquet", _parquet(weights))}
    inputs = section.retrain
    if inputs.estimator is None or inputs.evaluation is None:
        measured = {
            "kind": "none",
            "rows_fitted": training.height,
            "rows_measured": 0,
            "note": (
                "Only the weights were computed: give mitigation.retrain.estimator and .evaluation to train the "
                "model with and without them and judge both here. Train with the weights file's weight column as "
                "sample_weight."
            ),
        }
        return _block("reweighing", context, fitted, measured, None, None, None, files)
    plan = _evaluation_plan(rules, training, inputs)
    baseline, weighted = _weighted_fit(plan, result.weights.to_numpy())
    return _judged_models(rules, context, plan, baseline, weighted, "reweighing", fitted, files)


def _weighted_fit(plan: dict[str, Any], weights: np.ndarray) -> tuple[Any, Any]:
    """The estimator fitted as is and with the weights (scikit-learn's ``sample_weight``)."""
    from sklearn.base import clone

    from fairgate.errors import DataError
    from tasks.mitigation.training import sample_weight_argument

    train = plan["train"]
    estimator = plan["estimator"]
    try:
        baseline = clone(estimator).fit(train.features, train.favourable)
        weighted = clone(estimator).fit(
            train.features, train.favourable, **{sample_weight_argument(estimator): weights}
        )
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"the estimator could not be trained on mitigation.retrain.training ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0]}); it must accept the feature columns and sample weights in fit"
        ) from None
    return baseline, weighted


def _parquet(frame: pl.DataFrame) -> bytes:
    import io

    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


def _judged_models(
    rules: Policy,
    context: dict[str, Any],
    plan: dict[str, Any],
    baseline: Any,
    candidate: Any,
    method: str,
    fitted: dict[str, Any],
    files: dict[str, tuple[str, bytes]] | None = None,
) -> dict[str, Any]:
    """Both models' decisions on the evaluation set, judged under the policy; the candidate model written."""
    from tasks.mitigation.training import favourable_probability, predictions_frame, serialised_model

    evaluation = plan["eval"]
    columns = rules.columns
    before = np.asarray(baseline.predict(evaluation.features), dtype=np.int64)
    p_after = favourable_probability(candidate, evaluation.features)
    if hasattr(candidate, "predictors_"):  # a randomised classifier: drawn with the policy's seed
        after = (np.random.default_rng(rules.statistics.seed).random(p_after.size) < p_after).astype(np.int64)
    else:
        after = np.asarray(candidate.predict(evaluation.features), dtype=np.int64)
    frames = {
        "before": predictions_frame(
            evaluation.ids, favourable_probability(baseline, evaluation.features), before, rules
        ),
        "after": predictions_frame(evaluation.ids, p_after, after, rules),
    }
    base = plan["eval_frame"]
    rows = {stage: base.join(frame, on=columns.id, how="inner").to_arrow() for stage, frame in frames.items()}
    before_doc, after_doc = _judge_both(rows["before"], rows["after"], rules, context, method)
    cost = accuracy_cost(evaluation.favourable, before, after, evaluation.groups)
    accuracy = {
        "measure": "accuracy",
        "overall": _renamed(cost["overall"]),
        "groups": {name: _renamed(g) for name, g in cost["groups"].items()},
    }
    stem = f"{method}_{context['run_id']}"
    files = (files or {}) | {
        "model": (f"{stem}_model.joblib", serialised_model(candidate)),
        "predictions": (f"{stem}_predictions.parquet", _parquet(frames["after"])),
        "baseline_predictions": (f"{stem}_baseline_predictions.parquet", _parquet(frames["before"])),
    }
    measured = {
        "kind": "evaluation_set",
        "rows_fitted": int(plan["train"].favourable.size),
        "rows_measured": int(evaluation.favourable.size),
        "note": (
            f"Both models were trained on the {int(plan['train'].favourable.size)} training rows and are judged on "
            f"the {int(evaluation.favourable.size)} rows of the evaluation set: 'before' is the estimator refitted "
            "as is, so the two columns differ only by the remedy (not the audited model's own predictions)."
        ),
    }
    return _block(method, context, fitted, measured, before_doc, after_doc, accuracy, files)


def _renamed(entry: dict[str, Any]) -> dict[str, Any]:
    return {"n": entry["rows"], "before": entry["before"], "after": entry["after"], "change": entry["change"]}


def _not_possible(method: str, context: dict[str, Any], reason: str) -> dict[str, Any]:
    return {
        "method": method,
        "run_id": context["run_id"],
        "answers": context["answers"],
        "status": "not_possible",
        "summary": f"No {method} remedy could be fitted: {reason}",
        "fitted": {},
        "measured": {"kind": "none", "rows_fitted": 0, "rows_measured": 0, "note": reason},
        "verdict_before": None,
        "verdict_after": None,
        "results": [],
        "accuracy": None,
        "frontier": None,
        "files": {},
        "sha256": {},
        "deployed": False,
        "note": NOT_DEPLOYED,
    }


def _judge_both(
    before: pa.Table, after: pa.Table, rules: Policy, context: dict[str, Any], method: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    model: fairgate.ModelInfo = context["model"]
    run_id = context["run_id"]
    candidate = fairgate.ModelInfo(name=model.name, version=f"{method}-{run_id}")
    before_doc = judge_rows(before, rules, model, f"{run_id}-before")
    after_doc = judge_rows(after, rules, candidate, f"{run_id}-after")
    return before_doc, after_doc


def _block(
    method: str,
    context: dict[str, Any],
    fitted: dict[str, Any],
    measured: dict[str, Any],
    before_doc: dict[str, Any] | None,
    after_doc: dict[str, Any] | None,
    accuracy: dict[str, Any] | None,
    files: dict[str, tuple[str, bytes]],
    *,
    frontier: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The document's block; the measured documents are written beside the other files."""
    run_id = context["run_id"]
    if before_doc is not None and after_doc is not None:
        files = files | {
            "audit_before": (f"{method}_{run_id}_measured_before.json", json_bytes(before_doc)),
            "audit_after": (f"{method}_{run_id}_measured_after.json", json_bytes(after_doc)),
        }
    paths, digests = write_files(files, context["staging"], context["output"])
    verdict_before = None if before_doc is None else before_doc["verdict"]
    verdict_after = None if after_doc is None else after_doc["verdict"]
    where = "the held-out rows" if measured["kind"] == "holdout" else "the evaluation set"
    return {
        "method": method,
        "run_id": run_id,
        "answers": context["answers"],
        "status": "proposed",
        "summary": verdict_sentence(method, verdict_before, verdict_after, where),
        "fitted": fitted,
        "measured": measured,
        "focus": context.get("focus"),
        "verdict_before": verdict_before,
        "verdict_after": verdict_after,
        "results": [] if before_doc is None or after_doc is None else paired_results(before_doc, after_doc),
        "accuracy": accuracy,
        "frontier": frontier,
        "files": paths,
        "sha256": digests,
        "deployed": False,
        "note": NOT_DEPLOYED,
    }


def _group_text(group: dict[str, Any]) -> str:
    return " & ".join(f"{k}={v}" for k, v in group.items())
