"""The command that ran an audit, as the document records it (``command_line``)."""

from __future__ import annotations

import shlex
import sys
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from cli.invocation import command_line

_app = typer.Typer()


@_app.command(name="demo")
def _demo(
    context: typer.Context,
    task: Annotated[str, typer.Option("--task")] = "binary",
    out: Annotated[str, typer.Option("--out", "-o")] = "fairness_reports",
    quiet: Annotated[bool, typer.Option("--quiet")] = False,
) -> None:
    print(command_line(context))


@_app.command(name="other")
def _other() -> None:  # two commands: the app is a group, the command named on its command line
    pass


def test_the_process_arguments_are_recorded_shell_quoted_as_fairgate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/fairgate", "demo", "-o", "my reports", "--quiet"])
    result = CliRunner().invoke(_app, ["demo", "-o", "my reports", "--quiet"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "fairgate demo -o 'my reports' --quiet"
    assert shlex.split(result.output) == ["fairgate", "demo", "-o", "my reports", "--quiet"]


def test_an_in_process_command_is_rebuilt_from_the_options_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["pytest", "-q", "tests"])  # not this command's arguments
    result = CliRunner().invoke(_app, ["demo", "--task", "multiclass"])
    assert result.output.strip() == "fairgate demo --task multiclass"  # defaults left out
    result = CliRunner().invoke(_app, ["demo", "--quiet", "-o", "a'b"])
    assert shlex.split(result.output) == ["fairgate", "demo", "--out", "a'b", "--quiet"]
