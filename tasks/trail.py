"""RECORD: the audit trail, an append-only, hash-chained DuckDB file (DESIGN.md, "Audit trail").

Tables: ``runs`` (one row per audit), ``metric_results`` (one row per judged metric and slicing), ``cubes`` (the
run's cube, for monitoring), ``deliveries`` (report e-mails), ``registrations`` (model registration events,
accepted or rejected, written by the ``fairgate-registration`` flow) and ``mitigations`` (one row per mitigation
run, a failing audit's proposal or ``fairgate mitigate``: the audit run it answers, the method, its files with
their sha256 and the verdict before and after).
Every run row carries ``prev_hash`` (the previous run's ``run_hash``) and ``run_hash``, a digest over the previous
hash, the run row and all its metric and cube rows; deliveries, registrations and mitigations form chains of
their own. The digest is HMAC-SHA256 keyed with ``FAIRGATE_TRAIL_KEY`` when that is set (``chain =
'hmac-sha256'``), else plain SHA-256 (``chain = 'sha256 (unkeyed)'``), which anyone who can write the file can
recompute after an edit. ``fairgate trail verify`` recomputes every chain, so an edited or deleted row shows;
deleting the newest runs shows against an anchored head (``trail head:`` on stderr, ``FAIRGATE_TRAIL_ANCHOR``).

``model_history`` reads a model's earlier runs back for the report's trend (the current run is recorded after
its report renders); it never fails the audit: an unreadable trail gives no history and a note.

Concurrency: DuckDB lets one process write a file at a time, so writers take an exclusive ``flock`` on
``<trail>.lock`` and append inside one transaction. Two audits finishing together are recorded one after the
other; a run killed mid-way rolls back, leaving no half-written run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import math
import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import duckdb

from fairgate.errors import (
    NO_TRAIL,
    NOT_A_TRAIL,
    TRAIL_ANCHOR_UNUSABLE,
    TRAIL_DAMAGED,
    TRAIL_KEY_MISSING,
    TRAIL_KEY_WRONG,
    TRAIL_NOT_WRITABLE,
    TRAIL_UNKEYED,
    TRAIL_WRITE_FAILED,
    FairgateError,
)
from tasks.io import first_line

if TYPE_CHECKING:  # types only: `fairgate trail` reads the trail without loading the policy models or scipy
    from fairgate.monitoring import History, PastResult, PastRun
    from fairgate.policy.core import Policy

GENESIS = "0" * 64

# Column order is part of the hash: never reorder, only append (and bump TRAIL_VERSION).
TRAIL_VERSION = 2
RUN_COLUMNS = [
    "seq",
    "run_id",
    "recorded_at",
    "created_at",
    "model_name",
    "model_version",
    "fairgate_version",
    "verdict",
    "exit_code",
    "n_rows",
    "inputs",
    "policy_text",
    "policy_sha256",
    "validation",
    "join_report",
    "document",
    "chain",  # TRAIL_VERSION 2; a version-1 row has none and is hashed without it
]
METRIC_COLUMNS = [
    "run_id",
    "position",
    "metric",
    "slicing",
    "value",
    "ci_low",
    "ci_high",
    "threshold",
    "direction",
    "status",
    "uncertain",
    "critical",
]
CUBE_COLUMNS = ["run_id", "cells"]
DELIVERY_COLUMNS = ["seq", "run_id", "recorded_at", "recipients", "status", "detail", "chain"]
LEGACY_RUN_COLUMNS, LEGACY_DELIVERY_COLUMNS = len(RUN_COLUMNS) - 1, len(DELIVERY_COLUMNS) - 1
REGISTRATION_COLUMNS = ["seq", "registered_at", "model_name", "model_version", "status", "detail", "chain"]
REGISTRATION_STATUSES = ("accepted", "rejected")
# Monitoring chains (tasks/monitor_trail.py writes them); hashed columns in this order, never reorder.
PERIOD_CUBE_COLUMNS = [
    "seq",
    "recorded_at",
    "run_id",
    "model_name",
    "period_start",
    "period_end",
    "version",
    "supersedes",
    "rows",
    "labelled_rows",
    "input_sha256",
    "cube",
    "chain",
]
NIGHT_COLUMNS = ["seq", "recorded_at", "run_id", "model_name", "night", "windows", "observations", "chain"]
ALERT_COLUMNS = [
    "seq",
    "recorded_at",
    "run_id",
    "model_name",
    "night",
    "stream",
    "metric",
    "slicing",
    "grp",
    "statistic",
    "threshold",
    "change",
    "detail",
    "chain",
]
MONITOR_CHAINS = {"period_cubes": PERIOD_CUBE_COLUMNS, "monitor_nights": NIGHT_COLUMNS, "drift_alerts": ALERT_COLUMNS}
# One row per mitigation run (a failing audit's proposal, or `fairgate mitigate`), pointing to the audit it answers.
MITIGATION_COLUMNS = [
    "seq",
    "recorded_at",
    "mitigation_id",
    "answers",
    "method",
    "status",
    "verdict_before",
    "verdict_after",
    "outputs",
    "chain",
]

KEY_ENV = "FAIRGATE_TRAIL_KEY"  # the HMAC key (a secret); unset: the chain is unkeyed
KEY_BLOCK_ENV = "FAIRGATE_TRAIL_KEY_BLOCK"  # or: the name of a Prefect Secret block that holds the key
ANCHOR_ENV = "FAIRGATE_TRAIL_ANCHOR"  # a file outside the trail that gets "<timestamp> <seq> <hash>" per run
KEYED, UNKEYED = "hmac-sha256", "sha256 (unkeyed)"
_CORE_TABLES = ("runs", "metric_results", "cubes", "deliveries")
MONITOR_TABLES = ("period_cubes", "monitor_nights", "drift_alerts")
_ALL_TABLES = (*_CORE_TABLES, "registrations", "mitigations", "trail_meta", *MONITOR_TABLES)
_KEY_CHECK_MESSAGE = b"fairgate audit trail key check"

_SCHEMA = [
    """create table if not exists runs (
        seq bigint primary key, run_id varchar unique not null, recorded_at varchar, created_at varchar,
        model_name varchar, model_version varchar, fairgate_version varchar, verdict varchar, exit_code integer,
        n_rows bigint, inputs varchar, policy_text varchar, policy_sha256 varchar, validation varchar,
        join_report varchar, document varchar, prev_hash varchar not null, run_hash varchar not null,
        chain varchar)""",
    """create table if not exists metric_results (
        run_id varchar not null, position integer not null, metric varchar, slicing varchar, value double,
        ci_low double, ci_high double, threshold double, direction varchar, status varchar, uncertain boolean,
        critical boolean)""",
    "create table if not exists cubes (run_id varchar not null, cells varchar)",
    """create table if not exists deliveries (
        seq bigint primary key, run_id varchar, recorded_at varchar, recipients varchar, status varchar,
        detail varchar, prev_hash varchar not null, row_hash varchar not null, chain varchar)""",
    """create table if not exists registrations (
        seq bigint primary key, registered_at varchar, model_name varchar, model_version varchar,
        detail varchar, prev_hash varchar not null, row_hash varchar not null, status varchar, chain varchar)""",
    "create table if not exists trail_meta (key varchar primary key, value varchar)",
    # Monitoring (tasks/monitor_trail.py): period cubes (versioned: a rebuilt period supersedes, never
    # replaces), each monitored night's windows and observations, and drift alerts; one chain per table.
    # ``status`` and ``superseded_by`` are derived from later rows (not hashed); verify checks them.
    """create table if not exists period_cubes (
        seq bigint primary key, recorded_at varchar, run_id varchar, model_name varchar, period_start varchar,
        period_end varchar, version integer, supersedes integer, rows bigint, labelled_rows bigint,
        input_sha256 varchar, cube varchar, chain varchar, prev_hash varchar not null, row_hash varchar not null,
        status varchar not null, superseded_by bigint)""",
    """create table if not exists monitor_nights (
        seq bigint primary key, recorded_at varchar, run_id varchar, model_name varchar, night varchar,
        windows varchar, observations varchar, chain varchar, prev_hash varchar not null,
        row_hash varchar not null)""",
    """create table if not exists drift_alerts (
        seq bigint primary key, recorded_at varchar, run_id varchar, model_name varchar, night varchar,
        stream varchar, metric varchar, slicing varchar, grp varchar, statistic double, threshold double,
        change double, detail varchar, chain varchar, prev_hash varchar not null, row_hash varchar not null)""",
    """create table if not exists mitigations (
        seq bigint primary key, recorded_at varchar, mitigation_id varchar, answers varchar, method varchar,
        status varchar, verdict_before varchar, verdict_after varchar, outputs varchar, chain varchar,
        prev_hash varchar not null, row_hash varchar not null)""",
    # A version-1 trail gains the chain column; its old rows keep NULL there (hashed as before, unkeyed).
    "alter table runs add column if not exists chain varchar",
    "alter table deliveries add column if not exists chain varchar",
    # Trails created before registrations were recorded have the table (never written) without these two.
    "alter table registrations add column if not exists status varchar",
    "alter table registrations add column if not exists chain varchar",
]


class TrailError(FairgateError):
    """The audit trail cannot be read or written: not a trail, or a configuration problem (exit 2)."""

    exit_code = 2


class TrailDamaged(TrailError):
    """A file that is an audit trail is damaged: truncated, unreadable or with tables dropped (exit 1)."""

    exit_code = 1


def canonical(value: Any) -> str:
    """JSON that is the same for equal content: sorted keys, no spaces, NaN as null.

    >>> canonical({"b": 1, "a": [float("nan"), 0.5]})
    '{"a":[null,0.5],"b":1}'
    """
    return json.dumps(_clean(value), sort_keys=True, separators=(",", ":"), default=str)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def chain_digest(key: bytes | None, *parts: str) -> str:
    """HMAC-SHA256 over the parts with ``key``, plain SHA-256 without one."""
    digest = hmac.new(key, digestmod=hashlib.sha256) if key else hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\x1f")  # unit separator: "ab","c" and "a","bc" hash differently
    return digest.hexdigest()


def trail_key() -> bytes | None:
    """The chain's HMAC key: ``FAIRGATE_TRAIL_KEY``, else the Prefect Secret block named by
    ``FAIRGATE_TRAIL_KEY_BLOCK``; None (an unkeyed chain) when neither is set."""
    value = os.environ.get(KEY_ENV, "")
    if value:
        return value.encode()
    block = os.environ.get(KEY_BLOCK_ENV, "")
    return _secret_block_key(block) if block else None


def _secret_block_key(name: str) -> bytes:
    from prefect.blocks.system import Secret

    try:
        secret = cast("Secret[Any]", Secret.load(name))  # the block itself when called from synchronous code
    except (ValueError, RuntimeError) as exc:  # Prefect: no such block / no API to ask
        raise TrailError(
            f"{KEY_BLOCK_ENV}={name!r}: cannot load that Prefect Secret block ({first_line(exc)}); create it "
            f"(Secret(value=...).save({name!r})) or set {KEY_ENV} instead"
        ) from None
    value = str(secret.get())
    if not value:
        raise TrailError(f"{KEY_BLOCK_ENV}={name!r}: the Prefect Secret block is empty; store the trail key in it")
    return value.encode()


def _key_check(key: bytes) -> str:
    """A value stored in ``trail_meta`` that tells a wrong key from tampering without revealing the key."""
    return hmac.new(key, _KEY_CHECK_MESSAGE, hashlib.sha256).hexdigest()


def default_trail_path(policy: Policy, output: Path) -> Path:
    """The policy's trail path when it sets one, else ``audit_trail.duckdb`` in the output folder."""
    if "audit_trail" in policy.model_fields_set:
        return Path(policy.audit_trail.path)
    return output / "audit_trail.duckdb"


