"""Fixtures for the report tests: a real COMPAS audit document from the engine, rendered once per session."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import fairgate

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / ".." / "shared" / "data"
COMPAS_CSV = DATA / "compas" / "compas-scores-two-years.csv"
DEMO_POLICY = REPO / "fairgate" / "policies" / "compas_demo.yaml"
FAIRGATE = Path(sys.executable).with_name("fairgate")


def compas_frame() -> pl.DataFrame:
    """COMPAS as the engine's input (issue 4): race, sex, age_cat; score = first decile_score / 10."""
    raw = pl.read_csv(COMPAS_CSV)
    assert "decile_score_duplicated_0" in raw.columns  # the header has decile_score twice: the first is the score
    return raw.select(
        pl.col("race"),
        pl.col("sex"),
        pl.col("age_cat"),
        pl.col("two_year_recid").cast(pl.Int64),  # the demo policy names y_true two_year_recid
        (pl.col("decile_score") / 10).alias("score"),
        pl.col("score_text").is_in(["Medium", "High"]).cast(pl.Int64).alias("y_pred"),
    )


def demo_policy(**reporting: Any) -> fairgate.Policy:
    policy = fairgate.Policy.from_yaml(DEMO_POLICY.read_text(), source=str(DEMO_POLICY))
    if reporting:
        policy = policy.model_copy(update={"reporting": policy.reporting.model_copy(update=reporting)})
    return policy


@pytest.fixture(scope="session")
def compas_rows() -> pl.DataFrame:
    """The COMPAS rows the engine audits (test modules take this fixture: they do not import conftest)."""
    return compas_frame()


@pytest.fixture(scope="session")
def compas_policy() -> fairgate.Policy:
    return demo_policy()


@pytest.fixture(scope="session")
def compas_doc(compas_policy: fairgate.Policy) -> dict[str, Any]:
    """The engine's audit document for COMPAS, as the JSON a reader would load (round-tripped)."""
    result = fairgate.audit(
        compas_frame(),
        compas_policy,
        model=fairgate.ModelInfo(name="compas", version="northpointe-2013"),
        run_id="report-test-run",
        context={
            "inputs": {"predictions": {"source": "compas.csv", "sha256": "0" * 64, "rows": 7214}},
            "alignment": {"matched": 7214, "unmatched_predictions": 0, "unmatched_labels": 0},
            "validation": {"success": True, "expectations": 9, "failed": 0},
        },
    )
    return json.loads(result.to_json())


@pytest.fixture(scope="session")
def compas_report(tmp_path_factory: pytest.TempPathFactory, compas_doc: dict[str, Any]) -> dict[str, Path]:
    """The COMPAS report rendered once (HTML and PDF) for the tests that read it."""
    from tasks.render.report import build_report_files

    out = tmp_path_factory.mktemp("compas-report")
    paths = build_report_files(compas_doc, out_dir=out, formats=["html", "pdf"], min_cell_size=10)
    assert paths["html"] is not None
    assert paths["pdf"] is not None
    return {"html": paths["html"], "pdf": paths["pdf"], "dir": out}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium through Playwright, one per test module (the explorer and explore-app browser tests)."""
    from explorer_browser import chromium

    with chromium() as b:
        yield b


@dataclasses.dataclass(frozen=True)
class DemoRuns:
    """Two ``fairgate demo`` runs into one folder: the folder, each run's process, the files the first one wrote."""

    out: Path
    first: subprocess.CompletedProcess[str]
    second: subprocess.CompletedProcess[str]
    first_files: frozenset[Path]


def _demo(out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FAIRGATE_TRAIL_KEY": ""}  # an unkeyed trail, whatever the caller's environment
    command = [str(FAIRGATE), "demo", "--out", str(out), "--quiet"]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=out, timeout=900, check=False)


@pytest.fixture(scope="session")
def two_demo_runs(tmp_path_factory: pytest.TempPathFactory, prefect_server: str) -> DemoRuns:
    """``fairgate demo --out DIR --quiet`` twice into one folder, as a user runs it (a subprocess on the session's
    Prefect server, an unkeyed trail): the second run's report has the trend of the two. Run once for the tests
    that read them (the demo's PDF layout, the trend; their files are one unit of work for pytest-xdist,
    tests/conftest.py's SHARED_UNITS); those tests check the exit codes."""
    out = tmp_path_factory.mktemp("demo")
    first = _demo(out)
    first_files = frozenset(out.iterdir())
    return DemoRuns(out, first, _demo(out), first_files)
