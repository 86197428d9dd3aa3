"""``task: regression`` through the real flow and CLI: the law-school demo's inputs as files, exit codes 0/1/2.

The session's Prefect server runs every audit (conftest); hostile inputs (a NaN label, text in y_pred, a missing
prediction, an infinite value) stop the audit with exit 2, a message naming the file, column, count and fix, and
nothing written.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pipeline_helpers import (
    InProcessRunner,
    Inputs,
    assert_junit_and_one_verified_run,
    assert_refused,
    audit_failing_demo_policy,
    copied_inputs,
    parquet_inputs_as_csv,
    rewrite_csv,
)

from cli import app
from tasks.inputs.demo_law import write_law_inputs

LAW_CSV = Path(__file__).resolve().parents[2] / "fairgate" / "data" / "law" / "law_data.csv"
DEMO_POLICY = Path(__file__).resolve().parents[2] / "fairgate" / "policies" / "law_regression.yaml"

# Sex only: the model's residuals differ little between the two codes (mean residual gap 0.07 SD).
POLICY_PASSING = """\
fairness_checker:
  task: regression
  sensitive_attributes:
    - {name: sex, values: ["1", "2"]}
  metrics:
    - {name: mean_residual_difference, threshold: 0.2}
    - {name: worst_group_root_mean_squared_error, threshold: 1.0}
    - {name: ks_distance, threshold: 0.2}
  reporting: {format: [json, junit]}
  statistics: {n_bootstrap: 200}
"""


@pytest.fixture(scope="module")
def law_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo's held-out half as CSV files (the user's view: plain files)."""
    folder = tmp_path_factory.mktemp("law")
    parquet = write_law_inputs(LAW_CSV, folder)
    return parquet_inputs_as_csv(parquet)


def test_demo_policy_fails_with_exit_1_and_writes_every_output(
    tmp_path: Path, law_files: dict[str, Path], runner: InProcessRunner
) -> None:
    inputs, document = audit_failing_demo_policy(runner, tmp_path, law_files, DEMO_POLICY, "law-ols")
    assert document["task"] == "regression"
    assert document["verdict"] == "fail"
    assert document["n_rows"] == 10_896
    assert document["regression"]["grid"]["bins"] == 2048
    failed = {(r["metric"], tuple(r["slicing"])) for r in document["results"] if r["status"] == "fail"}
    assert ("mean_residual_difference", ("race",)) in failed
    assert document["validation"]["success"] is True
    assert any(c["expectation"] == "expect_column_values_to_be_between" for c in document["validation"]["checks"])
    assert_junit_and_one_verified_run(inputs)


def test_a_passing_policy_exits_0(tmp_path: Path, law_files: dict[str, Path], runner: InProcessRunner) -> None:
    inputs = copied_inputs(tmp_path, law_files, POLICY_PASSING)
    result = runner.invoke(app, inputs.args("--quiet", model="law-ols"))
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    (document_path,) = inputs.out.glob("*.json")
    document = json.loads(document_path.read_text())
    assert document["verdict"] == "pass"
    assert {r["status"] for r in document["results"]} == {"pass"}


def nan_label(i: Inputs) -> list[str]:
    rewrite_csv(
        i.labels,
        "select id, case when id = (select min(id) from t) then 'NaN' else y_true end as y_true from t",
        as_text=True,
    )
    return [i.labels.name, "'y_true'", "1 row(s)", "NaN", "Replace NaN"]


def text_prediction(i: Inputs) -> list[str]:
    first_two = "(select id from t order by id limit 2)"
    rewrite_csv(
        i.predictions,
        f"select id, case when id in {first_two} then 'abc' else y_pred end as y_pred from t",
        as_text=True,
    )
    return [i.predictions.name, "'y_pred'", "2 row(s)", "not a number", "'abc'", "plain numbers"]


def missing_prediction(i: Inputs) -> list[str]:
    last = "(select max(id) from t)"
    rewrite_csv(
        i.predictions, f"select id, case when id = {last} then null else y_pred end as y_pred from t", as_text=True
    )
    return [i.predictions.name, "'y_pred'", "1 row(s)", "missing", "ill in the missing values"]


def infinite_label(i: Inputs) -> list[str]:
    rewrite_csv(
        i.labels,
        "select id, case when id = (select max(id) from t) then 'inf' else y_true end as y_true from t",
        as_text=True,
    )
    return [i.labels.name, "'y_true'", "infinite"]


def no_prediction_column(i: Inputs) -> list[str]:
    rewrite_csv(i.predictions, "select id, y_pred as forecast from t", as_text=True)
    return [i.predictions.name, "'y_pred'"]


def binary_metric(i: Inputs) -> list[str]:
    i.policy.write_text(POLICY_PASSING.replace("mean_residual_difference", "demographic_parity_difference"))
    return ["demographic_parity_difference", "regression"]


def dask_runner(i: Inputs) -> list[str]:
    i.policy.write_text(POLICY_PASSING + "  execution: {runner: dask}\n")
    return ["binary audits only", "dask"]


@pytest.mark.parametrize(
    "hostile",
    [nan_label, text_prediction, missing_prediction, infinite_label, no_prediction_column, binary_metric, dask_runner],
)
def test_hostile_inputs_exit_2_and_write_nothing(
    hostile: object, tmp_path: Path, law_files: dict[str, Path], runner: InProcessRunner
) -> None:
    inputs = copied_inputs(tmp_path, law_files, POLICY_PASSING)
    expected = hostile(inputs)  # type: ignore[operator]
    before = sorted(p.name for p in inputs.folder.iterdir())
    assert_refused(runner.invoke(app, inputs.args("--quiet", model="law-ols")), expected, inputs, before)


@pytest.mark.slow
def test_regression_demo_writes_a_readable_report(
    runner: InProcessRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fairgate demo --task regression``: FAIL (exit 1), every output, and the PDF's regression pages."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["demo", "--task", "regression", "--quiet"])
    assert result.exit_code == 1, result.stderr
    out = tmp_path / "fairness_reports"
    (document_path,) = out.glob("fairness_*.json")
    document = json.loads(document_path.read_text())
    assert document["model"] == {"name": "law-first-year-ols", "version": "lsat-ugpa-seed-20170315"}
    suffixes = {p.name.split(".", 1)[1] for p in out.glob("fairness_*")}
    assert {"json", "junit.xml", "html", "pdf"} <= suffixes
    (pdf,) = out.glob("*.pdf")
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    for fragment in (
        "Regression: groups, residuals and distributions",
        "Residual by prediction decile",
        "Distribution of predictions",
        "Mean residual difference",
        "Worst group loss",
        "Puertorican",
    ):
        assert fragment in text, fragment
