"""``fairgate audit`` end to end on the real COMPAS data, through the CLI and the Prefect flow."""

from __future__ import annotations

import json
import re
import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path

import duckdb
import pytest
from pipeline_helpers import POLICY_PASSING, Inputs, run_fairgate
from typer.testing import CliRunner, Result

from cli import app
from tasks.store import list_runs, verify


def _document(out: Path) -> dict:
    (path,) = out.glob("fairness_*.json")
    return json.loads(path.read_text())


def test_failing_policy_exits_1_and_writes_json_junit_and_trail(failing_run: tuple[Inputs, Result]) -> None:
    inputs, result = failing_run
    assert result.exit_code == 1, result.output
    document = _document(inputs.out)
    assert document["verdict"] == "fail"
    assert document["model"] == {"name": "compas", "version": "1"}
    assert document["n_rows"] == 7214
    assert document["output_dir"] == str(inputs.out)  # --out, not the policy's reporting.output_dir
    # Real-data facts (../shared/data/README.md): the join kept everyone, group sizes as published.
    alignment = document["alignment"]
    assert alignment["matched"] == 7214
    assert alignment["predictions_without_labels"] == alignment["labels_without_predictions"] == 0
    race = {g["group"]["race"]: g["n"] for g in document["groups"] if g["slicing"] == ["race"]}
    assert race["African-American"] == 3696
    assert race["Caucasian"] == 2454
    assert race["Native American"] == 18
    # Validation results travel with the record: real GE expectations, all passed.
    validation = document["validation"]
    assert validation["success"]
    assert validation["engine"] == "great_expectations"
    checked = {(c["input"].rsplit("/", 1)[-1], c["column"], c["expectation"]) for c in validation["checks"]}
    for name in ("predictions.csv", "labels.csv", "attributes.csv"):
        assert (name, "id", "expect_column_values_to_not_be_null") in checked
        assert (name, "id", "expect_column_values_to_be_between") in checked  # occurrences per id <= 1
    assert ("predictions.csv", "score", "expect_column_values_to_be_between") in checked
    assert ("labels.csv", "two_year_recid", "expect_column_values_to_be_in_set") in checked
    assert ("attributes.csv", "race", "expect_column_values_to_be_in_set") in checked
    assert all("statistics" in r for r in validation["results"])  # GE's own result documents
    # The small groups' warnings (printed by every report) name them without their sizes (the small-cell rule).
    small = [w for w in validation["warnings"] if "fewer than min_group_size" in w]
    assert any("race group Native American has" in w for w in small)  # in words, not race='Native American'
    assert not any("=" in w.split("min_group_size")[0] for w in small), small
    assert not any(re.search(r"\b(18|32)\b", w) for w in small), small
    assert {r["sha256"] for r in document["inputs"].values()}
    assert len(document["inputs"]) == 3
    # JUnit: one failure per failed result.
    (junit,) = inputs.out.glob("*.junit.xml")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    n_failed = sum(r["status"] == "fail" for r in document["results"])
    assert n_failed > 0
    assert int(suite.get("failures", "-1")) == n_failed
    assert len(suite.findall("testcase/failure")) == n_failed
    runs = list_runs(inputs.out / "audit_trail.duckdb")
    assert [r["verdict"] for r in runs] == ["fail"]
    assert runs[0]["run_id"] == document["run_id"]
    assert not list(inputs.out.glob(".partial-*"))


def test_passing_policy_exits_0(runner: CliRunner, inputs: Inputs) -> None:
    inputs.policy.write_text(POLICY_PASSING)
    result = runner.invoke(app, inputs.args("--quiet"))
    assert result.exit_code == 0, result.output
    assert _document(inputs.out)["verdict"] == "pass"


@pytest.mark.slow
def test_json_flag_prints_only_the_document_on_stdout(inputs: Inputs) -> None:
    completed = run_fairgate(inputs.args("--json"), cwd=inputs.folder)
    assert completed.returncode == 1, completed.stderr[-3000:]
    document = json.loads(completed.stdout)  # nothing else on stdout, or this fails
    assert document == _document(inputs.out)
    # A successful run logs no errors and no tracebacks (Prefect's ephemeral server included).
    assert "Traceback" not in completed.stderr, completed.stderr[-3000:]
    assert "| ERROR" not in completed.stderr, completed.stderr[-3000:]


def test_parquet_sqlite_and_duckdb_sources(runner: CliRunner, inputs: Inputs, tmp_path: Path) -> None:
    con = duckdb.connect()
    predictions = tmp_path / "predictions.parquet"
    con.read_csv(str(inputs.predictions)).to_parquet(str(predictions))
    labels_db = tmp_path / "warehouse.sqlite"
    rows = con.read_csv(str(inputs.labels)).fetchall()
    with sqlite3.connect(labels_db) as db:
        db.execute("create table labels (id integer, two_year_recid integer)")
        db.executemany("insert into labels values (?, ?)", rows)
    attributes_db = tmp_path / "people.duckdb"
    with duckdb.connect(str(attributes_db)) as people:
        people.read_csv(str(inputs.attributes)).to_table("attributes")
    con.close()
    args = inputs.args("--quiet")
    args[args.index("--predictions") + 1] = str(predictions)
    args[args.index("--labels") + 1] = f"{labels_db}::labels"
    args[args.index("--attributes") + 1] = f"{attributes_db}::attributes"
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    document = _document(inputs.out)
    assert document["alignment"]["matched"] == 7214
    assert document["inputs"]["labels"]["source"].endswith("warehouse.sqlite::labels")


