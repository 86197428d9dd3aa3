"""The warm validation process (tasks/validation/warm.py): the suites an audit runs give the same validation
record, the same errors and the same refusals whether they run in the warm process or in the asking one, and a
warm process that died is replaced by running the suites in the asking process.

Each check runs in a fresh interpreter: the warm process is forked from a process with one thread, and whether
Great Expectations was imported is a property of the process.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest
from fresh_python import fresh_python, last_json
from pipeline_helpers import POLICY_FAILING

REPO = Path(__file__).resolve().parents[2]

_BOTH_PATHS = """
import json, os, signal, sys
from tasks.validation import gx_suite, warm
started = gx_suite.start_warm_process("on")  # first: one thread, nothing but pandas imported yet
import yaml
from fairgate.errors import DataError
from fairgate.policy.core import Policy
from tasks.inputs.align import stage
from tasks.validation.validate import validate_inputs

folder, killed = sys.argv[1], sys.argv[2] == "kill"
policy = Policy.model_validate(yaml.safe_load(open(os.path.join(folder, "policy.yaml")))["fairness_checker"])
CASES = ["clean", "duplicate_ids", "nan_scores", "labels_not_binary", "undeclared_value"]

def validations():
    seen = {}
    for case in CASES:
        files = {role: os.path.join(folder, case, f"{role}.csv") for role in ("predictions", "labels", "attributes")}
        staged = stage(policy, files["predictions"], files["labels"], files["attributes"])
        try:
            seen[case] = validate_inputs.fn(staged).to_dict()
        except DataError as exc:
            seen[case] = {"refused": str(exc)}
    try:  # an error raised inside GE (here: an expectation it does not have)
        frame, unknown = staged.con.sql("select 1 as x").to_df(), gx_suite.Expectation("NoSuch", {})
        gx_suite.run_suite("bad", frame, [unknown], "COMPLETE")
    except Exception as exc:
        seen["error"] = f"{type(exc).__name__}: {exc}"
    return seen

if killed:  # the warm process dies before the first suite: the suites run here
    pid = warm._child.pid
    os.kill(pid, signal.SIGKILL)
first = validations()
report = {"started": started, "ge_here": "great_expectations" in sys.modules, "alive": warm._child is not None}
if killed:
    try:
        os.waitpid(pid, os.WNOHANG)
        report["reaped"] = False
    except ChildProcessError:
        report["reaped"] = True
warm.stop()
second = validations()  # no warm process now: in this process
report["first"], report["second"] = first, second
print(json.dumps(report, default=str))
"""


def _without_times(value: object) -> object:
    """GE's result documents name when each batch was loaded: the one field two runs of a suite differ in."""
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if k != "ge_load_time"}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory, compas_split: dict[str, Path]) -> Path:
    """The COMPAS split, clean and with one hostile edit per case, under the failing policy."""
    folder = tmp_path_factory.mktemp("warm")
    (folder / "policy.yaml").write_text(POLICY_FAILING)
    edits = {
        "clean": {},
        "duplicate_ids": {"labels": "select * from t union all (select * from t order by id limit 2)"},
        "nan_scores": {
            "predictions": "select id, case when id % 97 = 0 then 'NaN'::double else score end as score, y_pred from t"
        },
        "labels_not_binary": {
            "labels": "select id, case when id = 7 then 2 else two_year_recid end as two_year_recid from t"
        },
        "undeclared_value": {
            "attributes": "select id, case when id = 9 then 'Martian' else race end as race, sex, age_cat from t"
        },
    }
    con = duckdb.connect()
    for case, edit in edits.items():
        (folder / case).mkdir()
        for role, path in compas_split.items():
            con.read_csv(str(path)).create_view("t", replace=True)
            con.sql(edit.get(role, "select * from t")).to_csv(str(folder / case / f"{role}.csv"))
    con.close()
    return folder


def _run(folder: Path, mode: str) -> dict[str, object]:
    return last_json(fresh_python(_BOTH_PATHS, str(folder), mode))


