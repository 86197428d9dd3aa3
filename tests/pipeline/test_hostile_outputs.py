"""The hostile corpus for what fairgate writes: every command that writes refuses bad configuration before any
work (exit 2, a message naming the fix) and leaves nothing behind, neither in ``--out`` nor in the trail; a full
disk is exit 2 "no space left on <folder>" with nothing written or recorded; an interrupted run leaves nothing.

"Nothing written" is checked by listing the whole test folder (inputs, ``--out``, the trail, their sizes and
times) before and after the command. The up-front refusals run in-process; the full-disk cases need a small
tmpfs (root, as CI runs; skipped elsewhere) and run the flow, as does the interrupted mitigation.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest
from pipeline_helpers import COMPAS_CSV, InProcessRunner, Inputs

from cli import app
from fairgate.errors import FairgateError
from tasks.outputs import atomic_outputs, make_folder, roll_back_open_outputs, write_atomic
from tasks.store import record_run

SMTP_POLICY = """\
  delivery:
    recipients: [risk@example.org]
    smtp: {host: localhost, port: 2525, security: none}
"""
MONITORING_POLICY = "  monitoring: {period: week}\n"


@dataclass
class Case:
    """A command line, the exit code and message fragments expected, and the environment it runs in."""

    args: list[str]
    expected: list[str]
    env: dict[str, str] = field(default_factory=dict)
    code: int = 2


@dataclass
class World:
    """The COMPAS inputs (``Inputs``), a training file and a second predictions file beside them."""

    i: Inputs

    @property
    def folder(self) -> Path:
        return self.i.folder

    @property
    def training(self) -> Path:
        return self.folder / "train.csv"

    @property
    def candidate(self) -> Path:
        return self.folder / "candidate.csv"

    def fifo(self) -> Path:
        path = self.folder / "trail.fifo"
        os.mkfifo(path)
        return path

    def csv_trail(self) -> Path:
        path = self.folder / "trail.csv"
        path.write_text("seq,run_id\n1,r1\n")
        return path

    def keyed_trail(self) -> Path:
        path = self.folder / "keyed.duckdb"
        document = {"run_id": "r1", "verdict": "pass", "model": {"name": "m", "version": "1"}, "results": []}
        os.environ["FAIRGATE_TRAIL_KEY"] = "s3cret-key"
        try:
            record_run.fn(path, document, policy_text="{}", inputs={}, validation={}, join_report={}, cube_cells=[])
        finally:
            del os.environ["FAIRGATE_TRAIL_KEY"]
        return path

    def policy_with(self, section: str) -> Path:
        path = self.folder / "policy_extra.yaml"
        path.write_text(self.i.policy.read_text() + section)
        return path

    def audit(self, *extra: str) -> list[str]:
        return self.i.args(*extra)

    def reweighing(self, *extra: str) -> list[str]:
        args = ["mitigate", "--method", "reweighing", "--policy", str(self.i.policy), "--training"]
        return [*args, str(self.training), "--out", str(self.i.out), *extra]

    def thresholds(self, *extra: str) -> list[str]:
        args = ["mitigate", "--method", "thresholds", "--policy", str(self.i.policy)]
        args += ["--predictions", str(self.i.predictions), "--labels", str(self.i.labels)]
        return [*args, "--attributes", str(self.i.attributes), "--out", str(self.i.out), *extra]

    def retrain(self, *extra: str) -> list[str]:
        args = ["mitigate", "--method", "retrain", "--policy", str(self.i.policy), "--training", str(self.training)]
        args += ["--evaluation", str(self.training), "--estimator", str(self.folder / "model.joblib")]
        return [*args, "--out", str(self.i.out), *extra]

    def compare(self, *extra: str) -> list[str]:
        args = ["compare", "--policy", str(self.i.policy), "--baseline", str(self.i.predictions)]
        args += ["--candidate", str(self.candidate), "--labels", str(self.i.labels)]
        return [*args, "--attributes", str(self.i.attributes), "--out", str(self.i.out), *extra]


def _make_world(inputs: Inputs) -> World:
    world = World(inputs)
    con = duckdb.connect()
    query = "select id, priors_count, age, two_year_recid, race, sex, age_cat from read_csv_auto(?)"
    con.execute(f"copy ({query}) to '{world.training}' (header)", [str(COMPAS_CSV)])
    con.close()
    world.candidate.write_bytes(inputs.predictions.read_bytes())
    return world


# --- the trail, the anchor, the key: refused before any work -------------------------------------------------


def audit_trail_a_fifo(w: World) -> Case:
    return Case(w.audit("--trail", str(w.fifo())), ["trail.fifo", "not a regular file (a FIFO"])


def audit_anchor_a_directory(w: World) -> Case:
    return Case(w.audit(), ["anchor file", "it is a directory"], env={"FAIRGATE_TRAIL_ANCHOR": str(w.folder)})


def audit_keyed_trail_without_its_key(w: World) -> Case:
    return Case(w.audit("--trail", str(w.keyed_trail())), ["keyed.duckdb", "FAIRGATE_TRAIL_KEY is not set"])


def audit_an_input_table_in_the_trail(w: World) -> Case:
    trail = w.folder / "warehouse.duckdb"
    con = duckdb.connect(str(trail))
    con.execute("create table labels as select * from read_csv_auto(?)", [str(w.i.labels)])
    con.close()
    args = w.audit("--trail", str(trail))
    args[args.index("--labels") + 1] = f"{trail}::labels"
    return Case(args, ["--trail", "warehouse.duckdb", "would replace that input"])


def reweighing_trail_a_csv(w: World) -> Case:
    return Case(w.reweighing("--trail", str(w.csv_trail())), ["trail.csv", "not a DuckDB database file"])


def reweighing_trail_a_folder(w: World) -> Case:
    folder = w.folder / "trails"
    folder.mkdir()
    return Case(w.reweighing("--trail", str(folder)), ["--trail", "is a folder", "audit_trail.duckdb"])


def reweighing_keyed_trail_without_its_key(w: World) -> Case:
    return Case(w.reweighing("--trail", str(w.keyed_trail())), ["FAIRGATE_TRAIL_KEY is not set"])


def reweighing_out_unwritable(w: World) -> Case:
    args = w.reweighing()
    args[args.index("--out") + 1] = "/proc/fairgate-test/out"  # no new folders there, even for root
    return Case(args, ["--out", "'/proc'", "not writable"])


def thresholds_trail_a_fifo(w: World) -> Case:
    return Case(w.thresholds("--trail", str(w.fifo())), ["not a regular file (a FIFO"])


def thresholds_anchor_a_directory(w: World) -> Case:
    return Case(w.thresholds(), ["anchor file", "it is a directory"], env={"FAIRGATE_TRAIL_ANCHOR": str(w.folder)})


def retrain_trail_a_csv(w: World) -> Case:
    return Case(w.retrain("--trail", str(w.csv_trail())), ["trail.csv", "not a DuckDB database file"])


def compare_trail_a_csv(w: World) -> Case:
    return Case(w.compare("--trail", str(w.csv_trail())), ["trail.csv", "not a DuckDB database file"])


def compare_out_unwritable(w: World) -> Case:
    args = w.compare()
    args[args.index("--out") + 1] = "/proc/fairgate-test/out"
    return Case(args, ["--out", "'/proc'", "not writable"])


def monitor_trail_a_fifo(w: World) -> Case:
    args = ["monitor", "run", "--policy", str(w.policy_with(MONITORING_POLICY)), "--night", "2026-12-01"]
    args += w.audit("--trail", str(w.fifo()))[3:]  # the audit's inputs, --out, --model, --trail
    return Case(args, ["trail.fifo", "not a regular file (a FIFO"])


def proxy_out_is_its_input(w: World) -> Case:
    args = ["proxy", "--method", "bisg", "--input", str(w.i.attributes), "--id-col", "id", "--surname-col", "race"]
    return Case([*args, "--zip-col", "sex", "--out", str(w.i.attributes)], ["would replace that input"])


def proxy_out_unwritable(w: World) -> Case:
    args = ["proxy", "--method", "bisg", "--input", str(w.i.attributes), "--id-col", "id", "--surname-col", "race"]
    return Case([*args, "--zip-col", "sex", "--out", "/proc/people.csv"], ["--out", "'/proc'", "not writable"])


def deploy_timezone_on_mars(w: World) -> Case:
    args = ["deploy", "--demo", "--out", str(w.i.out), "--timezone", "Mars/Olympus"]
    return Case(args, ["--timezone 'Mars/Olympus' is not a time zone", "IANA"])


def deploy_pool_name_with_a_command(w: World) -> Case:
    args = ["deploy", "--demo", "--out", str(w.i.out), "--pool", "a/b;rm -rf"]
    return Case(args, ["--pool 'a/b;rm -rf'", "letters, digits"])


def registry_watch_of_a_missing_database(w: World) -> Case:
    pytest.importorskip("mlflow")
    uri = f"sqlite:///{w.folder / 'nodb.sqlite'}"
    return Case(["registry", "watch", "--tracking-uri", uri], ["no MLflow database", "nodb.sqlite"])


def outbox_send_trail_a_fifo(w: World) -> Case:
    w.i.out.mkdir()  # the audits' folder, with its outbox
    args = ["outbox", "send", "--policy", str(w.policy_with(SMTP_POLICY)), "--out", str(w.i.out)]
    return Case([*args, "--trail", str(w.fifo())], ["not a regular file (a FIFO"])


CASES: list[Callable[[World], Case]] = [
    audit_trail_a_fifo,
    audit_anchor_a_directory,
    audit_keyed_trail_without_its_key,
    audit_an_input_table_in_the_trail,
    reweighing_trail_a_csv,
    reweighing_trail_a_folder,
    reweighing_keyed_trail_without_its_key,
    reweighing_out_unwritable,
    thresholds_trail_a_fifo,
    thresholds_anchor_a_directory,
    retrain_trail_a_csv,
    compare_trail_a_csv,
    compare_out_unwritable,
    monitor_trail_a_fifo,
    proxy_out_is_its_input,
    proxy_out_unwritable,
    deploy_timezone_on_mars,
    deploy_pool_name_with_a_command,
    registry_watch_of_a_missing_database,
    outbox_send_trail_a_fifo,
]


def _listing(folder: Path) -> list[tuple[str, int, int]]:
    """Everything under ``folder``: path, size and modification time (a rewritten file shows)."""
    return sorted((str(p.relative_to(folder)), p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*"))


def _refused(result_code: int, stderr: str, case: Case) -> None:
    message = " ".join(stderr.split())  # rich wraps long lines
    assert result_code == case.code, (result_code, stderr)
    assert "Traceback" not in stderr
    for fragment in case.expected:
        assert fragment in message, (fragment, message)
    assert "error:" in message, stderr


@pytest.fixture
def world(inputs: Inputs) -> World:
    return _make_world(inputs)


@pytest.mark.parametrize("make_case", CASES, ids=[c.__name__ for c in CASES])
def test_a_command_that_writes_refuses_bad_configuration_before_it_writes(
    make_case: Callable[[World], Case],
    world: World,
    runner: InProcessRunner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(world.folder)  # a stray relative output would show in the listing
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY", raising=False)
    case = make_case(world)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    before = _listing(world.folder)
    result = runner.invoke(app, case.args)
    _refused(result.exit_code, result.stderr, case)
    assert not world.i.out.exists() or (world.i.out.is_dir() and case.args[0] == "outbox")
    assert _listing(world.folder) == before  # nothing written: no --out, no trail, no lock file, no input changed


# --- the rule itself -------------------------------------------------------------------------------------------


def test_what_a_refused_command_created_is_removed_and_what_it_found_stays(tmp_path: Path) -> None:
    existing = tmp_path / "out"
    existing.mkdir()
    (existing / "earlier.json").write_text("{}")  # another run's file

    def refused_after_writing() -> None:
        with atomic_outputs():
            write_atomic(existing / "new" / "deep" / "a.json", b"{}")
            write_atomic(existing / "b.json", b"{}")
            make_folder(tmp_path / "fresh" / "empty")
            raise FairgateError("refused after writing")

    with pytest.raises(FairgateError):
        refused_after_writing()
    assert sorted(name for name, _, _ in _listing(tmp_path)) == ["out", "out/earlier.json"]


def test_a_finished_command_keeps_its_files_and_a_nested_refusal_its_own_only(tmp_path: Path) -> None:

    def inner_run() -> None:
        with atomic_outputs():
            write_atomic(tmp_path / "out" / "inner.json", b"{}")
            raise FairgateError("the inner run refused")

    with atomic_outputs():
        write_atomic(tmp_path / "out" / "kept.json", b"{}")
        with pytest.raises(FairgateError):
            inner_run()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["kept.json"]


def test_a_signal_rolls_back_the_open_outputs(tmp_path: Path) -> None:
    """What cli/signals.py calls before it ends the process: nothing of the running command stays."""
    with atomic_outputs():
        write_atomic(tmp_path / "out" / "partial.json", b"{}")
        roll_back_open_outputs()
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_a_full_or_read_only_disk_is_refused_with_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    def failing_replace(source: str, target: Path) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr("tasks.outputs.os.replace", failing_replace)
    with pytest.raises(FairgateError) as refused, atomic_outputs():
        write_atomic(tmp_path / "out" / ".partial-r1" / "report.json", b"{}")
    words = "no space left on" if code == errno.ENOSPC else "read-only file system"
    assert f"cannot write {tmp_path}/out/report.json" in refused.value.message
    assert words in refused.value.message
    assert list(tmp_path.iterdir()) == []


# --- full disks, through the commands (a 64 KiB tmpfs) ----------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: an audit's JSON, a weights file or a trail do not fit. Needs root (CI runs as root)."""
    mount = tmp_path / "full"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


