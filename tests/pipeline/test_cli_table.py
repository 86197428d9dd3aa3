"""The CLI's command table (cli/__init__.py ``COMMANDS``): ``fairgate --help`` lists every command from it without
importing any command module, and each listed line is the command's own help."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.core

import cli

REPO = Path(__file__).resolve().parents[2]

_IMPORTED_BY_HELP = """
import json, sys
import cli
try:
    cli.app(["--help"])
except SystemExit as exc:
    code = exc.code
sys.stderr.write(json.dumps({"code": code, "cli": sorted(m for m in sys.modules if m.startswith("cli."))}) + "\\n")
"""


def test_help_imports_no_command_module() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED_BY_HELP], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0
    assert not [name for name in report["cli"] if name.endswith("_cmd")], report
    for name in cli.COMMANDS:
        assert re.search(rf"^\W*{name}\s", done.stdout, re.MULTILINE), name


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_the_listed_line_is_the_commands_own_help(name: str) -> None:
    command = cli.load_command(name)
    assert command.name == name
    first_paragraph = " ".join((command.help or "").split("\n\n")[0].split())
    assert first_paragraph == cli.COMMANDS[name].summary


def test_a_sub_command_group_keeps_its_commands() -> None:
    trail = cli.load_command("trail")
    assert isinstance(trail, typer.core.TyperGroup)
    assert list(trail.commands) == ["list", "registrations", "mitigations", "show", "verify"]
