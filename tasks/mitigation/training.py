"""Mitigation tasks: read training data, reweigh, retrain with Fairlearn, write the outputs atomically.

Fairlearn and scikit-learn are the optional extra ``fairgate[mitigation]``; they are imported only by the
retraining tasks, and their absence is a clear configuration error (exit 2), never an ImportError.
"""

from __future__ import annotations

import importlib.util
import io
import json
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.errors import DataError, FairgateError
from fairgate.mitigation.retraining import ConstraintChoice, accuracy_cost
from fairgate.mitigation.reweighing import WEIGHT, Reweighing
from tasks.inputs.io import parse_source, register_source
from tasks.outputs import write_atomic, write_frame

MISSING_EXTRA = (
    "constrained retraining needs Fairlearn and scikit-learn, which are not installed: "
    "pip install 'fairgate[mitigation]'"
)
WEIGHT_FORMATS = ("csv", "parquet")


class MissingExtraError(FairgateError):
    """The ``mitigation`` extra (Fairlearn, scikit-learn) is not installed."""


def require_mitigation_extra() -> None:
    """Fail with the install command when Fairlearn or scikit-learn is missing."""
    for module in ("fairlearn", "sklearn", "joblib"):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a module set to None in sys.modules (how the tests hide it)
            found = False
        if not found:
            raise MissingExtraError(MISSING_EXTRA)


