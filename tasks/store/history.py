"""Reading recorded runs back: the run list, one run in full, and a model's earlier runs for the report's trend.

``model_history`` reads a model's earlier runs back for the report's trend (the current run is recorded after
its report renders); it never fails the audit: an unreadable trail gives no history and a note.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from tasks.store.columns import MITIGATION_COLUMNS
from tasks.store.errors import TrailError
from tasks.store.lock import locked_trail
from tasks.store.schema import _chain_column, has_table

if TYPE_CHECKING:  # types only: `fairgate trail` reads the trail without loading the policy models or scipy
    from fairgate.monitoring import History, PastResult, PastRun


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
    from tasks.inputs.sql import load_sql

    # The standard errors are read from the stored document (hashed with the run), by result position.
    parameters = {"model": model_name, "exclude": exclude_run, "limit": limit}
    runs = con.execute(load_sql("store/history_runs"), parameters).fetchall()
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


def last_labelled_document(trail_path: Path, model_name: str, *, look_back: int = 50) -> dict[str, Any] | None:
    """The newest recorded audit of the model that had labels and kept its reliability bins (``curves``), or None.

    The reference of a label-free audit (fairgate/engine/label_free.py). Never raises: an absent or unreadable
    trail gives None (the audit then says it has no reference).
    """
    for document in _recent_documents(trail_path, model_name, look_back):
        if not document.get("label_free") and (document.get("curves") or {}).get("calibration"):
            return document
    return None


def reference_document(trail_path: Path, model_name: str, run_id: str | None) -> dict[str, Any] | None:
    """The labelled audit ``run_id`` of the model when it kept its reliability bins, else the newest such audit
    (:func:`last_labelled_document`): a monitoring night's reference for estimates before labels arrive."""
    for document in _recent_documents(trail_path, model_name, 200) if run_id else []:
        labelled = not document.get("label_free") and (document.get("curves") or {}).get("calibration")
        if document.get("run_id") == run_id and labelled:
            return document
    return last_labelled_document(trail_path, model_name)


def last_estimated_document(
    trail_path: Path, model_name: str, predictions_sha256: str, *, look_back: int = 50
) -> dict[str, Any] | None:
    """The newest audit of the model without labels on the same predictions (same sha256), or None: what a
    labelled audit of those people compares its measured results with."""
    from tasks.inputs.sql import load_sql

    parameters = {"model": model_name, "look_back": look_back, "sha": predictions_sha256}
    candidates = load_sql("store/estimated_candidates"), parameters
    rows = _trail_rows(trail_path, candidates, lambda seqs: (load_sql("store/estimated_run"), {"seqs": seqs}))
    return dict(json.loads(rows[0][0])) if rows and rows[0][0] else None


def _recent_documents(trail_path: Path, model_name: str, look_back: int) -> list[dict[str, Any]]:
    """The model's newest recorded documents, newest first; none when the trail is absent or unreadable."""
    query = "select document from runs where model_name = $model order by seq desc limit $limit"
    rows = _trail_rows(trail_path, (query, {"model": model_name, "limit": look_back}))
    return [dict(json.loads(text)) for (text,) in rows if text]


Query = tuple[str, dict[str, Any]]


def _trail_rows(
    trail_path: Path, query: Query, then: Callable[[list[Any]], Query] | None = None
) -> list[tuple[Any, ...]]:
    """A read-only query's rows; none when the trail is absent or unreadable (no history is no error here).

    ``then``: a second query, made from the first one's values (its rows' first column) and run on the same
    connection when there are any; its rows are returned (none when the first query found none).
    """
    path = Path(trail_path)
    if not path.exists():
        return []
    try:
        with locked_trail(path, write=False) as con:
            rows = con.execute(*query).fetchall()
            if then is not None and rows:
                rows = con.execute(*then([row[0] for row in rows])).fetchall()
            return rows
    except (TrailError, duckdb.Error):
        return []


def metric_series(trail_path: Path, model_name: str, metric: str) -> list[dict[str, Any]]:
    """One metric's recorded results across a model's runs, oldest run first (``fairgate explore``'s trend)."""
    from tasks.inputs.sql import load_sql

    with locked_trail(Path(trail_path), write=False) as con:
        cursor = con.execute(load_sql("store/metric_series"), {"model": model_name, "metric": metric})
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    for row in rows:
        row["slicing"] = [str(a) for a in json.loads(row["slicing"] or "[]")]
    return rows