def _check_file(trail_path: Path, *, must_exist: bool) -> None:
    """Refuse a directory or a file that is not a DuckDB database before DuckDB sees it (exit 2)."""
    if trail_path.is_dir():
        raise TrailError(NOT_A_TRAIL.format(path=trail_path, why="it is a directory"))
    if not trail_path.exists():
        if must_exist:
            raise TrailError(NO_TRAIL.format(path=trail_path))
        return
    try:
        with trail_path.open("rb") as file:
            head = file.read(12)
    except OSError as exc:
        raise TrailError(NOT_A_TRAIL.format(path=trail_path, why=f"it cannot be read ({exc.strerror})")) from None
    if not head:
        raise TrailError(NOT_A_TRAIL.format(path=trail_path, why="it is empty (0 bytes)"))
    if head[8:12] != b"DUCK":  # every DuckDB database file has this magic at byte 8
        raise TrailError(NOT_A_TRAIL.format(path=trail_path, why="it is not a DuckDB database file"))


def _check_tables(con: duckdb.DuckDBPyConnection, trail_path: Path, *, write: bool) -> None:
    """A trail has its four core tables; a new (empty) file gets them when written to."""
    present = {row[0] for row in con.execute("select table_name from duckdb_tables()").fetchall()}
    missing = [table for table in _CORE_TABLES if table not in present]
    if not missing or (write and not present):
        return
    if not present & set(_ALL_TABLES):
        why = f"it is a DuckDB database without the trail's tables (it has {sorted(present) or 'no tables'})"
        raise TrailError(NOT_A_TRAIL.format(path=trail_path, why=why))
    raise TrailDamaged(TRAIL_DAMAGED.format(path=trail_path, detail=f"table(s) {', '.join(missing)} are missing"))


