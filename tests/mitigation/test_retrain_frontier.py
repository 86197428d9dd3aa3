"""``fairgate mitigate --method retrain --frontier N`` on COMPAS: Fairlearn's GridSearch under the policy's
demographic-parity constraint, each grid model audited on the held-out 40%. Oracle: the same GridSearch refitted
here; each grid point's accuracy and disparity must be those of Fairlearn's own predictions (sklearn's accuracy,
Fairlearn's demographic_parity_difference), the Pareto set must be consistent, and the comparison of the Pareto
models with the original must hold the same numbers."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import polars as pl
import pytest
from fairlearn.metrics import demographic_parity_difference
from fairlearn.reductions import DemographicParity, GridSearch
from mitigation_helpers import FEATURES, InProcessRunner
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cli import app

GRID_SIZE = 7
MIN_GROUP_SIZE = 30  # the policy's default: smaller groups are not judged, so not on the plane either


def _estimator() -> Any:
    return make_pipeline(StandardScaler(), LogisticRegression())


@pytest.fixture(scope="module")
def frontier(
    prefect_server: str,
    runner: InProcessRunner,
    compas_files: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("frontier")
    estimator = folder / "model.joblib"
    joblib.dump(_estimator(), estimator)
    args = ["mitigate", "--method", "retrain", "--policy", str(compas_files["policy"]), "--attribute", "race"]
    args += ["--training", str(compas_files["training"]), "--evaluation", str(compas_files["evaluation"])]
    args += ["--estimator", str(estimator), "--out", str(folder / "out"), "--frontier", str(GRID_SIZE), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr)
    return dict(json.loads(result.stdout)["frontier"])


@pytest.fixture(scope="module")
def fairlearn_grid(compas_files: dict[str, Path]) -> dict[str, Any]:
    """The same GridSearch, fitted here: favourable outcome 0 (no recidivism) is the positive class."""
    train, held_out = (pl.read_csv(compas_files[k]) for k in ("training", "evaluation"))
    grid = GridSearch(
        _estimator(),
        constraints=DemographicParity(difference_bound=0.05),
        grid_size=GRID_SIZE,
        sample_weight_name="logisticregression__sample_weight",
    )
    favourable = (train["two_year_recid"] == 0).cast(pl.Int64).to_numpy()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"fairlearn\.")  # its own pandas notices
        grid.fit(train.select(FEATURES).to_pandas(), favourable, sensitive_features=train.select("race").to_pandas())
    features = held_out.select(FEATURES).to_pandas()
    return {
        "predictions": [np.asarray(p.predict(features)) for p in grid.predictors_],
        "truth": (held_out["two_year_recid"] == 0).cast(pl.Int64).to_numpy(),
        "held_out": held_out,
    }


def _worst_parity_gap(held_out: pl.DataFrame, truth: np.ndarray, predicted: np.ndarray) -> float:
    """Fairlearn's demographic_parity_difference per policy attribute over its judged groups, the largest."""
    gaps = []
    for attribute in ("race", "sex"):
        groups = held_out[attribute].to_numpy()
        values, counts = np.unique(groups, return_counts=True)
        judged = np.isin(groups, values[counts >= MIN_GROUP_SIZE])
        gaps.append(demographic_parity_difference(truth[judged], predicted[judged], sensitive_features=groups[judged]))
    return float(max(gaps))


@pytest.mark.slow
def test_every_grid_point_is_fairlearns_own_model(frontier: dict[str, Any], fairlearn_grid: dict[str, Any]) -> None:
    grid = [p for p in frontier["points"] if p["role"] == "candidate"]
    assert [p["index"] for p in grid] == list(range(GRID_SIZE))
    assert frontier["grid_size"] == GRID_SIZE
    assert frontier["metric"] == "demographic_parity_difference"
    truth, held_out = fairlearn_grid["truth"], fairlearn_grid["held_out"]
    for point, predicted in zip(grid, fairlearn_grid["predictions"], strict=True):
        assert point["accuracy"] == pytest.approx(accuracy_score(truth, predicted), abs=1e-12)
        assert point["disparity"] == pytest.approx(_worst_parity_gap(held_out, truth, predicted), abs=1e-12)
    assert len({round(p["accuracy"], 6) for p in grid}) > 2  # a real sweep, not one model repeated


def _dominates(a: dict[str, Any], b: dict[str, Any]) -> bool:
    x_a, x_b, y_a, y_b = a["disparity"], b["disparity"], a["accuracy"], b["accuracy"]
    return x_a <= x_b and y_a >= y_b and (x_a < x_b or y_a > y_b)


@pytest.mark.slow
def test_the_pareto_set_is_exactly_the_undominated_models(frontier: dict[str, Any]) -> None:
    points = frontier["points"]
    assert points[0]["name"] == "original (unconstrained)"
    for point in points:
        assert point["pareto"] is not any(_dominates(q, point) for q in points if q is not point)
    assert any(p["pareto"] for p in points if p["role"] == "candidate")


@pytest.mark.slow
def test_pareto_models_are_written_and_compared_with_the_original(
    frontier: dict[str, Any], fairlearn_grid: dict[str, Any]
) -> None:
    pareto = {p["name"]: p for p in frontier["points"] if p["role"] == "candidate" and p["pareto"]}
    assert set(frontier["pareto_predictions"]) == set(pareto)
    for name, path in frontier["pareto_predictions"].items():
        written = pl.read_parquet(path)
        favourable = fairlearn_grid["predictions"][pareto[name]["index"]]
        assert np.array_equal(written["y_pred"].to_numpy(), np.where(favourable == 1, 0, 1))  # favourable label 0
    assert Path(frontier["chart"]).read_text().startswith("<svg")
    comparison = frontier["comparison"]
    document = json.loads(Path(comparison["json"]).read_text())
    assert [e["name"] for e in document["candidates"]] == list(pareto)
    original = frontier["points"][0]
    for entry in document["candidates"]:
        assert entry["accuracy"]["candidate"] == pytest.approx(pareto[entry["name"]]["accuracy"], abs=1e-12)
        assert entry["accuracy"]["baseline"] == pytest.approx(original["accuracy"], abs=1e-12)
        assert entry["accuracy"]["ci_low"] is not None  # paired intervals, not just points
    assert (document["decision"], document["chosen"]) == (comparison["decision"], comparison["chosen"])
    assert Path(comparison["html"]).exists()
    assert document["command_line"].startswith("fairgate mitigate --method retrain")  # the run to reproduce
    assert document["groups"], "the evaluation set's group sizes (small-cell suppressed)"
    assert all(g["n"] is None or g["n"] >= document["min_cell_size"] or g["n"] == 0 for g in document["groups"])


def test_frontier_is_refused_for_another_method(runner: InProcessRunner, compas_files: dict[str, Path]) -> None:
    args = ["mitigate", "--method", "reweighing", "--policy", str(compas_files["policy"])]
    result = runner.invoke(app, [*args, "--training", str(compas_files["training"]), "--frontier", "5"])
    assert result.exit_code == 2
    assert "--frontier is for --method retrain" in " ".join(result.stderr.split())
