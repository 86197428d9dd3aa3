"""What the flows share: the state names, the task runner, the log filters, reading the inputs, holding
signals while a run is recorded, and persisting a run's summary (fairness-audit, -monitor, -compare, mitigation).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from prefect import get_run_logger
from prefect.client.schemas.objects import State
from prefect.exceptions import FailedRun
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

import fairgate
from fairgate.engine.cube import check_cardinality
from fairgate.errors import FairgateError
from flows.audit_dask import PartitionedSources
from tasks.inputs.align import align_inputs, release, stage_inputs
from tasks.inputs.staged import Aligned, Staged
from tasks.task_kinds import has_own_suites, validate_kind
from tasks.validation.validate import Validation, validate_aligned, validate_inputs

INVALID_INPUT = "InvalidInput"
T = TypeVar("T")


# Metric tasks run in threads; more threads than cores only adds memory (each slicing holds its replicates).
TASK_RUNNER: Any = ThreadPoolTaskRunner(max_workers=max(1, min(4, os.cpu_count() or 1)))


# Set (True) on the log records that only repeat an invalid input's message: the CLI prints that message itself,
# as its one error line, and keeps these off the terminal (cli/exits.py); the API still receives them.
INVALID_INPUT_ECHO = "fairgate_invalid_input"


def _fairgate_error_names(cls: type[BaseException] = FairgateError) -> set[str]:
    """The class names of FairgateError and every subclass defined so far (DataError, TrailError, ...)."""
    return {cls.__name__}.union(*(_fairgate_error_names(sub) for sub in cls.__subclasses__()))


class _InvalidInputIsNotACrash(logging.Filter):
    """Bad input is the user's to fix, not a crash: a task failing with a FairgateError logs its message as a
    warning, without the traceback Prefect attaches to a failed task, and so does the task's "Finished in state
    Failed(...)" line; both are marked INVALID_INPUT_ECHO (the CLI prints the message once, itself)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, FairgateError):
            record.exc_info, record.exc_text = None, None
            record.msg, record.args = f"invalid input: {exc.message}", ()
        elif not _finished_by_invalid_input(record):
            return True
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        setattr(record, INVALID_INPUT_ECHO, True)
        return True


def _finished_by_invalid_input(record: logging.LogRecord) -> bool:
    """A run's last line when bad input ended it: the task's Failed state naming a FairgateError, the flow's
    InvalidInput state."""
    text = str(record.msg)
    if text.startswith(f"Finished in state {INVALID_INPUT}("):
        return True
    if not text.startswith("Finished in state Failed(") or "encountered an exception " not in text:
        return False
    name = text.partition("encountered an exception ")[2].partition(":")[0]
    return name in _fairgate_error_names()


logging.getLogger("prefect.task_runs").addFilter(_InvalidInputIsNotACrash())
logging.getLogger("prefect.flow_runs").addFilter(_InvalidInputIsNotACrash())


class _DeliberateStateIsNotACrash(logging.Filter):
    """A run that ends in a Failed state the flow returned (InvalidInput, PolicyFailed, DeliveryFailed) is
    reported once, by Prefect's "Finished in state ..." line. Where the engine runs the flow for a worker or a
    runner (``python -m prefect.engine``), it then asks the state for its result, which raises ``FailedRun``,
    and logs that as "Engine execution exited with unexpected exception" with a 40-line traceback: dropped
    here. A crash (an exception in the flow) re-raises its own exception, not FailedRun, and keeps its
    traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, FailedRun)


logging.getLogger("prefect.flow_runs").addFilter(_DeliberateStateIsNotACrash())


@dataclass
class Inputs:
    """The audit's inputs once read, validated and aligned (the flow's first half)."""

    staged: Staged
    aligned: Aligned
    validation: Validation
    # How the rows were read: {"path": "in_memory"} or {"path": "streaming", "memory_limit": ...}.
    execution: dict[str, Any] = field(default_factory=lambda: {"path": "in_memory"})
    # Inputs read beside the three (features, counterfactual: tasks/inputs/individual.py), with their provenance.
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per input: where it came from, its sha256 and its row count (the document's and trail's ``inputs``)."""
        staged = self.staged
        summary = {
            role: {"source": source.label, "sha256": staged.sha256[role], "rows": staged.row_counts[role]}
            for role, source in staged.sources.items()
        }
        if staged.labels_absent:  # the predictions stood in for the labels (tasks/inputs/align.py)
            summary["labels"] = {"source": NO_LABELS, "sha256": staged.sha256["labels"], "rows": 0}
        return summary | self.extra


