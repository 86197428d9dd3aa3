"""``columns.weight`` in multiclass, regression and ranking audits, end to end through the CLI and the flow.

The demos' real inputs (COMPAS tiers, the law-school regression and ranking) get a seeded weight column, each
kind in another input (multiclass: attributes; regression: predictions; ranking: labels), so every place a
weight may live is staged, joined and carried into the kind's engine. Checked:

- the document's per-group metrics equal Fairlearn's ``MetricFrame(..., sample_params={"sample_weight": w})``
  with sklearn's metrics to 1e-9 (multiclass, regression; regression's Wasserstein distances also against scipy's
  weighted one within the stated bound), and a weighted pandas row implementation (ranking); ``weighted`` is
  true and group sizes are Kish's effective sizes;
- integer weights give the same per-group values as repeating the rows (ranking: whole lists) that many times;
- a negative, NaN or text weight, a weight column no input has, and a weight missing for an audited person
  (weights in the attributes input) exit 2 with a message naming the file, the column, the count and an
  example, and nothing written;
- binary audits share the staging: their weights reach the cube in memory and on the streaming path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import MetricFrame, selection_rate
from pipeline_helpers import COMPAS_CSV, InProcessRunner, Inputs, assert_refused, split_compas
from scipy import stats
from sklearn.metrics import (
    accuracy_score,
    confusion_matrix,
    mean_absolute_error,
    mean_squared_error,
    precision_score,
    r2_score,
    recall_score,
)

from cli import app
from tasks.inputs.demo_law import write_law_inputs
from tasks.inputs.demo_ranking import write_ranking_demo_inputs
from tasks.inputs.io import write_demo_inputs

REPO = Path(__file__).resolve().parents[2]
LAW_CSV = REPO / "fairgate" / "data" / "law" / "law_data.csv"
TOL = 1e-9
CLASSES = ["Low", "Medium", "High"]

MULTICLASS_POLICY = """\
fairness_checker:
  task: multiclass
  multiclass: {classes: [Low, Medium, High], adverse_classes: [Medium, High]}
  sensitive_attributes:
    - {name: race, values: [African-American, Caucasian, Hispanic, Other, Asian, Native American],
       reference_group: Caucasian}
    - {name: sex, values: [Male, Female], reference_group: Male}
  metrics:
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: adverse.disparate_impact_ratio, threshold: 0.8}
  intersectional_analysis: {enabled: true, min_group_size: 50, attribute_pairs: [[race, sex]]}
  reporting: {format: [json]}
  columns: {y_true: outcome_tier, y_pred: risk_tier, weight: w}
  statistics: {n_bootstrap: 100}
"""

REGRESSION_POLICY = """\
fairness_checker:
  task: regression
  sensitive_attributes:
    - {name: race, values: [White, Black, Asian, Hispanic, Mexican, Other, Puertorican, Amerindian],
       reference_group: White}
    - {name: sex, values: ["1", "2"]}
  metrics:
    - {name: mean_residual_difference, threshold: 0.2}
    - {name: wasserstein_distance, threshold: 0.3}
  intersectional_analysis: {enabled: true, min_group_size: 30, attribute_pairs: [[race, sex]]}
  reporting: {format: [json]}
  columns: {weight: w}
  statistics: {n_bootstrap: 100}
"""

RANKING_POLICY = """\
fairness_checker:
  task: ranking
  ranking: {top_k: [10, 5], discount: log2}
  sensitive_attributes:
    - {name: race, values: [White, Black, Asian, Hispanic, Mexican, Other, Puertorican, Amerindian],
       reference_group: White}
    - {name: sex, values: ["1", "2"], reference_group: "1"}
  metrics:
    - {name: top_k_rate_ratio, threshold: 0.8}
    - {name: exposure_ratio, threshold: 0.8}
  intersectional_analysis: {enabled: true, min_group_size: 50, attribute_pairs: [[race, sex]]}
  reporting: {format: [json]}
  columns: {y_true: relevance, list_id: cohort, rank: rank, weight: w}
  statistics: {n_bootstrap: 100}
