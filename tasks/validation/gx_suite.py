"""Great Expectations plumbing shared by every validation suite (binary inputs, each task kind, features).

GE is imported lazily (it takes seconds, and only validation needs it) and quietly (no analytics, no INFO lines
of its own housekeeping); every suite runs in one ephemeral context on one in-memory frame.
"""

from __future__ import annotations

import logging
import math
import os
from functools import lru_cache
from typing import Any

import pandas as pd

from fairgate.engine.collection import long_lived
from tasks.validation.deferred import deferred


@lru_cache(maxsize=1)
def load_great_expectations() -> Any:
    """The ``great_expectations`` module, imported on first use with analytics off and its logging quietened."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")  # no phoning home from an audit
    # what GE imports for expectations, renderings and charts our suites never run (deferred.py)
    # GE's modules live as long as the process: made with the collector paused, then frozen (collection.py)
    with long_lived(), deferred("altair", "mistune", "scipy.stats"):
        import great_expectations as gx

    _quiet_great_expectations()
    return gx


def _quiet_great_expectations() -> None:
    """GE logs INFO lines of its own housekeeping ("Created temporary directory ..."; some of its modules set
    their loggers to INFO explicitly): an audit's log keeps GE's warnings and errors only."""
    import great_expectations.data_context.types.base  # noqa: F401  # sets its logger to INFO when imported

    for name in [n for n in logging.root.manager.loggerDict if n.startswith("great_expectations")]:
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)


@lru_cache(maxsize=1)
def _context() -> Any:
    gx = load_great_expectations()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def run_suite(name: str, frame: pd.DataFrame, expectations: list[Any], result_format: str) -> Any:
    """Run one GE suite on one in-memory frame (a pandas datasource, one whole-frame batch)."""
    gx, context = load_great_expectations(), _context()
    datasource = context.data_sources.add_or_update_pandas(name=f"fairgate_{name}")
    asset = datasource.add_dataframe_asset(name=name)
    batch_definition = asset.add_batch_definition_whole_dataframe(name)
    suite = gx.ExpectationSuite(name=f"fairgate_{name}", expectations=expectations)
    batch = batch_definition.get_batch(batch_parameters={"dataframe": frame})
    return batch.validate(suite, result_format=result_format)


def suite_name(name: str) -> str:
    """``name`` as part of a suite's name: letters and digits kept, anything else an underscore, 40 at most."""
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40]


def plain_value(value: Any) -> Any:
    """A value from a frame GE judged, as a message or the JSON document shows it: NumPy scalars as Python
    values, NaN as the text "NaN"."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if hasattr(value, "item"):
        return value.item()
    return value
