"""Fixtures for the end-to-end tests (helpers in pipeline_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_helpers import POLICY_FAILING, InProcessRunner, Inputs, split_compas
from typer.testing import Result

from cli import app


@pytest.fixture(scope="session")
def compas_split(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return split_compas(tmp_path_factory.mktemp("compas"))


def _copy_inputs(folder: Path, compas_split: dict[str, Path]) -> Inputs:
    copies = {}
    for role, path in compas_split.items():
        copies[role] = folder / path.name
        copies[role].write_bytes(path.read_bytes())
    policy = folder / "policy.yaml"
    policy.write_text(POLICY_FAILING)
    return Inputs(folder, copies["predictions"], copies["labels"], copies["attributes"], policy)


@pytest.fixture
def inputs(tmp_path: Path, compas_split: dict[str, Path]) -> Inputs:
    """A private copy of the split inputs (tests edit them) and the failing policy."""
    return _copy_inputs(tmp_path, compas_split)


@pytest.fixture(scope="module")
def failing_run(
    tmp_path_factory: pytest.TempPathFactory,
    compas_split: dict[str, Path],
    runner: InProcessRunner,
    prefect_server: str,
) -> tuple[Inputs, Result]:
    """``fairgate audit --quiet`` of the unedited inputs under the failing policy, run once per module.

    For the tests that only read what that run wrote; a test that edits inputs or outputs uses ``inputs``.
    """
    run_inputs = _copy_inputs(tmp_path_factory.mktemp("failing-run"), compas_split)
    return run_inputs, runner.invoke(app, run_inputs.args("--quiet"))


@pytest.fixture(scope="session")
def runner() -> InProcessRunner:
    return InProcessRunner()


@pytest.fixture(autouse=True)
def _flows_use_the_session_server(prefect_server: str) -> None:
    """The audits here run the Prefect flow, in this process and in subprocesses: all on the one test server."""
