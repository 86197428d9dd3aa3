"""Session-wide test set-up: one real Prefect server for the whole run, and a private Prefect home.

Every flow run in the suite (in this process and in the ``fairgate`` subprocesses the end-to-end tests start)
talks to the one server started by :func:`prefect_server`, instead of each starting its own ephemeral server
(about 40 s each on a busy machine). Ephemeral servers are switched off, so a test that runs a flow without
asking for the server fails at once ("No Prefect API URL provided") instead of silently starting one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_processes import free_loopback_port, start_prefect_server, stop_process_group, wait_until_healthy

# Before anything imports Prefect (it reads its settings once, at import): a private home and database for
# this run, never the user's ~/.prefect, and no ephemeral servers.
_PREFECT_HOME = Path(tempfile.mkdtemp(prefix="fairgate-tests-prefect-"))
atexit.register(shutil.rmtree, _PREFECT_HOME, ignore_errors=True)
os.environ["PREFECT_HOME"] = str(_PREFECT_HOME)
os.environ["PREFECT_PROFILES_PATH"] = str(_PREFECT_HOME / "profiles.toml")
os.environ["PREFECT_SERVER_EPHEMERAL_ENABLED"] = "false"
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["GX_ANALYTICS_ENABLED"] = "false"
os.environ.pop("PREFECT_API_URL", None)


def _drain_prefect_workers() -> None:
    """Send the last run logs and events while the server is still up (as prefect_test_harness does)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogHandler

    APILogHandler().flush()
    EventsWorker.drain_all()


class _Server:
    """The session's server process, launched once (early, in the background) and stopped once."""

    process: subprocess.Popen[bytes] | None = None
    api_url = ""
    log_path = _PREFECT_HOME / "server.log"

    @classmethod
    def launch(cls) -> None:
        if cls.process is None:
            port = free_loopback_port()
            cls.api_url = f"http://127.0.0.1:{port}/api"
            cls.process = start_prefect_server(port, cls.log_path, f"sqlite+aiosqlite:///{_PREFECT_HOME / 'server.db'}")
            atexit.register(cls.stop)

    @classmethod
    def stop(cls) -> None:
        if cls.process is not None:
            stop_process_group(cls.process, timeout=10)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Launch the server as soon as the run is known to need it, so it starts while other tests run."""
    if session.config.option.collectonly:
        return
    if any("prefect_server" in getattr(item, "fixturenames", ()) for item in session.items):
        _Server.launch()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _Server.stop()  # also after Ctrl-C; the fixture's teardown normally did it already


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[str]:
    """One real Prefect server for the whole run; yields its API URL.

    In-process flow runs reach it through Prefect's settings, subprocesses through ``PREFECT_API_URL`` in the
    environment. Stopped (the whole process group) at the end of the session, at interpreter exit if the
    session is interrupted, and by the kernel if pytest itself is killed.
    """
    import prefect.context
    from prefect.settings import PREFECT_API_URL, temporary_settings

    _Server.launch()  # a no-op when collection already launched it
    assert _Server.process is not None
    wait_until_healthy(_Server.process, _Server.api_url, _Server.log_path)
    api_url = _Server.api_url
    os.environ["PREFECT_API_URL"] = api_url
    try:
        with (
            temporary_settings(updates={PREFECT_API_URL: api_url}),
            prefect.context._temporary_global_settings_context(prefect.context.get_settings_context()),
        ):
            yield api_url
            _drain_prefect_workers()
    finally:
        os.environ.pop("PREFECT_API_URL", None)
        _Server.stop()
