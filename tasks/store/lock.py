"""Opening the trail: where it is, the checks before DuckDB sees the file, the lock and the one transaction.

Concurrency: DuckDB lets one process write a file at a time, so writers take an exclusive ``flock`` on
``<trail>.lock`` and append inside one transaction. Two audits finishing together are recorded one after the
other; a run killed mid-way rolls back, leaving no half-written run. Waiting is bounded: a lock still held by
another process (a fairgate writer, or any program with the DuckDB file open) after ``FAIRGATE_TRAIL_WAIT_SECONDS``
(60 s by default) is a ``TrailBusy`` refusal, never a hang and never "damaged".
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

import duckdb

from fairgate.errors import (
    NO_TRAIL,
    NOT_A_TRAIL,
    TRAIL_ANCHOR_UNUSABLE,
    TRAIL_BUSY,
    TRAIL_DAMAGED,
    TRAIL_NOT_WRITABLE,
    TRAIL_WRITE_FAILED,
)
from tasks.inputs.io import first_line
from tasks.store.chain import check_trail_key, trail_key
from tasks.store.errors import TrailBusy, TrailDamaged, TrailError
from tasks.store.schema import _check_tables, _create_schema

if TYPE_CHECKING:  # types only: `fairgate trail` reads the trail without loading the policy models or scipy
    from fairgate.policy.core import Policy

WAIT_ENV = "FAIRGATE_TRAIL_WAIT_SECONDS"
DEFAULT_WAIT_SECONDS = 60.0  # an audit holds the write lock for well under a second; a minute is generous
MAX_WAIT_SECONDS = 86_400.0
_POLL_SECONDS = 0.1
_DUCKDB_LOCK_CONFLICT = "Could not set lock"  # DuckDB's IO error when another process has the file open


def wait_seconds() -> float:
    """How long to wait for a trail another process holds: ``FAIRGATE_TRAIL_WAIT_SECONDS``, else 60 s."""
    text = os.environ.get(WAIT_ENV, "").strip()
    if not text:
        return DEFAULT_WAIT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= MAX_WAIT_SECONDS):
        raise TrailError(
            f"{WAIT_ENV}={text!r} is not a number of seconds between 0 and {MAX_WAIT_SECONDS:g}; set it to e.g. 60, "
            "or unset it"
        )
    return value


ANCHOR_ENV = "FAIRGATE_TRAIL_ANCHOR"  # a file outside the trail that gets "<timestamp> <seq> <hash>" per run


def default_trail_path(policy: Policy, output: Path) -> Path:
    """The policy's trail path when it sets one, else ``audit_trail.duckdb`` in the output folder."""
    if "audit_trail" in policy.model_fields_set:
        return Path(policy.audit_trail.path)
    return output / "audit_trail.duckdb"


def check_trail_path(trail_path: Path) -> None:
    """Refuse (exit 2) a trail path that is a directory, a FIFO, socket or device, or a file that is not a DuckDB
    database, without blocking on it; a path that does not exist yet is fine."""
    _check_file(trail_path, must_exist=False)


def _check_file(trail_path: Path, *, must_exist: bool) -> None:
    """Refuse a directory or a file that is not a DuckDB database before DuckDB sees it (exit 2)."""
    if trail_path.is_dir():
        raise TrailError(NOT_A_TRAIL.format(path=trail_path, why="it is a directory"))
    if not trail_path.exists():
        if must_exist:
            raise TrailError(NO_TRAIL.format(path=trail_path))
        return
    if not trail_path.is_file():  # a FIFO or a device: opening it would block or read a stream, never a database
        raise TrailError(NOT_A_TRAIL.format(path=trail_path, why="it is not a regular file (a FIFO, socket or device)"))
    try:
        with trail_path.open("rb") as file:
            head = file.read(12)
    except OSError as exc:
        raise TrailError(NOT_A_TRAIL.format(path=trail_path, why=f"it cannot be read ({exc.strerror})")) from None
    if not head:
        raise TrailError(NOT_A_TRAIL.format(path=trail_path, why="it is empty (0 bytes)"))
    if head[8:12] != b"DUCK":  # every DuckDB database file has this magic at byte 8
        raise TrailError(NOT_A_TRAIL.format(path=trail_path, why="it is not a DuckDB database file"))