"""


# ------------------------------------------------------------------------------------------------ the inputs
def _multiclass_files(folder: Path) -> dict[str, Path]:
    return write_demo_inputs(COMPAS_CSV, folder, "demo_multiclass")


def _regression_files(folder: Path) -> dict[str, Path]:
    return write_law_inputs(LAW_CSV, folder)


def _ranking_files(folder: Path) -> dict[str, Path]:
    return write_ranking_demo_inputs(LAW_CSV, folder)


# kind -> (the demo's input writer, the policy, the input holding the weights)
KINDS: dict[str, tuple[Callable[[Path], dict[str, Path]], str, str]] = {
    "multiclass": (_multiclass_files, MULTICLASS_POLICY, "attributes"),
    "regression": (_regression_files, REGRESSION_POLICY, "predictions"),
    "ranking": (_ranking_files, RANKING_POLICY, "labels"),
}


def _sql(query: str) -> pd.DataFrame:
    con = duckdb.connect()
    try:
        return con.sql(query).to_df()
    finally:
        con.close()


def _write(frame: pd.DataFrame, path: Path) -> Path:
    """``frame`` as a CSV file (the user's view: plain files)."""
    frame.to_csv(path, index=False)
    return path


Weights = Callable[[pd.DataFrame, dict[str, pd.DataFrame]], np.ndarray]


def _weighted_inputs(folder: Path, kind: str, weights: Weights) -> Inputs:
    """The kind's demo inputs as CSV files, the input named in KINDS with a column ``w`` = ``weights(frame,
    frames)`` (``frames``: every input by role)."""
    (folder / "parquet").mkdir(parents=True, exist_ok=True)
    write, policy, holder = KINDS[kind]
    frames = {role: _sql(f"select * from '{path}' order by id") for role, path in write(folder / "parquet").items()}
    frames[holder]["w"] = weights(frames[holder], frames)
    paths = {role: _write(frame, folder / f"{role}.csv") for role, frame in frames.items()}
    policy_path = folder / "policy.yaml"
    policy_path.write_text(policy)
    return Inputs(folder, paths["predictions"], paths["labels"], paths["attributes"], policy_path)


def _real_weights(frame: pd.DataFrame, frames: dict[str, pd.DataFrame]) -> np.ndarray:
    """Seeded weights in [0.2, 3): survey-like, far from 1, some near 0."""
    return np.random.default_rng(15).uniform(0.2, 3.0, len(frame)).round(6)


def _integer_weights(frame: pd.DataFrame, frames: dict[str, pd.DataFrame]) -> np.ndarray:
    """Seeded whole weights 1..3; for a ranking, one per list (each item of a list gets its list's)."""
    rng = np.random.default_rng(16)
    if "cohort" not in frames["predictions"]:
        return rng.integers(1, 4, len(frame)).astype(float)
    lists = frames["predictions"][["id", "cohort"]]
    per_list = pd.Series(rng.integers(1, 4, lists["cohort"].nunique()), index=sorted(lists["cohort"].unique()))
    cohort = frame[["id"]].merge(lists, on="id", how="left")["cohort"]
    return per_list.loc[cohort].to_numpy().astype(float)


def _rows(inputs: Inputs) -> pd.DataFrame:
    """The audited rows as the user's files hold them, joined on id (group values as text, as audited)."""
    rows = _sql(
        f"select * from '{inputs.predictions}' p join '{inputs.labels}' l using (id) "
        f"join '{inputs.attributes}' a using (id) order by id"
    )
    return rows.astype({"race": str, "sex": str})


def _audit(runner: InProcessRunner, inputs: Inputs, expected_exit: int = 1) -> dict[str, Any]:
    result = runner.invoke(app, inputs.args("--quiet"))
    assert result.exit_code == expected_exit, (result.exit_code, result.stdout, result.stderr, result.exception)
    (path,) = inputs.out.glob("fairness_*.json")
    document: dict[str, Any] = json.loads(path.read_text())
    return document


@pytest.fixture(scope="module")
def weighted_runs(
    tmp_path_factory: pytest.TempPathFactory, runner: InProcessRunner, prefect_server: str
) -> dict[str, tuple[pd.DataFrame, dict[str, Any]]]:
    """Each kind's weighted audit, run once: the rows (with their weights) and the document."""
    runs = {}
    for kind in KINDS:
        inputs = _weighted_inputs(tmp_path_factory.mktemp(f"weighted-{kind}"), kind, _real_weights)
        runs[kind] = (_rows(inputs), _audit(runner, inputs))
    return runs


def _groups(document: dict[str, Any], slicing: list[str], block: str | None = None) -> list[dict[str, Any]]:
    groups = document[block]["groups"] if block else document["groups"]
    return [g for g in groups if g["slicing"] == slicing and g["rows"]]


def _key(group: dict[str, Any], slicing: list[str]) -> Any:
    key = tuple(group["group"][a] for a in slicing)
    return key if len(key) > 1 else key[0]


def _close(actual: float | None, expected: float, what: Any) -> None:
    if np.isnan(expected):
        assert actual is None, what
    else:
        assert actual is not None, what
        assert abs(actual - expected) <= TOL * max(1.0, abs(expected)), (what, actual, expected)


def _assert_weighted_record(document: dict[str, Any], rows: pd.DataFrame, slicing: list[str]) -> None:
    """``weighted`` is true, the policy's weight column is recorded, and each group's n is Kish's size."""
    assert document["weighted"] is True
    assert document["policy"]["columns"]["weight"] == "w"
    assert document["n_rows"] == len(rows)
    sizes = rows.groupby(slicing)["w"].agg(lambda w: w.sum() ** 2 / (w**2).sum())
    for group in (g for g in document["groups"] if g["slicing"] == slicing and g["rows"]):
        _close(group["n"], float(sizes.loc[_key(group, slicing)]), group["group"])
        assert group["n"] < group["rows"]  # Kish's size, not the row count nor the sum of weights


SLICINGS = (["race"], ["sex"], ["race", "sex"])


# ------------------------------------------------------------------------------------- oracles, per kind
def test_multiclass_weighted_rates_equal_fairlearn(weighted_runs: dict[str, Any]) -> None:
    rows, document = weighted_runs["multiclass"]
    assert len(rows) == 7214
    assert rows["w"].nunique() > 1000
    y_true, y_pred, w = rows["outcome_tier"], rows["risk_tier"], rows["w"]
    metrics = {
        "recall": lambda t, p, sample_weight: recall_score(
            t, p, labels=CLASSES, average=None, zero_division=np.nan, sample_weight=sample_weight
        ),
        "precision": lambda t, p, sample_weight: precision_score(
            t, p, labels=CLASSES, average=None, zero_division=np.nan, sample_weight=sample_weight
        ),
        "confusion": lambda t, p, sample_weight: confusion_matrix(t, p, labels=CLASSES, sample_weight=sample_weight),
        "accuracy": accuracy_score,
    }
    params = {name: {"sample_weight": w} for name in metrics}
    checked = 0
    for slicing in SLICINGS:
        _assert_weighted_record(document, rows, slicing)
        frame = MetricFrame(
            metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=rows[slicing], sample_params=params
        )
        for group in _groups(document, slicing, "multiclass"):
            expected = frame.by_group.loc[_key(group, slicing)]
            matrix = np.asarray(expected["confusion"], dtype=float)
            assert np.allclose(np.asarray(group["confusion"]), matrix, rtol=TOL, atol=TOL), group["group"]
            total = matrix.sum()
            for c, label in enumerate(CLASSES):
                rates = {name: group["rates"][name][c]["value"] for name in group["rates"]}
                what = (group["group"], label)
                _close(rates["selection_rate"], matrix[:, c].sum() / total, what)
                _close(rates["base_rate"], matrix[c].sum() / total, what)
                _close(rates["true_positive_rate"], expected["recall"][c], what)
                _close(rates["positive_predictive_value"], expected["precision"][c], what)
                negatives = total - matrix[c].sum()
                _close(rates["false_positive_rate"], (matrix[:, c].sum() - matrix[c, c]) / negatives, what)
            _close(group["accuracy"]["value"], expected["accuracy"], group["group"])
            checked += 1
    assert checked >= 2 + 6 + 10


def _mean_prediction(y_true: Any, y_pred: Any, sample_weight: Any) -> float:
    return float(np.average(y_pred, weights=sample_weight))


def _mean_label(y_true: Any, y_pred: Any, sample_weight: Any) -> float:
    return float(np.average(y_true, weights=sample_weight))


def _mean_residual(y_true: Any, y_pred: Any, sample_weight: Any) -> float:
    return float(np.average(np.asarray(y_pred) - np.asarray(y_true), weights=sample_weight))


def _rmse(y_true: Any, y_pred: Any, sample_weight: Any) -> float:
    return float(np.sqrt(mean_squared_error(y_true, y_pred, sample_weight=sample_weight)))


REGRESSION_ORACLES: dict[str, Callable[..., float]] = {
    "mean_prediction": _mean_prediction,
    "mean_label": _mean_label,
    "mean_residual": _mean_residual,
    "mean_absolute_error": mean_absolute_error,
    "mean_squared_error": mean_squared_error,
    "root_mean_squared_error": _rmse,
    "r2_score": r2_score,
}


def _single_row_r2(group: dict[str, Any], name: str) -> bool:
    """sklearn warns and returns NaN for a single row's R^2; fairgate reports null."""
    return bool(group["rows"] == 1 and name == "r2_score")


def test_regression_weighted_metrics_equal_fairlearn(weighted_runs: dict[str, Any]) -> None:
    rows, document = weighted_runs["regression"]
    assert len(rows) == 10_896
    checked = _assert_weighted_metric_frame(document, rows, SLICINGS, REGRESSION_ORACLES, "y_true", skip=_single_row_r2)
    assert checked >= 2 + 8 + 14


def test_regression_weighted_distances_within_the_stated_bound_of_scipy(weighted_runs: dict[str, Any]) -> None:
    """Each race's Wasserstein distance to the rest and to the reference: scipy's weighted distance on the rows
    lies within the stated bound, and the unweighted one does not everywhere (the weights were used)."""
    rows, document = weighted_runs["regression"]
    checked, unweighted_outside = 0, 0
    for entry in (d for d in document["regression"]["distances"] if d["slicing"] == ["race"]):
        mine = rows["race"] == entry["group"]["race"]
        other = ~mine if entry["against"] == "rest" else rows["race"] == "White"
        u, v = rows.loc[mine, "y_pred"], rows.loc[other, "y_pred"]
        expected = stats.wasserstein_distance(u, v, rows.loc[mine, "w"], rows.loc[other, "w"])
        bound = entry["wasserstein_error_bound"]
        assert abs(entry["wasserstein_distance"] - expected) <= bound + TOL, entry
        unweighted_outside += abs(entry["wasserstein_distance"] - stats.wasserstein_distance(u, v)) > bound + TOL
        checked += 1
    assert checked == 8 + 7  # each race against the rest, and each but White against White
    assert unweighted_outside > 0


def _ranking_rows(rows: pd.DataFrame, slicing: list[str], top_k: tuple[int, ...] = (10, 5)) -> pd.DataFrame:
    """Every ranking metric per group, from the weighted rows with pandas (Singh & Joachims' log2 exposure)."""
    w = rows["w"]
    exposure = 1.0 / np.log2(rows["rank"].astype(float) + 1.0)
    frame = pd.DataFrame({"w": w, "exposure": w * exposure, "relevance": w * rows["relevance"]})
    for k in top_k:
        frame[f"top_{k}"] = w * (rows["rank"] <= k)
    sums = frame.groupby([rows[a] for a in slicing]).sum()
    out = pd.DataFrame(index=sums.index)
    out["population_share"] = sums["w"] / sums["w"].sum()
    for k in top_k:
        out[f"top_{k}_share"] = sums[f"top_{k}"] / sums[f"top_{k}"].sum()
        out[f"top_{k}_rate"] = sums[f"top_{k}"] / sums["w"]
    out["mean_exposure"] = sums["exposure"] / sums["w"]
    out["exposure_share"] = sums["exposure"] / sums["exposure"].sum()
    out["mean_relevance"] = sums["relevance"] / sums["w"]
    out["exposure_per_relevance"] = (sums["exposure"] / sums["relevance"]).where(sums["relevance"] > 0)
    return out


def test_ranking_weighted_metrics_equal_a_pandas_row_implementation(weighted_runs: dict[str, Any]) -> None:
    rows, document = weighted_runs["ranking"]
    assert len(rows) == 10_922
    checked = 0
    for slicing in SLICINGS:
        _assert_weighted_record(document, rows, slicing)
        expected = _ranking_rows(rows, slicing)
        for group in _groups(document, slicing):
            row = expected.loc[_key(group, slicing)]
            assert set(group["metrics"]) == set(expected.columns)
            for name, estimate in group["metrics"].items():
                _close(estimate["value"], float(row[name]), (group["group"], name))
            checked += 1
    assert checked >= 2 + 8 + 14


# ------------------------------------------------------------------------------ integer weights = repeats
def _repeated(inputs: Inputs, kind: str, folder: Path) -> Inputs:
    """The same audit with each weighted row written w times (new ids; ranking: each list w times, new list
    ids), and no weight column."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = _rows(inputs)
    times = rows["w"].astype(int)  # a ranking's weights are constant within each list
    copies = rows.loc[rows.index.repeat(times)].copy()
    copy_number = copies.groupby(level=0).cumcount()
    copies["id"] = copies["id"].astype(np.int64) * 10 + copy_number
    if kind == "ranking":
        copies["cohort"] = copies["cohort"] + "#" + copy_number.astype(str)
    copies = copies.drop(columns="w").reset_index(drop=True)
    columns = {role: list(_sql(f"select * from '{path}' limit 0").columns) for role, path in _paths(inputs).items()}
    paths = {
        role: _write(copies[[c for c in names if c != "w"]], folder / f"{role}.csv") for role, names in columns.items()
    }
    policy = folder / "policy.yaml"
    policy.write_text(KINDS[kind][1].replace(", weight: w}", "}").replace("  columns: {weight: w}\n", ""))
    return Inputs(folder, paths["predictions"], paths["labels"], paths["attributes"], policy)


def _paths(inputs: Inputs) -> dict[str, Path]:
    return {"predictions": inputs.predictions, "labels": inputs.labels, "attributes": inputs.attributes}


def _group_values(document: dict[str, Any], kind: str) -> dict[tuple[Any, ...], float | None]:
    """Every per-group metric value of the document (multiclass: each class's rates and the confusion shares)."""
    values: dict[tuple[Any, ...], float | None] = {}
    for group in document["groups"]:
        if not group["rows"]:
            continue
        key = (tuple(group["slicing"]), tuple(sorted(group["group"].items())))
        for name, estimate in group["metrics"].items():
            values[(*key, name)] = estimate["value"]
    if kind == "multiclass":
        for group in document["multiclass"]["groups"]:
            if group["rows"]:
                matrix = np.asarray(group["confusion"], dtype=float)
                key = (tuple(group["slicing"]), tuple(sorted(group["group"].items())))
                for i, share in enumerate((matrix / matrix.sum()).ravel()):
                    values[(*key, f"confusion_share_{i}")] = float(share)
    return values


@pytest.mark.parametrize("kind", list(KINDS))
def test_integer_weights_equal_repeating_the_rows(
    kind: str, tmp_path: Path, runner: InProcessRunner, prefect_server: str
) -> None:
    weighted = _weighted_inputs(tmp_path / "weighted", kind, _integer_weights)
    repeated = _repeated(weighted, kind, tmp_path / "repeated")
    by_weight = _audit(runner, weighted)
    by_repeat = _audit(runner, repeated)
    assert by_weight["weighted"] is True
    assert by_repeat["weighted"] is False
    assert by_repeat["n_rows"] > by_weight["n_rows"]
    got, expected = _group_values(by_weight, kind), _group_values(by_repeat, kind)
    assert got.keys() == expected.keys()
    assert len(got) > 100
    for key, value in expected.items():
        if value is None:
            assert got[key] is None, key
        else:
            _close(got[key], value, key)


# --------------------------------------------------------------------------------------------- refused weights
def _spoilt(value: str) -> Weights:
    """Real weights, written as text, with the two rows of the lowest ids holding ``value``."""

    def weights(frame: pd.DataFrame, frames: dict[str, pd.DataFrame]) -> np.ndarray:
        text = _real_weights(frame, frames).astype(str).astype(object)
        text[:2] = value
        return text

    return weights


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("-1.5", ["2 negative", "'-1.5'", "replace the negative weights"]),
        ("NaN", ["2 NaN", "eplace NaN by a value"]),
        ("heavy", ["2 not a number", "'heavy'", "plain numbers"]),
    ],
)
def test_invalid_weights_exit_2_naming_file_column_count_and_example(
    kind: str, value: str, expected: list[str], tmp_path: Path, runner: InProcessRunner, prefect_server: str
) -> None:
    inputs = _weighted_inputs(tmp_path, kind, _spoilt(value))
    holder = _paths(inputs)[KINDS[kind][2]]
    before = sorted(p.name for p in inputs.folder.iterdir())
    message = assert_refused(
        runner.invoke(app, inputs.args("--quiet")),
        [f"column 'w' (weights) in {holder}", "finite number >= 0", "2 row(s) do not", *expected],
        inputs,
        before,
    )
    assert "1 " not in message.split("do not (")[1].split(")")[0]  # only the two spoilt rows are counted


