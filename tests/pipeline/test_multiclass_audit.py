"""``task: multiclass`` end to end: COMPAS's risk tiers through the CLI and the Prefect flow (the session server).

The demo's inputs (sql/demo_multiclass_*.sql) are written from the real COMPAS file; the document's per-group
per-class rates are checked against Fairlearn's MetricFrame with sklearn's metrics on the same rows.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import duckdb
import jsonschema
import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import MetricFrame
from pipeline_helpers import COMPAS_CSV, InProcessRunner, Inputs, assert_refused
from sklearn.metrics import confusion_matrix, precision_score, recall_score
from typer.testing import Result

from cli import app
from fairgate.document import SCHEMA_PATH
from tasks.inputs.io import write_demo_inputs
from tasks.store import list_runs, verify

CLASSES = ["Low", "Medium", "High"]
TOL = 1e-9

POLICY = """\
fairness_checker:
  task: multiclass
  multiclass: {classes: [Low, Medium, High], adverse_classes: [Medium, High]}
  sensitive_attributes:
    - {name: race, values: [African-American, Caucasian, Hispanic, Other, Asian, Native American],
       reference_group: Caucasian}
    - {name: sex, values: [Male, Female], reference_group: Male}
  metrics:
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: equalized_odds_difference, threshold: 0.1}
    - {name: adverse.disparate_impact_ratio, threshold: 0.8}
  intersectional_analysis: {enabled: true, min_group_size: 50, attribute_pairs: [[race, sex]]}
  reporting: {format: [json, junit]}
  columns: {y_true: outcome_tier, y_pred: risk_tier}
  statistics: {n_bootstrap: 200}
"""


def _inputs(folder: Path, policy: str = POLICY) -> Inputs:
    folder.mkdir(parents=True, exist_ok=True)
    files = write_demo_inputs(COMPAS_CSV, folder, "demo_multiclass")
    path = folder / "policy.yaml"
    path.write_text(policy)
    return Inputs(folder, files["predictions"], files["labels"], files["attributes"], path)


def _document(out: Path) -> dict[str, Any]:
    (path,) = out.glob("fairness_*.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def tier_run(
    tmp_path_factory: pytest.TempPathFactory, runner: InProcessRunner, prefect_server: str
) -> tuple[Inputs, Result]:
    inputs = _inputs(tmp_path_factory.mktemp("tiers"))
    return inputs, runner.invoke(app, inputs.args("--quiet"))


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The demo's rows joined on id, as Fairlearn sees them."""
    folder = tmp_path_factory.mktemp("rows")
    files = write_demo_inputs(COMPAS_CSV, folder, "demo_multiclass")
    con = duckdb.connect()
    frame = con.sql(
        f"select p.id, risk_tier, outcome_tier, race, sex from '{files['predictions']}' p "
        f"join '{files['labels']}' l using (id) join '{files['attributes']}' a using (id)"
    ).to_df()
    con.close()
    return frame


def test_tiers_fail_with_exit_1_and_a_multiclass_document(tier_run: tuple[Inputs, Result]) -> None:
    inputs, result = tier_run
    assert result.exit_code == 1, (result.stdout, result.stderr)
    document = _document(inputs.out)
    assert document["task"] == "multiclass"
    assert document["schema_version"] == "1.10"
    assert document["n_rows"] == 7214
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    block = document["multiclass"]
    assert block["classes"] == CLASSES
    assert block["adverse_classes"] == ["Medium", "High"]
    # The demo's truth mapping (sql/demo_multiclass_labels.sql) on the real data: 3,963 without a new offence
    # within two years, 713 with a violent one within two years, the rest (2,538) another offence.
    population = next(g for g in block["groups"] if g["slicing"] == [])
    truth = [sum(row) for row in population["confusion"]]
    assert truth == [3963, 2538, 713]
    predicted = [sum(column) for column in zip(*population["confusion"], strict=True)]
    assert predicted == [3897, 1914, 1403]  # score_text as published
    # ProPublica's finding holds in the tier model: Black defendants get Medium/High tiers far more often.
    di = next(
        r for r in document["results"] if r["metric"] == "adverse.disparate_impact_ratio" and r["slicing"] == ["race"]
    )
    assert di["status"] == "fail"
    assert di["value"] < 0.8
    assert di["worst_group"] == {"race": "African-American"}
    dp = next(
        r for r in document["results"] if r["metric"] == "demographic_parity_difference" and r["slicing"] == ["race"]
    )
    assert dp["status"] == "fail"
    assert dp["ci_low"] <= dp["value"] <= dp["ci_high"]
    # The judged value is the worst class's summary, which the block lists per class.
    summary = next(
        s for s in block["summaries"] if s["metric"] == "demographic_parity_difference" and s["slicing"] == ["race"]
    )
    worst = max(v["value"] for v in summary["by_class"].values())
    assert summary["worst"]["value"] == pytest.approx(worst, abs=TOL) == pytest.approx(dp["value"], abs=TOL)
    assert summary["worst_class"] in CLASSES


