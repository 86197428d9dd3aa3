"""Helpers for the end-to-end tests: the real COMPAS file split into the three inputs, policies, running the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from typer.testing import CliRunner

# isort: off
# cli first: it sets the Prefect/GE environment defaults (telemetry off, start-up timeout), which
# Prefect reads when it is imported.
import cli  # noqa: F401
import prefect  # noqa: F401
from prefect.logging.configuration import setup_logging

# isort: on
from cli import app
from tasks.store import list_runs, verify

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO / ".." / "shared" / "data"
COMPAS_CSV = SHARED_DATA / "compas" / "compas-scores-two-years.csv"

POLICY_FAILING = """\
fairness_checker:
  favorable_label: 0
  sensitive_attributes:
    - {name: race, values: [African-American, Caucasian, Hispanic, Other, Asian, Native American],
       reference_group: Caucasian}
    - {name: sex, values: [Male, Female], reference_group: Male}
    - {name: age_cat, values: [Less than 25, 25 - 45, Greater than 45]}
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
    - {name: equal_opportunity_difference, threshold: 0.1}
  intersectional_analysis: {enabled: true, min_group_size: 50, attribute_pairs: [[race, sex]]}
  reporting: {format: [json, junit]}
  columns: {y_true: two_year_recid}
  statistics: {n_bootstrap: 100}
"""

# Sex only: COMPAS flags women and men at similar rates (DI 0.92) with similar TPR (difference 0.003).
POLICY_PASSING = """\
fairness_checker:
  favorable_label: 0
  sensitive_attributes:
    - {name: sex, values: [Male, Female], reference_group: Male}
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
    - {name: equal_opportunity_difference, threshold: 0.1}
  reporting: {format: [json]}
  columns: {y_true: two_year_recid}
  statistics: {n_bootstrap: 100}
"""


@dataclass
class Inputs:
    """Three input files and a policy file in one folder, and where the run's outputs should go."""

    folder: Path
    predictions: Path
    labels: Path
    attributes: Path
    policy: Path

    @property
    def out(self) -> Path:
        return self.folder / "out"

    def args(self, *extra: str, model: str = "compas") -> list[str]:
        return [
            "audit",
            "--policy",
            str(self.policy),
            "--predictions",
            str(self.predictions),
            "--labels",
            str(self.labels),
            "--attributes",
            str(self.attributes),
            "--out",
            str(self.out),
            "--model",
            model,
            "--model-version",
            "1",
            *extra,
        ]


def split_compas(folder: Path, *, suffix: str = "csv") -> dict[str, Path]:
    """The real COMPAS file as predictions / labels / attributes files (the demo's split)."""
    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.read_csv(str(COMPAS_CSV), header=True, sep=",").create_view("compas")
    queries = {
        "predictions": "select id, decile_score / 10.0 as score, "
        "cast(score_text in ('Medium', 'High') as integer) as y_pred from compas",
        "labels": "select id, two_year_recid from compas",
        "attributes": "select id, race, sex, age_cat from compas",
    }
    paths = {}
    for role, query in queries.items():
        path = folder / f"{role}.{suffix}"
        relation = con.sql(query)
        relation.to_parquet(str(path)) if suffix == "parquet" else relation.to_csv(str(path))
        paths[role] = path
    con.close()
    return paths


def run_fairgate(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run the installed CLI as a user would, in a fresh process."""
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run(
        [str(Path(sys.executable).parent / "fairgate"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class InProcessRunner(CliRunner):
    """CliRunner that keeps Prefect's log handlers off the runner's temporary streams.

    Prefect binds its console handler to ``sys.stderr`` whenever it (re)configures logging, which can happen
    inside an invocation, where ``sys.stderr`` is the runner's buffer; once that buffer is closed, later log
    lines fail with "I/O operation on closed file". Re-binding after each invocation keeps them on pytest's
    stream, so ``result.stderr`` holds exactly what the CLI itself printed.
    """

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        setup_logging()
        try:
            return super().invoke(*args, **kwargs)
        finally:
            setup_logging()


def rewrite_csv(path: Path, query: str, *, as_text: bool = False) -> None:
    """Replace a CSV input with ``query`` over its current content (view ``t``; every column text with
    ``as_text``)."""
    con = duckdb.connect()
    con.read_csv(str(path), all_varchar=as_text).create_view("t")
    data = con.sql(query).to_arrow_table()
    con.close()
    out = duckdb.connect()
    out.from_arrow(data).to_csv(str(path))
    out.close()


def assert_refused(result: Any, expected: list[str], inputs: Inputs, before: list[str]) -> str:
    """A refused run: exit 2, no traceback, every expected fragment in the message, nothing written.

    ``before`` lists the inputs folder before the run. Returns the message with rich's line wrapping undone.
    """
    message = " ".join(result.stderr.split())  # rich wraps long lines
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in expected:
        assert fragment in message, (fragment, message)
    assert not inputs.out.exists()  # no output folder, no report, no trail
    assert sorted(p.name for p in inputs.folder.iterdir()) == before
    return message


def parquet_inputs_as_csv(parquet: dict[str, Path]) -> dict[str, Path]:
    """A demo's Parquet inputs as CSV files beside them (the user's view: plain files); the Parquet removed."""
    out = {}
    for role, path in parquet.items():
        csv = path.with_name(f"{role}.csv")
        con = duckdb.connect()
        con.read_parquet(str(path)).to_csv(str(csv))
        con.close()
        path.unlink()
        out[role] = csv
    return out


def copied_inputs(folder: Path, files: dict[str, Path], policy: str) -> Inputs:
    """Copies of the three input files and ``policy`` written into ``folder``, as an audit's ``Inputs``."""
    copies = {}
    for role, path in files.items():
        copies[role] = folder / path.name
        copies[role].write_bytes(path.read_bytes())
    policy_path = folder / "policy.yaml"
    policy_path.write_text(policy)
    return Inputs(folder, copies["predictions"], copies["labels"], copies["attributes"], policy_path)


def audit_failing_demo_policy(
    runner: CliRunner, folder: Path, files: dict[str, Path], demo_policy: Path, model: str
) -> tuple[Inputs, dict[str, Any]]:
    """A kind's demo policy (JSON and JUnit only) audited on copies of ``files``: it fails, exit 1; its document."""
    inputs = copied_inputs(folder, files, demo_policy.read_text().replace("[json, junit, html, pdf]", "[json, junit]"))
    result = runner.invoke(app, inputs.args("--quiet", model=model))
    assert result.exit_code == 1, (result.stdout, result.stderr, result.exception)
    (document_path,) = inputs.out.glob("*.json")
    return inputs, json.loads(document_path.read_text())


def assert_junit_and_one_verified_run(inputs: Inputs) -> None:
    """The audit wrote its JUnit file and recorded one run in a trail whose chain verifies."""
    assert list(inputs.out.glob("*junit.xml"))
    trail = inputs.out / "audit_trail.duckdb"
    assert len(list_runs(trail)) == 1
    assert verify(trail)["ok"]
