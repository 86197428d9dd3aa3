"""Exit codes and the one-line errors of every command: one place maps bad input, a flow's final state and any
other exception to the exit code, with a message on stderr and no traceback (unless ``FAIRGATE_DEBUG=1``).

0 pass (or done), 1 fail (a verdict, a drift alert or a monitored window failing the policy, a refused promotion:
the flow's summary says so), 2 invalid input or configuration (:class:`~fairgate.errors.FairgateError`, a flow's
``InvalidInput`` state), 3 an internal error (a crash, Prefect unreachable: a bug, never 1, which would mean "fail"),
4 insufficient: an audit in which nothing could be judged (``fairgate.verdicts``; 0 under the policy's
``ci_cd_gate.insufficient: allow``).
Prefect is imported only when a flow runs.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, cast

import typer
from rich.markup import escape

from cli import console
from fairgate.errors import FairgateError
from fairgate.verdicts import EXIT_INSUFFICIENT as _EXIT_INSUFFICIENT

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State

EXIT_FAIL, EXIT_INVALID, EXIT_INTERNAL = 1, 2, 3
EXIT_INSUFFICIENT = _EXIT_INSUFFICIENT  # 4: nothing judged (the verdicts' own code, fairgate.verdicts)
DEBUG_VARIABLE = "FAIRGATE_DEBUG"  # set (to 1): a crash raises with its traceback instead of the one-line message

_err = console.stderr()
# Set by the console entry point: messages are held here and printed by release_messages() once the command is
# done (after the Prefect server's and the log workers' last lines), so the error is the last line on stderr.
_held: list[tuple[str, str]] | None = None


def debug_hint(words: str = " for details") -> str:
    """The hint that ends a crash's message, `` (set <DEBUG_VARIABLE>=1 for details)`` by default."""
    return f" (set {DEBUG_VARIABLE}=1{words})"


def _debugging() -> bool:
    return bool(os.environ.get(DEBUG_VARIABLE))


def print_error(message: str, label: str = "error:") -> None:
    """``error: <message>`` on stderr, on one line (a message's own line breaks and indents are joined); the
    message is text, not markup (``'fairgate[mlflow]'`` keeps its brackets)."""
    message = " ".join(line.strip() for line in message.splitlines() if line.strip())
    if _held is not None:
        _held.append((label, message))
        return
    _print_line(label, message)


def hold_messages() -> None:
    """From now on, hold the ``error:``/``warning:`` lines for :func:`release_messages` (the entry point's)."""
    global _held
    _held = []


def release_messages() -> None:
    """Print the held lines, in order (the process is ending: nothing else will write to stderr)."""
    global _held
    held, _held = _held or [], None
    for label, message in held:
        _print_line(label, message)


def _print_line(label: str, message: str) -> None:
    _err.print(f"[bold red]{label}[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True)


def fail(message: str, code: int = EXIT_INVALID, label: str = "error:") -> NoReturn:
    """Print the error and end the command with ``code`` (2: invalid input, by default)."""
    print_error(message, label)
    raise typer.Exit(code)


@contextlib.contextmanager
def refusing() -> Iterator[None]:
    """Bad input or configuration raised inside the block (a FairgateError): its message, exit 2."""
    try:
        yield
    except FairgateError as exc:
        fail(exc.message)


def flow_state(
    flow: Callable[..., Any],
    parameters: dict[str, Any],
    *,
    what: str,
    status: str | None = None,
    hint: str = debug_hint(),
) -> State:
    """Run a Prefect flow to its final state, under a progress line on stderr when ``status`` is given.

    An exception out of the flow's own handling (Prefect unreachable, a bug) exits 3 with
    ``<what> could not run: <type>: <message><hint>``; with DEBUG_VARIABLE set it is raised instead.
    """
    _keep_echoes_off_the_terminal()
    try:
        if status is None:
            return cast("State", flow(**parameters, return_state=True))
        with _err.status(status):
            return cast("State", flow(**parameters, return_state=True))
    except Exception as exc:  # not bad input; never exit 1 (= "fail") for it
        if _debugging():
            raise
        fail(f"{what} could not run: {type(exc).__name__}: {exc}{hint}", EXIT_INTERNAL)


#: Prefect's client services log this while they deliver what they still hold at the process's end (the events
#: of a run refused at once, typically): a progress note, not a problem, printed beside the command's own lines.
_DRAIN_PROGRESS = "Still processing items"


class _PrintedByTheCli(logging.Filter):
    """Drops the log records that only repeat an invalid input's message (flows.runtime.INVALID_INPUT_ECHO):
    the command prints it once, as its ``error:`` line; and Prefect's services' drain progress notes
    (:data:`_DRAIN_PROGRESS`; their other warnings, such as a dropped item, still show)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from flows.runtime import INVALID_INPUT_ECHO

        if record.levelno == logging.WARNING and str(record.msg).startswith(_DRAIN_PROGRESS):
            return False
        return not getattr(record, INVALID_INPUT_ECHO, False)


def _keep_echoes_off_the_terminal() -> None:
    """On the terminal's log handlers (Prefect's console handler, on the root logger): no echo of the error."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and not any(
            isinstance(f, _PrintedByTheCli) for f in handler.filters
        ):
            handler.addFilter(_PrintedByTheCli())


def flow_summary(state: State, *, what: str, verdicts: Collection[str] = ()) -> dict[str, Any]:
    """The summary (result) of a finished flow run. A Failed state exits 2 when it is ``InvalidInput`` (its
    message), else 3 (``<what> crashed``), except the Failed states named in ``verdicts``, which hold a verdict:
    their summary is returned, and its ``exit_code`` is the command's."""
    from flows.runtime import INVALID_INPUT

    if state.is_failed() and state.name not in verdicts:
        if state.name == INVALID_INPUT:
            fail(state.message or "invalid input")
        fail(f"{what} crashed: {state.message}; this is a bug in fairgate, please report it", EXIT_INTERNAL)
    return cast(dict[str, Any], state.result(raise_on_failure=False))


def run_flow(
    flow: Callable[..., Any],
    parameters: dict[str, Any],
    *,
    what: str,
    status: str | None = None,
    hint: str = debug_hint(),
    verdicts: Collection[str] = (),
) -> dict[str, Any]:
    """Run a Prefect flow and return its summary: :func:`flow_state`, then :func:`flow_summary`.

    Its outputs are atomic as a whole (tasks/outputs.py ``atomic_outputs``): a refusal, a crash or an interrupt
    removes every file and folder the run created; only a run with a summary (a verdict) keeps them.
    """
    from tasks.outputs import atomic_outputs  # Prefect is imported only when a flow runs

    with atomic_outputs():
        state = flow_state(flow, parameters, what=what, status=status, hint=hint)
        return flow_summary(state, what=what, verdicts=verdicts)


def run_guarded(app: Callable[[], Any]) -> None:
    """Run the command line; bad input exits 2, any other exception exits 3 (never 1, which means "fail")."""
    try:
        app()
    except FairgateError as exc:
        print_error(exc.message)
        raise SystemExit(EXIT_INVALID) from None
    except Exception as exc:
        if _debugging():
            raise
        print_error(
            f"{type(exc).__name__}: {exc}; this is a bug in fairgate, please report it"
            f"{debug_hint(' for the traceback')}"
        )
        raise SystemExit(EXIT_INTERNAL) from None
