"""RECORD: the audit trail, an append-only, hash-chained DuckDB file (DESIGN.md, "Audit trail").

Tables: ``runs`` (one row per audit), ``metric_results`` (one row per judged metric and slicing), ``cubes`` (the
run's cube, for monitoring), ``deliveries`` (report e-mails) and ``registrations`` (model registrations).
Every run row carries ``prev_hash`` (the previous run's ``run_hash``) and ``run_hash`` = sha256 over the previous
hash, the run row and all its metric and cube rows; deliveries form a chain of their own. ``fairgate trail
verify`` recomputes both chains, so an edited or deleted row (anywhere but at the very end, see README) shows.

Concurrency: DuckDB lets one process write a file at a time, so writers take an exclusive ``flock`` on
``<trail>.lock`` and append inside one transaction. Two audits finishing together are recorded one after the
other; a run killed mid-way rolls back, leaving no half-written run.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.errors import NO_TRAIL, FairgateError

GENESIS = "0" * 64

# Column order is part of the hash: never reorder, only append (and bump TRAIL_VERSION).
TRAIL_VERSION = 1
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
DELIVERY_COLUMNS = ["seq", "run_id", "recorded_at", "recipients", "status", "detail"]

_SCHEMA = [
    """create table if not exists runs (
        seq bigint primary key, run_id varchar unique not null, recorded_at varchar, created_at varchar,
        model_name varchar, model_version varchar, fairgate_version varchar, verdict varchar, exit_code integer,
        n_rows bigint, inputs varchar, policy_text varchar, policy_sha256 varchar, validation varchar,
        join_report varchar, document varchar, prev_hash varchar not null, run_hash varchar not null)""",
    """create table if not exists metric_results (
        run_id varchar not null, position integer not null, metric varchar, slicing varchar, value double,
        ci_low double, ci_high double, threshold double, direction varchar, status varchar, uncertain boolean,
        critical boolean)""",
    "create table if not exists cubes (run_id varchar not null, cells varchar)",
    """create table if not exists deliveries (
        seq bigint primary key, run_id varchar, recorded_at varchar, recipients varchar, status varchar,
        detail varchar, prev_hash varchar not null, row_hash varchar not null)""",
    """create table if not exists registrations (
        seq bigint primary key, registered_at varchar, model_name varchar, model_version varchar,
        detail varchar, prev_hash varchar not null, row_hash varchar not null)""",
    "create table if not exists trail_meta (key varchar primary key, value varchar)",
]


class TrailError(FairgateError):
    """The audit trail cannot be read or written."""


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


def _sha(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\x1f")  # unit separator: "ab","c" and "a","bc" hash differently
    return digest.hexdigest()


@contextmanager
def _locked(trail_path: Path, *, write: bool) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the trail under an exclusive (write) or shared (read) file lock."""
    trail_path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = trail_path.with_name(trail_path.name + ".lock")
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
        try:
            try:
                con = duckdb.connect(str(trail_path), read_only=not write)
            except duckdb.Error as exc:
                raise TrailError(f"cannot open the audit trail {trail_path}: {str(exc).splitlines()[0]}") from None
            try:
                if write:
                    for statement in _SCHEMA:
                        con.execute(statement)
                    con.execute(
                        "insert into trail_meta values ('trail_version', $v) on conflict do nothing",
                        {"v": str(TRAIL_VERSION)},
                    )
                yield con
            finally:
                con.close()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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


def _run_hash(prev_hash: str, run_row: list[Any], metric_rows: list[list[Any]], cube_rows: list[list[Any]]) -> str:
    return _sha(prev_hash, canonical(run_row), canonical(metric_rows), canonical(cube_rows))


@task(name="record run", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1)
def record_run(
    trail_path: Path,
    document: dict[str, Any],
    *,
    policy_text: str,
    inputs: dict[str, Any],
    validation: dict[str, Any],
    join_report: dict[str, Any],
    cube_cells: list[dict[str, Any]],
) -> dict[str, Any]:
    """Append one audit run (run row, metric rows, cube) in one transaction; return its seq and hash."""
    run_id = str(document.get("run_id") or uuid.uuid4())
    recorded_at = datetime.now(UTC).isoformat()
    records = {"inputs": inputs, "validation": validation, "join_report": join_report}
    metric_rows = _metric_rows(run_id, document)
    cube_rows = [[run_id, canonical(cube_cells)]]
    with _locked(trail_path, write=True) as con:
        con.execute("begin transaction")
        try:
            last = con.execute("select seq, run_hash from runs order by seq desc limit 1").fetchall()
            seq, prev_hash = (last[0][0] + 1, last[0][1]) if last else (1, GENESIS)
            run_row = _run_row(seq, run_id, recorded_at, document, policy_text, records)
            run_hash = _run_hash(prev_hash, run_row, metric_rows, cube_rows)
            _insert_run(con, [*run_row, prev_hash, run_hash], metric_rows, cube_rows[0])
            con.execute("commit")
        except BaseException:
            con.execute("rollback")
            raise
    return {"seq": seq, "run_id": run_id, "run_hash": run_hash, "trail": str(trail_path)}


