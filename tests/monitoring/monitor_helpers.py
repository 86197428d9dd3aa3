"""What the end-to-end ``fairgate monitor run`` tests share: a night's inputs written as the CLI reads them, the
labelled deployment audit recorded in the trail as ``fairgate audit`` records it, and weekly nights run one
after another through the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

import fairgate
from cli import app
from tasks.store import append_audit_run

COMPAS_CSV = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "compas" / "compas-scores-two-years.csv"
FIRST_NIGHT = date(2013, 12, 30)  # a Monday: the deployment audit holds every person screened before it
WIDE = {"COLUMNS": "220"}  # the CLI's tables at full width


def write_inputs(files: Mapping[str, pl.DataFrame], folder: Path) -> list[str]:
    """Each role's rows as ``<folder>/<role>.parquet``; the options that name them (``--labels labels.parquet``)."""
    folder.mkdir(parents=True, exist_ok=True)
    args = []
    for role, frame in files.items():
        frame.write_parquet(folder / f"{role}.parquet")
        args += [f"--{role}", str(folder / f"{role}.parquet")]
    return args


def write_night(rows: pl.DataFrame, folder: Path, attributes: Sequence[str], labels: bool = True) -> list[str]:
    """A night's predictions (score, decision, time), attributes and, when ``labels``, labels, joined on ``id``."""
    files = {"predictions": rows.select("id", "score", "y_pred", "timestamp")}
    if labels:
        files["labels"] = rows.select("id", "y_true")
    files["attributes"] = rows.select("id", *attributes)
    return write_inputs(files, folder)


def record_deployment_audit(
    rows: pl.DataFrame, policy_path: Path, trail: Path, model: str = "compas"
) -> dict[str, Any]:
    """The labelled deployment audit of ``rows`` (version 1 of ``model``), recorded as ``fairgate audit`` does."""
    text = policy_path.read_text()
    policy = fairgate.Policy.from_yaml(text)
    cube = fairgate.build_cube(rows, policy)
    parts = [fairgate.compute_slicing(cube, s, policy) for s in fairgate.plan_slicings(cube, policy)]
    info = fairgate.ModelInfo(name=model, version="1")
    document = fairgate.adjudicate(cube, parts, policy, model=info, run_id="deployment").to_dict()
    append_audit_run(
        trail, document, policy_text=text, inputs={}, validation={}, join_report={}, cube_cells=cube.cells.to_dicts()
    )
    return dict(document)


def monitor_command(policy: Path, out: Path, trail: Path, model: str = "compas") -> list[str]:
    """``fairgate monitor run`` for version 1 of ``model``, before the night's inputs."""
    args = ["monitor", "run", "--policy", str(policy), "--model-name", model, "--model-version", "1"]
    return [*args, "--out", str(out), "--trail", str(trail)]


def run_night(runner: Any, args: Sequence[str], out: Path) -> tuple[Any, Path]:
    """One ``monitor run`` through the CLI: its result and the monitoring document it wrote into ``out``."""
    before = set(out.glob("monitoring_*.json"))
    result = runner.invoke(app, list(args), env=WIDE)
    (path,) = set(out.glob("monitoring_*.json")) - before
    return result, path


def week_rows(rows: pl.DataFrame, first: datetime, weeks: int = 1) -> pl.DataFrame:
    """The rows screened in the ``weeks`` weeks from ``first``."""
    return rows.filter((pl.col("timestamp") >= first) & (pl.col("timestamp") < first + timedelta(days=7 * weeks)))


def run_weeks(
    runner: Any, command: Sequence[str], rows: pl.DataFrame, weeks: int, write: Callable[[pl.DataFrame, int], list[str]]
) -> list[dict[str, Any]]:
    """``weeks`` weekly nights from :data:`FIRST_NIGHT`, each night's inputs written by ``write(rows, week)``.

    Per night: the CLI's result, its document, the input options and how many people it held.
    """
    out = Path(command[command.index("--out") + 1])
    start = datetime.combine(FIRST_NIGHT, datetime.min.time())
    runs = []
    for week in range(weeks):
        night = week_rows(rows, start + timedelta(days=7 * week))
        args = write(night, week)
        result, path = run_night(runner, [*command, *args], out)
        runs.append({"result": result, "document": json.loads(path.read_text()), "args": args, "rows": night.height})
    return runs
