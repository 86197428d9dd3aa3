"""``fairgate explore``: a small read-only web app over the audit trail (Starlette, served by uvicorn).

Pages: the models and their audits (``/``), one audit with its results and report files (``/runs/<run id>``),
a metric's trend across runs (``/trend?model=&metric=``), two runs side by side (``/compare?a=&b=``), the
monitored nights (``/nights?model=``), and the report files themselves (``/files/<name>``: the HTML report, its
what-if explorer, the PDF, the JSON document, from the report folder only; tasks/serve/guard.py).

Read-only: the trail is opened per request with the readers' shared lock and DuckDB's read-only mode
(tasks/store/lock.py) and closed before the page is sent, so an audit recording a run waits at most for one
page's read. A trail that is missing, damaged or busy gives an error page with the reason (the server keeps
running); nothing is ever written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

from tasks.serve import pages
from tasks.serve.guard import App, Guard, Receive, Scope, Send, served_file
from tasks.store import TrailBusy, TrailDamaged, TrailError

TEMPLATES = Path(__file__).resolve().parents[2] / "reports" / "explore"
# Every response: no script from anywhere but the page itself, no network, not framed by another site.
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
    "form-action 'self'; frame-ancestors 'self'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]
log = logging.getLogger(__name__)


def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


class Headers:
    """ASGI middleware: the security headers on every response."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def explore_app(trail: Path, reports: Path, token: str | None = None) -> App:
    """The app over ``trail`` serving report files from ``reports``; ``token``: required on every request."""
    env = _environment()
    env.globals["trail"] = str(trail)
    trail, reports = Path(trail), Path(reports)

    def page(template: str, context: Callable[[], dict[str, Any]]) -> Response:
        try:
            values = context()
        except pages.NotFound as exc:
            return _error(env, 404, "Not found", str(exc))
        except TrailError as exc:
            status = 503 if isinstance(exc, TrailBusy) else 500
            title = "The audit trail is damaged" if isinstance(exc, TrailDamaged) else "The audit trail cannot be read"
            return _error(env, status, title, exc.message)
        body = env.get_template(template).render(**values)
        return HTMLResponse(body)

    async def index(request: Request) -> Response:
        return page("index.html.j2", lambda: pages.index_context(trail))

    async def run(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        return page("run.html.j2", lambda: pages.run_context(trail, reports, run_id))

    async def trend(request: Request) -> Response:
        model, metric = _params(request, "model", "metric")
        return page("trend.html.j2", lambda: pages.trend_context(trail, model, metric))

    async def compare(request: Request) -> Response:
        first, second = _params(request, "a", "b")
        return page("compare.html.j2", lambda: pages.compare_context(trail, first, second))

    async def nights(request: Request) -> Response:
        (model,) = _params(request, "model")
        return page("nights.html.j2", lambda: pages.nights_context(trail, model))

    async def files(request: Request) -> Response:
        target = served_file(reports, request.path_params["name"])
        if target is None:
            return _error(env, 404, "Not found", "no such report file in the report folder")
        return FileResponse(target)

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return _error(env, status, {404: "Not found", 405: "Method not allowed"}.get(status, "Bad request"), detail)

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/runs/{run_id}", run),
            Route("/trend", trend),
            Route("/compare", compare),
            Route("/nights", nights),
            Route("/files/{name:path}", files),
        ],
        exception_handlers={HTTPException: http_error},
    )
    return Headers(Guard(app, token))


def _params(request: Request, *names: str) -> list[str]:
    missing = [n for n in names if not request.query_params.get(n)]
    if missing:
        raise HTTPException(400, f"missing query parameters: {', '.join(missing)}")
    return [request.query_params[n] for n in names]


def _error(env: Environment, status: int, title: str, message: str) -> HTMLResponse:
    body = env.get_template("error.html.j2").render(title=title, message=message, status=status)
    return HTMLResponse(body, status_code=status)
