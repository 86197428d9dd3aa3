"""The bench scripts as modules: tests run the seeded, bounded version of the simulation a bench script runs in full."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(stem: str) -> ModuleType:
    """``bench/<stem>.py`` loaded as the module ``<stem>`` (registered first: dataclasses look their module up
    while being defined)."""
    spec = importlib.util.spec_from_file_location(stem, BENCH / f"{stem}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module
    spec.loader.exec_module(module)
    return module