def read_table(role: str, text: str) -> pl.DataFrame:
    """A CSV/Parquet file (or DB::TABLE) as a Polars frame; errors name the option and the fix."""
    source = parse_source(role, text)
    con = duckdb.connect()
    try:
        register_source(con, source, "source")
        try:
            frame: pl.DataFrame = con.view("source").pl()
            return frame
        except duckdb.Error as exc:
            raise DataError(f"--{role} {source.label}: cannot be read: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()


def policy_attributes(policy: fairgate.Policy, chosen: Sequence[str] | None) -> list[str]:
    """The attributes to group by: those chosen (each must be in the policy), else all of the policy's."""
    names = [a.name for a in policy.sensitive_attributes]
    if not chosen:
        return names
    unknown = [a for a in chosen if a not in names]
    if unknown:
        raise DataError(
            f"--attribute {', '.join(map(repr, unknown))} is not a sensitive attribute of the policy; "
            f"the policy names {', '.join(names)}"
        )
    return list(dict.fromkeys(chosen))


def require_columns(frame: pl.DataFrame, role: str, names: Sequence[str], why: str) -> None:
    missing = [n for n in names if n not in frame.columns]
    if missing:
        raise DataError(
            f"--{role} has no column {', '.join(map(repr, missing))} ({why}); columns present: "
            f"{', '.join(frame.columns)}"
        )


def weights_frame(training: pl.DataFrame, result: Reweighing, id_column: str) -> pl.DataFrame:
    """The file the training job reads: id, the group's attribute values, the label, the weight."""
    return pl.concat(
        [training.select(id_column, *result.attributes, result.label), result.weights.to_frame(WEIGHT)],
        how="horizontal",
    )


def write_json(data: dict[str, Any], path: Path) -> Path:
    return write_atomic(path, (json.dumps(data, indent=2, default=str) + "\n").encode())


# -- constrained retraining -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingSet:
    """Features, favourable-outcome target and sensitive features of one data set, as scikit-learn takes them."""

    ids: pl.Series
    features: Any  # pandas.DataFrame
    favourable: np.ndarray[Any, Any]  # 1 = the policy's favourable label
    sensitive: Any  # pandas.DataFrame, one column per attribute (Fairlearn intersects them)
    groups: np.ndarray[Any, Any]  # the intersectional group of each row, as text


def training_set(
    frame: pl.DataFrame, role: str, policy: fairgate.Policy, attributes: Sequence[str], features: Sequence[str]
) -> TrainingSet:
    """Check and split one data set; rows must have a 0/1 label and every attribute."""
    label, id_column = policy.columns.y_true, policy.columns.id
    require_columns(frame, role, [id_column, label], "the policy's columns.id and columns.y_true")
    require_columns(frame, role, attributes, "a sensitive attribute the constraint groups by")
    require_columns(frame, role, features, "a feature of the model")
    values = set(frame[label].drop_nulls().unique().to_list())
    if frame[label].null_count() or not values <= {0, 1}:
        raise DataError(f"--{role}: the label column {label!r} must hold 0/1 in every row")
    for name in attributes:
        if frame[name].null_count():
            raise DataError(f"--{role}: the sensitive attribute {name!r} is missing in some rows; fill or drop them")
    if frame.height < 2:
        raise DataError(f"--{role} has {frame.height} row(s); retraining needs data")
    sensitive = frame.select(pl.col(a).cast(pl.String) for a in attributes)
    groups = sensitive.select(pl.concat_str(pl.all(), separator=" | ")).to_series().to_numpy()
    favourable = (frame[label].cast(pl.Int8).to_numpy() == policy.favorable_label).astype(np.int64)
    return TrainingSet(frame[id_column], frame.select(features).to_pandas(), favourable, sensitive.to_pandas(), groups)


def feature_columns(frame: pl.DataFrame, policy: fairgate.Policy, attributes: Sequence[str]) -> list[str]:
    """By default every column but the id, the label, the policy's attributes and the prediction columns."""
    columns = policy.columns
    excluded = {columns.id, columns.y_true, columns.y_pred, columns.score, columns.weight}
    excluded |= {a.name for a in policy.sensitive_attributes} | set(attributes)
    chosen = [c for c in frame.columns if c not in excluded]
    if not chosen:
        raise DataError("--training has no feature columns besides the id, label and sensitive attributes")
    return chosen


def load_estimator(path: Path) -> Any:
    """The scikit-learn estimator in a joblib/pickle file (trusted input: unpickling runs its code)."""
    import joblib
    from sklearn.base import is_classifier

    if not path.is_file():
        raise DataError(f"--estimator {str(path)!r} does not exist; give a joblib/pickle file of an estimator")
    try:
        estimator = joblib.load(path)
    except Exception as exc:
        raise DataError(f"--estimator {str(path)!r} could not be loaded ({type(exc).__name__}: {exc})") from None
    if not (hasattr(estimator, "fit") and hasattr(estimator, "predict") and is_classifier(estimator)):
        raise DataError(
            f"--estimator {str(path)!r} holds a {type(estimator).__name__}, not a scikit-learn classifier "
            "(an estimator or Pipeline with fit and predict)"
        )
    return estimator


def sample_weight_argument(estimator: Any) -> str:
    """Fairlearn passes weights as ``sample_weight``; a Pipeline takes them as ``<last step>__sample_weight``."""
    from sklearn.pipeline import Pipeline

    return f"{estimator.steps[-1][0]}__sample_weight" if isinstance(estimator, Pipeline) else "sample_weight"


def fairlearn_constraint(choice: ConstraintChoice) -> Any:
    """Fairlearn's reductions constraint (a difference or a ratio bound) for the chosen constraint family."""
    from fairlearn.reductions import DemographicParity, EqualizedOdds, TruePositiveRateParity

    kind = {
        "demographic_parity": DemographicParity,
        "true_positive_rate_parity": TruePositiveRateParity,
        "equalized_odds": EqualizedOdds,
    }[choice.family]
    if choice.ratio_bound is not None:
        return kind(ratio_bound=choice.ratio_bound)
    return kind(difference_bound=choice.difference_bound)


@dataclass
class Fitted:
    """The unconstrained baseline and the constrained model, both fitted on the same training set."""

    baseline: Any
    mitigated: Any  # fairlearn ExponentiatedGradient


@task(name="fit models", cache_policy=NO_CACHE)
def fit_models(estimator: Any, train: TrainingSet, choice: ConstraintChoice, max_iter: int) -> Fitted:
    """The estimator refitted as is (the "before") and under the constraint with ExponentiatedGradient."""
    from fairlearn.reductions import ExponentiatedGradient
    from sklearn.base import clone

    try:
        with warnings.catch_warnings():
            # Fairlearn's own pandas deprecation notices are not the user's to act on.
            warnings.filterwarnings("ignore", module=r"fairlearn\.")
            baseline = clone(estimator).fit(train.features, train.favourable)
            mitigated = ExponentiatedGradient(
                clone(estimator),
                constraints=fairlearn_constraint(choice),
                max_iter=max_iter,
                sample_weight_name=sample_weight_argument(estimator),
            )
            mitigated.fit(train.features, train.favourable, sensitive_features=train.sensitive)
    except (TypeError, ValueError) as exc:  # wrong features for the estimator, no sample_weight support, ...
        raise DataError(
            f"the estimator could not be trained on --training ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
            "it must accept the feature columns and sample weights in fit"
        ) from None
    return Fitted(baseline, mitigated)


def favourable_probability(model: Any, features: Any) -> np.ndarray[Any, Any]:
    """P(favourable) per row: the randomised classifier's mixture for ExponentiatedGradient, else predict_proba
    (or the 0/1 prediction for an estimator without probabilities)."""
    if hasattr(model, "predictors_"):  # ExponentiatedGradient: sum over its predictors of weight x prediction
        weights = np.asarray(model.weights_, dtype=np.float64)
        votes = np.column_stack([np.asarray(h.predict(features), dtype=np.float64) for h in model.predictors_])
        return np.asarray(votes @ weights, dtype=np.float64)
    if hasattr(model, "predict_proba"):
        return np.asarray(model.predict_proba(features)[:, 1], dtype=np.float64)
    return np.asarray(model.predict(features), dtype=np.float64)


def predictions_frame(
    ids: pl.Series, p_favourable: np.ndarray[Any, Any], predicted: np.ndarray[Any, Any], policy: fairgate.Policy
) -> pl.DataFrame:
    """An audit's predictions input: id, score (P(label 1)) and y_pred in the policy's raw label coding."""
    favourable = policy.favorable_label
    score = p_favourable if favourable == 1 else 1.0 - p_favourable
    y_pred = np.where(predicted == 1, favourable, 1 - favourable)
    columns = policy.columns
    return pl.DataFrame({columns.id: ids, columns.score: np.clip(score, 0.0, 1.0), columns.y_pred: y_pred})


def serialised_model(model: Any) -> bytes:
    import joblib

    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    return buffer.getvalue()


@task(name="write candidate", cache_policy=NO_CACHE)
def write_candidate(fitted: Any, plan: dict[str, Any], output: Path) -> dict[str, Any]:
    """The mitigated model, both models' predictions on the evaluation set, and its labels and attributes."""
    policy: fairgate.Policy = plan["policy"]
    evaluation = plan["eval"]
    run_id = uuid.uuid4().hex[:12]
    stem = output / f"retrain_{run_id}"
    p_before = favourable_probability(fitted.baseline, evaluation.features)
    before = np.asarray(fitted.baseline.predict(evaluation.features), dtype=np.int64)
    p_after = favourable_probability(fitted.mitigated, evaluation.features)
    # ExponentiatedGradient is a randomised classifier: drawn with the policy's seed, so a re-run gives the same.
    after = (np.random.default_rng(policy.statistics.seed).random(p_after.size) < p_after).astype(np.int64)
    columns = policy.columns
    frame = plan["eval_frame"]
    paths = {
        "model": write_atomic(Path(f"{stem}_model.joblib"), serialised_model(fitted.mitigated)),
        "predictions_before": write_frame(
            predictions_frame(evaluation.ids, p_before, before, policy), Path(f"{stem}_baseline_predictions.parquet")
        ),
        "predictions_after": write_frame(
            predictions_frame(evaluation.ids, p_after, after, policy), Path(f"{stem}_predictions.parquet")
        ),
        "labels": write_frame(frame.select(columns.id, columns.y_true), Path(f"{stem}_labels.parquet")),
        "attributes": write_frame(frame.drop(columns.y_true), Path(f"{stem}_attributes.parquet")),
    }
    cost = accuracy_cost(evaluation.favourable, before, after, evaluation.groups)
    return {"run_id": run_id, "accuracy": cost, **{k: str(v) for k, v in paths.items()}}


def audits_digest(audits: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The before/after audits as a mitigation's JSON keeps them: ids, verdicts, failed metrics, outputs."""
    kept = ("run_id", "verdict", "exit_code", "failed_metrics", "model_version", "outputs")
    # "reused": the answered audit's recorded verdict (--answers), not a second audit of the same predictions.
    return {
        stage: {k: audit[k] for k in kept} | ({"reused": True} if audit.get("reused") else {})
        for stage, audit in audits.items()
    }


def retrain_summary(plan: dict[str, Any], files: dict[str, Any], audits: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the CLI prints and the JSON file keeps: the constraint, the cost, and the verdict before and after."""
    choice = plan["choice"]
    return {
        "method": "retrain",
        "run_id": files["run_id"],
        "answers": plan["answers"],
        "sources": plan["sources"],
        "constraint": choice.record(plan["attributes"]),
        "features": plan["features"],
        "accuracy": files["accuracy"],
        "audits": audits_digest(audits),
        "exit_code": audits["after"]["exit_code"],
        "outputs": {k: files[k] for k in ("model", "predictions_before", "predictions_after", "labels", "attributes")},
    }


def record_mitigation_run(trail_path: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """The ``fairgate mitigate`` run's row in the trail's ``mitigations`` chain: the audit it answers, its files
    (with their sha256, read back from disk) and the verdict before and after (none for reweighing)."""
    import hashlib

    from tasks.store import record_mitigation

    audits = summary.get("audits") or {}
    answered = summary.get("answers") or {}
    answers = answered.get("run_id") or (audits.get("before") or {}).get("run_id")
    outputs = {
        kind: {"path": str(path), "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()}
        for kind, path in summary["outputs"].items()
        if Path(path).is_file()
    }
    return record_mitigation(
        trail_path,
        mitigation_id=summary["run_id"],
        answers=answers,
        method=summary["method"],
        status="proposed",
        verdict_before=(audits.get("before") or {}).get("verdict"),
        verdict_after=(audits.get("after") or {}).get("verdict"),
        outputs=outputs,
    )
