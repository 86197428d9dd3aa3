"""The CLI starts at once: ``fairgate --help`` and ``fairgate trail list|show|verify`` load no heavy library.

Deterministic stand-in for a start-up time limit (bench/latency.py measures the time itself): each command runs in
a fresh interpreter, which then reports which of the heavy modules (Prefect ~2 s, scipy ~1 s, Great Expectations
~5 s, WeasyPrint, matplotlib, ...) it imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fresh_python import fresh_python
from pipeline_helpers import Inputs

import fairgate
from tasks.store import record_run

REPO = Path(__file__).resolve().parents[2]
HEAVY = ["prefect", "scipy", "great_expectations", "weasyprint", "matplotlib", "jinja2", "pandas", "sklearn"]
# `fairgate --help` reads no data either.
HEAVY_FOR_HELP = [*HEAVY, "numpy", "polars", "pyarrow", "duckdb"]

_RUN_AND_REPORT = """
import json, sys
import cli
try:
    cli.app({argv!r})
except SystemExit as exc:
    code = exc.code
heavy = sorted({{name.partition(".")[0] for name in sys.modules}} & set({heavy!r}))
sys.stderr.write(json.dumps({{"code": code, "heavy": heavy}}) + "\\n")
"""


def _fresh(code: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter (``env``: added to this environment)."""
    return fresh_python(code, cwd=cwd, env=env)


def _run_cli(argv: list[str], heavy: list[str]) -> tuple[int, list[str], str]:
    """Run the CLI app in a fresh interpreter; its exit code, the heavy modules it imported, and its stdout."""
    done = _fresh(_RUN_AND_REPORT.format(argv=argv, heavy=heavy))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], report["heavy"], done.stdout


def test_help_imports_no_engine_prefect_or_data_library() -> None:
    code, heavy, out = _run_cli(["--help"], HEAVY_FOR_HELP)
    assert code == 0
    assert "audit" in out
    assert "trail" in out
    assert "proxy" in out
    assert heavy == []


@pytest.mark.parametrize("argv", [["audit", "--help"], ["proxy", "--help"], ["trail", "--help"]])
def test_command_help_imports_no_heavy_library(argv: list[str]) -> None:
    code, heavy, out = _run_cli(argv, HEAVY_FOR_HELP)
    assert code == 0
    assert "--" in out
    assert heavy == []


_AUDIT_AND_REPORT = """
import json, os, sys
import cli
from tasks.validation import warm
try:
    cli.app({argv!r})
except SystemExit as exc:
    code = exc.code
child = warm._child
alive = child is not None and os.waitpid(child.pid, os.WNOHANG) == (0, 0)
report = {{"code": code, "ge": "great_expectations" in sys.modules, "warm_alive": alive}}
warm.stop()
report["reaped"] = child is not None and warm._child is None
sys.stderr.write(json.dumps(report) + "\\n")
"""


