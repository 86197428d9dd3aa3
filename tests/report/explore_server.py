"""Helpers for the ``fairgate explore`` tests: a trail of three COMPAS audits with the newest one's report files,
and the app served by uvicorn in a thread on a free port."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

import fairgate
from fairgate.engine.cube import build_cube
from tasks.outputs import output_stem
from tasks.render.explorer import build_explorer_file
from tasks.render.report import build_report_files
from tasks.store import append_audit_run
from tasks.store.monitor import MonitoringRecord, record_monitoring

NIGHT_RESULT = {
    "metric": "disparate_impact_ratio",
    "slicing": ["race"],
    "value": 0.7,
    "ci_low": 0.65,
    "ci_high": 0.75,
    "threshold": 0.8,
    "direction": "higher_is_better",
    "status": "fail",
    "change": -0.02,
}


@dataclass(frozen=True)
class ServedTrail:
    folder: Path  # the report folder (the trail is in it, as an audit leaves them)
    trail: Path
    documents: list[dict[str, Any]]  # the three runs' audit documents, oldest first
    secret: Path  # a file outside the folder, reachable from inside only through a symlink


def record(trail: Path, document: dict[str, Any]) -> None:
    append_audit_run(trail, document, policy_text="", inputs={}, validation={}, join_report={}, cube_cells=[])


def compas_trail(folder: Path, outside: Path, rows: pl.DataFrame, policy: fairgate.Policy) -> ServedTrail:
    """Three audits of COMPAS (two seeded 80% samples, then all rows), the newest with its HTML report, explorer
    and JSON; a monitored night; a secret outside the folder and a symlink to it inside."""
    stats = policy.statistics.model_copy(update={"n_bootstrap": 20})
    policy = policy.model_copy(update={"statistics": stats})
    trail = folder / "audit_trail.duckdb"
    documents = []
    for i, seed in enumerate((1, 2, None), start=1):
        frame = rows if seed is None else rows.sample(fraction=0.8, seed=seed)
        model = fairgate.ModelInfo(name="compas", version=f"v{i}")
        document = json.loads(fairgate.audit(frame, policy, model=model, run_id=f"run-{i}").to_json())
        record(trail, document)
        documents.append(document)
    newest = documents[-1]
    explorer = build_explorer_file(newest, build_cube(rows, policy, exact_auc=True), policy, folder, 10)
    assert explorer is not None
    build_report_files(newest, out_dir=folder, formats=["html"], explorer=explorer.name)
    (folder / f"{output_stem(newest)}.json").write_text(json.dumps(newest), encoding="utf-8")
    night = {"night": "2026-12-01", "windows": [{"window": "30", "results": [NIGHT_RESULT]}], "observations": {}}
    record_monitoring(trail, MonitoringRecord("night-1", "compas", {"predictions": "x"}, nights=[night]))
    secret = outside / "secret.html"
    secret.write_text("TOP SECRET", encoding="utf-8")
    (folder / "leak.html").symlink_to(secret)
    return ServedTrail(folder, trail, documents, secret)


@contextmanager
def serving(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """The app served by uvicorn in a thread on a free port; yields its base URL (over 127.0.0.1)."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the explore app did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def watched(browser: Any, base: str, context: Any = None) -> tuple[Any, list[str]]:
    """A page whose console errors, page errors and requests to any other origin are listed as problems."""
    page = browser.new_page(viewport={"width": 1280, "height": 900}) if context is None else context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: None if r.url.startswith(base) else problems.append(f"request: {r.url}"))
    return page, problems
