"""``fairgate registry watch``: one run of the MLflow registry watch (flows/registry_watch.py), e.g. from cron or a
CI job where no Prefect worker runs the ``registry-watch`` deployment.

Exit codes: 0 the watch ran (versions registered or skipped are listed), 2 a configuration problem (mlflow not
installed, no tracking URI, no Prefect server to send the events to), 3 the watch could not run.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from typing import Annotated, Any, NoReturn, cast

import typer
from rich.console import Console
from rich.markup import escape

from cli.checks import EXIT_INTERNAL, EXIT_INVALID
from fairgate.errors import FairgateError

NO_PREFECT_SERVER = (
    "no Prefect server to send the registration events to: set PREFECT_API_URL to the server whose "
    "on-registration automation should start the audits (an ephemeral server would drop them at exit)"
)

registry_app = typer.Typer(help="The MLflow Model Registry in the loop (pip install 'fairgate\\[mlflow]').")
_out = Console()
_err = Console(stderr=True)


def _stop(message: str, code: int) -> NoReturn:
    _err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(code)


def _check(tracking_uri: str | None) -> None:
    """Before Prefect starts: the client is installed, a registry is named, and events have somewhere to go."""
    from tasks.registry import mlflow_client

    try:
        mlflow_client(tracking_uri)
    except FairgateError as exc:
        _stop(exc.message, EXIT_INVALID)
    from prefect.settings import get_current_settings

    if not (os.environ.get("PREFECT_API_URL") or get_current_settings().api.url):
        _stop(NO_PREFECT_SERVER, EXIT_INVALID)


@registry_app.command()
def watch(
    tracking_uri: Annotated[
        str | None, typer.Option("--tracking-uri", help="The MLflow tracking URI (default: MLFLOW_TRACKING_URI).")
    ] = None,
    model: Annotated[
        list[str] | None, typer.Option("--model", help="Watch only this registered model (repeatable).")
    ] = None,
    since: Annotated[
        datetime | None,
        typer.Option("--since", help="Only versions created from this UTC time on (2026-12-01, 2026-12-01T09:30:00)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")] = False,
) -> None:
    """One watch of the MLflow registry: emit fairgate.model.registered for every new model version; tag the
    versions that name no predictions as skipped."""
    _check(tracking_uri)
    from flows.registry_watch import INVALID_INPUT, registry_watch

    try:
        state = registry_watch(tracking_uri=tracking_uri, models=model or None, since=since, return_state=True)
    except Exception as exc:  # Prefect or the registry unreachable, a bug
        _stop(f"the watch could not run: {type(exc).__name__}: {exc}", EXIT_INTERNAL)
    if state.is_failed():
        _stop(str(state.message), EXIT_INVALID if state.name == INVALID_INPUT else EXIT_INTERNAL)
    _print(cast(dict[str, Any], state.result()), as_json)


def _print(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return
    for item in result["registered"]:
        _out.print(f"registered {item['name']} version {item['version']} (event {item['event_id']})", highlight=False)
    for item in result["skipped"]:
        _out.print(f"skipped {item['name']} version {item['version']}: {item['reason']}", highlight=False)
    if not (result["registered"] or result["skipped"]):
        _out.print("no new model versions", highlight=False)
