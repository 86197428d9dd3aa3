"""Verifying the trail: every chain recomputed, the period cubes' statuses and the anchored heads checked.

``verify`` returns the problems found (none: intact); ``fairgate trail verify`` prints them and exits 1 when there
are any.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from fairgate.errors import TRAIL_ANCHOR_UNUSABLE, TRAIL_KEY_MISSING, TRAIL_UNKEYED
from tasks.store.chain import (
    GENESIS,
    KEY_ENV,
    KEYED,
    UNKEYED,
    _run_hash,
    canonical,
    chain_digest,
    check_trail_key,
    trail_key,
)
from tasks.store.columns import (
    DELIVERY_COLUMNS,
    LEGACY_DELIVERY_COLUMNS,
    LEGACY_RUN_COLUMNS,
    METRIC_COLUMNS,
    MITIGATION_COLUMNS,
    MONITOR_CHAINS,
    PERIOD_CUBE_COLUMNS,
    REGISTRATION_COLUMNS,
    RUN_COLUMNS,
)
from tasks.store.errors import TrailError
from tasks.store.lock import locked_trail
from tasks.store.schema import _chain_column, _has_registration_status, has_table


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
