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


# Parallel runs (pytest-xdist; addopts: ``-n auto --dist loadfile``). Each worker is a process of its own: it
# imports this file, so it has its own Prefect home and its own server (and its own MLflow server, SMTP servers and
# session fixtures). The unit of work sent to a worker is a test file, so a module-scoped fixture runs once.
MAX_WORKERS = 4  # each worker starts a Prefect server (and its session fixtures): more costs more than it saves
# Test files that read one costly session fixture: each tuple (of files, or of folders ending in "/") is one unit
# of work (one worker), so the fixture runs once. (Not xdist_group marks: pytest-xdist's loadgroup does not tag
# the tests' ids under pytest 9.2.)
SHARED_UNITS = (
    ("tests/report/test_report_layout.py", "tests/report/test_trend_demo.py"),  # two_demo_runs
    ("tests/registry/",),  # mlflow_server (tests/registry/conftest.py): one MLflow server for the run
)


def _unit_of(path: str) -> str | None:
    """The ``SHARED_UNITS`` entry a test file (a path relative to the repository) belongs to, by its first name."""
    for unit in SHARED_UNITS:
        if any(path == name or (name.endswith("/") and path.startswith(name)) for name in unit):
            return unit[0]
    return None


def _names_only_files(config: pytest.Config) -> bool:
    """Whether the command line names test files or tests only (no folder): a targeted run, one process."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return False
    return all(Path(arg.split("::", 1)[0]).is_file() for arg in config.args)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per usable core (at most ``MAX_WORKERS``); none (this process runs the tests, with
    no second Prefect server) when the command line names files or tests only. ``-n N`` on the command line wins."""
    if "PYTEST_XDIST_AUTO_NUM_WORKERS" in os.environ:
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    if _names_only_files(config):
        return 0
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadfile``: a test file is one unit of work, the files of a ``SHARED_UNITS`` entry one unit
    together; units are handed out in the workers' collection order (see ``pytest_collection_modifyitems``)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return _unit_of(path) or path

    config.option.loadscopereorder = False  # not by test count: the long files first, as collected below
    return FileScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a pytest-xdist worker: the files holding a ``slow`` test, and the ``SHARED_UNITS``, first (the long
    units first: the other worker fills in with the many short files, and no long file starts last). Each file's
    tests stay together and in their order; a run without workers keeps the plain collection order."""
    if not hasattr(config, "workerinput"):
        return
    root = config.rootpath
    early = {item.path for item in items if item.get_closest_marker("slow")}
    early |= {item.path for item in items if _unit_of(item.path.relative_to(root).as_posix())}
    items.sort(key=lambda item: item.path not in early)  # stable: the order within each file is kept


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
