"""``fairgate explore``: serve a read-only web view of the audit trail (tasks/serve/explore_app.py).

Exit codes: 0 stopped (Ctrl-C), 2 bad configuration, checked before the server starts: a non-loopback --host
without a token, a token shorter than 16 characters, a --reports that is not a folder, a --trail that is a folder
or not a DuckDB file, a port that cannot be listened on. A trail that does not exist yet, or is damaged or busy
later, is not a refusal: its pages say so and the server keeps running.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Annotated

import typer

from cli import options
from cli.exits import fail, refusing

DEFAULT_PORT = 8765


def explore(
    trail: options.TrailFile = options.DEFAULT_TRAIL,
    reports: Annotated[
        Path | None,
        typer.Option("--reports", help="The folder of the runs' report files (default: the trail's folder)."),
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on (a non-loopback one needs a token).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = DEFAULT_PORT,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="FAIRGATE_EXPLORE_TOKEN",
            show_envvar=True,
            help="Require this token on every request (prefer the variable: a command line is visible to others).",
        ),
    ] = None,
) -> None:
    """Serve a read-only web view of the audit trail: models, audits, reports, explorers, trends, nights.

    Open the printed address; with a token, open it once with ?token=<token> (the browser then keeps it in a
    cookie for this server). Ctrl-C stops it.
    """
    from tasks.serve.guard import check_bind
    from tasks.store import check_trail_path

    folder = reports if reports is not None else trail.parent
    with refusing():
        check_bind(host, token)
        check_trail_path(trail)
    if not folder.is_dir():
        fail(f"--reports {folder} is not a folder; pass the folder the audits wrote their reports to")
    _check_port(host, port)
    import uvicorn

    from tasks.serve.explore_app import explore_app

    shown = f"[{host}]" if ":" in host else host
    if not trail.exists():
        sys.stderr.write(f"warning: no audit trail at {trail} yet; its pages will say so until an audit records one\n")
    sys.stderr.write(
        f"fairgate explore: {trail} (read-only), reports from {folder}, on http://{shown}:{port}/"
        f"{' (token required)' if token else ''}; Ctrl-C stops\n"
    )
    uvicorn.run(explore_app(trail, folder, token), host=host, port=port, log_level="warning", server_header=False)


def _check_port(host: str, port: int) -> None:
    """The address can be listened on (refused now, exit 2, not as a server start-up failure)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        fail(f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port or --host")