@dataclass(frozen=True)
class AuditRequest:
    """One audit as it was asked for, built once from the flow's parameters and passed down whole.

    ``sources``: the predictions, labels and attributes (a path, glob or ``DB::TABLE`` each); ``runner`` and
    ``dask_address`` override the policy's execution section; ``features`` and ``counterfactual`` feed its
    individual_fairness checks; ``proposed``: these predictions are a mitigation's candidate.
    """

    policy_path: str
    predictions: str
    labels: str | None  # None: an audit without labels (label-dependent results estimated from the scores)
    attributes: str
    out_dir: str | None = None
    model_name: str | None = None
    model_version: str | None = None
    trail: str | None = None
    run_id: str | None = None
    runner: str | None = None
    dask_address: str | None = None
    proposed: dict[str, Any] | None = None
    features: str | None = None
    counterfactual: str | None = None
    external_labels: str | None = None  # independent labels for the same people (label-bias finding)
    command_line: str | None = None  # the command that started the audit (recorded, shown in "How to reproduce")

    @property
    def sources(self) -> tuple[str, str | None, str]:
        """The three inputs, in the order staging reads them."""
        return self.predictions, self.labels, self.attributes

    @property
    def individual_sources(self) -> tuple[str | None, str | None]:
        """The individual-fairness inputs (features, counterfactual), each None when not given."""
        return self.features, self.counterfactual


#: The labels input's source in the document of an audit without labels.
NO_LABELS = "none given: label-dependent results are estimated from the scores"


def read_inputs(policy: fairgate.Policy, predictions: str, labels: str | None, attributes: str) -> Inputs:
    """Stage, validate, align and validate again; then free the inputs' DuckDB connection."""
    return read_staged(stage_inputs(policy, predictions, labels, attributes))


def read_staged(staged: Staged) -> Inputs:
    """Validate the staged inputs, align them into Arrow and validate again; then free the connection."""
    policy = staged.policy
    validation = validate_inputs(staged)
    if has_own_suites(policy.task):  # the kind's own suites (classes, numbers, ranks)
        validation = validate_kind(staged, validation)
    aligned = align_inputs(staged)
    # An id-like attribute is refused before validation warns about each of its thousands of small groups.
    check_cardinality(aligned.table, policy, source=staged.sources["attributes"].label)
    validation = validate_aligned(staged, aligned, validation)
    release(staged)
    for warning in validation.warnings:
        get_run_logger().warning(warning)
    return Inputs(staged, aligned, validation, {"path": "in_memory"})


def model_info(
    staged: Staged | PartitionedSources, model_name: str | None, model_version: str | None
) -> fairgate.ModelInfo:
    """The audited model: the options given, else what the predictions name, else placeholders."""
    named_name, named_version = staged.model
    return fairgate.ModelInfo(
        name=model_name or named_name or "model", version=model_version or named_version or "unversioned"
    )


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT/SIGTERM arriving while the run is recorded and its files moved into place take effect right
    after (the handlers in force, e.g. the CLI's, then run), so an interruption never splits the two."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread receives signals and may swap their handlers
        return
    held: list[int] = []
    previous = {signum: signal.signal(signum, lambda n, _: held.append(n)) for signum in _STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for pending in held[:1]:
            signal.raise_signal(pending)


def as_is(value: T) -> T:
    """A large collection (slicing results, the audit document) handed to a task without Prefect walking it
    element by element for futures, which took seconds at 10M rows; it holds none."""
    return cast(T, quote(value))


def persisted(state: State) -> State:
    """The state with its summary written to Prefect's result storage as JSON, so ``state.result()`` returns
    it in any client (a deployment's caller, an automation), not only in the process that ran the flow.

    Only this summary: ``persist_result=True`` on the flow would also persist every task's result (the rows,
    the cube, the document). Where: Prefect's default result storage, PREFECT_LOCAL_STORAGE_PATH
    (~/.prefect/storage) of the machine that ran the flow; a client on another machine than the worker needs
    a shared one, a file system block named by PREFECT_RESULTS_DEFAULT_STORAGE_BLOCK (docs/concepts/pipeline.md).
    """
    from prefect.results import get_result_store
    from prefect.serializers import JSONSerializer

    # metadata_storage None: the record (metadata and summary) is one file, as Prefect writes a task's result.
    store = get_result_store().model_copy(update={"serializer": JSONSerializer(), "metadata_storage": None})
    record = store.create_result_record(state.data)
    try:
        store.persist_result_record(record)
    except OSError as exc:  # the audit is recorded and its files written: its state must still say so
        get_run_logger().warning(f"the run summary could not be persisted ({exc}); state.result() works only here")
        return state
    state.data = record
    return state