@contextmanager
def locked_trail(trail_path: Path, *, write: bool) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the trail under an exclusive (write) or shared (read) file lock.

    Damage found while reading (a truncated file, an unreadable block) is a ``TrailDamaged``, never a raw
    DuckDB error.
    """
    trail_path = Path(trail_path)
    _check_file(trail_path, must_exist=not write)
    wait = wait_seconds()
    deadline = time.monotonic() + wait
    with _file_lock(trail_path, write=write, wait=wait, deadline=deadline):
        new = write and not trail_path.exists()  # created under this lock: removed again if nothing is recorded
        con = _connect(trail_path, write=write, new=new, wait=wait, deadline=deadline)
        try:
            _check_tables(con, trail_path, write=write)
            if write:
                _create_schema(con)
            yield con
        except BaseException as exc:
            con.close()
            _remove_new_trail(trail_path, new)
            if write or not isinstance(exc, duckdb.Error):
                raise
            raise TrailDamaged(TRAIL_DAMAGED.format(path=trail_path, detail=first_line(exc))) from None
        finally:
            con.close()


def _remove_new_trail(trail_path: Path, new: bool) -> None:
    """A trail this writer created, removed when nothing could be recorded in it (a full disk, a refusal)."""
    if new:
        for path in (trail_path, trail_path.with_name(trail_path.name + ".wal")):
            path.unlink(missing_ok=True)


def _connect(trail_path: Path, *, write: bool, new: bool, wait: float, deadline: float) -> duckdb.DuckDBPyConnection:
    """DuckDB's connection to the trail; another program holding the file is waited for until ``deadline``
    (then ``TrailBusy``); a full disk is a write failure, any other failure to open it is damage. A trail this
    writer created (``new``) is removed again when it cannot be opened."""
    while True:
        try:
            return duckdb.connect(str(trail_path), read_only=not write)
        except duckdb.Error as exc:
            detail = first_line(exc)
            if _DUCKDB_LOCK_CONFLICT not in detail:
                _remove_new_trail(trail_path, new)
                if _disk_full(exc):
                    full = f"no space left on {trail_path.parent}: {detail}"
                    raise TrailError(TRAIL_WRITE_FAILED.format(path=trail_path, detail=full)) from None
                raise TrailDamaged(TRAIL_DAMAGED.format(path=trail_path, detail=detail)) from None
            if time.monotonic() >= deadline:
                held = re.search(r"[Cc]onflicting lock is held in .*?\(PID \d+\)", detail)
                holder = f"another program ({held.group(0)})" if held else "another program"
                message = TRAIL_BUSY.format(path=trail_path, holder=holder, seconds=wait)
                raise TrailBusy(message) from None
        time.sleep(_POLL_SECONDS)


def _flock(lock: IO[str], trail_path: Path, *, write: bool, wait: float, deadline: float) -> None:
    """Take the ``flock``, polling until ``deadline``; still held by another process then: ``TrailBusy``."""
    while True:
        try:
            fcntl.flock(lock, (fcntl.LOCK_EX if write else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = "another fairgate process (writing it)" if not write else "another fairgate process"
                raise TrailBusy(TRAIL_BUSY.format(path=trail_path, holder=holder, seconds=wait)) from None
        time.sleep(_POLL_SECONDS)


@contextmanager
def _file_lock(trail_path: Path, *, write: bool, wait: float, deadline: float) -> Iterator[None]:
    """An exclusive (write) or shared (read) ``flock`` on ``<trail>.lock``, waited for until ``deadline``.

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
        _flock(lock, trail_path, write=write, wait=wait, deadline=deadline)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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
        if isinstance(exc, duckdb.IOException | OSError) or _disk_full(exc):
            full = f"no space left on {trail_path.parent}: " if _disk_full(exc) else ""
            detail = full + first_line(exc)
            raise TrailError(TRAIL_WRITE_FAILED.format(path=trail_path, detail=detail)) from exc
        raise


def _disk_full(exc: BaseException) -> bool:
    """A full disk or quota, as an OSError or as DuckDB's words (a failed commit is a TransactionException)."""
    if isinstance(exc, OSError):
        return exc.errno in {errno.ENOSPC, errno.EDQUOT}
    return isinstance(exc, duckdb.Error) and any(
        words in str(exc) for words in ("No space left on device", "Disk quota exceeded")
    )


def check_trail(trail_path: Path) -> None:
    """Check, before an audit computes anything, that its run can be recorded in ``trail_path``.

    Raises ``TrailError`` (exit 2: a configuration problem) for a directory, a file that is not a trail, a
    damaged trail, a keyed trail without its key or with a wrong one, an unusable ``FAIRGATE_TRAIL_ANCHOR`` file.
    A file that does not exist yet is fine.
    """
    check_anchor()
    path = Path(trail_path)
    check_trail_path(path)
    if not path.exists():
        return
    try:
        with locked_trail(path, write=False) as con:
            check_trail_key(con, trail_key(), path, action="record runs in it", store=False)
    except TrailDamaged as exc:
        raise TrailError(exc.message) from None


def check_anchor() -> None:
    """The ``FAIRGATE_TRAIL_ANCHOR`` file can be appended to (checked before any work, without creating it)."""
    text = os.environ.get(ANCHOR_ENV, "")
    if not text:
        return
    path = Path(text)
    why = None
    if path.is_dir():
        why = "it is a directory"
    elif path.exists() and not path.is_file():
        why = "it is not a regular file (a FIFO, socket or device)"
    elif path.exists() and not os.access(path, os.W_OK):
        why = "it is not writable"
    elif not path.exists() and not (path.parent.is_dir() and os.access(path.parent, os.W_OK | os.X_OK)):
        why = f"its folder {path.parent} does not exist or cannot be written"
    if why is not None:
        fix = f"set {ANCHOR_ENV} to a writable file, or unset it"
        raise TrailError(TRAIL_ANCHOR_UNUSABLE.format(path=text, detail=why, fix=fix))