def test_the_gate_imports_no_great_expectations_when_its_warm_process_validates(inputs: Inputs) -> None:
    """``fairgate audit --json`` hands its suites to the warm validation process it forked at its start
    (tasks/validation/warm.py): the command's own process never imports Great Expectations."""
    # on: whatever the machine's load (by default the warm process starts only when a CPU is idle)
    env = {"FAIRGATE_WARM_VALIDATION": "on"}
    done = _fresh(_AUDIT_AND_REPORT.format(argv=inputs.args("--json")), cwd=inputs.folder, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report == {"code": 1, "ge": False, "warm_alive": True, "reaped": True}  # COMPAS fails the policy
    document = json.loads(done.stdout)
    assert document["validation"]["success"] is True
    assert len(document["validation"]["results"]) > 5


def _record(path: Path, run_id: str) -> None:
    record_run.fn(
        path,
        {"run_id": run_id, "verdict": "pass", "model": {"name": "m", "version": "1"}, "n_rows": 3, "results": []},
        policy_text="fairness_checker: {}",
        inputs={"labels": {"sha256": "00"}},
        validation={"success": True},
        join_report={"matched": 3},
        cube_cells=[{"sex": "F", "y_true": 1, "y_pred": 1, "rows": 3}],
    )


def test_trail_commands_import_no_prefect_engine_ge_or_weasyprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY", raising=False)
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY_BLOCK", raising=False)
    trail = tmp_path / "trail.duckdb"
    for run_id in ("r1", "r2"):
        _record(trail, run_id)

    code, heavy, out = _run_cli(["trail", "list", "--trail", str(trail), "--json"], HEAVY)
    assert code in (0, None)
    assert [run["run_id"] for run in json.loads(out)] == ["r1", "r2"]
    assert heavy == []

    code, heavy, out = _run_cli(["trail", "show", "2", "--trail", str(trail)], HEAVY)
    assert code in (0, None)
    assert json.loads(out)["run_id"] == "r2"
    assert heavy == []

    code, heavy, out = _run_cli(["trail", "verify", "--trail", str(trail), "--json"], HEAVY)
    assert code == 0
    assert json.loads(out)["ok"] is True
    assert heavy == []


def test_the_trail_task_is_still_a_prefect_task() -> None:
    """Made on first use (tasks/store/__init__.py ``__getattr__``): still the retried, uncached Prefect task."""
    from prefect import Task

    assert isinstance(record_run, Task)
    assert record_run.name == "record run"
    assert record_run.retries == 2


def test_lazy_package_exports_are_the_public_names() -> None:
    """``fairgate`` loads its engine on first use; every public name still resolves, to the engine's object."""
    from fairgate.engine.audit import audit

    assert set(fairgate.__all__) == set(fairgate._EXPORTS)
    for name in fairgate.__all__:
        assert getattr(fairgate, name) is not None
    assert fairgate.audit is audit
    with pytest.raises(AttributeError):
        _ = fairgate.no_such_name


@pytest.mark.slow
def test_the_cli_ends_fast_but_only_after_its_last_logs_reached_the_server(tmp_path: Path) -> None:
    """``fairgate`` ends with ``os._exit`` (cli/signals.py ``end_process``, no interpreter teardown): the flow
    run's last log lines, sent by Prefect's log worker at exit, still reach the server, and the outputs and the
    exit code are the audit's."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, LogFilter, LogFilterFlowRunId
    from prefect.client.schemas.sorting import FlowRunSort

    out = tmp_path / "out"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "fairgate"), "demo", "--out", str(out)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stderr  # COMPAS fails the demo policy
    assert sorted("".join(p.suffixes) for p in out.iterdir() if p.name.startswith("fairness_")) == [
        ".explorer.html",
        ".html",
        ".json",
        ".junit.xml",
        ".model_card.json",
        ".model_card.md",
        ".pdf",
    ]
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["fairness-audit"])),
            sort=FlowRunSort.START_TIME_DESC,
            limit=1,
        )[0]
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run.id])))
    assert flow_run.state is not None
    assert flow_run.state.is_completed()
    messages = [log.message for log in logs]
    assert any(m.startswith("verdict fail: ") for m in messages)
    # The flow run's very last line: its final state, with the verdict and the failed metrics.
    assert any(m.startswith("Finished in state Completed('verdict: fail; failed: ") for m in messages), messages[-3:]


_THRESHOLDS_IN_A_COMMAND = """
import gc, json, sys
import cli
default = gc.get_threshold()
cli.run_guarded = lambda app: sys.stderr.write(json.dumps({"default": default, "command": gc.get_threshold()}) + "\\n")
sys.argv = ["fairgate", "--help"]
cli.main()
"""


def test_a_command_collects_young_cycles_less_often_and_keeps_the_older_thresholds() -> None:
    """The start-up's imports are not scanned for garbage every 700 allocations (cli/__init__.py)."""
    done = subprocess.run(
        [sys.executable, "-c", _THRESHOLDS_IN_A_COMMAND], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stderr.strip().splitlines()[-1])
    import cli

    assert seen["command"] == [cli.YOUNG_GENERATION_THRESHOLD, *seen["default"][1:]]
    assert seen["command"][0] > seen["default"][0]