def test_junit_and_trail_record_the_multiclass_run(tier_run: tuple[Inputs, Result]) -> None:
    inputs, _ = tier_run
    document = _document(inputs.out)
    (junit,) = inputs.out.glob("*.junit.xml")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert int(suite.get("tests", "0")) == len(document["results"])
    assert int(suite.get("failures", "0")) == document["verdict_detail"]["n_failed"]
    trail = inputs.out / "audit_trail.duckdb"
    assert verify(trail)["ok"]
    (run,) = list_runs(trail)
    assert run["verdict"] == "fail"
    con = duckdb.connect(str(trail), read_only=True)
    (cells_json,) = con.execute("select cells from cubes where run_id = ?", [document["run_id"]]).fetchone()
    con.close()
    cells = json.loads(cells_json)
    assert sum(c["__rows"] for c in cells) == 7214
    assert {c["__y_true"] for c in cells} == set(CLASSES)  # stored as the class labels, not their codes


def test_document_rates_equal_fairlearn_and_sklearn(tier_run: tuple[Inputs, Result], rows: pd.DataFrame) -> None:
    """Per group and class: selection rate, TPR (recall), FPR, precision and the confusion matrix, to 1e-9."""
    inputs, _ = tier_run
    block = _document(inputs.out)["multiclass"]
    checked = 0
    for slicing in (["race"], ["sex"], ["race", "sex"]):
        y_true, y_pred = rows["outcome_tier"], rows["risk_tier"]
        metrics = {
            "recall": lambda t, p: recall_score(t, p, labels=CLASSES, average=None, zero_division=np.nan),
            "precision": lambda t, p: precision_score(t, p, labels=CLASSES, average=None, zero_division=np.nan),
            "confusion": lambda t, p: confusion_matrix(t, p, labels=CLASSES),
            "n": lambda t, p: len(t),
        }
        frame = MetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=rows[slicing])
        for group in (g for g in block["groups"] if g["slicing"] == slicing and g["rows"]):
            key = tuple(group["group"][a] for a in slicing)
            expected = frame.by_group.loc[key if len(key) > 1 else key[0]]
            matrix = np.asarray(expected["confusion"], dtype=float)
            assert np.array_equal(np.asarray(group["confusion"]), matrix)
            n = matrix.sum()
            for c, label in enumerate(CLASSES):
                rates = {name: group["rates"][name][c]["value"] for name in group["rates"]}
                _close(rates["selection_rate"], matrix[:, c].sum() / n)
                _close(rates["true_positive_rate"], expected["recall"][c])
                _close(rates["positive_predictive_value"], expected["precision"][c])
                negatives = n - matrix[c].sum()
                _close(rates["false_positive_rate"], (matrix[:, c].sum() - matrix[c, c]) / negatives)
                for name, estimate in ((k, group["rates"][k][c]) for k in group["rates"]):
                    if estimate["value"] is not None:
                        assert estimate["ci_low"] <= estimate["value"] + TOL, (name, label)
                        assert estimate["value"] <= estimate["ci_high"] + TOL, (name, label)
            _close(group["accuracy"]["value"], np.trace(matrix) / n)
            checked += 1
    assert checked >= 2 + 6 + 12 - 2  # every group with rows (a few race x sex cells are empty)


def _close(actual: float | None, expected: float) -> None:
    if np.isnan(expected):
        assert actual is None
    else:
        assert actual is not None
        assert abs(actual - expected) <= TOL, (actual, expected)