@contextmanager
def locked_trail(trail_path: Path, *, write: bool) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the trail under an exclusive (write) or shared (read) file lock.

    Damage found while reading (a truncated file, an unreadable block) is a ``TrailDamaged``, never a raw
    DuckDB error.
    """
    trail_path = Path(trail_path)
    _check_file(trail_path, must_exist=not write)
    with _file_lock(trail_path, write=write):
        try:
            con = duckdb.connect(str(trail_path), read_only=not write)
        except duckdb.Error as exc:
            raise TrailDamaged(TRAIL_DAMAGED.format(path=trail_path, detail=first_line(exc))) from None
        try:
            _check_tables(con, trail_path, write=write)
            if write:
                _create_schema(con)
            yield con
        except duckdb.Error as exc:
            if write:
                raise
            raise TrailDamaged(TRAIL_DAMAGED.format(path=trail_path, detail=first_line(exc))) from None
        finally:
            con.close()


@contextmanager
def _file_lock(trail_path: Path, *, write: bool) -> Iterator[None]:
    """An exclusive (write) or shared (read) ``flock`` on ``<trail>.lock``.

    A reader that cannot create the lock file (a read-only copy of the trail) reads without it; a writer that
    cannot is refused with the reason.
    """
    lock_path = trail_path.with_name(trail_path.name + ".lock")
    try:
        if write:
            trail_path.parent.mkdir(parents=True, exist_ok=True)
        lock = lock_path.open("a")
    except OSError as exc:
        if not write:
            yield
            return
        why = f"its folder or lock file {lock_path} cannot be created ({exc.strerror})"
        raise TrailError(TRAIL_NOT_WRITABLE.format(path=trail_path, why=why)) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _create_schema(con: duckdb.DuckDBPyConnection) -> None:
    for statement in _SCHEMA:
        con.execute(statement)
    con.execute(
        "insert into trail_meta values ('trail_version', $v) on conflict do update set value = $v",
        {"v": str(TRAIL_VERSION)},
    )


@contextmanager
def trail_transaction(con: duckdb.DuckDBPyConnection, trail_path: Path) -> Iterator[None]:
    """One transaction; an I/O failure (disk full) is reported as itself, not as the failed rollback after it."""
    con.execute("begin transaction")
    try:
        yield
        con.execute("commit")
    except BaseException as exc:
        # After a failed commit DuckDB has already rolled back: "cannot rollback - no transaction is active".
        with contextlib.suppress(duckdb.Error):
            con.execute("rollback")
        if isinstance(exc, duckdb.IOException | OSError):
            raise TrailError(TRAIL_WRITE_FAILED.format(path=trail_path, detail=first_line(exc))) from exc
        raise


def _metric_rows(run_id: str, document: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for position, r in enumerate(document.get("results", [])):
        rows.append(
            [
                run_id,
                position,
                r.get("metric"),
                canonical(r.get("slicing")),
                _num(r.get("value")),
                _num(r.get("ci_low")),
                _num(r.get("ci_high")),
                _num(r.get("threshold")),
                r.get("direction"),
                r.get("status"),
                bool(r.get("uncertain")),
                bool(r.get("critical")),
            ]
        )
    return rows


def _num(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _run_hash(
    prev_hash: str,
    run_row: list[Any],
    metric_rows: list[list[Any]],
    cube_rows: list[list[Any]],
    key: bytes | None = None,
) -> str:
    return chain_digest(key, prev_hash, canonical(run_row), canonical(metric_rows), canonical(cube_rows))


def _retry_unless_refused(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect retry condition: retry a transient failure, not a refusal (not a trail, wrong key, disk full)."""
    try:
        state.result()
    except TrailError:
        return False
    except Exception:  # anything else may be transient (the pattern Prefect documents for retry conditions)
        return True
    return True


def append_audit_run(
    trail_path: Path,
    document: dict[str, Any],
    *,
    policy_text: str,
    inputs: dict[str, Any],
    validation: dict[str, Any],
    join_report: dict[str, Any],
    cube_cells: list[dict[str, Any]],
) -> dict[str, Any]:
    """Append one audit run (run row, metric rows, cube) in one transaction; return its seq and hash.

    The plain function behind the ``record_run`` task (which adds Prefect's retries).

    The chain is keyed (HMAC-SHA256) when ``FAIRGATE_TRAIL_KEY`` is set. The new head is printed on stderr
    (``trail head: <seq> <hash>``) and appended to the ``FAIRGATE_TRAIL_ANCHOR`` file when that is set.
    """
    run_id = str(document.get("run_id") or uuid.uuid4())
    recorded_at = datetime.now(UTC).isoformat()
    records = {"inputs": inputs, "validation": validation, "join_report": join_report}
    metric_rows = _metric_rows(run_id, document)
    cube_rows = [[run_id, canonical(cube_cells)]]
    key = trail_key()
    with _anchor_file() as anchor:  # opened first: an unusable anchor stops the run before anything is recorded
        with locked_trail(trail_path, write=True) as con, trail_transaction(con, trail_path):
            check_trail_key(con, key, trail_path, action="record runs in it")
            last = con.execute("select seq, run_hash, chain from runs order by seq desc limit 1").fetchall()
            if last and last[0][2] == KEYED and key is None:  # also when the key check was deleted
                raise TrailError(TRAIL_KEY_MISSING.format(path=trail_path, env=KEY_ENV, action="record runs in it"))
            seq, prev_hash = (last[0][0] + 1, last[0][1]) if last else (1, GENESIS)
            run_row = [*_run_row(seq, run_id, recorded_at, document, policy_text, records), KEYED if key else UNKEYED]
            run_hash = _run_hash(prev_hash, run_row, metric_rows, cube_rows, key)
            _insert_run(con, [*run_row, prev_hash, run_hash], metric_rows, cube_rows[0])
        _publish_head(anchor, recorded_at, seq, run_hash)
    return {"seq": seq, "run_id": run_id, "run_hash": run_hash, "chain": run_row[-1], "trail": str(trail_path)}


