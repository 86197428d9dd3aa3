"""What the CLI keeps off the terminal's log lines: Prefect's drain progress notes, nothing else of theirs."""

from __future__ import annotations

import inspect
import logging

from prefect._internal.concurrency import services

from cli.exits import _DRAIN_PROGRESS, _PrintedByTheCli


def _record(name: str, level: int, message: str) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, message, None, None)


def test_the_drain_progress_note_is_dropped_and_other_service_warnings_kept() -> None:
    printed = _PrintedByTheCli()
    # as Prefect's EventsWorker logs it while delivering a refused run's last events at the process's end
    assert not printed.filter(_record("EventsWorker", logging.WARNING, "Still processing items: 1 items remaining..."))
    assert not printed.filter(_record("APILogWorker", logging.WARNING, "Still processing items: 3 items remaining..."))
    full = "Service %r queue is full (%d items), dropping item"
    assert printed.filter(_record("EventsWorker", logging.WARNING, full))
    assert printed.filter(_record("fairgate", logging.ERROR, "Still processing items is a text like any other"))


def test_prefect_still_logs_the_note_the_filter_matches() -> None:
    """A Prefect upgrade that rewords the note would let it through again: this says so."""
    assert f'f"{_DRAIN_PROGRESS}: {{queue_size}} items remaining..."' in inspect.getsource(services)
