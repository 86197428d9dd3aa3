"""The command line's consoles: Rich's own width on a terminal; full width when the output is piped.

Piped into a CI log (or ``| cat``), Rich would assume 80 columns and wrap a table's cells one word (or one
letter) per line and cut run ids. There the tables are printed at their natural width instead: nothing wrapped,
nothing cut, whatever ``COLUMNS`` says; a terminal keeps Rich's layout.
"""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console

from fairgate.engine.text import fmt, fmt_signed

#: The width a piped console lays lines out in: wider than any table the commands print, so none wraps.
PIPED_WIDTH = 10_000


def _console(stream: TextIO, *, stderr: bool) -> Console:
    piped = not _is_terminal(stream)
    return Console(stderr=stderr, width=PIPED_WIDTH if piped else None, soft_wrap=piped)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def stdout() -> Console:
    """The console for a command's results (tables, summaries)."""
    return _console(sys.stdout, stderr=False)


def stderr() -> Console:
    """The console for errors and warnings."""
    return _console(sys.stderr, stderr=True)


def number(value: float | None, *, signed: bool = False) -> str:
    """A number as a command's table prints it: the core's one rounding rule, "n/a" when there is none.

    >>> number(0.12345), number(-0.0342, signed=True), number(None)
    ('0.123', '−0.034', 'n/a')
    """
    if value is None:
        return "n/a"
    return fmt_signed(value) if signed else fmt(value)
