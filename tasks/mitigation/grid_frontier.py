"""``fairgate mitigate --method retrain --frontier N``: Fairlearn's ``GridSearch`` with the policy's constraint,
a cheap audit of every model of the grid (one joint cube each, point estimates), the frontier (JSON + chart) and
the comparison of the Pareto models with the original (JSON + HTML/PDF report, ``fairgate compare``'s engine).

The original is the estimator refitted without the constraint (the retrain flow's "before"), so the frontier and
the comparison differ from it by the constraint only. Every output is written atomically beside the retrain's.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.errors import DataError
from fairgate.mitigation.compare import JointCube, compare_candidates, joint_cube
from fairgate.mitigation.grid import grid_frontier
from fairgate.mitigation.plane import accuracy_fairness_plane
from fairgate.mitigation.retraining import ConstraintChoice
from tasks.compare import comparison_document, write_comparison
from tasks.mitigation.training import (
    TrainingSet,
    fairlearn_constraint,
    predictions_frame,
    sample_weight_argument,
    write_json,
)
from tasks.outputs import write_atomic, write_frame
from tasks.render.charts import INK, MUTED, PALETTE, chart_figure, set_margins, set_wrapped_title, to_svg
from tasks.render.compare_report import comparison_report_files

ORIGINAL = "original (unconstrained)"
FRONTIER_SIZE = (5.0, 3.0)


@task(name="fit grid", cache_policy=NO_CACHE)
def fit_grid(estimator: Any, train: TrainingSet, choice: ConstraintChoice, grid_size: int) -> Any:
    """Fairlearn's GridSearch over ``grid_size`` Lagrange multipliers of the policy's constraint."""
    from fairlearn.reductions import GridSearch
    from sklearn.base import clone

    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"fairlearn\.")  # its pandas notices are not the user's
            grid = GridSearch(
                clone(estimator),
                constraints=fairlearn_constraint(choice),
                grid_size=grid_size,
                sample_weight_name=sample_weight_argument(estimator),
            )
            grid.fit(train.features, train.favourable, sensitive_features=train.sensitive)
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"GridSearch could not train the estimator on --training ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0]}); it must accept the feature columns and sample weights in fit"
        ) from None
    return grid


def grid_predictions(grid: Any, features: Any) -> list[np.ndarray]:
    """Each grid model's favourable-outcome decisions (1 = favourable) on ``features``, in the grid's order."""
    return [np.asarray(predictor.predict(features), dtype=np.int64) for predictor in grid.predictors_]


def _rows(plan: dict[str, Any], decisions: np.ndarray) -> pl.DataFrame:
    """The evaluation people (id, label, attributes) with one model's decisions in the policy's label coding."""
    policy: fairgate.Policy = plan["policy"]
    favourable = policy.favorable_label
    y_pred = np.where(decisions == 1, favourable, 1 - favourable)
    frame: pl.DataFrame = plan["eval_frame"]
    return frame.with_columns(pl.Series(policy.columns.y_pred, y_pred))


@task(name="audit grid", cache_policy=NO_CACHE)
def audit_grid(plan: dict[str, Any], original: np.ndarray, models: list[np.ndarray]) -> dict[str, JointCube]:
    """One joint cube per grid model, paired with the original on the evaluation people (a cheap audit)."""
    policy: fairgate.Policy = plan["policy"]
    baseline = _rows(plan, original)
    return {_name(i): joint_cube(baseline, _rows(plan, decisions), policy) for i, decisions in enumerate(models)}


def _name(index: int) -> str:
    return f"grid {index:02d}"


@task(name="write frontier", cache_policy=NO_CACHE)
def write_grid_frontier(
    plan: dict[str, Any], files: dict[str, Any], grid: Any, models: list[np.ndarray], joints: dict[str, JointCube]
) -> dict[str, Any]:
    """The frontier (JSON + SVG chart), the Pareto models' predictions and their comparison with the original."""
    policy: fairgate.Policy = plan["policy"]
    choice: ConstraintChoice = plan["choice"]
    output = Path(files["predictions_before"]).parent
    stem = output / f"retrain_{files['run_id']}"
    frontier = grid_frontier(joints, policy, choice.metric)
    lambdas = _lambdas(grid)
    for point in frontier["points"]:
        if point["role"] == "baseline":
            point["name"] = ORIGINAL
        else:
            index = int(point["name"].split()[-1])
            point["index"], point["lambda"] = index, lambdas[index]
    pareto = [p["name"] for p in frontier["points"] if p["role"] == "candidate" and p["pareto"]]
    written = {
        name: _write_predictions(plan, models[int(name.split()[-1])], f"{stem}_{name.replace(' ', '_')}")
        for name in pareto
    }
    chart = write_atomic(Path(f"{stem}_frontier.svg"), frontier_chart(frontier, _threshold(policy, choice)).encode())
    comparison = _compare_pareto(plan, files, {n: joints[n] for n in pareto}, written, output) if pareto else None
    document = {
        "method": "gridsearch",
        "run_id": files["run_id"],
        "grid_size": len(models),
        "constraint": {"family": choice.family, "metric": choice.metric, "attributes": plan["attributes"]},
        "original": files["predictions_before"],
        **frontier,
        "pareto_predictions": {name: str(path) for name, path in written.items()},
        "chart": str(chart),
        "comparison": comparison,
    }
    document["json"] = str(write_json(document, Path(f"{stem}_frontier.json")))
    return document