FULL_DISK_CASES = {
    "audit --out": lambda w, full: w.audit("--trail", str(w.folder / "trail.duckdb"), "--quiet"),
    "audit --trail": lambda w, full: w.audit("--trail", str(full / "trail.duckdb"), "--quiet"),
    "mitigate reweighing --out": lambda w, full: w.reweighing("--trail", str(w.folder / "trail.duckdb")),
}


@pytest.mark.slow
@pytest.mark.parametrize("where", list(FULL_DISK_CASES))
def test_a_full_disk_is_exit_2_with_nothing_written_or_recorded(
    where: str, world: World, full_disk: Path, runner: InProcessRunner
) -> None:
    args = FULL_DISK_CASES[where](world, full_disk)
    if where.endswith("--out"):
        args[args.index("--out") + 1] = str(full_disk / "out")
    before = _listing(world.folder)
    result = runner.invoke(app, args)
    _refused(result.exit_code, result.stderr, Case(args, ["no space left on", str(full_disk)]))
    assert [name for name, _, _ in _listing(full_disk)] == (["trail.duckdb.lock"] if "trail" in where else [])
    assert [entry for entry in _listing(world.folder) if not entry[0].startswith("full")] == [
        entry for entry in before if not entry[0].startswith("full")
    ]


# --- an interrupt: nothing left in --out ------------------------------------------------------------------------


@pytest.mark.slow
def test_sigterm_during_the_threshold_mitigation_leaves_nothing(world: World) -> None:
    """SIGTERM once the thresholds, frontier and mitigated predictions are written (before the audits end)."""
    out = world.i.out
    with (world.folder / "stderr.log").open("wb") as stderr:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "fairgate"), *world.thresholds()],
            cwd=world.folder,
            env={**os.environ, "COLUMNS": "160"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300
        while not list(out.glob("thresholds_*.json")):
            assert process.poll() is None, (world.folder / "stderr.log").read_text()
            assert time.monotonic() < deadline, "the thresholds were not written"
            time.sleep(0.05)
        assert list(out.glob("thresholds_*")), "something was written before the signal"
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert code == 143, (world.folder / "stderr.log").read_text()
    assert not out.exists(), sorted(str(p) for p in out.rglob("*"))
