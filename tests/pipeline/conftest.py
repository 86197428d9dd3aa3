"""Fixtures for the end-to-end tests (helpers in pipeline_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_helpers import POLICY_FAILING, InProcessRunner, Inputs, split_compas


@pytest.fixture(scope="session")
def compas_split(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return split_compas(tmp_path_factory.mktemp("compas"))


@pytest.fixture
def inputs(tmp_path: Path, compas_split: dict[str, Path]) -> Inputs:
    """A private copy of the split inputs (tests edit them) and the failing policy."""
    copies = {}
    for role, path in compas_split.items():
        copies[role] = tmp_path / path.name
        copies[role].write_bytes(path.read_bytes())
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY_FAILING)
    return Inputs(tmp_path, copies["predictions"], copies["labels"], copies["attributes"], policy)


@pytest.fixture(scope="session")
def runner() -> InProcessRunner:
    return InProcessRunner()


@pytest.fixture(autouse=True)
def _flows_use_the_session_server(prefect_server: str) -> None:
    """The audits here run the Prefect flow, in this process and in subprocesses: all on the one test server."""