def _run_row(
    seq: int, run_id: str, recorded_at: str, document: dict[str, Any], policy_text: str, records: dict[str, Any]
) -> list[Any]:
    """The ``runs`` row of one audit (without its hashes), in ``RUN_COLUMNS`` order."""
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


def record_delivery(trail_path: Path, run_id: str, recipients: list[str], status: str, detail: str) -> None:
    """Append one report delivery (who got which run's report, and how it went) to the ``deliveries`` chain."""
    recorded_at = datetime.now(UTC).isoformat()
    with _locked(Path(trail_path), write=True) as con:
        con.execute("begin transaction")
        try:
            last = con.execute("select seq, row_hash from deliveries order by seq desc limit 1").fetchall()
            seq, prev_hash = (last[0][0] + 1, last[0][1]) if last else (1, GENESIS)
            row = [seq, run_id, recorded_at, canonical(list(recipients)), status, detail]
            con.execute(
                f"insert into deliveries ({', '.join(DELIVERY_COLUMNS)}, prev_hash, row_hash) values (?,?,?,?,?,?,?,?)",
                [*row, prev_hash, _sha(prev_hash, canonical(row))],
            )
            con.execute("commit")
        except BaseException:
            con.execute("rollback")
            raise


def list_runs(trail_path: Path) -> list[dict[str, Any]]:
    """The recorded runs, oldest first (summary columns only)."""
    _require_trail(trail_path)
    with _locked(trail_path, write=False) as con:
        cursor = con.execute(
            "select seq, run_id, recorded_at, model_name, model_version, verdict, n_rows, policy_sha256, run_hash "
            "from runs order by seq"
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def show_run(trail_path: Path, run: str) -> dict[str, Any]:
    """One run in full: its row, its metric results and its audit document. ``run`` is a run id or a seq."""
    _require_trail(trail_path)
    with _locked(trail_path, write=False) as con:
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
        return record


def verify(trail_path: Path) -> dict[str, Any]:
    """Recompute both hash chains; return the problems found (empty when the trail is intact)."""
    _require_trail(trail_path)
    problems: list[str] = []
    with _locked(trail_path, write=False) as con:
        runs = con.execute(f"select {', '.join(RUN_COLUMNS)}, prev_hash, run_hash from runs order by seq").fetchall()
        metrics: dict[str, list[list[Any]]] = {}
        for row in con.execute(
            f"select {', '.join(METRIC_COLUMNS)} from metric_results order by run_id, position"
        ).fetchall():
            metrics.setdefault(row[0], []).append(list(row))
        cubes: dict[str, list[list[Any]]] = {}
        for row in con.execute("select run_id, cells from cubes").fetchall():
            cubes.setdefault(row[0], []).append(list(row))
        deliveries = con.execute(
            f"select {', '.join(DELIVERY_COLUMNS)}, prev_hash, row_hash from deliveries order by seq"
        ).fetchall()

    expected_prev, expected_seq = GENESIS, 1
    for row in runs:
        run_row, prev_hash, run_hash = list(row[: len(RUN_COLUMNS)]), row[-2], row[-1]
        seq, run_id = run_row[0], run_row[1]
        if seq != expected_seq:
            problems.append(f"runs: seq {expected_seq} is missing (next is {seq}): a run was deleted")
        if prev_hash != expected_prev:
            problems.append(f"runs: run {seq} ({run_id}) does not follow the previous run: a run was deleted or edited")
        actual = _run_hash(prev_hash, run_row, metrics.pop(run_id, []), cubes.pop(run_id, []))
        if actual != run_hash:
            problems.append(f"runs: run {seq} ({run_id}) was altered after recording (its row, metric results or cube)")
        expected_prev, expected_seq = run_hash, seq + 1
    for run_id in sorted(set(metrics) | set(cubes)):
        problems.append(f"metric_results/cubes: rows for run {run_id} whose run row is gone")

    expected_prev, expected_seq = GENESIS, 1
    for row in deliveries:
        delivery, prev_hash, row_hash = list(row[: len(DELIVERY_COLUMNS)]), row[-2], row[-1]
        if delivery[0] != expected_seq or prev_hash != expected_prev:
            problems.append(f"deliveries: the chain breaks at delivery {delivery[0]}: a delivery was deleted or edited")
        if _sha(prev_hash, canonical(delivery)) != row_hash:
            problems.append(f"deliveries: delivery {delivery[0]} was altered after recording")
        expected_prev, expected_seq = row_hash, delivery[0] + 1
    return {
        "trail": str(trail_path),
        "ok": not problems,
        "runs": len(runs),
        "deliveries": len(deliveries),
        "head": runs[-1][-1] if runs else GENESIS,
        "problems": problems,
    }


def _require_trail(trail_path: Path) -> None:
    if not Path(trail_path).exists():
        raise TrailError(NO_TRAIL.format(path=trail_path))
