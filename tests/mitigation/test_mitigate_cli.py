"""``fairgate mitigate --method reweighing``: the weights file the training job reads, and refusals (exit 2,
nothing written) for bad input before and inside the flow."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from mitigation_helpers import InProcessRunner

from cli import app
from fairgate.mitigation.reweighing import reweigh
from tasks.store import list_mitigations


@pytest.fixture(autouse=True)
def _flows_use_the_session_server(prefect_server: str) -> None:
    """The mitigation flows run on the one test server."""


def _refused(result: object, fragment: str, out: Path) -> None:
    message = " ".join(result.stderr.split())  # type: ignore[attr-defined]
    assert result.exit_code == 2, (result.exit_code, result.stderr)  # type: ignore[attr-defined]
    assert "Traceback" not in result.stderr + result.stdout  # type: ignore[attr-defined]
    assert fragment in message, message
    assert not out.exists()


@pytest.mark.parametrize("file_format", ["csv", "parquet"])
def test_weights_file_holds_each_row_weight(
    runner: InProcessRunner, compas_files: dict[str, Path], tmp_path: Path, file_format: str
) -> None:
    out = tmp_path / "out"
    args = ["mitigate", "--method", "reweighing", "--policy", str(compas_files["policy"])]
    args += ["--training", str(compas_files["training"]), "--out", str(out), "--format", file_format, "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    path = Path(summary["outputs"]["weights"])
    assert path.parent == out
    assert path.suffix == f".{file_format}"
    written = pl.read_parquet(path) if file_format == "parquet" else pl.read_csv(path)
    training = pl.read_csv(compas_files["training"])
    assert written.columns == ["id", "race", "sex", "two_year_recid", "weight"]
    assert written["id"].to_list() == training["id"].to_list()
    expected = reweigh(training, ["race", "sex"], "two_year_recid").weights.to_numpy()
    np.testing.assert_allclose(written["weight"].to_numpy(), expected, rtol=1e-15, atol=0)
    assert summary["attributes"] == ["race", "sex"]  # the policy's attributes, jointly, by default
    assert sum(cell["rows"] for cell in summary["cells"]) == training.height
    assert json.loads(Path(summary["outputs"]["json"]).read_text())["run_id"] == summary["run_id"]
    written_files = sorted(p.name for p in out.iterdir() if not p.name.startswith("audit_trail.duckdb"))
    assert written_files == sorted([path.name, Path(summary["outputs"]["json"]).name])
    # The run is a row of the trail's mitigations table (in --out by default), its files with their sha256.
    (row,) = list_mitigations(out / "audit_trail.duckdb")
    assert (row["mitigation_id"], row["method"], row["answers"]) == (summary["run_id"], "reweighing", None)
    assert row["outputs"]["weights"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    # The command run is recorded as the audits of the other methods record it, and the trail's row holds the
    # hash of the summary that carries it.
    recorded = json.loads(Path(summary["outputs"]["json"]).read_text())["command_line"]
    assert recorded == summary["command_line"]
    assert recorded.startswith("fairgate mitigate --method reweighing --policy ")
    assert f"--format {file_format}" in recorded
    assert f"--training {compas_files['training']}" in recorded
    summary_bytes = Path(summary["outputs"]["json"]).read_bytes()
    assert row["outputs"]["json"]["sha256"] == hashlib.sha256(summary_bytes).hexdigest()


def test_one_attribute_chosen(runner: InProcessRunner, compas_files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["mitigate", "--method", "reweighing", "--policy", str(compas_files["policy"]), "--attribute", "sex"]
    result = runner.invoke(app, [*args, "--training", str(compas_files["training"]), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.stderr
    written = pl.read_csv(json.loads(result.stdout)["outputs"]["weights"])
    assert written.columns == ["id", "sex", "two_year_recid", "weight"]
    assert written.select("sex", "two_year_recid", "weight").unique().height == 4
    # A repeatable option is recorded as given, once per value (not as a Python list).
    assert "--attribute sex" in json.loads(result.stdout)["command_line"]


def test_missing_label_column_is_refused(
    runner: InProcessRunner, compas_files: dict[str, Path], tmp_path: Path
) -> None:
    training = tmp_path / "train.csv"
    pl.read_csv(compas_files["training"]).drop("two_year_recid").write_csv(training)
    out = tmp_path / "out"
    args = ["mitigate", "--method", "reweighing", "--policy", str(compas_files["policy"])]
    result = runner.invoke(app, [*args, "--training", str(training), "--out", str(out)])
    _refused(result, "no column 'two_year_recid'", out)


def test_unknown_attribute_and_missing_file_are_refused(
    runner: InProcessRunner, compas_files: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    base = ["mitigate", "--method", "reweighing", "--policy", str(compas_files["policy"]), "--out", str(out)]
    result = runner.invoke(app, [*base, "--training", str(compas_files["training"]), "--attribute", "age_cat"])
    _refused(result, "--attribute 'age_cat' is not a sensitive attribute of the policy", out)
    result = runner.invoke(app, [*base, "--training", str(tmp_path / "nope.csv")])
    _refused(result, "does not exist", out)


def test_retrain_needs_its_options_and_the_extra(
    runner: InProcessRunner, compas_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    base = ["mitigate", "--method", "retrain", "--policy", str(compas_files["policy"]), "--out", str(out)]
    base += ["--training", str(compas_files["training"])]
    _refused(runner.invoke(app, base), "needs --evaluation", out)
    estimator = tmp_path / "model.joblib"
    full = [*base, "--evaluation", str(compas_files["evaluation"]), "--estimator", str(estimator)]
    monkeypatch.setitem(sys.modules, "fairlearn", None)  # as if the extra were not installed
    _refused(runner.invoke(app, full), "pip install 'fairgate[mitigation]'", out)


def test_answers_points_to_the_recorded_audit(
    runner: InProcessRunner, compas_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tasks.store import record_run

    monkeypatch.delenv("FAIRGATE_TRAIL_KEY", raising=False)
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY_BLOCK", raising=False)
    trail = tmp_path / "trail.duckdb"
    document = {"run_id": "audit-1", "verdict": "fail", "model": {"name": "m", "version": "1"}, "n_rows": 3}
    document["results"] = [{"metric": "demographic_parity_difference", "slicing": ["race"], "status": "fail"}]
    record_run.fn(
        trail,
        document,
        policy_text="fairness_checker: {}",
        inputs={"labels": {"sha256": "00"}},
        validation={"success": True},
        join_report={"matched": 3},
        cube_cells=[{"race": "Caucasian", "y_true": 1, "y_pred": 1, "rows": 3}],
    )
    out = tmp_path / "out"
    args = ["mitigate", "--method", "reweighing", "--policy", str(compas_files["policy"]), "--out", str(out)]
    args += ["--training", str(compas_files["training"]), "--trail", str(trail)]
    result = runner.invoke(app, [*args, "--answers", "audit-1", "--json"])
    assert result.exit_code == 0, result.stderr
    answered = json.loads(result.stdout)["answers"]
    assert answered["run_id"] == "audit-1"
    assert answered["seq"] == 1
    assert answered["verdict"] == "fail"
    assert answered["failed_metrics"] == ["demographic_parity_difference@race"]
    written = json.loads(Path(json.loads(result.stdout)["outputs"]["json"]).read_text())
    assert written["answers"] == answered

    out_2 = tmp_path / "out-2"
    args_2 = ["mitigate", "--method", "reweighing", "--policy", str(compas_files["policy"]), "--out", str(out_2)]
    args_2 += ["--training", str(compas_files["training"]), "--trail", str(trail), "--answers", "audit-9"]
    result = runner.invoke(app, args_2)
    _refused(result, "no run 'audit-9'", out_2)


def test_base_weights_multiply_the_factors(
    runner: InProcessRunner, compas_files: dict[str, Path], tmp_path: Path
) -> None:
    training = tmp_path / "train.csv"
    frame = pl.read_csv(compas_files["training"])
    frame = frame.with_columns(pl.Series("sampling_weight", np.random.default_rng(5).gamma(2.0, 1.0, frame.height)))
    frame.write_csv(training)
    out = tmp_path / "out"
    args = ["mitigate", "--method", "reweighing", "--policy", str(compas_files["policy"]), "--out", str(out)]
    result = runner.invoke(app, [*args, "--training", str(training), "--base-weight", "sampling_weight", "--json"])
    assert result.exit_code == 0, result.stderr
    written = pl.read_csv(json.loads(result.stdout)["outputs"]["weights"])
    expected = reweigh(pl.read_csv(training), ["race", "sex"], "two_year_recid", base_weight="sampling_weight")
    np.testing.assert_allclose(written["weight"].to_numpy(), expected.weights.to_numpy(), rtol=1e-15, atol=0)
    unweighted = reweigh(pl.read_csv(training), ["race", "sex"], "two_year_recid").weights.to_numpy()
    assert not np.allclose(written["weight"].to_numpy(), unweighted)
