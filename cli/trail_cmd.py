"""``fairgate trail list|registrations|mitigations|show|verify``: read and check the audit trail (tasks/store/).

Exit codes: 0 intact (or listed), 1 the trail was tampered with or is damaged (rows edited or deleted, the chain
broken, an anchored head gone, a table dropped, the file truncated), 2 not a trail or a configuration problem
(a directory, not a DuckDB file, no trail tables, the key missing or wrong), 5 busy (another process still held the
trail after FAIRGATE_TRAIL_WAIT_SECONDS: try again). Never a DuckDB traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
import typer.core
from rich.table import Table

from cli import console
from cli.exits import fail
from cli.options import DEFAULT_TRAIL, Json, TrailFile
from fairgate.errors import FairgateError

T = TypeVar("T")

trail_app = typer.Typer(
    help="The audit trail: list, show and verify recorded runs; list model registrations.", no_args_is_help=True
)
_out = console.stdout()
_err = console.stderr()


def _call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a trail function; its errors become a message and exit 1 (damaged), 2 (not a trail, configuration) or
    5 (busy)."""
    from tasks.store import TrailError

    try:
        return function(*args, **kwargs)
    except TrailError as exc:
        _stop(exc.message, exc.exit_code)
    except FairgateError as exc:
        _stop(exc.message, 2)


def _stop(message: str, code: int) -> NoReturn:
    fail(message, code, label="DAMAGED:" if code == 1 else "error:")


@trail_app.command("list")
def trail_list(
    trail: TrailFile = DEFAULT_TRAIL,
    as_json: Json = False,
) -> None:
    """List the recorded runs, oldest first."""
    from tasks.store import list_runs

    runs = _call(list_runs, trail)
    if as_json:
        sys.stdout.write(json.dumps(runs, indent=2, default=str) + "\n")
        return
    table = Table(title=str(trail))
    for column in ("seq", "run_id", "recorded_at", "model", "verdict", "rows", "hash", "chain"):
        table.add_column(column)
    for run in runs:
        table.add_row(
            str(run["seq"]),
            run["run_id"],
            run["recorded_at"],
            f"{run['model_name']} {run['model_version']}",
            run["verdict"],
            str(run["n_rows"]),
            run["run_hash"][:12],
            "keyed" if run["chain"] == "hmac-sha256" else "unkeyed",
        )
    _out.print(table)


@trail_app.command("registrations")
def trail_registrations(
    trail: TrailFile = DEFAULT_TRAIL,
    as_json: Json = False,
) -> None:
    """List the recorded model registrations (accepted or rejected, with the reason), oldest first."""
    from tasks.store import list_registrations

    rows = _call(list_registrations, trail)
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
        return
    table = Table(title=f"{trail}: registrations")
    for column in ("seq", "registered_at", "model", "status", "run_id / reason"):
        table.add_column(column, overflow="fold")
    for row in rows:
        detail = row["detail"] or {}
        outcome = detail.get("run_id") if row["status"] == "accepted" else detail.get("reason")
        colour = "green" if row["status"] == "accepted" else "red"
        table.add_row(
            str(row["seq"]),
            row["registered_at"],
            f"{row['model_name']} {row['model_version']}",
            f"[{colour}]{row['status']}[/]",
            str(outcome or ""),
        )
    _out.print(table)


@trail_app.command("mitigations")
def trail_mitigations(
    trail: TrailFile = DEFAULT_TRAIL,
    answers: Annotated[str | None, typer.Option("--answers", help="Only those answering this audit run id.")] = None,
    as_json: Json = False,
) -> None:
    """List the recorded mitigation runs (auto or `fairgate mitigate`): the audit each answers, method, verdicts."""
    from tasks.store import list_mitigations

    rows = _call(list_mitigations, trail, answers=answers)
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
        return
    table = Table(title=f"{trail}: mitigations")
    for column in ("seq", "recorded", "mitigation", "answers audit", "method", "status", "verdict", "files"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            str(row["seq"]),
            str(row["recorded_at"])[:19],
            str(row["mitigation_id"]),
            str(row["answers"] or ""),
            str(row["method"]),
            str(row["status"]),
            f"{row['verdict_before'] or '-'} -> {row['verdict_after'] or '-'}",
            "\n".join(f"{kind}: {entry['path']}" for kind, entry in row["outputs"].items()),
        )
    _out.print(table)


class _PlainUsage(typer.core.TyperCommand):
    """The usage line as click writes it, ``trail show [OPTIONS] RUN_ID_OR_SEQ``: typer wraps a required
    argument in braces (``{RUN_ID_OR_SEQ}``), which reads as a set or a template, not as "give one"."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [piece.removeprefix("{").removesuffix("}") for piece in super().collect_usage_pieces(ctx)]


@trail_app.command("show", cls=_PlainUsage)
def trail_show(
    run: Annotated[str, typer.Argument(metavar="RUN_ID_OR_SEQ", help="Run id or sequence number.")],
    trail: TrailFile = DEFAULT_TRAIL,
) -> None:
    """Print one recorded run (its row, inputs, validation, audit document, deliveries, mitigations) as JSON."""
    from tasks.store import show_run

    sys.stdout.write(json.dumps(_call(show_run, trail, run), indent=2, default=str) + "\n")


@trail_app.command("verify")
def trail_verify(
    trail: TrailFile = DEFAULT_TRAIL,
    anchor: Annotated[
        Path | None,
        typer.Option("--anchor", help="A file of anchored heads ('<timestamp> <seq> <hash>' lines) to check."),
    ] = None,
    unkeyed_until: Annotated[
        int,
        typer.Option("--unkeyed-until", help="Accept unkeyed runs up to this seq (recorded before the key was set)."),
    ] = 0,
    as_json: Json = False,
) -> None:
    """Recompute the hash chains (keyed with FAIRGATE_TRAIL_KEY when set); exit 1 if any row was edited or deleted."""
    from tasks.store import verify

    report = _call(verify, trail, anchor=anchor, unkeyed_until=unkeyed_until)
    for warning in report["warnings"]:
        _err.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    elif report["ok"]:
        registrations = f", {report['registrations']} registrations" if report.get("registrations") else ""
        for table in (
            "period_cubes",
            "monitor_nights",
            "drift_alerts",
            "label_estimates",
        ):  # monitoring chains, when present
            registrations += f", {report[table]} {table.replace('_', ' ')}" if report.get(table) else ""
        registrations += f", {report['mitigations']} mitigations" if report.get("mitigations") else ""
        _out.print(
            f"[green]intact[/]: {report['runs']} runs, {report['deliveries']} deliveries{registrations}; "
            f"chain {report['chain']}; "
            f"head {report['head_seq']} {report['head']}",
            highlight=False,
            soft_wrap=True,
        )
    else:
        _err.print(f"[bold red]TAMPERED[/]: {trail} (chain {report['chain']})", highlight=False, soft_wrap=True)
        for problem in report["problems"]:
            _err.print(f"  - {problem}", highlight=False, soft_wrap=True)
    raise typer.Exit(0 if report["ok"] else 1)
