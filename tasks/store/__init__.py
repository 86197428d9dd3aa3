"""RECORD, the audit trail: an append-only, hash-chained DuckDB file (DESIGN.md, "Audit trail"), in one room."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tasks.store.chain import (
    GENESIS,
    KEY_BLOCK_ENV,
    KEY_ENV,
    KEYED,
    UNKEYED,
    append_chained_row,
    canonical,
    chain_digest,
    check_trail_key,
    trail_key,
)
from tasks.store.columns import (
    ALERT_COLUMNS,
    CUBE_COLUMNS,
    DELIVERY_COLUMNS,
    ESTIMATE_COLUMNS,
    METRIC_COLUMNS,
    MITIGATION_COLUMNS,
    MONITOR_CHAINS,
    NIGHT_COLUMNS,
    PERIOD_CUBE_COLUMNS,
    REGISTRATION_COLUMNS,
    REGISTRATION_STATUSES,
    RUN_COLUMNS,
    TRAIL_VERSION,
)
from tasks.store.errors import TrailBusy, TrailDamaged, TrailError
from tasks.store.history import list_runs, metric_series, model_history, show_run
from tasks.store.lock import (
    ANCHOR_ENV,
    check_trail,
    check_trail_path,
    default_trail_path,
    locked_trail,
    trail_transaction,
)
from tasks.store.records import (
    list_mitigations,
    list_registrations,
    record_delivery,
    record_mitigation,
    record_registration,
)
from tasks.store.runs import append_audit_run
from tasks.store.schema import MONITOR_TABLES, has_table
from tasks.store.verification import verify

if TYPE_CHECKING:
    from prefect import Task

    record_run: Task[..., dict[str, Any]]

__all__ = [
    "ALERT_COLUMNS",
    "ANCHOR_ENV",
    "CUBE_COLUMNS",
    "DELIVERY_COLUMNS",
    "ESTIMATE_COLUMNS",
    "GENESIS",
    "KEYED",
    "KEY_BLOCK_ENV",
    "KEY_ENV",
    "METRIC_COLUMNS",
    "MITIGATION_COLUMNS",
    "MONITOR_CHAINS",
    "MONITOR_TABLES",
    "NIGHT_COLUMNS",
    "PERIOD_CUBE_COLUMNS",
    "REGISTRATION_COLUMNS",
    "REGISTRATION_STATUSES",
    "RUN_COLUMNS",
    "TRAIL_VERSION",
    "UNKEYED",
    "TrailBusy",
    "TrailDamaged",
    "TrailError",
    "append_audit_run",
    "append_chained_row",
    "canonical",
    "chain_digest",
    "check_trail",
    "check_trail_key",
    "check_trail_path",
    "default_trail_path",
    "has_table",
    "list_mitigations",
    "list_registrations",
    "list_runs",
    "locked_trail",
    "metric_series",
    "model_history",
    "record_delivery",
    "record_mitigation",
    "record_registration",
    "record_run",
    "show_run",
    "trail_key",
    "trail_transaction",
    "verify",
]


def __getattr__(name: str) -> Any:
    """The Prefect task ``record_run``, made on first use (PEP 562): ``fairgate trail`` reads and verifies the
    trail without importing Prefect (tasks/store/prefect_tasks.py)."""
    if name != "record_run":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from tasks.store.prefect_tasks import make_record_run

    made = globals()[name] = make_record_run()
    return made
