"""``plain_flow`` records a flow run's parameters as Prefect's own encoder does, without importing FastAPI for
plain JSON values (flows/plain_flow.py)."""

from __future__ import annotations

import enum
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prefect import Flow

from flows.plain_flow import PlainParametersFlow, plain_flow

REPO = Path(__file__).resolve().parents[2]


def _example(policy: str, out_dir: str | None = None, registry: Any = None, version: Any = None) -> None:
    """A flow function with the audit flow's kinds of parameters."""


class Colour(enum.IntEnum):
    RED = 1


PLAIN = [
    {"policy": "p.yaml", "out_dir": None, "registry": None, "version": 3},
    {"policy": "p.yaml", "registry": {"name": "m", "version": "7", "tags": ["a", 1, 2.5, True, None]}},
    {"policy": "p.yaml", "registry": {"nested": {"deeper": [{"x": float("inf")}]}}},
]
NOT_PLAIN = [
    {"policy": Path("p.yaml")},
    {"policy": "p.yaml", "version": Colour.RED},
    {"policy": "p.yaml", "registry": ("a", "b")},
    {"policy": "p.yaml", "registry": {"_sa_instance_state": 1, "name": "m"}},
    {"policy": "p.yaml", "registry": {1: "integer key"}},
]


@pytest.mark.parametrize("parameters", PLAIN + NOT_PLAIN)
def test_parameters_recorded_as_prefects_own_encoder_records_them(parameters: dict[str, Any]) -> None:
    ours = plain_flow(name="example")(_example)
    theirs = Flow(fn=_example, name="example")
    assert isinstance(ours, PlainParametersFlow)
    assert ours.serialize_parameters(parameters) == theirs.serialize_parameters(parameters)


def test_plain_parameters_are_copied_not_shared() -> None:
    registry = {"tags": ["a"]}
    recorded = plain_flow(name="example")(_example).serialize_parameters({"policy": "p", "registry": registry})
    assert recorded["registry"] == registry
    assert recorded["registry"] is not registry
    assert recorded["registry"]["tags"] is not registry["tags"]


_IMPORTS_OF_PLAIN = """
import sys
from flows.plain_flow import plain_flow

def example(policy: str, registry: dict | None = None) -> None:
    pass

plain_flow(name="example")(example).serialize_parameters({"policy": "p", "registry": {"name": "m"}})
assert "fastapi" not in sys.modules, "plain parameters imported FastAPI"
plain_flow(name="example")(example).serialize_parameters({"policy": object()})
assert "fastapi" in sys.modules, "a value that is not plain goes to Prefect's encoder (FastAPI's)"
"""


def test_plain_parameters_import_no_fastapi() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS_OF_PLAIN], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