def test_the_warm_process_and_this_one_give_the_same_validations_refusals_and_errors(cases: Path) -> None:
    seen = _run(cases, "warm")
    assert seen["started"] is True
    assert seen["ge_here"] is False  # every suite of the first round ran in the warm process
    assert seen["alive"] is True
    first, second = _without_times(seen["first"]), _without_times(seen["second"])
    assert first == second
    assert isinstance(first, dict)
    clean = first["clean"]
    assert clean["success"] is True
    assert clean["n_expectations"] == len(clean["checks"]) > 8
    assert clean["great_expectations_version"] == clean["results"][0]["meta"]["great_expectations_version"]
    refused = {case: first[case]["refused"] for case in ("duplicate_ids", "nan_scores", "labels_not_binary")}
    assert "duplicate values" in refused["duplicate_ids"]
    assert "missing (null or NaN)" in refused["nan_scores"]
    assert "'2'" in refused["labels_not_binary"]
    assert "'Martian'" in first["undeclared_value"]["refused"]
    assert first["error"].startswith("AttributeError: ")
    assert "NoSuch" in first["error"]


def test_a_warm_process_that_died_is_replaced_by_running_the_suites_here(cases: Path) -> None:
    seen = _run(cases, "kill")
    assert seen["started"] is True
    assert seen["alive"] is False  # forgotten at its first suite
    assert seen["reaped"] is True  # and reaped: no zombie
    assert seen["ge_here"] is True  # the suites ran in this process
    assert _without_times(seen["first"]) == _without_times(seen["second"])
    assert "duplicate values" in seen["first"]["duplicate_ids"]["refused"]  # type: ignore[index]


_ONE_CPU = """
import json, os, threading
from tasks.validation import gx_suite, warm
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # as under `taskset -c 0` or a one-CPU container
one_cpu = gx_suite.start_warm_process("on")
os.sched_setaffinity(0, set(range(os.cpu_count())))
started = threading.Thread(target=threading.Event().wait, args=(5,), daemon=True)
started.start()
with_a_thread = gx_suite.start_warm_process("on")
print(json.dumps({"one_cpu": one_cpu, "with_a_thread": with_a_thread, "child": warm._child is not None}))
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2, reason="needs 2 CPUs")
def test_no_warm_process_on_one_cpu_or_beside_another_thread() -> None:
    assert last_json(fresh_python(_ONE_CPU)) == {
        "one_cpu": False,
        "with_a_thread": False,
        "child": False,
    }


_WHEN = """
import json, os, pathlib, sys, tempfile
from tasks.validation import gx_suite, warm
cpus = len(os.sched_getaffinity(0))
loadavg = pathlib.Path(tempfile.mkdtemp()) / "loadavg"
warm._LOADAVG = loadavg
def runnable(n):  # /proc/loadavg as the kernel writes it; the 1-minute average says the opposite
    loadavg.write_text(f"{0.0 if n > cpus else 9.0} 0.0 0.0 {n}/300 4242\\n")
off = gx_suite.start_warm_process("off")
runnable(cpus + 1)  # this process and one other per CPU
busy = gx_suite.start_warm_process("auto")
runnable(cpus)  # one CPU without another task
idle = gx_suite.start_warm_process("auto")
warm.stop()
loadavg.unlink()  # no such file (not Linux): the 1-minute load average decides
os.getloadavg = lambda: (float(cpus), 0.0, 0.0)
busy_average = gx_suite.start_warm_process("auto")
os.getloadavg = lambda: (cpus - 0.1, 0.0, 0.0)
idle_average = gx_suite.start_warm_process("auto")
warm.stop()
print(json.dumps({"off": off, "busy": busy, "idle": idle, "busy_average": busy_average, "idle_average": idle_average}))
"""


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or (os.cpu_count() or 1) < 2, reason="needs 2 CPUs")
def test_the_warm_process_is_started_by_default_only_when_a_cpu_is_idle() -> None:
    """On a saturated machine the child competes with the command (its start took 2.6 s instead of 1.4 s, the
    gate ran slower): ``auto`` forks only when fewer other tasks are runnable than there are usable CPUs (read
    from /proc/loadavg now, else the 1-minute load average); ``off`` never."""
    assert last_json(fresh_python(_WHEN)) == {
        "off": False,
        "busy": False,
        "idle": True,
        "busy_average": False,
        "idle_average": True,
    }


def test_an_unknown_warm_validation_setting_is_refused_before_anything_runs(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cli import app

    args = ["audit", "--policy", str(tmp_path / "p.yaml"), "--predictions", "p.csv", "--labels", "l.csv"]
    done = CliRunner().invoke(app, [*args, "--attributes", "a.csv"], env={"FAIRGATE_WARM_VALIDATION": "sometimes"})
    assert done.exit_code == 2
    assert "FAIRGATE_WARM_VALIDATION='sometimes' is not a choice: set it to auto, on, off" in done.output
    assert list(tmp_path.iterdir()) == []
