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
from typing import Annotated, Any, cast

import typer

from cli import console, options
from cli.exits import EXIT_INTERNAL, EXIT_INVALID, fail, flow_state, refusing

NO_PREFECT_SERVER = (
    "no Prefect server to send the registration events to: set PREFECT_API_URL to the server whose "
    "on-registration automation should start the audits (an ephemeral server would drop them at exit)"
)

registry_app = typer.Typer(help="The MLflow Model Registry in the loop (pip install 'fairgate[mlflow]').")
_out = console.stdout()


def _check(tracking_uri: str | None) -> None:
    """Before Prefect starts: the client is installed, a registry is named, events have somewhere to go, and the
    registry answers (a closed port is refused in seconds, not after MLflow's minutes of retries)."""
    from tasks.outbound.registry import check_reachable, mlflow_client

    with refusing():
        client = mlflow_client(tracking_uri)
    from prefect.settings import get_current_settings

    if not (os.environ.get("PREFECT_API_URL") or get_current_settings().api.url):
        fail(NO_PREFECT_SERVER)
    with refusing():
        check_reachable(client.tracking_uri)


@registry_app.command()
def watch(
    tracking_uri: Annotated[
        str | None, typer.Option("--tracking-uri", help="The MLflow tracking URI (default: MLFLOW_TRACKING_URI).")
    ] = None,
    model: Annotated[
        list[str] | None, typer.Option("--model", help="Watch only this registered model (repeatable).")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only versions created from this UTC time on (2026-12-01, 2026-12-01T09:30:00)."),
    ] = None,
    as_json: options.Json = False,
) -> None:
    """One watch of the MLflow registry: emit fairgate.model.registered for every new model version; tag the
    versions that name no predictions as skipped."""
    start = _since(since)
    _check(tracking_uri)
    from flows.registry_watch import INVALID_INPUT, registry_watch

    parameters = {"tracking_uri": tracking_uri, "models": model or None, "since": start}
    state = flow_state(registry_watch, parameters, what="the watch", hint="")  # Prefect or the registry unreachable
    if state.is_failed():  # not a crash: bad input (2), or events the API did not confirm (3, sent again next time)
        fail(str(state.message), EXIT_INVALID if state.name == INVALID_INPUT else EXIT_INTERNAL)
    _print(cast(dict[str, Any], state.result()), as_json)


def _since(text: str | None) -> datetime | None:
    """``--since`` as a time (ISO 8601, UTC unless it names its offset); anything else is refused (exit 2)."""
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        fail(f"--since {text!r} is not a date or time; write it as YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS (UTC)")


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
