"""A warm validation process: Great Expectations imported in a second process while the command starts.

Importing GE costs about a second of CPU (SQLAlchemy, the pydantic models of its fluent data sources, its
expectations: all run at import time), and an audit's start-up otherwise pays it on the same core as Prefect's
and the engine's imports, one after the other. ``fairgate audit`` and ``fairgate demo`` start this process first
thing (``gx_suite.start_warm_process``): the command forks (no second interpreter start, nothing the command
imported already imported again), the child imports GE and makes its ephemeral context on the other core, then
runs the suites the command asks for (:func:`ask`, from ``gx_suite.run_suite``) until the command ends. The
command's own process never imports GE.

The child runs exactly what the command would run itself (``gx_suite.suite_document``) and answers with GE's
result document; an error GE raises there is raised in the command with the same type and message. Where no
child runs (the command had threads already, GE was imported already, a Prefect worker, a Dask partition task,
a test) or the child is gone, ``ask`` answers ``None`` and the suite runs in the asking process, as before.

Protocol: pickled messages, each prefixed by its length, on two pipes. The child ignores SIGINT (the command
handles Ctrl-C), writes nothing to stdout, is killed by the kernel if the command dies (Linux
``PR_SET_PDEATHSIG``), ends at the end of its request pipe, and is reaped by the command (:func:`stop`, at exit).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

_HEADER = struct.Struct("!Q")  # each message: its length, then the pickle
_STOP_GRACE_S = 0.05  # an idle child ends at once on the end of its pipe; one still importing GE is killed


@dataclass
class _Child:
    pid: int
    requests: int  # the write end of the child's request pipe
    replies: int  # the read end of its reply pipe
    owner: int  # the process that forked it (a process forked from the command must not use it)
    lock: threading.Lock


_child: _Child | None = None


#: When the command forks the warm process (``FAIRGATE_WARM_VALIDATION``): ``auto`` (default) when the machine is
#: not saturated (fewer other runnable tasks than usable CPUs, :func:`_cpu_idle`), ``on`` whenever it may, ``off``
#: never.
WHEN = ("auto", "on", "off")


def start(prepare: Callable[[], object], run: Callable[..., Any], when: str = "auto") -> bool:
    """Fork the warm process, if this process may and it can help (one thread, GE not imported, fork available,
    a second CPU to run on, idle with ``when="auto"``): it calls ``prepare()``, then answers each request with
    ``run(*request)``."""
    global _child
    if when == "off" or _child is not None or not hasattr(os, "fork") or threading.active_count() != 1:
        return False  # threads: a forked child could inherit a lock another thread holds
    if "great_expectations" in sys.modules or _usable_cpus() < 2:
        return False  # nothing to warm, or no other CPU to warm it on (it would only add the child's costs)
    if when == "auto" and not _cpu_idle():
        return False  # on a busy machine the child competes with the command and the run takes longer
    request_read, request_write = os.pipe()
    reply_read, reply_write = os.pipe()
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(request_write)
        os.close(reply_read)
        _serve(parent, request_read, reply_write, prepare, run)
    os.close(request_read)
    os.close(reply_write)
    _child = _Child(pid, request_write, reply_read, parent, threading.Lock())
    atexit.register(stop)
    return True


def _cpu_idle() -> bool:
    """Whether a CPU is free now: fewer other runnable tasks than usable CPUs.

    Measured on 2 CPUs: with other work on both (load 2.4-4.2) the gate ran slower with the warm process than
    without it; with the benchmark's own runs alternating (load 1.5-2.2) 0.6-0.8 s faster. The runnable count is
    read now, not averaged: the 1-minute load average still counts a run that has just ended, and misses one that
    has just begun.
    """
    return _others_running() < _usable_cpus()


#: The kernel's load figures; the fourth field is "runnable/total" tasks at the time of reading (Linux).
_LOADAVG = Path("/proc/loadavg")
_SAMPLES = 3  # the fewest of a few readings a millisecond apart: a task waking for an instant is not a busy CPU


def _others_running() -> float:
    """Tasks other than this one running or waiting for a CPU: the fewest of a few readings of the runnable count
    (this process is one of them), or the 1-minute load average where the system does not tell (not Linux)."""
    try:
        readings = []
        for sample in range(_SAMPLES):
            if sample:
                time.sleep(0.001)
            runnable = _LOADAVG.read_text().split()[3].split("/")[0]
            readings.append(int(runnable) - 1)
        return float(min(readings))
    except (OSError, IndexError, ValueError):
        pass
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # no load figures at all: assume the machine is as it usually is, idle
        return 0.0


def _usable_cpus() -> int:
    """The CPUs this process may run on (a container's or ``taskset``'s limit, where the system tells)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def ask(request: tuple[Any, ...]) -> Any | None:
    """The warm process's answer to ``request`` (GE's result document), or None when there is no warm process
    (or it has gone: the caller then runs the suite itself). An error raised in the child is raised here."""
    child = _child
    if child is None or child.owner != os.getpid():
        return None
    with child.lock:
        try:
            _send(child.requests, request)
            status, answer = _receive(child.replies)
        except Exception:  # the child died, or its answer cannot be read here: the suite runs here
            _forget(child)
            return None
        except BaseException:  # interrupted mid-exchange: an answer may be left in the pipe, so no more asking
            _forget(child)
            raise
    if status == "error":
        raise answer
    return answer


