"""The trail's other chains, written and read back: report deliveries, model registrations and mitigation runs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tasks.store.chain import KEYED, UNKEYED, append_chained_row, canonical, check_trail_key, trail_key
from tasks.store.columns import DELIVERY_COLUMNS, MITIGATION_COLUMNS, REGISTRATION_COLUMNS, REGISTRATION_STATUSES
from tasks.store.lock import locked_trail, trail_transaction
from tasks.store.schema import _has_registration_status, has_table


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
