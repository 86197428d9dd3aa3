"""The CLI's command table (cli/__init__.py ``COMMANDS``): ``fairgate --help`` lists every command from it without
importing any command module, and each listed line is the command's own help; every option has its help text,
and every command that prints a result has ``--json``. What the commands print when piped into a CI log (plain,
full-width tables, whole run ids, no wrapped metric names) is checked at the end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.core
from pipeline_helpers import POLICY_FAILING, Inputs

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


# --- --help: every option described, usage and summaries as the docs say ------------------------------------


def _leaf_commands() -> list[tuple[str, Any]]:
    """Every command a user runs (``trail list``, ``audit``, ...) with its click command, from the command table."""
    leaves = []
    for name in cli.COMMANDS:
        command = cli.load_command(name)
        subs = getattr(command, "commands", None) or {}
        leaves += [(f"{name} {sub}", sub_command) for sub, sub_command in subs.items()] or [(name, command)]
    return leaves


LEAVES = _leaf_commands()


@pytest.mark.parametrize(("path", "command"), LEAVES, ids=[path for path, _ in LEAVES])
def test_every_option_and_argument_has_help(path: str, command: Any) -> None:
    missing = [p.opts for p in command.params if not (getattr(p, "help", None) or "").strip()]
    assert not missing, f"fairgate {path}: no help for {missing}"
    assert (command.help or "").strip(), f"fairgate {path} has no description"


def _help(*argv: str) -> str:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "fairgate"), *argv, "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())


def test_help_reads_as_documented() -> None:
    shown = _help("trail", "show")
    assert "Usage: fairgate trail show [OPTIONS] RUN_ID_OR_SEQ Print one recorded run" in shown
    assert "{" not in shown.partition("Print")[0]
    assert "thresholds" in cli.COMMANDS["mitigate"].summary
    assert "default: the policy's audit_trail.path, else audit_trail.duckdb in --out" in _help("compare")
    assert "<bool>" not in _help("trail", "list")  # a flag is shown without a type


# --- --json on every command that prints a table or a result --------------------------------------------------

ALWAYS_JSON = {"trail show"}  # prints the recorded run as JSON, always
SERVES = {"explore"}  # a web app: it prints no result, its pages are the output


@pytest.mark.parametrize(("path", "command"), LEAVES, ids=[path for path, _ in LEAVES])
def test_every_command_that_prints_a_result_has_json(path: str, command: Any) -> None:
    flags = {flag for p in command.params for flag in getattr(p, "opts", [])}
    assert path in ALWAYS_JSON | SERVES or "--json" in flags, f"fairgate {path} has no --json"


# --- piped into a CI log: plain, full width, nothing cut ----------------------------------------------------


def _piped(args: list[str], cwd: Path, columns: str | None) -> subprocess.CompletedProcess[str]:
    """The installed command with stdout a pipe (as ``| cat`` or a CI runner), COLUMNS as given or unset."""
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    env |= {"COLUMNS": columns} if columns is not None else {}
    command = [str(Path(sys.executable).parent / "fairgate"), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory, compas_split: dict[str, Path], prefect_server: str) -> Inputs:
    """Two recorded audits of COMPAS under the failing policy (two run ids in the trail)."""
    folder = tmp_path_factory.mktemp("piped")
    inputs = Inputs(
        folder, *(compas_split[role] for role in ("predictions", "labels", "attributes")), folder / "p.yaml"
    )
    inputs.policy.write_text(POLICY_FAILING)
    for version in ("1", "2"):
        args = inputs.args("--quiet")
        args[args.index("--model-version") + 1] = version
        done = _piped(args, folder, "80")
        assert done.returncode == 1, done.stderr
    return inputs


@pytest.mark.slow
@pytest.mark.parametrize("columns", [None, "80"])
def test_trail_list_piped_shows_whole_run_ids(audited: Inputs, columns: str | None) -> None:
    from tasks.store import list_runs

    trail = audited.out / "audit_trail.duckdb"
    done = _piped(["trail", "list", "--trail", str(trail)], audited.folder, columns)
    assert done.returncode == 0, done.stderr
    runs = list_runs(trail)
    assert len(runs) == 2
    for run in runs:
        (line,) = [line for line in done.stdout.splitlines() if run["run_id"] in line]  # whole, on one line
        assert "compas" in line
    assert "…" not in done.stdout


@pytest.mark.slow
def test_compare_piped_at_80_columns_reads_in_a_ci_log(audited: Inputs) -> None:
    candidate = audited.folder / "candidate.csv"
    candidate.write_bytes(audited.predictions.read_bytes())
    args = ["compare", "--policy", str(audited.policy), "--baseline", str(audited.predictions)]
    args += ["--candidate", str(candidate), "--labels", str(audited.labels), "--attributes", str(audited.attributes)]
    done = _piped([*args, "--out", str(audited.folder / "compared")], audited.folder, "80")
    assert done.returncode in (0, 1), done.stderr
    lines = done.stdout.splitlines()
    assert 10 <= len(lines) <= 150, done.stdout
    assert "…" not in done.stdout
    for name in ("disparate_impact_ratio", "equal_opportunity_difference"):
        assert any(name in line for line in lines), done.stdout  # a metric's name whole, on one line


@pytest.mark.slow
def test_the_trail_listings_print_json(audited: Inputs) -> None:
    from tasks.store import list_runs

    trail = str(audited.out / "audit_trail.duckdb")
    for listing, expected in (("list", len(list_runs(trail))), ("registrations", 0), ("mitigations", 0)):
        done = _piped(["trail", listing, "--trail", trail, "--json"], audited.folder, "80")
        assert done.returncode == 0, done.stderr
        assert len(json.loads(done.stdout)) == expected, (listing, done.stdout)
