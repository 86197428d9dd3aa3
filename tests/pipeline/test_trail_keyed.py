"""The keyed trail (issue 10): HMAC chain, anchored head, damaged files, disk full while committing.

The attack the issue reproduced: rewrite run 1 from fail to pass and recompute the chain with the code's own
(unkeyed) hash function. A keyed trail reports it; an unkeyed one cannot (documented in docs/concepts/audit-trail.md).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pipeline_helpers import InProcessRunner, Inputs

from cli import app
from tasks.store import (
    GENESIS,
    RUN_COLUMNS,
    UNKEYED,
    TrailError,
    canonical,
    check_trail,
    list_runs,
    record_delivery,
    record_run,
    verify,
)
from tasks.store.chain import _run_hash
from tasks.store.prefect_tasks import _retry_unless_refused
from tasks.store.verification import _read_chains

KEY = "s3cret-trail-key-for-tests"


def _document(run_id: str) -> dict[str, Any]:
    result = {"metric": "disparate_impact_ratio", "slicing": ["sex"], "value": 0.7, "threshold": 0.8}
    return {"run_id": run_id, "verdict": "fail", "model": {"name": "m", "version": "1"}, "results": [result]}


def _record(path: Path, run_id: str) -> dict[str, Any]:
    return record_run.fn(
        path,
        _document(run_id),
        policy_text="fairness_checker: {}",
        inputs={},
        validation={},
        join_report={},
        cube_cells=[{"sex": "F", "rows": 4}],
    )


def _make_trail(path: Path) -> Path:
    for run_id in ("r1", "r2", "r3"):
        _record(path, run_id)
    record_delivery(path, "r2", ["a@example.org"], "sent", "smtp ok")
    return path


@pytest.fixture
def keyed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY", KEY)
    return _make_trail(tmp_path / "keyed.duckdb")


@pytest.fixture
def unkeyed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY", raising=False)
    return _make_trail(tmp_path / "unkeyed.duckdb")


def _cli(runner: InProcessRunner, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["trail", *args])
    return result.exit_code, " ".join((result.stdout + result.stderr).split())


def _rewrite_run1_as_pass(path: Path, *, relabel: bool) -> None:
    """The attacker: edit run 1's verdict, then recompute every run's hash with the unkeyed hash function."""
    with duckdb.connect(str(path)) as con:
        con.execute("update runs set verdict = 'pass', exit_code = 0 where seq = 1")
        con.execute("update metric_results set status = 'pass' where run_id = 'r1'")
        if relabel:
            con.execute("update runs set chain = ?", [UNKEYED])
        runs, metrics, cubes, _ = _read_chains(con)
        prev = GENESIS
        for row in runs:
            content = list(row[: len(RUN_COLUMNS)])
            new_hash = _run_hash(prev, content, metrics.get(row[1], []), cubes.get(row[1], []))
            con.execute("update runs set prev_hash = ?, run_hash = ? where seq = ?", [prev, new_hash, row[0]])
            prev = new_hash


def test_keyed_runs_are_labelled_and_verify(runner: InProcessRunner, keyed: Path) -> None:
    assert {run["chain"] for run in list_runs(keyed)} == {"hmac-sha256"}
    code, output = _cli(runner, "verify", "--trail", str(keyed))
    assert code == 0, output
    assert "intact: 3 runs, 1 deliveries; chain hmac-sha256" in output
    assert "warning" not in output


def test_keyed_hash_is_hmac_of_the_same_content(keyed: Path) -> None:
    """Independent recomputation: run 1's hash is HMAC-SHA256(key) over the fields, each ended by 0x1f."""
    import hmac

    with duckdb.connect(str(keyed), read_only=True) as con:
        runs, metrics, cubes, _ = _read_chains(con)
    row = list(runs[0][: len(RUN_COLUMNS)])
    parts = [GENESIS, *map(canonical, (row, metrics["r1"], cubes["r1"]))]
    message = b"".join(part.encode() + b"\x1f" for part in parts)
    assert runs[0][-1] == hmac.new(KEY.encode(), message, hashlib.sha256).hexdigest()


@pytest.mark.parametrize("relabel", [False, True], ids=["keep-label", "relabel-unkeyed"])
def test_rewritten_and_rehashed_run_is_caught_in_a_keyed_trail(
    runner: InProcessRunner, keyed: Path, relabel: bool
) -> None:
    _rewrite_run1_as_pass(keyed, relabel=relabel)
    code, output = _cli(runner, "verify", "--trail", str(keyed))
    assert code == 1, output
    assert "TAMPERED" in output
    assert ("run 1 is not keyed" if relabel else "run 1 (r1) was altered after recording") in output