def stop() -> None:
    """End the warm process and reap it (idempotent; registered with ``atexit`` by :func:`start`)."""
    child = _child
    if child is not None and child.owner == os.getpid():
        _forget(child)


def _forget(child: _Child) -> None:
    global _child
    _child = None
    for fd in (child.requests, child.replies):
        with contextlib.suppress(OSError):
            os.close(fd)
    with contextlib.suppress(ChildProcessError):
        if _ended(child.pid, _STOP_GRACE_S):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGKILL)
        os.waitpid(child.pid, 0)


def _ended(pid: int, within_s: float) -> bool:
    """Whether the child ended (and was reaped) within ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


# ----------------------------------------------------------------------------------------------- the child
def _serve(
    parent: int, requests: int, replies: int, prepare: Callable[[], object], run: Callable[..., Any]
) -> NoReturn:
    """The child's life: detach from the terminal's signals and stdout, prepare, answer until the pipe ends."""
    code = 0
    try:
        _detach(parent, (requests, replies))
        prepare()
        while True:
            try:
                request = _receive(requests)
            except EOFError:
                break
            _send(replies, _answer(run, request))
    except BaseException:  # the command falls back to running its suites itself
        code = 1
    finally:
        os._exit(code)  # never the command's atexit handlers, never back into its code


def _detach(parent: int, keep: tuple[int, int]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command handles Ctrl-C; the pipe's end stops this one
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the command's handler (its clean-up is the command's)
    if sys.platform.startswith("linux"):  # the kernel kills this process when the command dies, however
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # the command died before prctl
        os._exit(0)
    os.closerange(3, min(keep))  # none of the command's files, sockets or pipes is this process's business
    os.closerange(min(keep) + 1, max(keep))
    os.closerange(max(keep) + 1, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024)
    devnull = os.open(os.devnull, os.O_WRONLY)  # nothing on the command's stdout (its --json document)
    os.dup2(devnull, 1)
    os.close(devnull)


def _answer(run: Callable[..., Any], request: tuple[Any, ...]) -> tuple[str, Any]:
    """``("ok", document)``, or ``("error", exception)`` with the exception as GE raised it when it pickles, else
    a RuntimeError with its type and message."""
    try:
        return "ok", run(*request)
    except Exception as exc:  # raised in the command, as if the suite had run there
        try:
            pickle.loads(pickle.dumps(exc))
            return "error", exc
        except Exception:
            return "error", RuntimeError(f"{type(exc).__name__}: {exc}")


def _send(fd: int, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _receive(fd: int) -> Any:
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size))
    return pickle.loads(_read_exactly(fd, size))


def _read_exactly(fd: int, size: int) -> bytes:
    parts, left = [], size
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            raise EOFError("the other end of the pipe closed")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)