def test_join_report_and_missing_attributes(runner: CliRunner, inputs: Inputs) -> None:
    """Drop some labels, predictions (other people) and attribute rows; blank some races."""
    con = duckdb.connect()
    con.read_csv(str(inputs.labels)).filter("id > 100").to_csv(str(inputs.labels))
    con.read_csv(str(inputs.predictions)).filter("id <= 10 or id > 160").to_csv(str(inputs.predictions))
    con.read_csv(str(inputs.attributes)).filter("id not between 1000 and 1029").create_view("a")
    con.sql(
        "select id, case when id between 2000 and 2019 then null else race end as race, sex, age_cat from a"
    ).to_csv(str(inputs.attributes))
    predicted = {r[0] for r in con.read_csv(str(inputs.predictions)).fetchall()}
    labelled = {r[0] for r in con.read_csv(str(inputs.labels)).fetchall()}
    with_attributes = {r[0] for r in con.read_csv(str(inputs.attributes)).fetchall()}
    blank_race = {r[0] for r in con.read_csv(str(inputs.attributes)).filter("race is null").fetchall()}
    con.close()
    matched = predicted & labelled
    result = runner.invoke(app, inputs.args("--quiet"))
    assert result.exit_code == 1, result.output
    alignment = _document(inputs.out)["alignment"]
    assert alignment["matched"] == len(matched)
    assert alignment["predictions_without_labels"] == len(predicted - labelled) > 0
    assert alignment["labels_without_predictions"] == len(labelled - predicted) > 0
    assert alignment["people_without_attributes"] == len(matched - with_attributes) > 0
    missing_race = len(matched - with_attributes) + len(matched & blank_race)
    assert alignment["missing_attribute_values"]["race"] == {
        "count": missing_race,
        "handling": "exclude",
        "unknown_label": None,
    }
    assert alignment["aligned_rows"] == len(matched) - missing_race


def test_missing_attribute_kept_as_unknown_group(runner: CliRunner, inputs: Inputs) -> None:
    con = duckdb.connect()
    con.read_csv(str(inputs.attributes)).create_view("a")
    blanked = con.sql("select count(*) from a where id <= 300").fetchall()[0][0]
    con.sql("select id, case when id <= 300 then null else race end as race, sex, age_cat from a").to_csv(
        str(inputs.attributes)
    )
    con.close()
    inputs.policy.write_text(
        inputs.policy.read_text().replace(
            "reference_group: Caucasian}",
            "reference_group: Caucasian,\n       missing: unknown, unknown_label: not recorded}",
        )
    )
    result = runner.invoke(app, inputs.args("--quiet"))
    assert result.exit_code == 1, result.output
    document = _document(inputs.out)
    race = {g["group"]["race"]: g["n"] for g in document["groups"] if g["slicing"] == ["race"]}
    assert race["not recorded"] == blanked > 100
    assert document["alignment"]["missing_attribute_values"]["race"]["handling"] == "unknown"
    assert document["alignment"]["aligned_rows"] == 7214


def test_failed_report_step_leaves_nothing_behind(
    runner: CliRunner, inputs: Inputs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted run (here: the report step crashes) writes no partial output and records no run."""
    import flows.audit

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated crash while rendering the report")

    monkeypatch.setattr(flows.audit, "_publish_report", crash)
    result = runner.invoke(app, inputs.args("--quiet"))
    assert result.exit_code == 3
    assert not inputs.out.exists() or not [p for p in inputs.out.rglob("*") if "audit_trail" not in p.name]
    trail = inputs.out / "audit_trail.duckdb"
    assert not trail.exists() or list_runs(trail) == []


def test_trail_cli_list_show_verify(runner: CliRunner, failing_run: tuple[Inputs, Result]) -> None:
    inputs, result = failing_run
    assert result.exit_code == 1, result.output
    trail = str(inputs.out / "audit_trail.duckdb")
    listed = runner.invoke(app, ["trail", "list", "--trail", trail, "--json"])
    assert listed.exit_code == 0
    (run,) = json.loads(listed.stdout)
    shown = runner.invoke(app, ["trail", "show", run["run_id"], "--trail", trail])
    record = json.loads(shown.stdout)
    assert record["policy_sha256"] == record["document"]["policy_sha256"]
    assert record["inputs"]["labels"]["rows"] == 7214
    assert verify(Path(trail))["ok"]
    assert runner.invoke(app, ["trail", "verify", "--trail", trail]).exit_code == 0
    missing = runner.invoke(app, ["trail", "verify", "--trail", str(inputs.folder / "nope.duckdb")])
    assert missing.exit_code == 2
    assert "no audit trail" in missing.stderr


def test_model_named_in_the_predictions_is_recorded(runner: CliRunner, inputs: Inputs) -> None:
    con = duckdb.connect()
    con.read_csv(str(inputs.predictions)).create_view("p")
    con.sql(
        "select *, 'recidivism-gbm' as model_name, '2.3' as model_version, "
        "timestamp '2026-01-01' + to_days(cast(id % 30 as integer)) as timestamp from p"
    ).to_csv(str(inputs.predictions))
    con.close()
    args = [a for a in inputs.args("--quiet")]
    for option in ("--model", "--model-version"):
        index = args.index(option)
        del args[index : index + 2]
    assert runner.invoke(app, args).exit_code == 1
    document = _document(inputs.out)
    assert document["model"] == {"name": "recidivism-gbm", "version": "2.3"}
    (provenance,) = document["predictions_provenance"]
    assert provenance["n"] == 7214
    assert provenance["first_prediction_at"].startswith("2026-01-01")