def test_rewritten_and_rehashed_run_is_not_caught_in_an_unkeyed_trail(runner: InProcessRunner, unkeyed: Path) -> None:
    """The documented limit of an unkeyed chain: verify says intact, but warns that it proves nothing."""
    _rewrite_run1_as_pass(unkeyed, relabel=False)
    code, output = _cli(runner, "verify", "--trail", str(unkeyed))
    assert code == 0, output
    assert "intact: 3 runs, 1 deliveries; chain sha256 (unkeyed)" in output
    assert "warning: the chain of" in output
    assert "anyone who can write the file can rewrite a run and recompute the chain" in output


def test_keyed_trail_needs_its_key(runner: InProcessRunner, keyed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY")
    code, output = _cli(runner, "verify", "--trail", str(keyed))
    assert code == 2, output
    assert "is keyed (hmac-sha256) but FAIRGATE_TRAIL_KEY is not set" in output
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY", "the-wrong-key")
    code, output = _cli(runner, "verify", "--trail", str(keyed))
    assert code == 2, output
    assert "FAIRGATE_TRAIL_KEY is not the key the audit trail" in output


def test_recording_into_a_keyed_trail_without_the_key_is_refused(keyed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY")
    with pytest.raises(TrailError, match="set it to the key the trail was recorded with, to record runs"):
        _record(keyed, "r4")
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY", KEY)
    assert [run["run_id"] for run in list_runs(keyed)] == ["r1", "r2", "r3"]


def _make_version1_trail(path: Path) -> None:
    """A trail as TRAIL_VERSION 1 wrote it: no chain column, sha256 over the 16 original columns."""
    _make_trail(path)
    with duckdb.connect(str(path)) as con:
        con.execute("alter table runs drop column chain")
        con.execute("alter table deliveries drop column chain")
        prev = GENESIS
        for row in con.execute("select * exclude (prev_hash, run_hash) from runs order by seq").fetchall():
            metrics = con.execute(
                "select * from metric_results where run_id = ? order by position", [row[1]]
            ).fetchall()
            cubes = con.execute("select * from cubes where run_id = ?", [row[1]]).fetchall()
            digest = hashlib.sha256()
            for part in (prev, *map(canonical, (list(row), [list(m) for m in metrics], cubes))):
                digest.update(part.encode() + b"\x1f")
            con.execute("update runs set prev_hash = ?, run_hash = ? where seq = ?", [prev, digest.hexdigest(), row[0]])
            prev = digest.hexdigest()
        delivery = con.execute("select * exclude (prev_hash, row_hash) from deliveries").fetchone()
        assert delivery is not None
        digest = hashlib.sha256(f"{GENESIS}\x1f{canonical(list(delivery))}\x1f".encode())
        con.execute("update deliveries set row_hash = ?", [digest.hexdigest()])


def test_version1_trail_stays_readable_and_can_be_keyed_later(
    runner: InProcessRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v1.duckdb"
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY", raising=False)
    _make_version1_trail(path)
    code, output = _cli(runner, "verify", "--trail", str(path))
    assert code == 0, output
    assert "chain sha256 (unkeyed)" in output
    assert [run["chain"] for run in list_runs(path)] == [None, None, None]
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY", KEY)
    assert _record(path, "r4")["chain"] == "hmac-sha256"
    code, output = _cli(runner, "verify", "--trail", str(path))
    assert code == 1, output  # with the key set, unkeyed runs are not trusted unless declared as older
    assert "run 1 is not keyed (sha256 (unkeyed)) although FAIRGATE_TRAIL_KEY is set" in output
    assert "pass --unkeyed-until 1" in output
    code, output = _cli(runner, "verify", "--trail", str(path), "--unkeyed-until", "3")
    assert code == 0, output
    assert "chain mixed: 4 rows sha256 (unkeyed), 1 rows hmac-sha256" in output


def test_head_is_printed_and_anchored(
    runner: InProcessRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    anchor = tmp_path / "anchor.txt"
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY", KEY)
    monkeypatch.setenv("FAIRGATE_TRAIL_ANCHOR", str(anchor))
    trail = _make_trail(tmp_path / "trail.duckdb")
    heads = {run["seq"]: run["run_hash"] for run in list_runs(trail)}
    assert f"trail head: 3 {heads[3]}\n" in capsys.readouterr().err
    lines = anchor.read_text().splitlines()
    assert [line.split()[1:] for line in lines] == [[str(seq), head] for seq, head in heads.items()]
    code, output = _cli(runner, "verify", "--trail", str(trail), "--anchor", str(anchor))
    assert code == 0, output


def test_deleting_the_newest_runs_is_caught_by_the_anchor(
    runner: InProcessRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    anchor = tmp_path / "anchor.txt"
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY", KEY)
    monkeypatch.setenv("FAIRGATE_TRAIL_ANCHOR", str(anchor))
    trail = _make_trail(tmp_path / "trail.duckdb")
    with duckdb.connect(str(trail)) as con:
        con.execute("delete from runs where seq = 3")
        con.execute("delete from metric_results where run_id = 'r3'")
        con.execute("delete from cubes where run_id = 'r3'")
    code, output = _cli(runner, "verify", "--trail", str(trail))
    assert code == 0, output  # without the anchor, a cut at the end is invisible
    code, output = _cli(runner, "verify", "--trail", str(trail), "--anchor", str(anchor))
    assert code == 1, output
    assert "run 3 with hash" in output
    assert "is not in the trail: the newest runs were deleted" in output


def test_malformed_or_unwritable_anchor_is_exit_2(
    runner: InProcessRunner, keyed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad-anchor.txt"
    bad.write_text("2026-01-01T00:00:00 three abc\n")
    code, output = _cli(runner, "verify", "--trail", str(keyed), "--anchor", str(bad))
    assert code == 2, output
    assert "line 1 is not '<timestamp> <seq> <hash>'" in output
    monkeypatch.setenv("FAIRGATE_TRAIL_ANCHOR", str(tmp_path))  # a directory: refused before recording
    with pytest.raises(TrailError, match=r"the trail anchor file .* cannot be used"):
        _record(keyed, "r4")
    assert len(list_runs(keyed)) == 3


def _damage(kind: str, path: Path) -> Path:
    """A trail path damaged in one way (the keyed fixture's file, or something that is no trail at all)."""
    if kind == "directory":
        path = path.with_name("a-directory")
        path.mkdir()
    elif kind == "text-file":
        path.write_text("run 1: pass\n")
    elif kind == "empty-file":
        path.write_bytes(b"")
    elif kind == "other-duckdb":
        path.unlink()
        with duckdb.connect(str(path)) as con:
            con.execute("create table customers (id integer)")
    elif kind == "dropped-table":
        with duckdb.connect(str(path)) as con:
            con.execute("drop table metric_results")
    elif kind == "truncated":
        path.write_bytes(path.read_bytes()[:16384])  # the header survives, the data blocks do not
    return path


DAMAGE = [
    ("directory", 2, "is not an audit trail: it is a directory"),
    ("text-file", 2, "is not an audit trail: it is not a DuckDB database file"),
    ("empty-file", 2, "is not an audit trail: it is empty (0 bytes)"),
    ("other-duckdb", 2, "is not an audit trail: it is a DuckDB database without the trail's tables"),
    ("dropped-table", 1, "is damaged: table(s) metric_results are missing"),
    ("truncated", 1, "is damaged: IO Error: Could not read enough bytes"),
]


@pytest.mark.parametrize(("kind", "code", "message"), DAMAGE, ids=[d[0] for d in DAMAGE])
@pytest.mark.parametrize("command", [["verify"], ["list"], ["show", "1"]], ids=["verify", "list", "show"])
def test_damaged_files_are_reported_not_a_traceback(
    runner: InProcessRunner, keyed: Path, kind: str, code: int, message: str, command: list[str]
) -> None:
    path = _damage(kind, keyed)
    result = runner.invoke(app, ["trail", *command, "--trail", str(path)])
    output = " ".join(result.stderr.split())
    assert result.exit_code == code, (output, result.exception)
    assert message in output
    assert ("DAMAGED" in output) == (code == 1)
    assert "Traceback" not in result.stdout + result.stderr


class _DiskFullConnection:
    """A DuckDB connection whose commit fails as on a full disk, and whose rollback then fails as DuckDB's does."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "commit":
            self._con.execute("rollback")  # DuckDB aborts the transaction when the commit's write fails
            raise duckdb.IOException('IO Error: Could not write file "trail.duckdb.wal": No space left on device')
        if sql == "rollback":
            raise duckdb.TransactionException("TransactionContext Error: cannot rollback - no transaction is active")
        return self._con.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def test_disk_full_while_committing_says_so_and_loses_nothing(keyed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = list_runs(keyed)
    connect = duckdb.connect
    monkeypatch.setattr(
        duckdb,
        "connect",
        lambda path, read_only=False: _DiskFullConnection(connect(path, read_only=read_only)),
    )
    with pytest.raises(TrailError) as caught:
        _record(keyed, "r4")
    monkeypatch.undo()
    assert "No space left on device" in caught.value.message
    assert "cannot rollback" not in caught.value.message
    assert "Nothing was recorded and the trail is unchanged" in caught.value.message
    assert isinstance(caught.value.__cause__, duckdb.IOException)
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY", KEY)
    assert list_runs(keyed) == before
    assert verify(keyed)["ok"]


def test_key_from_a_prefect_secret_block(
    runner: InProcessRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAIRGATE_TRAIL_KEY_BLOCK names a Prefect Secret block; its value keys the chain like the variable would."""
    from prefect.blocks.system import Secret

    Secret(value=KEY).save("fairgate-test-trail-key", overwrite=True)
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY", raising=False)
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY_BLOCK", "fairgate-test-trail-key")
    trail = _make_trail(tmp_path / "trail.duckdb")
    code, output = _cli(runner, "verify", "--trail", str(trail))
    assert code == 0, output
    assert "chain hmac-sha256" in output
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY_BLOCK")
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY", KEY)  # the same key from the variable verifies the same chain
    assert verify(trail)["ok"]
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY")
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY_BLOCK", "no-such-block")
    code, output = _cli(runner, "verify", "--trail", str(trail))
    assert code == 2, output
    assert "FAIRGATE_TRAIL_KEY_BLOCK='no-such-block': cannot load that Prefect Secret block" in output


def test_a_flow_records_with_the_secret_block_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a flow run (as in `fairgate audit`) the block is loaded synchronously, and the run is keyed."""
    from prefect import flow
    from prefect.blocks.system import Secret

    Secret(value=KEY).save("fairgate-test-trail-key-flow", overwrite=True)
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY", raising=False)
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY_BLOCK", "fairgate-test-trail-key-flow")

    @flow
    def record_one(path: Path) -> dict[str, Any]:
        return record_run(
            path, _document("f1"), policy_text="", inputs={}, validation={}, join_report={}, cube_cells=[]
        )

    assert record_one(tmp_path / "trail.duckdb")["chain"] == "hmac-sha256"
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY_BLOCK")
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY", KEY)
    assert verify(tmp_path / "trail.duckdb")["ok"]


@pytest.mark.parametrize(("kind", "code", "message"), DAMAGE, ids=[d[0] for d in DAMAGE])
def test_check_trail_refuses_what_an_audit_could_not_record_in(keyed: Path, kind: str, code: int, message: str) -> None:
    """The up-front check for `--trail`: every damaged or foreign file is a TrailError with exit code 2."""
    check_trail(keyed)  # intact, key set: fine
    path = _damage(kind, keyed)
    with pytest.raises(TrailError) as caught:
        check_trail(path)
    assert caught.value.exit_code == 2
    assert message in caught.value.message


def test_check_trail_wants_the_key_of_a_keyed_trail(keyed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY")
    with pytest.raises(TrailError, match="is keyed"):
        check_trail(keyed)
    check_trail(keyed.with_name("new.duckdb"))  # not there yet: the audit creates it


def test_a_keyed_audit_prints_and_anchors_its_head(
    runner: InProcessRunner, inputs: Inputs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fairgate audit` end to end: the run is keyed, its head is on stderr and in the anchor file."""
    anchor = tmp_path / "anchor.txt"
    monkeypatch.setenv("FAIRGATE_TRAIL_KEY", KEY)
    monkeypatch.setenv("FAIRGATE_TRAIL_ANCHOR", str(anchor))
    result = runner.invoke(app, inputs.args("--quiet"))
    assert result.exit_code == 1, result.stderr  # the failing policy
    trail = inputs.out / "audit_trail.duckdb"
    (run,) = list_runs(trail)
    assert run["chain"] == "hmac-sha256"
    assert f"trail head: 1 {run['run_hash']}" in result.stderr
    assert anchor.read_text().split()[1:] == ["1", run["run_hash"]]
    code, output = _cli(runner, "verify", "--trail", str(trail), "--anchor", str(anchor))
    assert code == 0, output


class _FailedState:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def result(self) -> None:
        raise self.error


def test_record_run_retries_transient_errors_but_not_refusals() -> None:
    retry = _retry_unless_refused
    assert not retry(None, None, _FailedState(TrailError("not a trail")))
    assert retry(None, None, _FailedState(duckdb.IOException("IO Error: Could not set lock on file")))


def test_a_trail_under_a_file_is_refused_not_a_traceback(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(TrailError, match="cannot be written: its folder or lock file"):
        _record(blocker / "trail.duckdb", "r1")


def test_deleting_the_key_check_does_not_let_an_unkeyed_run_in(keyed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with duckdb.connect(str(keyed)) as con:
        con.execute("delete from trail_meta where key = 'key_check'")
    monkeypatch.delenv("FAIRGATE_TRAIL_KEY")
    with pytest.raises(TrailError, match="is keyed"):
        _record(keyed, "r4")


def test_trail_list_shows_whether_runs_are_keyed(runner: InProcessRunner, keyed: Path) -> None:
    result = runner.invoke(app, ["trail", "list", "--trail", str(keyed)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("│ keyed │") == 3
    assert "unkeyed" not in result.stdout
