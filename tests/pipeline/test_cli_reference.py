"""The command-line reference is generated from the commands: the committed page equals what
tools/write_cli_reference.py writes, and it holds every command and sub-command."""

from __future__ import annotations

from cli import COMMANDS
from tools import write_cli_reference as reference


def test_the_committed_cli_reference_is_what_the_script_writes() -> None:
    assert reference.PAGE_PATH.read_text(encoding="utf-8") == reference.markdown(), (
        "docs/reference/cli.md is stale: run .venv/bin/python tools/write_cli_reference.py"
    )


def test_every_command_and_sub_command_is_in_the_reference() -> None:
    page = reference.markdown()
    paths = [" ".join(path) for path, _, _ in reference._commands()]
    assert {f"fairgate {name}" for name in COMMANDS} <= set(paths)
    assert {"fairgate trail verify", "fairgate monitor run", "fairgate outbox send", "fairgate registry watch"} <= set(
        paths
    )
    for path in paths:
        assert f"`{path}`" in page, path
        assert f"Usage: {path}" in page, path
