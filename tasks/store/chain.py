"""The hash chains: canonical JSON, the digest, the key, and appending one chained row.

Every run row carries ``prev_hash`` (the previous run's ``run_hash``) and ``run_hash``, a digest over the previous
hash, the run row and all its metric and cube rows; deliveries, registrations and mitigations form chains of
their own. The digest is HMAC-SHA256 keyed with ``FAIRGATE_TRAIL_KEY`` when that is set (``chain =
'hmac-sha256'``), else plain SHA-256 (``chain = 'sha256 (unkeyed)'``), which anyone who can write the file can
recompute after an edit. ``fairgate trail verify`` recomputes every chain, so an edited or deleted row shows;
deleting the newest runs shows against an anchored head (``trail head:`` on stderr, ``FAIRGATE_TRAIL_ANCHOR``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
from pathlib import Path
from typing import Any, cast

import duckdb

from fairgate.errors import TRAIL_KEY_MISSING, TRAIL_KEY_WRONG
from tasks.inputs.io import first_line
from tasks.store.errors import TrailError

GENESIS = "0" * 64
KEY_ENV = "FAIRGATE_TRAIL_KEY"  # the HMAC key (a secret); unset: the chain is unkeyed
KEY_BLOCK_ENV = "FAIRGATE_TRAIL_KEY_BLOCK"  # or: the name of a Prefect Secret block that holds the key
KEYED, UNKEYED = "hmac-sha256", "sha256 (unkeyed)"
_KEY_CHECK_MESSAGE = b"fairgate audit trail key check"


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


def _run_hash(
    prev_hash: str,
    run_row: list[Any],
    metric_rows: list[list[Any]],
    cube_rows: list[list[Any]],
    key: bytes | None = None,
) -> str:
    return chain_digest(key, prev_hash, canonical(run_row), canonical(metric_rows), canonical(cube_rows))


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
