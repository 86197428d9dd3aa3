"""Regression validation (tasks/validation/validate_regression.py): real Great Expectations suites on DuckDB's
staged inputs.

Each kind of bad value (missing, text, NaN, infinite) in y_true or y_pred is refused with the file, the column,
the count per kind, an example and the fix; clean inputs pass with the expectations recorded.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from fairgate.errors import DataError
from fairgate.policy.core import Policy
from tasks.inputs.align import stage
from tasks.inputs.demo_law import write_law_inputs
from tasks.validation.validate import Validation
from tasks.validation.validate_regression import validate_regression

LAW_CSV = Path(__file__).resolve().parents[2] / "fairgate" / "data" / "law" / "law_data.csv"
POLICY = Policy.model_validate(
    {
        "task": "regression",
        "sensitive_attributes": [{"name": "race"}],
        "metrics": [{"name": "ks_distance", "threshold": 0.2}],
    }
)
FIRST = "(select min(id) from t)"
NEXT_THREE = "(select id from t order by id limit 3 offset 1)"
LAST = "(select max(id) from t)"


@pytest.fixture(scope="module")
def law(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_law_inputs(LAW_CSV, tmp_path_factory.mktemp("law"))


def _csv(law: dict[str, Path], folder: Path, role: str, query: str) -> str:
    con = duckdb.connect()
    con.read_parquet(str(law[role])).create_view("t")
    path = folder / f"{role}.csv"
    con.sql(query).to_csv(str(path))
    con.close()
    return str(path)


def _validate(law: dict[str, Path], folder: Path, labels: str, predictions: str) -> Validation:
    staged = stage(
        POLICY,
        _csv(law, folder, "predictions", predictions),
        _csv(law, folder, "labels", labels),
        str(law["attributes"]),
    )
    validation = Validation()
    validate_regression(staged, validation, ("predictions", "labels", "attributes"))
    return validation


def test_clean_inputs_pass_with_great_expectations_results(law: dict[str, Path], tmp_path: Path) -> None:
    validation = _validate(law, tmp_path, "select * from t", "select * from t")
    assert validation.success
    assert [c["column"] for c in validation.checks] == ["y_true", "y_true", "y_pred", "y_pred"]
    assert {c["expectation"] for c in validation.checks} == {
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_be_between",
    }
    assert len(validation.ge_results) == 2


def test_text_and_nan_labels_are_refused_with_counts_per_kind(law: dict[str, Path], tmp_path: Path) -> None:
    labels = (
        f"select id, case when id = {FIRST} then 'NaN' when id in {NEXT_THREE} then '1,5' "
        "else y_true::varchar end as y_true from t"
    )
    with pytest.raises(DataError) as refused:
        _validate(law, tmp_path, labels, "select * from t")
    message = str(refused.value)
    for fragment in ("'y_true'", "labels.csv", "4 row(s)", "3 not a number, 1 NaN", "'1,5'", "plain numbers", "NaN"):
        assert fragment in message, (fragment, message)


def test_missing_and_infinite_predictions_are_refused(law: dict[str, Path], tmp_path: Path) -> None:
    predictions = (
        f"select id, case when id = {FIRST} then null when id = {LAST} then '-inf' "
        "else y_pred::varchar end as y_pred from t"
    )
    with pytest.raises(DataError) as refused:
        _validate(law, tmp_path, "select * from t", predictions)
    message = str(refused.value)
    for fragment in ("'y_pred'", "predictions.csv", "2 row(s)", "1 infinite", "1 missing", "fill in the missing"):
        assert fragment in message, (fragment, message)


def test_a_missing_prediction_column_is_named(law: dict[str, Path], tmp_path: Path) -> None:
    staged = stage(
        POLICY,
        _csv(law, tmp_path, "predictions", "select id, y_pred as forecast, 0.5 as score from t"),
        _csv(law, tmp_path, "labels", "select * from t"),
        str(law["attributes"]),
    )
    with pytest.raises(DataError, match=r"columns\.y_pred"):
        validate_regression(staged, Validation(), ("predictions", "labels", "attributes"))