def test_a_weight_column_no_input_has_exits_2_listing_the_inputs(
    tmp_path: Path, runner: InProcessRunner, prefect_server: str
) -> None:
    inputs = _weighted_inputs(tmp_path, "regression", _real_weights)
    inputs.policy.write_text(REGRESSION_POLICY.replace("weight: w", "weight: survey_weight"))
    before = sorted(p.name for p in inputs.folder.iterdir())
    assert_refused(
        runner.invoke(app, inputs.args("--quiet")),
        ["columns.weight names 'survey_weight'", "no input has that column", inputs.predictions.name],
        inputs,
        before,
    )


def test_weights_in_the_attributes_input_need_an_attributes_row_for_every_audited_person(
    tmp_path: Path, runner: InProcessRunner, prefect_server: str
) -> None:
    """A person kept as the unknown group without an attributes row would have no weight: refused, not guessed."""
    inputs = _weighted_inputs(tmp_path, "multiclass", _real_weights)
    attributes = _sql(f"select * from '{inputs.attributes}' order by id")
    _write(attributes.iloc[3:], inputs.attributes)
    inputs.policy.write_text(
        MULTICLASS_POLICY.replace(
            "values: [Male, Female], reference_group: Male}",
            "values: [Male, Female], reference_group: Male,\n       missing: unknown}",
        ).replace("reference_group: Caucasian}", "reference_group: Caucasian, missing: unknown}")
    )
    before = sorted(p.name for p in inputs.folder.iterdir())
    assert_refused(
        runner.invoke(app, inputs.args("--quiet")),
        ["3 audited row(s) have no row in", inputs.attributes.name, "weight column 'w'"],
        inputs,
        before,
    )


