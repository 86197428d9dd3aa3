"""Great Expectations plumbing shared by every validation suite (binary inputs, each task kind, features).

A suite is written as plain specifications (:data:`expect`: GE's class name and its arguments) and its result
read through :class:`SuiteResult`, a read-only view of GE's own result document (``to_json_dict()``). So the
process that asks for a suite need not import GE: the CLI's warm validation process (tasks/validation/warm.py)
runs the suites when there is one; otherwise :func:`suite_document` runs them here, GE imported lazily (it takes
about a second) and quietly (no analytics, no INFO lines of its own housekeeping). Either way the caller reads the
same document through the same view; every suite runs in one ephemeral context on one in-memory frame.
"""

from __future__ import annotations

import copy
import importlib
import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import version
from types import MappingProxyType
from typing import Any

import pandas as pd

from fairgate.engine.collection import long_lived
from tasks.validation import warm
from tasks.validation.deferred import deferred


@dataclass(frozen=True)
class Expectation:
    """One expectation as a specification: GE's class name (``ExpectColumnValuesToBeBetween``) and its arguments."""

    name: str
    kwargs: Mapping[str, Any]


def _spec(name: str) -> Callable[..., Expectation]:
    def make(**kwargs: Any) -> Expectation:
        return Expectation(name, dict(kwargs))

    make.__name__ = name
    return make


class expect:  # a namespace, read as a phrase: expect.ColumnValuesToBeBetween(column="n", ...)
    """The expectations fairgate's suites use, by GE's class names without ``Expect``."""

    ColumnValuesToNotBeNull = staticmethod(_spec("ExpectColumnValuesToNotBeNull"))
    ColumnValuesToBeBetween = staticmethod(_spec("ExpectColumnValuesToBeBetween"))
    ColumnValuesToBeInSet = staticmethod(_spec("ExpectColumnValuesToBeInSet"))
    ColumnPairValuesToBeEqual = staticmethod(_spec("ExpectColumnPairValuesToBeEqual"))


class _View:
    """Attribute access to one mapping of GE's result document (read-only)."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self._document = document

    def _get(self, key: str) -> Any:
        value = self._document[key]
        return MappingProxyType(value) if isinstance(value, dict) else value


class _Judged(_View):
    @property
    def success(self) -> bool:
        return bool(self._document["success"])


class ExpectationConfig(_View):
    """An expectation as GE ran it: ``type`` (``expect_column_values_to_be_between``) and ``kwargs``."""

    @property
    def type(self) -> str:
        return str(self._document["type"])

    @property
    def kwargs(self) -> Mapping[str, Any]:
        return self._get("kwargs")  # type: ignore[no-any-return]


class ExpectationOutcome(_Judged):
    """One expectation's outcome: ``success``, ``expectation_config`` (type, kwargs) and GE's ``result``."""

    @property
    def expectation_config(self) -> ExpectationConfig:
        return ExpectationConfig(self._document["expectation_config"])

    @property
    def result(self) -> Mapping[str, Any]:
        return self._get("result")  # type: ignore[no-any-return]


class SuiteResult(_Judged):
    """A suite's result as GE's ``to_json_dict()`` gave it, wherever the suite ran: ``success``, ``results``
    (one :class:`ExpectationOutcome` per expectation) and the document itself (``to_json_dict()``, a copy)."""

    @property
    def results(self) -> list[ExpectationOutcome]:
        return [ExpectationOutcome(outcome) for outcome in self._document["results"]]

    def to_json_dict(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self._document))


def run_suite(name: str, frame: pd.DataFrame, expectations: list[Expectation], result_format: str) -> SuiteResult:
    """Run one GE suite on one in-memory frame: in the warm validation process when the command started one
    (tasks/validation/warm.py), else here. An error GE raises is raised here with its message either way."""
    request = (name, frame, expectations, result_format)
    document = warm.ask(request)
    if document is None:  # no warm process (or it ended): the same suite in this process
        document = suite_document(*request)
    return SuiteResult(document)


def suite_document(name: str, frame: pd.DataFrame, expectations: list[Expectation], result_format: str) -> Any:
    """GE's result document of one suite run here (a pandas datasource, one whole-frame batch)."""
    gx, context = load_great_expectations(), _context()
    datasource = context.data_sources.add_or_update_pandas(name=f"fairgate_{name}")
    asset = datasource.add_dataframe_asset(name=name)
    batch_definition = asset.add_batch_definition_whole_dataframe(name)
    made = [getattr(gx.expectations, e.name)(**e.kwargs) for e in expectations]
    suite = gx.ExpectationSuite(name=f"fairgate_{name}", expectations=made)
    batch = batch_definition.get_batch(batch_parameters={"dataframe": frame})
    return batch.validate(suite, result_format=result_format).to_json_dict()


@lru_cache(maxsize=1)
def great_expectations_version() -> str:
    """The installed Great Expectations' version, read from its metadata (without importing it)."""
    return version("great_expectations")


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
    if type(context.variables).__name__ == "EphemeralDataContextVariables":
        # After every datasource, asset and batch definition added, GE "saves" the project's configuration: an
        # ephemeral context serializes all of it to YAML into an in-memory store that nothing reads back (a
        # third of each suite's time, and more with each suite's datasource). The suites' results are the same.
        context._save_project_config = _not_saved
    return context


def _not_saved() -> None:
    """An ephemeral context's configuration, not serialized into its in-memory store (see :func:`_context`)."""


#: What both processes import after the fork, the command (Prefect, the engine) and the warm process (Great
#: Expectations): imported once before it, so the warm process does not import them again. The command imports
#: them anyway, fork or not: measured by comparing ``sys.modules`` of both at the fork and at the end of a gate run;
#: these are the costly ones (about 0.08 s of CPU in all, pydantic's v1 models and jsonschema the most).
SHARED_BEFORE_FORK = (
    "asyncio",
    "attr",
    "charset_normalizer",
    "http.cookiejar",
    "jsonschema",
    "pydantic.v1",
    "unittest",
)


def start_warm_process(when: str = "auto") -> bool:
    """Fork the warm validation process (tasks/validation/warm.py) that runs this process's suites from now on,
    if this process may (``when``: :data:`warm.WHEN`); pandas, which both need, is imported already (this module
    imports it), and so is :data:`SHARED_BEFORE_FORK`."""
    if when != "off":
        with long_lived():
            for name in SHARED_BEFORE_FORK:
                importlib.import_module(name)
    return warm.start(prepare=_warm_up, run=suite_document, when=when)


def _warm_up() -> None:
    """What the warm validation process does before its first suite: GE loaded, its ephemeral context made and
    a one-row suite run (GE's first suite loads and builds what later ones reuse)."""
    frame = pd.DataFrame({"value": [0]})
    suite_document("warm_up", frame, [expect.ColumnValuesToNotBeNull(column="value")], "COMPLETE")


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
