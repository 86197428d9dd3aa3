"""Recording one audit run: its run row, metric rows and cube in one transaction, and the new head published.

The new head goes to stderr (``trail head: <seq> <hash>``, for CI logs) and, with ``FAIRGATE_TRAIL_ANCHOR`` set,
to that anchor file, so that deleting the newest runs shows in ``fairgate trail verify --anchor``.
"""

from __future__ import annotations

import math
import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import duckdb

from fairgate.errors import TRAIL_ANCHOR_UNUSABLE, TRAIL_KEY_MISSING
from fairgate.verdicts import exit_code_for
from tasks.store.chain import GENESIS, KEY_ENV, KEYED, UNKEYED, _run_hash, canonical, check_trail_key, trail_key
from tasks.store.columns import METRIC_COLUMNS, RUN_COLUMNS
from tasks.store.errors import TrailError
from tasks.store.lock import ANCHOR_ENV, check_anchor, locked_trail, trail_transaction


def _metric_rows(run_id: str, document: dict[str, Any]) -> list[list[Any]]:
    """The measured results as rows (the trend reads them); estimated ones (no labels yet) stay in the document."""
    rows = []
    for position, r in enumerate(document.get("results", [])):
        if r.get("estimated"):
            continue
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


@contextmanager
def _anchor_file() -> Iterator[IO[str] | None]:
    """The ``FAIRGATE_TRAIL_ANCHOR`` file opened for appending, before anything is recorded (a bad path: exit 2)."""
    path = os.environ.get(ANCHOR_ENV, "")
    if not path:
        yield None
        return
    check_anchor()  # a FIFO would block the open below
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
        exit_code_for(str(document.get("verdict"))),  # 0 pass, 1 fail, 4 insufficient (fairgate.verdicts)
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