def _lambdas(grid: Any) -> list[dict[str, float]]:
    """Each grid point's Lagrange multipliers, keyed by Fairlearn's (sign, event, group) index as text."""
    vectors = grid.lambda_vecs_
    return [
        {
            "/".join(str(k) for k in (key if isinstance(key, tuple) else (key,))): float(v)
            for key, v in vectors[c].items()
        }
        for c in vectors.columns
    ]


def _threshold(policy: fairgate.Policy, choice: ConstraintChoice) -> float | None:
    return next((m.threshold for m in policy.metrics if m.name == choice.metric), None)


def _write_predictions(plan: dict[str, Any], decisions: np.ndarray, stem: str) -> Path:
    """One Pareto model's predictions as an audit input (id, y_pred in the policy's coding)."""
    policy: fairgate.Policy = plan["policy"]
    evaluation = plan["eval"]
    frame = predictions_frame(evaluation.ids, decisions.astype(np.float64), decisions, policy)
    return write_frame(frame.drop(policy.columns.score), Path(f"{stem}_predictions.parquet"))


def _compare_pareto(
    plan: dict[str, Any],
    files: dict[str, Any],
    joints: dict[str, JointCube],
    written: dict[str, Path],
    output: Path,
) -> dict[str, Any]:
    """The Pareto models against the original, with paired intervals and a decision each: JSON and report."""
    policy: fairgate.Policy = plan["policy"]
    result = compare_candidates(joints, policy)
    result["plane"] = accuracy_fairness_plane(result, plan["choice"].metric)
    shared = {role: _input(files[role]) for role in ("labels", "attributes")}
    baseline = _model(ORIGINAL, {"predictions": _input(files["predictions_before"]), **shared})
    candidates = [_model(name, {"predictions": _input(str(written[name])), **shared}) for name in joints]
    joint = next(iter(joints.values()), None)  # the same evaluation people for every Pareto model
    command = plan.get("command_line")  # the fairgate mitigate command that ran the frontier
    document = comparison_document(result, f"{files['run_id']}-frontier", policy, baseline, candidates, joint, command)
    path = write_comparison.fn(document, output)
    # The HTML always (the frontier's reader needs it, it is cheap); the PDF when the policy asks for reports in PDF.
    report = comparison_report_files(
        document, output, ["html", *policy.reporting.format], policy.reporting.min_cell_size
    )
    return {"json": path, **report, "decision": document["decision"], "chosen": document["chosen"]}


def _input(path: str) -> dict[str, Any]:
    data = Path(path).read_bytes()
    return {
        "source": path,
        "sha256": hashlib.sha256(data).hexdigest(),
        "rows": pl.read_parquet(io.BytesIO(data)).height,
    }


def _model(name: str, inputs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "version": None, "run": None, "inputs": inputs, "alignment": {}}


def frontier_chart(frontier: dict[str, Any], threshold: float | None) -> str:
    """Accuracy against the constraint's metric for every grid model; the Pareto frontier and the original."""
    points = frontier["points"]
    with chart_figure(*FRONTIER_SIZE) as (fig, (ax,)):
        grid = [p for p in points if p["role"] == "candidate"]
        ax.scatter(
            [p["disparity"] for p in grid], [p["accuracy"] for p in grid], s=10, color=MUTED, label="grid models"
        )
        front = sorted((p for p in points if p["pareto"]), key=lambda p: p["disparity"])
        ax.plot(
            [p["disparity"] for p in front],
            [p["accuracy"] for p in front],
            color=PALETTE[0],
            marker="o",
            markersize=3,
            linewidth=1.3,
            label="Pareto frontier",
        )
        original = next(p for p in points if p["role"] == "baseline")
        ax.scatter([original["disparity"]], [original["accuracy"]], marker="s", s=38, color=INK, label=ORIGINAL)
        if threshold is not None and frontier["direction"] == "lower_is_better":
            ax.axvline(threshold, color=INK, linestyle=":", linewidth=0.8, label=f"policy threshold {threshold:g}")
        ax.set_xlabel(f"{frontier['metric']}, worst slicing (held out)", fontsize=6.5)
        ax.set_ylabel("accuracy (held out)", fontsize=6.5)
        top = set_wrapped_title(
            ax, f"GridSearch frontier under the policy's constraint ({frontier['metric']})", FRONTIER_SIZE[0]
        )
        ax.legend(loc="best")
        set_margins(fig, left=0.55, bottom=0.4, top=top)
        return to_svg(fig)
