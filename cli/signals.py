"""Ctrl-C and SIGTERM end an audit within seconds and leave nothing behind; no Prefect server outlives the CLI.

* SIGINT (Ctrl-C, to the process group or to the PID alone) and SIGTERM raise :class:`AuditInterrupted` in the
  main thread. The flow run unwinds (its staging folder is removed, the trail transaction rolls back), then
  :func:`audit_guard` stops the ephemeral Prefect server this process started and ends the process at once
  with 130 / 143 (``os._exit``: metric threads still computing must not hold the exit up).
  SIGINT is handled even when the shell started the CLI with SIGINT ignored (a background job), because an
  audit nobody can interrupt is worse than one that ignores the terminal.
* If the run does not unwind within :data:`GRACE_SECONDS` (a thread or library swallowed the exception, a long
  C call), or a second signal arrives, a watchdog does the same clean-up itself and exits.
* SIGKILL cannot be handled: the ephemeral server is started here, from the main thread, in its own session
  (Ctrl-C to the terminal reaches only the CLI, which stops it in order) and with a parent-death signal
  (Linux ``PR_SET_PDEATHSIG``), so the kernel kills it when the CLI dies, however it dies.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, NoReturn

GRACE_SECONDS = 4.0
DRAIN_SECONDS = 5.0  # at most, per worker, for the last logs and events of a finished run
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


class AuditInterrupted(BaseException):
    """Raised in the main thread on SIGINT/SIGTERM. Not a KeyboardInterrupt: click would turn that into exit 1."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    """``preexec_fn`` for the server: the kernel sends it SIGKILL when the thread that started it dies.

    libc is loaded here, in the parent: the child (forked while other threads may hold the import lock) only
    makes the system call.
    """
    prctl = None
    if sys.platform.startswith("linux"):
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig = 1

    def preexec() -> None:
        if prctl is not None:
            prctl(pr_set_pdeathsig, signal.SIGKILL)
        if os.getppid() != parent_pid:  # the parent died between fork and prctl
            os._exit(1)

    return preexec


def _watched_server_class() -> type[Any]:
    """Prefect's ephemeral server, started in its own session and bound to the life of this process.

    Prefect looks its ephemeral server up as ``SubprocessASGIServer._instances[None]`` (as its own test
    harness does); an instance of this subclass registered there is the one every Prefect client uses.
    """
    import prefect
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import get_current_settings

    class WatchedServer(SubprocessASGIServer):
        def _run_uvicorn_command(self) -> subprocess.Popen[Any]:
            # The same command and environment as Prefect 3's SubprocessASGIServer; only the session and the
            # parent-death signal are added.
            command = [sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent)]
            command += ["--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1"]
            command += ["--port", str(self.port), "--log-level", "error", "--lifespan", "on"]
            server_env = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
            settings_env = get_current_settings().to_environment_variables(exclude_unset=True)
            return subprocess.Popen(
                command,
                env={**os.environ, **server_env, **settings_env},
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()),
            )

    return WatchedServer


class _Guard:
    """What a signal must clean up: the server this process started and the staging folders still open."""

    server: Any = None
    signum: int | None = None
    lock = threading.Lock()

    @classmethod
    def start_server(cls) -> None:
        """Start the ephemeral server now, from the main thread, when the flow would need one."""
        from prefect.settings import get_current_settings

        settings = get_current_settings()
        if settings.api.url or not settings.server.ephemeral.enabled:
            return  # a configured server: not ours to start or stop
        # Imported only here: the server's modules (FastAPI, SQLAlchemy, its ORM) take seconds, and a CLI run
        # against a running server (PREFECT_API_URL) never needs them.
        from prefect.server.api.server import SubprocessASGIServer

        if SubprocessASGIServer._instances.get(None) is None:
            cls.server = _watched_server_class()()
            cls.server.start()

    @classmethod
    def clean_up(cls) -> None:
        """Remove what the running command wrote (its staging folders, the files and folders its open output
        transactions created) and stop the server; safe to call from any thread, more than once."""
        outputs = sys.modules.get("tasks.outputs")  # not imported yet: nothing written (and no import now)
        with cls.lock:
            if outputs is not None:
                outputs.roll_back_open_outputs()
            server, cls.server = cls.server, None
        if server is not None:
            with contextlib.suppress(Exception):
                server.stop()

    @classmethod
    def stop_in_order(cls) -> None:
        """After a run: let the client's log and event workers deliver what they hold, then stop the server.

        Stopping the server while those requests are still in flight cancels them inside its SQLAlchemy
        session, and the server (whose stderr is the CLI's) prints a ``CancelledError`` traceback after a
        good run: the likely cause of the rare traceback of issue 10 (not reproduced in 15 runs).
        """
        if cls.server is None:
            return
        from prefect.events.worker import EventsWorker
        from prefect.logging.handlers import APILogWorker

        with contextlib.suppress(Exception):
            APILogWorker.drain_all(timeout=DRAIN_SECONDS)
            EventsWorker.drain_all(timeout=DRAIN_SECONDS)
        cls.clean_up()

    @classmethod
    def exit_now(cls, signum: int) -> None:
        """Clean up and end the process at once, whatever other threads are doing."""
        cls.clean_up()
        with contextlib.suppress(Exception):
            from cli.exits import release_messages  # what the command said before the signal

            release_messages()
            sys.stderr.write(f"\nfairgate: interrupted by {signal.Signals(signum).name}\n")
            sys.stderr.flush()
            sys.stdout.flush()
        os._exit(EXIT_CODES.get(signal.Signals(signum), 128 + signum))


def _watchdog(signum: int) -> None:
    threading.Timer(GRACE_SECONDS, _Guard.exit_now, args=(signum,)).start()


def _silence_logs() -> None:
    """Drop every log record from now on: the run's reports of its own unwinding are noise, not news.

    A signal that arrives while DuckDB runs a query is raised inside DuckDB's signal check, which turns it into
    ``RuntimeError('Query interrupted')``; Prefect would log that as a failed task with its traceback. The CLI
    says itself that the run was interrupted (:meth:`_Guard.exit_now`, written to stderr, not logged).
    """
    import logging

    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            handler.addFilter(lambda record: False)


def _in_finalizer(frame: FrameType | None) -> bool:
    """Whether Python is running a finalizer here (a weakref callback, ``__del__``): an exception raised in one
    is printed as "Exception ignored" and dropped, so the run would go on as if no signal came."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename.endswith(("weakref.py", "_weakrefset.py")):
            return True
        frame = frame.f_back
    return False


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _in_finalizer(frame):  # raise it again a moment later, outside the finalizer
        main = threading.main_thread().ident
        if main is not None:
            threading.Timer(0.01, signal.pthread_kill, args=(main, signum)).start()
            return
    if _Guard.signum is not None:  # a second signal: no more waiting
        _Guard.exit_now(signum)
    _Guard.signum = signum
    _silence_logs()
    _watchdog(signum)
    raise AuditInterrupted(signum)


def _exit_at_once(signum: int, frame: FrameType | None) -> None:
    _Guard.exit_now(signum)


def exit_on_signal() -> None:
    """Outside an audit (start-up, the checks before the flow, the trail commands): SIGINT/SIGTERM end the
    command at once with 130/143, never with click's "Aborted!" and exit 1 (which would mean "the policy
    fails"). What a command that runs no audit flow had written (its open output transactions) is removed."""
    for signum in EXIT_CODES:
        signal.signal(signum, _exit_at_once)


@contextlib.contextmanager
def audit_guard() -> Iterator[None]:
    """Around a command that runs the audit flow: signals end it cleanly, the server dies with the process.

    Must be entered in the main thread. On SIGINT/SIGTERM the body unwinds, the clean-up runs and the process
    exits with 130/143; on a normal end the server this guard started is stopped once the run's last logs
    and events are delivered.
    """
    previous = {signum: signal.signal(signum, _on_signal) for signum in EXIT_CODES}
    # During a flow run Prefect installs its own SIGTERM handler (raising TerminationSignal, which a finalizer
    # drops as above); the module name it installs is pointed at this one, so SIGTERM ends the run as SIGINT does.
    from prefect.utilities import engine as prefect_engine

    prefect_handler = prefect_engine._prefect_sigterm_handler
    prefect_engine._prefect_sigterm_handler = _on_signal  # type: ignore[assignment]
    try:
        _Guard.start_server()
        yield
    except AuditInterrupted as exc:
        _Guard.exit_now(exc.signum)
    finally:
        if _Guard.signum is not None:  # interrupted, but the exception was swallowed on the way out
            _Guard.exit_now(_Guard.signum)
        _Guard.stop_in_order()
        prefect_engine._prefect_sigterm_handler = prefect_handler
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def end_process(code: int, last_words: Callable[[], None] | None = None) -> NoReturn:
    """End the CLI once its command is done: as the interpreter would (non-daemon threads joined, the atexit
    handlers run: Prefect's log and event workers deliver what they hold, logging flushes), then ``os._exit``.

    What that skips is only the interpreter's teardown, freeing every object of Prefect, Great Expectations,
    WeasyPrint and matplotlib one by one: about 1 s of CPU after an audit, 5 s on a busy machine (measured with
    bench/latency.py), while every file is already closed, renamed or removed.
    """
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    if last_words is not None:  # the command's own error line: after every log line of the clean-up
        with contextlib.suppress(Exception):
            last_words()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more to say
            stream.flush()
    os._exit(code)
