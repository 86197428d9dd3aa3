"""``fairgate``: the command line. Thin: parse options, run a flow, print, exit.

Exit codes: 0 pass, 1 fail, 2 invalid input or configuration (message on stderr, no traceback, nothing
written), 3 an internal error (a bug: please report it); cli/exits.py maps them in one place.

The commands are registered from one table, :data:`COMMANDS`: a command's module is imported only when the
command runs (or shows its own help), so ``fairgate --help`` imports none of them, nor Prefect or the engine.
"""

from __future__ import annotations

import functools
import gc
import importlib
import importlib.util
import os
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
import typer.core
import typer.main
from typer.models import CommandInfo, TyperInfo

import fairgate
from cli.exits import hold_messages, refusing, release_messages, run_guarded
from cli.signals import end_process, exit_on_signal
from fairgate.errors import FairgateError

PACKAGE_DIR = Path(fairgate.__file__).resolve().parent
DEMO_POLICY = PACKAGE_DIR / "policies" / "compas_demo.yaml"
DEMO_DATA = PACKAGE_DIR / "data" / "compas" / "compas-scores-two-years.csv"


@dataclass(frozen=True)
class Command:
    """One command: where it is (``module:attribute``, a command function or a ``typer.Typer`` of sub-commands)
    and its line in ``fairgate --help`` (the first paragraph of its own help; tests check they match)."""

    target: str
    summary: str
    optional: bool = False  # listed only when its module is installed

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]


COMMANDS = {
    "audit": Command(
        "cli.audit_cmd:audit",
        "Audit a model's predictions against a fairness policy. Exit 0 pass, 1 fail, 2 invalid input.",
    ),
    "demo": Command(
        "cli.audit_cmd:demo",
        "Audit a bundled real data set with its demo policy (binary: COMPAS risk scores, ProPublica data).",
    ),
    "deploy": Command(
        "cli.deploy_cmd:deploy",
        "Register the nightly, on-registration and on-demand deployments (idempotent: again = update).",
    ),
    "compare": Command(
        "cli.compare_cmd:compare",
        "Compare candidate models with the baseline on the same people. Exit 0: a candidate may be promoted (the "
        "chosen one is named), 1: none may, 2: invalid input.",
    ),
    "mitigate": Command(
        "cli.mitigate_cmd:mitigate",
        "Mitigate: reweigh the training data, retrain under the policy's constraint or fit group thresholds; the "
        "last two are audited before and after.",
    ),
    "proxy": Command(
        "cli.proxy_cmd:proxy",
        "Write one row per person: the id, a probability column per group, and the fallback used.",
        optional=True,
    ),
    "trail": Command(
        "cli.trail_cmd:trail_app", "The audit trail: list, show and verify recorded runs; list model registrations."
    ),
    "explore": Command(
        "cli.explore_cmd:explore",
        "Serve a read-only web view of the audit trail: models, audits, reports, explorers, trends, nights.",
    ),
    "outbox": Command("cli.outbox_cmd:outbox_app", "The outbox: report e-mails kept after a failed delivery."),
    "registry": Command(
        "cli.registry_cmd:registry_app", "The MLflow Model Registry in the loop (pip install 'fairgate[mlflow]')."
    ),
    "monitor": Command(
        "cli.monitor_cmd:monitor_app",
        "Monitor a model night by night: windowed fairness, change against a baseline, drift alerts.",
    ),
    "plan": Command(
        "cli.plan_cmd:plan",
        "Rows needed for the gate to fail on a disparity (simulated audits), or, with --audit, what an audit could"
        " detect per result.",
    ),
}


class LazyCommand(typer.core.TyperCommand):
    """A command's line in the group's help; the command itself is loaded when it is parsed (to run, or to show
    its own help): click calls ``make_context`` on the command it resolved, and the context is the real one's."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        assert self.name is not None
        return load_command(self.name).make_context(info_name, args, parent=parent, **extra)


class LazyGroup(typer.core.TyperGroup):
    """The ``fairgate`` group: one :class:`LazyCommand` per entry of :data:`COMMANDS`, in the table's order."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, command in COMMANDS.items():
            if not command.optional or importlib.util.find_spec(command.module) is not None:
                self.add_command(LazyCommand(name=name, help=command.summary, short_help=command.summary))