# ----------------------------------------------------------------------------------------------- refused inputs
def test_undeclared_class_exits_2_naming_it_and_the_fix(
    tmp_path: Path, runner: InProcessRunner, prefect_server: str
) -> None:
    inputs = _inputs(tmp_path / "in")
    con = duckdb.connect()
    edited = con.sql(
        f"select id, case when id % 97 = 0 then 'Very High' else risk_tier end as risk_tier from '{inputs.predictions}'"
    ).to_arrow_table()
    con.close()
    duckdb.connect().from_arrow(edited).to_parquet(str(inputs.predictions))
    before = sorted(p.name for p in inputs.folder.iterdir())
    message = assert_refused(
        runner.invoke(app, inputs.args("--quiet")),
        ["'Very High'", "risk_tier", "multiclass.classes", "add it to"],
        inputs,
        before,
    )
    assert "69 row(s)" in message  # the ids divisible by 97 among COMPAS's ids


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("adverse_classes: [Medium, High]", "adverse_classes: null"), ["adverse_classes", "adverse.disparate"]),
        (("equalized_odds_difference", "auc_difference"), ["auc_difference", "task: multiclass", "may judge"]),
        (("classes: [Low, Medium, High]", "classes: [Low, Medium]"), ["High", "not in multiclass.classes"]),
        (("  task: multiclass\n", "  task: binary\n"), ["only read with task: multiclass"]),
        (("  statistics:", "  execution: {streaming: always}\n  statistics:"), ["binary audits only"]),
    ],
)
def test_inconsistent_multiclass_policy_exits_2(
    tmp_path: Path, runner: InProcessRunner, prefect_server: str, edit: tuple[str, str], expected: list[str]
) -> None:
    old, new = edit
    assert old in POLICY
    inputs = _inputs(tmp_path / "in", POLICY.replace(old, new))
    before = sorted(p.name for p in inputs.folder.iterdir())
    assert_refused(runner.invoke(app, inputs.args("--quiet")), expected, inputs, before)


def test_dask_runner_is_refused_for_multiclass(tmp_path: Path, runner: InProcessRunner, prefect_server: str) -> None:
    inputs = _inputs(tmp_path / "in")
    before = sorted(p.name for p in inputs.folder.iterdir())
    assert_refused(
        runner.invoke(app, inputs.args("--quiet", "--runner", "dask")), ["binary audits only"], inputs, before
    )


def test_missing_prediction_column_exits_2(tmp_path: Path, runner: InProcessRunner, prefect_server: str) -> None:
    inputs = _inputs(tmp_path / "in", POLICY.replace("y_pred: risk_tier", "y_pred: tier"))
    before = sorted(p.name for p in inputs.folder.iterdir())
    assert_refused(runner.invoke(app, inputs.args("--quiet")), ["'tier'"], inputs, before)


@pytest.mark.slow
def test_multiclass_demo_writes_every_output(runner: InProcessRunner, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["demo", "--task", "multiclass", "--quiet"])
    assert result.exit_code == 1, result.stderr
    out = tmp_path / "fairness_reports"
    document = _document(out)
    assert document["model"] == {"name": "compas-tiers", "version": "northpointe-2013"}
    assert document["command_line"] == "fairgate demo --quiet --task multiclass"  # rebuilt in-process
    suffixes = {p.name.split(".", 1)[1] for p in out.glob("fairness_*")}
    assert {"json", "junit.xml", "html", "pdf"} <= suffixes


def test_unknown_demo_task_exits_2(runner: InProcessRunner, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["demo", "--task", "clustering", "--quiet"])
    assert result.exit_code == 2
    assert "clustering" in result.stderr
    assert "multiclass" in result.stderr
    assert not (tmp_path / "fairness_reports").exists()


def test_second_run_has_a_trend_and_an_html_report(tier_run: tuple[Inputs, Result], runner: InProcessRunner) -> None:
    """The trail's earlier run feeds the trend; the report renders the multiclass pages and the trend."""
    inputs, _ = tier_run
    inputs.policy.write_text(POLICY.replace("format: [json, junit]", "format: [json, html]"))
    result = runner.invoke(app, inputs.args("--quiet"))
    assert result.exit_code == 1, (result.stdout, result.stderr)
    documents = sorted(inputs.out.glob("fairness_*.json"), key=lambda p: p.stat().st_mtime)
    latest = json.loads(documents[-1].read_text())
    assert len(latest["trend"]["runs"]) == 2
    assert latest["trend"]["same_data_as_previous"] is True  # identical inputs: no change is tested
    (html,) = inputs.out.glob("*.html")
    text = html.read_text()
    assert "Confusion matrices" in text
    assert "African-American" in text
    assert "Adverse" not in text or "adverse or not" in text
