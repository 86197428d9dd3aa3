"""``fairgate explore``'s guards: who may ask (the token, the Host header) and which files may be served.

* **Bind address.** A loopback address (127.0.0.0/8, ``::1``, ``localhost``) needs no token; any other address
  does (:func:`check_bind`, before the server starts).
* **Token.** When one is set it is checked on every request, whatever the path: an ``Authorization: Bearer``
  header, the session cookie, or ``?token=`` (which sets the cookie and redirects to the same page without it, so
  the token does not stay in the address bar or the history). Compared in constant time; refused with 401.
* **Host header.** Without a token only a loopback ``Host`` is answered: a web page the user visits cannot reach
  the local server by pointing its own domain name at 127.0.0.1 (DNS rebinding).
* **Files.** :func:`served_file` serves a report file from the report folder only: no absolute path, no ``..``
  (also when percent-encoded: the router decodes before this check), no hidden file, no symlink that leads out
  of the folder, and only report suffixes (never the trail's DuckDB file or its lock).
"""

from __future__ import annotations

import hmac
import ipaddress
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path, PurePosixPath
from typing import Any

from fairgate.errors import FairgateError

TOKEN_ENV = "FAIRGATE_EXPLORE_TOKEN"
MIN_TOKEN_CHARS = 16
COOKIE = "fairgate_explore"
SERVED_SUFFIXES = (".html", ".pdf", ".json")
LOCAL_NAMES = ("localhost",)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """A loopback address or ``localhost``.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, True, False)
    """
    name = host.strip().strip("[]").lower()
    if name in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse (exit 2) a non-loopback bind without a token, and a token too short to resist guessing."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise FairgateError(
            f"the explore token is {len(token)} characters long; use at least {MIN_TOKEN_CHARS} (e.g. the output "
            "of `python -c 'import secrets; print(secrets.token_urlsafe())'`)"
        )
    if token is None and not is_loopback(host):
        raise FairgateError(
            f"--host {host} is not a loopback address: anyone who can reach it could read the trail; pass --token "
            f"(or set {TOKEN_ENV}) to require it on every request, or bind 127.0.0.1"
        )


def token_matches(given: str | None, token: str) -> bool:
    """Constant-time comparison of a presented token with the server's."""
    return given is not None and hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8"))


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def host_name(header: str) -> str:
    """The host of a ``Host`` header, without its port.

    >>> host_name("127.0.0.1:8765"), host_name("[::1]:8765"), host_name("localhost"), host_name("evil.example:80")
    ('127.0.0.1', '::1', 'localhost', 'evil.example')
    """
    header = header.strip()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if ":" in header else header


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def _bearer(header: str) -> str | None:
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


class Guard:
    """ASGI middleware: the token (when set) and, without one, a loopback ``Host`` on every request."""

    def __init__(self, app: App, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if self.token is None:
            if not is_loopback(host_name(headers.get("host", ""))):
                await _refuse(send, 403, "this server answers requests to a loopback address only")
                return
            await self.app(scope, receive, send)
            return
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        in_query = query.get("token", [None])[0]
        if token_matches(in_query, self.token):
            await _to_cookie(scope, query, self.token, send)
            return
        given = _bearer(headers.get("authorization", "")) or _cookie(headers.get("cookie", ""), COOKIE)
        if not token_matches(given, self.token):
            await _refuse(send, 401, "a token is required: open the address with ?token=<token> once")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str) -> None:
    body = f"{status}: {message}\n".encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b"Bearer") if status == 401 else (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _to_cookie(scope: Scope, query: dict[str, list[str]], token: str, send: Send) -> None:
    """The token from ``?token=`` as an HttpOnly, same-site cookie; redirect to the page without it."""
    rest = urllib.parse.urlencode({k: v for k, v in query.items() if k != "token"}, doseq=True)
    location = urllib.parse.quote(scope.get("path", "/")) + (f"?{rest}" if rest else "")
    cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode("latin-1")),
                (b"set-cookie", cookie.encode("latin-1")),
                (b"referrer-policy", b"no-referrer"),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})


def served_file(folder: Path, name: str) -> Path | None:
    """The report file ``name`` inside ``folder``, or None when it is not one that may be served.

    >>> served_file(Path("/tmp"), "../etc/passwd") is None, served_file(Path("/tmp"), "/etc/passwd") is None
    (True, True)
    """
    if not name or "\x00" in name or "\\" in name:
        return None
    relative = PurePosixPath(name)
    if relative.is_absolute() or any(part.startswith(".") or not part for part in name.split("/")):
        return None
    if not name.endswith(SERVED_SUFFIXES):
        return None
    try:
        root = folder.resolve(strict=True)
        target = (root / relative).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, or a symlink loop
        return None
    if not target.is_relative_to(root) or not target.is_file() or not target.name.endswith(SERVED_SUFFIXES):
        return None
    return target
