"""Ids are compared exactly (issue 29): 20-digit ids beyond int64 join person to person, never through DOUBLE."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from pipeline_helpers import Inputs, assert_refused
from pipeline_helpers import rewrite_csv as _rewrite
from typer.testing import CliRunner

from cli import app

# 10^19 + n is beyond int64 (9.2e18) and beyond a double's 53 bits: as DOUBLE, ids 2 apart read as equal.
BASE = "10000000000000000000::hugeint"


def _ids(i: Inputs, predictions: str, labels: str, attributes: str) -> None:
    _rewrite(i.predictions, f"select ({predictions})::varchar as id, * exclude (id) from t")
    _rewrite(i.labels, f"select ({labels})::varchar as id, * exclude (id) from t")
    _rewrite(i.attributes, f"select ({attributes})::varchar as id, * exclude (id) from t")


def _document(out: Path) -> dict[str, object]:
    (path,) = out.glob("*.json")
    document: dict[str, object] = json.loads(path.read_text())
    return document


def test_twenty_digit_ids_that_match_are_joined_as_the_same_people(runner: CliRunner, inputs: Inputs) -> None:
    same = f"{BASE} + id"
    _ids(inputs, same, same, same)
    assert "10000000000000000001" in inputs.labels.read_text()
    result = runner.invoke(app, inputs.args("--quiet"))
    assert result.exit_code == 1, result.output  # the failing policy fails, as with the original ids
    alignment = _document(inputs.out)["alignment"]
    assert isinstance(alignment, dict)
    assert alignment["matched"] == 7214


def test_twenty_digit_ids_that_differ_are_not_joined(runner: CliRunner, inputs: Inputs) -> None:
    # Odd, even and offset ids: no person is in two files, though each pair is equal as a double.
    _ids(inputs, f"{BASE} + 2 * id - 1", f"{BASE} + 2 * id", f"{BASE} + 2 * id + 4096")
    before = sorted(p.name for p in inputs.folder.iterdir())
    result = runner.invoke(app, inputs.args("--quiet"))
    assert_refused(result, ["no id of", inputs.predictions.name, inputs.labels.name], inputs, before)


def test_ids_stored_as_floating_point_are_refused(runner: CliRunner, inputs: Inputs, tmp_path: Path) -> None:
    predictions = tmp_path / "predictions.parquet"
    with duckdb.connect() as con:
        con.read_csv(str(inputs.predictions)).create_view("t")
        con.sql("select id::double as id, * exclude (id) from t").to_parquet(str(predictions))
    args = inputs.args("--quiet")
    args[args.index("--predictions") + 1] = str(predictions)
    before = sorted(p.name for p in inputs.folder.iterdir())
    result = runner.invoke(app, args)
    assert_refused(result, ["predictions.parquet", "floating-point numbers", "as text"], inputs, before)


@pytest.mark.parametrize("ids", ["decimal", "text"])
def test_decimal_and_text_ids_in_csvs_match_exactly(runner: CliRunner, inputs: Inputs, ids: str) -> None:
    # A CSV's decimal ids would be sniffed as DOUBLE, where 9007199254740993.1 and ...993.2 are one value:
    # they are read as text instead, each id its own.
    expression = "'9007199254740993.' || id::varchar" if ids == "decimal" else "'p-' || id::varchar"
    _ids(inputs, expression, expression, expression)
    result = runner.invoke(app, inputs.args("--quiet"))
    assert result.exit_code == 1, result.output
    alignment = _document(inputs.out)["alignment"]
    assert isinstance(alignment, dict)
    assert alignment["matched"] == 7214
