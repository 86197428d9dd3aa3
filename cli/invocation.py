"""The command line that started this run, as the audit document records it (``command_line``).

The report's "How to reproduce" block prints it, so it names what was typed: ``sys.argv`` shell-quoted with
:func:`shlex.join`, the program named ``fairgate`` whatever path started it. When the process's arguments are not
this command's (the command invoked in-process, e.g. by a test's ``CliRunner``), the line is rebuilt from the
options given on the command line, in their long form and the order the command declares them.
"""

from __future__ import annotations

import shlex
import sys
from typing import Any

import typer

PROGRAM = "fairgate"


def command_line(context: typer.Context) -> str:
    """The running command (``context``: the command's own, typer passes it), shell-quoted."""
    argv = sys.argv[1:]
    if context.info_name in argv:
        return shlex.join([PROGRAM, *argv])
    return shlex.join(_rebuilt(context))


def _rebuilt(context: typer.Context) -> list[str]:
    """The command with the options and arguments the command line gave (defaults left out)."""
    words = [PROGRAM, *context.command_path.split()[1:]]
    for param in context.command.params:
        name = param.name or ""
        source = context.get_parameter_source(name)
        value = context.params.get(name)
        if source is None or source.name != "COMMANDLINE" or value is None:
            continue
        if param.param_type_name == "argument":
            words.append(str(value))
        elif getattr(param, "is_flag", False):
            words.append(_long(param.opts if value else _secondary(param) or param.opts))
        elif isinstance(value, list | tuple):  # a repeatable option: given once per value
            for item in value:
                words += [_long(param.opts), str(item)]
        else:
            words += [_long(param.opts), str(value)]
    return words


def _secondary(param: Any) -> list[str]:
    return list(getattr(param, "secondary_opts", []) or [])


def _long(opts: list[str]) -> str:
    return next((o for o in opts if o.startswith("--")), opts[0])