if TYPE_CHECKING:
    from prefect import Task

    record_run: Task[..., dict[str, Any]]
    read_history: Task[..., History]


def __getattr__(name: str) -> Any:
    """The Prefect tasks of this module (``record_run``, ``read_history``), made on first use (PEP 562):
    ``fairgate trail`` reads and verifies the trail without importing Prefect (~2 s of a command that should
    start at once)."""
    if name not in ("record_run", "read_history"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from prefect import task
    from prefect.cache_policies import NO_CACHE

    made: Any
    if name == "record_run":
        made = task(
            name="record run",
            cache_policy=NO_CACHE,
            retries=2,
            retry_delay_seconds=1,
            retry_condition_fn=_retry_unless_refused,
        )(append_audit_run)
    else:  # no retries: it never fails, an unreadable trail gives a note
        made = task(name="read model history", cache_policy=NO_CACHE)(_read_history)
    globals()[name] = made
    return made


def check_trail_key(
    con: duckdb.DuckDBPyConnection, key: bytes | None, trail_path: Path, *, action: str, store: bool = True
) -> None:
    """Refuse a wrong key, and refuse to extend a keyed chain without its key (that would weaken it)."""
    has_meta = con.execute("select 1 from duckdb_tables() where table_name = 'trail_meta'").fetchall()
    stored = con.execute("select value from trail_meta where key = 'key_check'").fetchall() if has_meta else []
    if key is None:
        if stored:
            raise TrailError(TRAIL_KEY_MISSING.format(path=trail_path, env=KEY_ENV, action=action))
        return
    if not stored:
        if store:
            con.execute("insert into trail_meta values ('key_check', ?)", [_key_check(key)])
    elif not hmac.compare_digest(stored[0][0], _key_check(key)):
        raise TrailError(TRAIL_KEY_WRONG.format(path=trail_path, env=KEY_ENV))


def check_trail(trail_path: Path) -> None:
    """Check, before an audit computes anything, that its run can be recorded in ``trail_path``.

    Raises ``TrailError`` (exit 2: a configuration problem) for a directory, a file that is not a trail, a
    damaged trail, a keyed trail without its key or with a wrong one. A file that does not exist yet is fine.
    """
    path = Path(trail_path)
    _check_file(path, must_exist=False)
    if not path.exists():
        return
    try:
        with locked_trail(path, write=False) as con:
            check_trail_key(con, trail_key(), path, action="record runs in it", store=False)
    except TrailDamaged as exc:
        raise TrailError(exc.message) from None


@contextmanager
def _anchor_file() -> Iterator[IO[str] | None]:
    """The ``FAIRGATE_TRAIL_ANCHOR`` file opened for appending, before anything is recorded (a bad path: exit 2)."""
    path = os.environ.get(ANCHOR_ENV, "")
    if not path:
        yield None
        return
    try:
        file = Path(path).open("a", encoding="utf-8")  # noqa: SIM115 (closed by the `with` below)
    except OSError as exc:
        fix = f"set {ANCHOR_ENV} to a writable file, or unset it"
        raise TrailError(TRAIL_ANCHOR_UNUSABLE.format(path=path, detail=exc.strerror, fix=fix)) from None
    with file:
        yield file


def _publish_head(anchor: IO[str] | None, recorded_at: str, seq: int, run_hash: str) -> None:
    """The new head, for CI logs and the anchor file: deleting the newest runs then shows."""
    sys.stderr.write(f"trail head: {seq} {run_hash}\n")
    if anchor is not None:
        anchor.write(f"{recorded_at} {seq} {run_hash}\n")
        anchor.flush()


def _run_row(
    seq: int, run_id: str, recorded_at: str, document: dict[str, Any], policy_text: str, records: dict[str, Any]
) -> list[Any]:
    """The ``runs`` row of one audit (without its chain label and hashes), in ``RUN_COLUMNS`` order."""
    model = document.get("model") or {}
    return [
        seq,
        run_id,
        recorded_at,
        str(document.get("created_at")),
        model.get("name"),
        model.get("version"),
        str(document.get("fairgate_version")),
        document.get("verdict"),
        0 if document.get("verdict") == "pass" else 1,
        document.get("n_rows"),
        canonical(records["inputs"]),
        policy_text,
        document.get("policy_sha256"),
        canonical(records["validation"]),
        canonical(records["join_report"]),
        canonical(document),
    ]


def _insert_run(
    con: duckdb.DuckDBPyConnection, run_row: list[Any], metric_rows: list[list[Any]], cube_row: list[Any]
) -> None:
    """Insert one run's row (with its hashes), its metric rows and its cube, inside the caller's transaction."""
    con.execute(
        f"insert into runs ({', '.join(RUN_COLUMNS)}, prev_hash, run_hash) "
        f"values ({', '.join('?' * (len(RUN_COLUMNS) + 2))})",
        run_row,
    )
    if metric_rows:
        con.executemany(
            f"insert into metric_results ({', '.join(METRIC_COLUMNS)}) values ({', '.join('?' * len(METRIC_COLUMNS))})",
            metric_rows,
        )
    con.execute("insert into cubes (run_id, cells) values (?, ?)", cube_row)


def append_chained_row(
    con: duckdb.DuckDBPyConnection,
    key: bytes | None,
    table: str,
    columns: list[str],
    content: list[Any],
    *,
    status: str | None = None,
) -> tuple[int, str]:
    """Append one row (``content``: its values after the seq) to the hash chain ``table``; its seq and hash.

    ``columns`` names the row's columns, seq first. ``status`` (monitoring's period cubes: current, superseded)
    is kept beside the row, outside its hash, so that it may change later.
    """
    last = con.execute(f"select seq, row_hash from {table} order by seq desc limit 1").fetchall()  # fixed name
    seq, prev_hash = (last[0][0] + 1, last[0][1]) if last else (1, GENESIS)
    row = [seq, *content]
    row_hash = chain_digest(key, prev_hash, canonical(row))
    names = [*columns, "prev_hash", "row_hash", *(["status"] if status else [])]
    values = [*row, prev_hash, row_hash, *([status] if status else [])]
    con.execute(f"insert into {table} ({', '.join(names)}) values ({', '.join('?' * len(names))})", values)
    return int(seq), row_hash


def record_delivery(trail_path: Path, run_id: str, recipients: list[str], status: str, detail: str) -> None:
    """Append one report delivery (who got which run's report, and how it went) to the ``deliveries`` chain."""
    recorded_at = datetime.now(UTC).isoformat()
    key = trail_key()
    with locked_trail(Path(trail_path), write=True) as con, trail_transaction(con, Path(trail_path)):
        check_trail_key(con, key, Path(trail_path), action="record deliveries in it")
        content = [run_id, recorded_at, canonical(list(recipients)), status, detail, KEYED if key else UNKEYED]
        append_chained_row(con, key, "deliveries", DELIVERY_COLUMNS, content)


def record_registration(
    trail_path: Path, model_name: str, model_version: str, status: str, detail: str
) -> dict[str, Any]:
    """Append one model registration (``accepted`` or ``rejected``; ``detail`` is JSON text with the reason, the
    event id and the payload) to the ``registrations`` chain; return its seq and hash."""
    if status not in REGISTRATION_STATUSES:
        raise ValueError(f"registration status {status!r} is not one of {REGISTRATION_STATUSES}")
    registered_at = datetime.now(UTC).isoformat()
    key = trail_key()
    path = Path(trail_path)
    with locked_trail(path, write=True) as con, trail_transaction(con, path):
        check_trail_key(con, key, path, action="record registrations in it")
        content = [registered_at, model_name, model_version, status, detail, KEYED if key else UNKEYED]
        seq, row_hash = append_chained_row(con, key, "registrations", REGISTRATION_COLUMNS, content)
    return {"seq": seq, "status": status, "row_hash": row_hash, "trail": str(path)}


def list_registrations(trail_path: Path) -> list[dict[str, Any]]:
    """The recorded model registrations, oldest first, with their detail parsed (a trail from before
    registrations were recorded has none)."""
    with locked_trail(Path(trail_path), write=False) as con:
        if not _has_registration_status(con):
            return []
        cursor = con.execute(f"select {', '.join(REGISTRATION_COLUMNS)}, row_hash from registrations order by seq")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    for row in rows:
        row["detail"] = json.loads(row["detail"]) if row["detail"] else None
    return rows


def record_mitigation(
    trail_path: Path,
    *,
    mitigation_id: str,
    answers: str | None,
    method: str,
    status: str,
    verdict_before: str | None,
    verdict_after: str | None,
    outputs: dict[str, dict[str, str]],
) -> dict[str, Any]:
    """Append one mitigation run to the ``mitigations`` chain: the audit run it answers, the method, its files
    (kind -> {path, sha256}) and the verdict before and after; return its seq and hash."""
    recorded_at = datetime.now(UTC).isoformat()
    key = trail_key()
    path = Path(trail_path)
    with locked_trail(path, write=True) as con, trail_transaction(con, path):
        check_trail_key(con, key, path, action="record mitigations in it")
        content = [
            recorded_at,
            mitigation_id,
            answers,
            method,
            status,
            verdict_before,
            verdict_after,
            canonical(outputs),
            KEYED if key else UNKEYED,
        ]
        seq, row_hash = append_chained_row(con, key, "mitigations", MITIGATION_COLUMNS, content)
    return {"seq": seq, "mitigation_id": mitigation_id, "row_hash": row_hash, "trail": str(path)}


def list_mitigations(trail_path: Path, *, answers: str | None = None) -> list[dict[str, Any]]:
    """The recorded mitigation runs, oldest first (those answering one audit run when ``answers`` is given)."""
    with locked_trail(Path(trail_path), write=False) as con:
        if not has_table(con, "mitigations"):
            return []
        cursor = con.execute(
            f"select {', '.join(MITIGATION_COLUMNS)}, row_hash from mitigations "
            "where $a is null or answers = $a order by seq",
            {"a": answers},
        )
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    for row in rows:
        row["outputs"] = json.loads(row["outputs"]) if row["outputs"] else {}
    return rows


def has_table(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether the trail has ``table`` (an older trail lacks the tables added after it was made)."""
    return bool(con.execute("select 1 from duckdb_tables() where table_name = ?", [table]).fetchall())


def _has_registration_status(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the trail's ``registrations`` table can hold recorded registrations (read-only: no schema change)."""
    columns = con.execute("select column_name from duckdb_columns() where table_name = 'registrations'").fetchall()
    return ("status",) in columns


def list_runs(trail_path: Path) -> list[dict[str, Any]]:
    """The recorded runs, oldest first (summary columns only)."""
    with locked_trail(Path(trail_path), write=False) as con:
        cursor = con.execute(
            "select seq, run_id, recorded_at, model_name, model_version, verdict, n_rows, policy_sha256, run_hash, "
            f"{_chain_column(con, 'runs')} from runs order by seq"
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def model_history(trail_path: Path, model_name: str, limit: int, *, exclude_run: str | None = None) -> History:
    """The model's last ``limit`` recorded runs (oldest first) with their judged results, for the trend.

    Never raises: a trail that does not exist yet gives no runs; one that cannot be read (not a trail, damaged,
    locked) gives no runs and a note saying why, so the report still renders. The runs are read as recorded;
    ``fairgate trail verify`` checks the chain. ``exclude_run``: the current run's id, when it is re-run.
    """
    from fairgate.monitoring import History  # here, not at the top: `fairgate trail` starts without scipy

    path = Path(trail_path)
    if limit < 1 or not path.exists():
        return History(trail=str(path))
    try:
        with locked_trail(path, write=False) as con:
            runs, results = _history_rows(con, model_name, limit, exclude_run)
    except TrailError as exc:
        return History(trail=str(path), note=f"earlier runs could not be read from the audit trail: {exc.message}")
    except (duckdb.Error, ValueError) as exc:  # a row that does not parse (edited by hand): no history either
        return History(trail=str(path), note=f"earlier runs could not be read from the audit trail {path}: {exc}")
    return History(runs=tuple(_past_run(row, results.get(row[1], [])) for row in reversed(runs)), trail=str(path))


def _history_rows(
    con: duckdb.DuckDBPyConnection, model_name: str, limit: int, exclude_run: str | None
) -> tuple[list[Any], dict[str, list[PastResult]]]:
    """The newest ``limit`` run rows of the model and their metric results by run id."""
    from fairgate.monitoring import PastResult

    # The standard errors are read from the stored document (hashed with the run), by result position: the
    # metric_results table keeps its hashed columns unchanged, so older trails still verify.
    runs = con.execute(
        "select seq, run_id, recorded_at, model_version, verdict, inputs, "
        "json_extract_string(document, '$.confidence_level'), "
        "list_transform(json_extract(document, '$.results[*]'), "
        "lambda r: json_extract_string(r, '$.standard_error')) from runs "
        "where model_name = $model and run_id is distinct from $exclude order by seq desc limit $limit",
        {"model": model_name, "exclude": exclude_run, "limit": limit},
    ).fetchall()
    errors = {run[1]: run[7] or [] for run in runs}
    results: dict[str, list[PastResult]] = {}
    for row in con.execute(
        "select run_id, position, metric, slicing, value, ci_low, ci_high, threshold, direction, status "
        "from metric_results where list_contains($ids, run_id) order by run_id, position",
        {"ids": [run[1] for run in runs]},
    ).fetchall():
        run_id, position = row[0], row[1]
        slicing = tuple(str(a) for a in json.loads(row[3] or "[]"))
        stored = errors[run_id][position] if position < len(errors[run_id]) else None
        se = float(stored) if stored is not None else None
        value, ci_low, ci_high, threshold, direction, status = row[4:]
        results.setdefault(run_id, []).append(
            PastResult(row[2], slicing, value, ci_low, ci_high, threshold, direction, status, standard_error=se)
        )
    return [run[:7] for run in runs], results


def _past_run(row: Any, results: list[PastResult]) -> PastRun:
    from fairgate.monitoring import PastRun
    from fairgate.monitoring.trend import input_hashes

    seq, run_id, recorded_at, model_version, verdict, inputs, level = row
    return PastRun(
        run_id=run_id,
        seq=int(seq),
        recorded_at=str(recorded_at),
        model_version=model_version,
        verdict=verdict,
        input_sha256=input_hashes(json.loads(inputs) if inputs else None),
        confidence_level=float(level) if level else None,
        results=tuple(results),
    )


def _read_history(trail_path: Path, model_name: str, limit: int, exclude_run: str | None = None) -> History:
    """The body of the ``read_history`` task: :func:`model_history`."""
    return model_history(trail_path, model_name, limit, exclude_run=exclude_run)


def _chain_column(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """``chain``, or NULL for a version-1 trail opened read-only (it has no such column)."""
    columns = con.execute("select column_name from duckdb_columns() where table_name = ?", [table]).fetchall()
    return "chain" if ("chain",) in columns else "null as chain"


def show_run(trail_path: Path, run: str) -> dict[str, Any]:
    """One run in full: its row, its metric results and its audit document. ``run`` is a run id or a seq."""
    with locked_trail(Path(trail_path), write=False) as con:
        key = int(run) if run.isdigit() else None
        cursor = con.execute("select * from runs where run_id = $r or seq = $s", {"r": run, "s": key})
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
        if not rows:
            raise TrailError(f"no run {run!r} in {trail_path}; `fairgate trail list` shows the recorded runs")
        record = dict(zip(names, rows[0], strict=True))
        for name in ("inputs", "validation", "join_report", "document"):
            record[name] = json.loads(record[name]) if record[name] else None
        deliveries = con.execute(
            "select recorded_at, recipients, status, detail from deliveries where run_id = ? order by seq",
            [record["run_id"]],
        ).fetchall()
        record["deliveries"] = [
            {"recorded_at": d[0], "recipients": json.loads(d[1]), "status": d[2], "detail": d[3]} for d in deliveries
        ]
        record["mitigations"] = _mitigations_of(con, record["run_id"])
        return record


def _mitigations_of(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """The mitigation runs that answer one audit run (none in a trail from before they were recorded)."""
    if not has_table(con, "mitigations"):
        return []
    cursor = con.execute(
        f"select {', '.join(MITIGATION_COLUMNS)}, row_hash from mitigations where answers = ? order by seq", [run_id]
    )
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    for row in rows:
        row["outputs"] = json.loads(row["outputs"]) if row["outputs"] else {}
    return rows


def verify(trail_path: Path, *, anchor: Path | None = None, unkeyed_until: int = 0) -> dict[str, Any]:
    """Recompute both hash chains (and check the anchored heads); return the problems found (none: intact).

    With ``FAIRGATE_TRAIL_KEY`` set, an unkeyed run is a problem unless its seq is at most ``unkeyed_until``
    (runs recorded before the key was introduced): anyone can rewrite and rehash an unkeyed run.
    """
    trail_path = Path(trail_path)
    key = trail_key()
    with locked_trail(trail_path, write=False) as con:
        runs, metrics, cubes, deliveries = _read_chains(con)
        registrations = _read_registrations(con)
        monitoring = _read_monitor_chains(con)
        mitigations = _read_mitigations(con)
        if key is not None:
            check_trail_key(con, key, trail_path, action="verify it", store=False)
    labels = {row[LEGACY_RUN_COLUMNS] for row in runs} | {row[LEGACY_DELIVERY_COLUMNS] for row in deliveries}
    labels |= {row[len(REGISTRATION_COLUMNS) - 1] for row in registrations}
    labels |= {row[len(MONITOR_CHAINS[t]) - 1] for t, rows in monitoring.items() for row in rows}
    labels |= {row[len(MITIGATION_COLUMNS) - 1] for row in mitigations}
    if key is None and KEYED in labels:
        raise TrailError(TRAIL_KEY_MISSING.format(path=trail_path, env=KEY_ENV, action="verify it"))
    checker = _ChainCheck(key, {row[1] for row in runs if row[0] <= unkeyed_until})
    problems = _run_problems(checker, runs, metrics, cubes) + _delivery_problems(checker, deliveries)
    problems += _registration_problems(checker, registrations)
    problems += _monitor_problems(checker, monitoring)
    problems += _mitigation_problems(checker, mitigations)
    if anchor is not None:
        problems += _anchor_problems(anchor, {row[0]: row[-1] for row in runs})
    warnings = [TRAIL_UNKEYED.format(path=trail_path, env=KEY_ENV)] if checker.unkeyed and key is None else []
    return {
        "trail": str(trail_path),
        "ok": not problems,
        "runs": len(runs),
        "deliveries": len(deliveries),
        "registrations": len(registrations),
        **{table: len(rows) for table, rows in monitoring.items() if rows},
        "mitigations": len(mitigations),
        "chain": checker.label(),
        "keyed": key is not None,
        "head": runs[-1][-1] if runs else GENESIS,
        "head_seq": runs[-1][0] if runs else 0,
        "problems": problems,
        "warnings": warnings,
    }


def _read_chains(con: duckdb.DuckDBPyConnection) -> tuple[list[Any], dict[str, Any], dict[str, Any], list[Any]]:
    """The runs (with their chain label and hashes), metric and cube rows by run id, and the deliveries."""
    run_columns = ", ".join([*RUN_COLUMNS[:LEGACY_RUN_COLUMNS], _chain_column(con, "runs")])
    runs = con.execute(f"select {run_columns}, prev_hash, run_hash from runs order by seq").fetchall()
    metrics: dict[str, list[list[Any]]] = {}
    for row in con.execute(
        f"select {', '.join(METRIC_COLUMNS)} from metric_results order by run_id, position"
    ).fetchall():
        metrics.setdefault(row[0], []).append(list(row))
    cubes: dict[str, list[list[Any]]] = {}
    for row in con.execute("select run_id, cells from cubes").fetchall():
        cubes.setdefault(row[0], []).append(list(row))
    delivery_columns = ", ".join([*DELIVERY_COLUMNS[:LEGACY_DELIVERY_COLUMNS], _chain_column(con, "deliveries")])
    deliveries = con.execute(f"select {delivery_columns}, prev_hash, row_hash from deliveries order by seq").fetchall()
    return runs, metrics, cubes, deliveries


def _read_registrations(con: duckdb.DuckDBPyConnection) -> list[Any]:
    """The registrations with their hashes (none in a trail whose table predates them)."""
    present = con.execute("select 1 from duckdb_tables() where table_name = 'registrations'").fetchall()
    if not present or not _has_registration_status(con):
        return []
    columns = ", ".join(REGISTRATION_COLUMNS)
    return con.execute(f"select {columns}, prev_hash, row_hash from registrations order by seq").fetchall()


def _read_mitigations(con: duckdb.DuckDBPyConnection) -> list[Any]:
    """The mitigation runs with their hashes (none in a trail from before they were recorded)."""
    if not has_table(con, "mitigations"):
        return []
    return con.execute(
        f"select {', '.join(MITIGATION_COLUMNS)}, prev_hash, row_hash from mitigations order by seq"
    ).fetchall()


class _ChainCheck:
    """Which digest a row's chain label asks for, and whether the label itself is acceptable."""

    def __init__(self, key: bytes | None, accepted_unkeyed: set[str]) -> None:
        self.key, self.accepted_unkeyed = key, accepted_unkeyed  # run ids recorded before the key was set
        self.keyed = self.unkeyed = 0

    def row(self, content: list[Any]) -> tuple[list[Any], bytes | None]:
        """The hashed content (a version-1 row without its label) and the key to hash it with."""
        if content[-1] is None:
            self.unkeyed += 1
            return content[:-1], None
        if content[-1] == KEYED:
            self.keyed += 1
            return content, self.key
        self.unkeyed += 1
        return content, None

    def label_problem(self, what: str, seq: int, run_id: str, label: str | None) -> str | None:
        """An unknown label, or an unkeyed row where the key should have been used."""
        if label not in (None, KEYED, UNKEYED):
            return f"{what} {seq} has an unknown chain label {label!r}"
        if label == KEYED or self.key is None or run_id in self.accepted_unkeyed:
            return None
        hint = f"; if it was recorded before the key was set, pass --unkeyed-until {seq}" if what == "run" else ""
        return (
            f"{what} {seq} is not keyed ({label or UNKEYED}) although {KEY_ENV} is set: anyone who can write the "
            f"file can rewrite it and recompute its hash{hint}"
        )

    def label(self) -> str:
        """The chain as a whole: keyed, unkeyed, or mixed (an older unkeyed part, then keyed)."""
        if self.keyed and self.unkeyed:
            return f"mixed: {self.unkeyed} rows {UNKEYED}, {self.keyed} rows {KEYED}"
        return KEYED if self.keyed else UNKEYED


def _run_problems(checker: _ChainCheck, runs: list[Any], metrics: dict[str, Any], cubes: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    expected_prev, expected_seq = GENESIS, 1
    for row in runs:
        run_row, prev_hash, run_hash = list(row[: len(RUN_COLUMNS)]), row[-2], row[-1]
        seq, run_id = run_row[0], run_row[1]
        if seq != expected_seq:
            problems.append(f"runs: seq {expected_seq} is missing (next is {seq}): a run was deleted")
        if prev_hash != expected_prev:
            problems.append(f"runs: run {seq} ({run_id}) does not follow the previous run: a run was deleted or edited")
        if label_problem := checker.label_problem("run", seq, run_id, run_row[-1]):
            problems.append(f"runs: {label_problem}")
        content, key = checker.row(run_row)
        if _run_hash(prev_hash, content, metrics.pop(run_id, []), cubes.pop(run_id, []), key) != run_hash:
            problems.append(f"runs: run {seq} ({run_id}) was altered after recording (its row, metric results or cube)")
        expected_prev, expected_seq = run_hash, seq + 1
    for run_id in sorted(set(metrics) | set(cubes)):
        problems.append(f"metric_results/cubes: rows for run {run_id} whose run row is gone")
    return problems


def _delivery_problems(checker: _ChainCheck, deliveries: list[Any]) -> list[str]:
    problems: list[str] = []
    expected_prev, expected_seq = GENESIS, 1
    for row in deliveries:
        delivery, prev_hash, row_hash = list(row[: len(DELIVERY_COLUMNS)]), row[-2], row[-1]
        if delivery[0] != expected_seq or prev_hash != expected_prev:
            problems.append(f"deliveries: the chain breaks at delivery {delivery[0]}: a delivery was deleted or edited")
        if label_problem := checker.label_problem("delivery", delivery[0], delivery[1], delivery[-1]):
            problems.append(f"deliveries: {label_problem}")
        content, key = checker.row(delivery)
        if chain_digest(key, prev_hash, canonical(content)) != row_hash:
            problems.append(f"deliveries: delivery {delivery[0]} was altered after recording")
        expected_prev, expected_seq = row_hash, delivery[0] + 1
    return problems


def _anchor_problems(anchor: Path, heads: dict[int, str]) -> list[str]:
    """Every anchored head (``<timestamp> <seq> <hash>`` per line) must still be in the trail."""
    try:
        lines = Path(anchor).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        detail = getattr(exc, "strerror", None) or "it is not a text file"
        raise TrailError(TRAIL_ANCHOR_UNUSABLE.format(path=anchor, detail=detail, fix="pass --anchor FILE")) from None
    problems = []
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 3 or not fields[1].isdigit():
            detail = f"line {number} is not '<timestamp> <seq> <hash>'"
            raise TrailError(TRAIL_ANCHOR_UNUSABLE.format(path=anchor, detail=detail, fix="remove or fix that line"))
        stamp, seq, head = fields[0], int(fields[1]), fields[2]
        if heads.get(seq) != head:
            problems.append(
                f"anchor {anchor}:{number}: run {seq} with hash {head[:16]}... (anchored {stamp}) is not in the trail: "
                "the newest runs were deleted, or the trail was rewritten"
            )
    return problems


def _registration_problems(checker: _ChainCheck, registrations: list[Any]) -> list[str]:
    return _chain_problems(checker, "registrations", "registration", registrations, len(REGISTRATION_COLUMNS))


def _chain_problems(checker: _ChainCheck, table: str, noun: str, rows: list[Any], width: int) -> list[str]:
    """One hash-chained table's rows (``width`` hashed columns, then prev_hash and row_hash): a deleted or
    edited row breaks the chain, an altered one its own hash."""
    problems: list[str] = []
    expected_prev, expected_seq = GENESIS, 1
    for row in rows:
        content, prev_hash, row_hash = list(row[:width]), row[width], row[width + 1]
        seq = content[0]
        if seq != expected_seq or prev_hash != expected_prev:
            problems.append(f"{table}: the chain breaks at {noun} {seq}: a {noun} was deleted or edited")
        if label_problem := checker.label_problem(noun, seq, "", content[-1]):
            problems.append(f"{table}: {label_problem}")
        hashed, key = checker.row(content)
        if chain_digest(key, prev_hash, canonical(hashed)) != row_hash:
            problems.append(f"{table}: {noun} {seq} was altered after recording")
        expected_prev, expected_seq = row_hash, seq + 1
    return problems


def _read_monitor_chains(con: duckdb.DuckDBPyConnection) -> dict[str, list[Any]]:
    """The monitoring tables' rows with their hashes (period cubes also with their derived status); a trail
    from before monitoring has none."""
    present = {row[0] for row in con.execute("select table_name from duckdb_tables()").fetchall()}
    chains: dict[str, list[Any]] = {}
    for table, columns in MONITOR_CHAINS.items():
        extra = ", status, superseded_by" if table == "period_cubes" else ""
        query = f"select {', '.join(columns)}, prev_hash, row_hash{extra} from {table} order by seq"
        chains[table] = con.execute(query).fetchall() if table in present else []
    return chains


def _monitor_problems(checker: _ChainCheck, chains: dict[str, list[Any]]) -> list[str]:
    """Each monitoring table's chain, and each period cube's status against the versions recorded after it."""
    problems: list[str] = []
    for table, rows in chains.items():
        problems += _chain_problems(checker, table, "row", rows, len(MONITOR_CHAINS[table]))
    problems += _supersession_problems(chains.get("period_cubes", []))
    return problems


def _supersession_problems(rows: list[Any]) -> list[str]:
    """A period cube is current until a later version of its period supersedes it (then it names that row)."""
    width = len(PERIOD_CUBE_COLUMNS) + 2
    by_period: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        by_period.setdefault((row[3], row[4]), []).append(row)
    problems = []
    for (model, start), versions in by_period.items():
        for index, row in enumerate(versions):
            seq, version, supersedes = row[0], row[6], row[7]
            later = versions[index + 1] if index + 1 < len(versions) else None
            expected = ("current", None) if later is None else ("superseded", later[0])
            if (row[width], row[width + 1]) != expected:
                problems.append(
                    f"period_cubes: row {seq} ({model}, period {start}) is marked {row[width]} "
                    f"(superseded_by {row[width + 1]}) but the recorded versions make it {expected[0]}"
                )
            if version != index + 1 or supersedes != (index or None):
                problems.append(f"period_cubes: row {seq} ({model}, period {start}) has a version out of sequence")
    return problems


def _mitigation_problems(checker: _ChainCheck, mitigations: list[Any]) -> list[str]:
    return _chain_problems(checker, "mitigations", "mitigation", mitigations, len(MITIGATION_COLUMNS))
