"""The trail's Prefect task ``record_run``, made on first use.

``fairgate trail`` reads and verifies the trail without importing Prefect (~2 s of a command that should start at
once), so Prefect is imported only when a task is asked for (``tasks.store.__getattr__``, PEP 562).
"""

from __future__ import annotations

from typing import Any

from tasks.store.errors import TrailError
from tasks.store.runs import append_audit_run


def _retry_unless_refused(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect retry condition: retry a transient failure, not a refusal (not a trail, wrong key, disk full)."""
    try:
        state.result()
    except TrailError:
        return False
    except Exception:  # anything else may be transient (the pattern Prefect documents for retry conditions)
        return True
    return True


def make_record_run() -> Any:
    """The Prefect task ``record_run``, retried unless refused. (The model's history is read by a plain call,
    ``model_history``: a few milliseconds that never fail; an unreadable trail gives a note.)"""
    from prefect import task
    from prefect.cache_policies import NO_CACHE

    return task(
        name="record run",
        cache_policy=NO_CACHE,
        retries=2,
        retry_delay_seconds=1,
        retry_condition_fn=_retry_unless_refused,
    )(append_audit_run)