# ------------------------------------------------------------------------------- binary audits share the staging
BINARY_POLICY = """\
fairness_checker:
  sensitive_attributes:
    - {name: race, values: [African-American, Caucasian, Hispanic, Other, Asian, Native American],
       reference_group: Caucasian}
    - {name: sex, values: [Male, Female], reference_group: Male}
  metrics:
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: equal_opportunity_difference, threshold: 0.1}
  reporting: {format: [json]}
  columns: {y_true: two_year_recid, weight: w}
  statistics: {n_bootstrap: 100}
  execution: {streaming: STREAMING}
"""


@pytest.mark.parametrize("streaming", ["never", "always"])
def test_binary_weights_are_staged_too_in_memory_and_streaming(
    streaming: str, tmp_path: Path, runner: InProcessRunner, prefect_server: str
) -> None:
    """The same staging serves binary audits: the weights reach the cube on both paths (Fairlearn, weighted)."""
    files = split_compas(tmp_path / "parquet", suffix="parquet")
    frames = {role: _sql(f"select * from '{path}' order by id") for role, path in files.items()}
    frames["predictions"]["w"] = _real_weights(frames["predictions"], frames)
    paths = {role: _write(frame, tmp_path / f"{role}.csv") for role, frame in frames.items()}
    policy = tmp_path / "policy.yaml"
    policy.write_text(BINARY_POLICY.replace("STREAMING", streaming))
    inputs = Inputs(tmp_path, paths["predictions"], paths["labels"], paths["attributes"], policy)
    document = _audit(runner, inputs)
    assert document["execution"]["path"] == ("streaming" if streaming == "always" else "in_memory")
    rows = _rows(inputs)
    metrics = {"selection_rate": selection_rate, "true_positive_rate": recall_score}
    _assert_weighted_metric_frame(document, rows, [["race"], ["sex"]], metrics, "two_year_recid")


