"""The command line's consoles: Rich's own width on a terminal; full width when the output is piped.

Piped into a CI log (or ``| cat``), Rich would assume 80 columns and wrap a table's cells one word (or one
letter) per line and cut run ids. There the tables are printed at their natural width instead: nothing wrapped,
nothing cut, whatever ``COLUMNS`` says; a terminal keeps Rich's layout.
"""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console

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