app = typer.Typer(
    name="fairgate",
    cls=LazyGroup,
    help="Fairness checker for ML models: audit predictions against a policy; the exit code gates deployment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Click's plain help: reads the same on a terminal and in a CI log, shows flags without a type and prints
    # brackets as written (Rich markup took `fairgate[mlflow]` for a style tag).
    rich_markup_mode=None,
)


@app.callback()
def _fairgate(ctx: typer.Context) -> None:
    # The group's own callback: none of its options (typer needs a callback, or commands, to make a group).
    if ctx.invoked_subcommand not in ("trail", "explore"):  # these never reach Prefect
        with refusing():
            check_prefect_api_url(os.environ.get("PREFECT_API_URL"))


def check_prefect_api_url(url: str | None) -> None:
    """A ``PREFECT_API_URL`` that is set must be an http(s) URL with a host: refused before any work (exit 2),
    never a crash (exit 3) once the flow starts.

    >>> check_prefect_api_url("http://127.0.0.1:4200/api")
    >>> check_prefect_api_url("::not a url::")
    Traceback (most recent call last):
    fairgate.errors.FairgateError: PREFECT_API_URL '::not a url::' is not an http(s) URL with a host; ...
    """
    if not url:
        return
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise FairgateError(
            f"PREFECT_API_URL {url!r} is not an http(s) URL with a host; set it to the Prefect server's API (e.g. "
            "http://127.0.0.1:4200/api), or unset it to let fairgate start a temporary local server"
        )


@functools.cache
def load_command(name: str) -> typer.core.TyperCommand | typer.core.TyperGroup:
    """The click command of ``COMMANDS[name]``, its module imported now; as ``app.command`` / ``app.add_typer``
    would have made it."""
    module, _, attribute = COMMANDS[name].target.partition(":")
    target = getattr(importlib.import_module(module), attribute)
    settings: dict[str, Any] = {
        "pretty_exceptions_short": app.pretty_exceptions_short,
        "rich_markup_mode": app.rich_markup_mode,
    }
    if isinstance(target, typer.Typer):
        group_info = TyperInfo(target, name=name)
        return typer.main.get_group_from_info(group_info, suggest_commands=app.suggest_commands, **settings)
    command = typer.main.get_command_from_info(CommandInfo(name=name, callback=target), **settings)
    assert isinstance(command, typer.core.TyperCommand)
    return command


def _command_environment(argv: list[str]) -> None:
    """The environment a command runs in, set before Prefect is imported (it reads its settings then); defaults
    only: what the user set stays."""
    # The ephemeral server's telemetry heartbeat writes to the SQLite database while the flow run does, and
    # logs "database is locked" tracebacks. Off unless the user turned it on.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    # Two audits started together each start an ephemeral server on the same SQLite database; on a busy machine
    # start-up (with migrations) can take longer than Prefect's default 20 s.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    if {"--quiet", "-q", "--json"} & set(argv):
        # Machines: Prefect's INFO lines off (warnings and errors still shown on stderr).
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
        # A local Dask cluster's INFO lines (scheduler, nanny, workers) too: dask reads DASK_* when imported.
        os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")


# A command spends most of its start-up importing (Prefect, Great Expectations, SciPy): hundreds of thousands of
# objects that live as long as the process. Python's cycle collector scans its youngest generation every 700
# net allocations by default, and during those imports that is about a tenth of the CPU, finding next to no
# garbage. Every 50,000 instead (the older generations' thresholds unchanged); docs/benchmarks/speed.md.
YOUNG_GENERATION_THRESHOLD = 50_000


def main() -> None:
    """Console entry point (``fairgate``)."""
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, *gc.get_threshold()[1:])
    exit_on_signal()  # Ctrl-C / SIGTERM: exit 130 / 143 (cli/signals.py)
    _command_environment(sys.argv[1:])
    hold_messages()  # the error line comes last, after the clean-up's log lines (cli/exits.py)
    try:
        run_guarded(app)
    except SystemExit as exc:
        if exc.code is not None and not isinstance(exc.code, int):
            release_messages()
            raise  # a message: Python prints it and exits 1
        end_process(exc.code or 0, release_messages)
    except BaseException:
        release_messages()
        raise
    end_process(0, release_messages)