def _assert_weighted_metric_frame(
    document: dict[str, Any],
    rows: pd.DataFrame,
    slicings: Sequence[list[str]],
    metrics: dict[str, Any],
    y_true: str,
    *,
    skip: Callable[[dict[str, Any], str], bool] = lambda group, name: False,
) -> int:
    """Every group's metrics equal Fairlearn's weighted MetricFrame to 1e-9; the number of groups checked."""
    params = {name: {"sample_weight": rows["w"]} for name in metrics}
    checked = 0
    for slicing in slicings:
        _assert_weighted_record(document, rows, slicing)
        frame = MetricFrame(
            metrics=metrics,
            y_true=rows[y_true],
            y_pred=rows["y_pred"],
            sensitive_features=rows[slicing],
            sample_params=params,
        )
        for group in _groups(document, slicing):
            expected = frame.by_group.loc[_key(group, slicing)]
            for name in metrics:
                if not skip(group, name):
                    _close(group["metrics"][name]["value"], float(expected[name]), (group["group"], name))
            checked += 1
    return checked


@pytest.mark.parametrize("streaming", ["never", "always"])
def test_weights_in_the_attributes_need_every_kept_persons_row_on_both_paths(
    streaming: str, tmp_path: Path, runner: InProcessRunner, prefect_server: str
) -> None:
    """People kept as the unknown group without an attributes row have no weight: the same refusal on both paths.

    Under ``missing: exclude`` (sex) the same people are left out instead, so nothing is refused for them.
    """
    files = split_compas(tmp_path / "parquet", suffix="parquet")
    frames = {role: _sql(f"select * from '{path}' order by id") for role, path in files.items()}
    frames["attributes"]["w"] = _real_weights(frames["attributes"], frames)
    frames["attributes"] = frames["attributes"].iloc[4:]  # four audited people lose their attributes row
    paths = {role: _write(frame, tmp_path / f"{role}.csv") for role, frame in frames.items()}
    inputs = Inputs(tmp_path, paths["predictions"], paths["labels"], paths["attributes"], tmp_path / "policy.yaml")
    kept = BINARY_POLICY.replace("STREAMING", streaming).replace(
        "reference_group: Caucasian}", "reference_group: Caucasian, missing: unknown}"
    )
    inputs.policy.write_text(kept.replace("reference_group: Male}", "reference_group: Male, missing: unknown}"))
    before = sorted(p.name for p in inputs.folder.iterdir())
    assert_refused(
        runner.invoke(app, inputs.args("--quiet")),
        ["4 audited row(s) have no row in", inputs.attributes.name, "weight column 'w'"],
        inputs,
        before,
    )
    inputs.policy.write_text(kept)  # sex missing: exclude leaves those four people out: no weight is needed
    document = _audit(runner, inputs)
    assert document["execution"]["path"] == ("streaming" if streaming == "always" else "in_memory")
    assert document["weighted"] is True
    assert document["n_rows"] == len(frames["predictions"]) - 4  # the four left out
