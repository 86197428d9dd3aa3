"""``fairgate audit --dask-address`` on partitioned COMPAS: each partition checked and cubed on a Dask worker
(a real ``distributed.LocalCluster`` of two worker processes), the cubes summed, the metrics fanned out on the
same cluster, all against the session's real Prefect server. The result equals the single-process audit."""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pipeline_helpers import COMPAS_CSV, POLICY_FAILING, InProcessRunner

from cli import app

distributed = pytest.importorskip("distributed")

N_PARTS = 4
METRIC_TOLERANCE = 1e-12


@pytest.fixture(scope="module")
def dask_address(prefect_server: str) -> Iterator[str]:
    """A LocalCluster of two single-threaded worker processes; started after the Prefect server, so the
    workers inherit PREFECT_API_URL (a worker without it would start an ephemeral Prefect server of its own)."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", memory_limit="2GiB"
    ) as cluster:
        yield cluster.scheduler_address


def write_partitions(folder: Path, query: str = "select * from compas") -> dict[str, Path]:
    """COMPAS as predictions/, labels/ and attributes/ folders of N_PARTS Parquet files, partition k holding the
    people with id % N_PARTS = k (so the partitions' id ranges overlap, and the exact cross-partition id check
    runs)."""
    con = duckdb.connect()
    con.read_csv(str(COMPAS_CSV), header=True, sep=",").create_view("raw")
    con.sql(query.replace("compas", "raw")).create_view("compas")
    columns = {
        "predictions": "id, decile_score / 10.0 as score, cast(score_text in ('Medium', 'High') as integer) as y_pred",
        "labels": "id, two_year_recid",
        "attributes": "id, race, sex, age_cat",
    }
    folders = {}
    for role, select in columns.items():
        folders[role] = folder / role
        folders[role].mkdir(parents=True)
        for k in range(N_PARTS):
            relation = con.sql(f"select {select} from compas where id % {N_PARTS} = {k} order by id")
            relation.to_parquet(str(folders[role] / f"part-{k:03d}.parquet"))
    con.close()
    return folders


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_partitions(tmp_path_factory.mktemp("compas-parts"))


def audit_args(policy: Path, inputs: dict[str, Path], out: Path, *extra: str) -> list[str]:
    args = ["audit", "--policy", str(policy), "--out", str(out), "--model", "compas", "--model-version", "1"]
    for role, path in inputs.items():
        args += [f"--{role}", str(path)]
    return [*args, "--quiet", *extra]


def document_in(out: Path) -> dict[str, Any]:
    (path,) = out.glob("fairness_*.json")
    return dict(json.loads(path.read_text()))


def assert_close(single: Any, dask: Any, where: str) -> None:
    """Equal documents: counts and texts exactly, numbers to METRIC_TOLERANCE."""
    if isinstance(single, dict):
        assert single.keys() == dask.keys(), where
        for key in single:
            assert_close(single[key], dask[key], f"{where}.{key}")
    elif isinstance(single, list):
        assert len(single) == len(dask), where
        for i, (a, b) in enumerate(zip(single, dask, strict=True)):
            assert_close(a, b, f"{where}[{i}]")
    elif isinstance(single, float) and isinstance(dask, float):
        assert math.isclose(single, dask, rel_tol=0, abs_tol=METRIC_TOLERANCE) or (
            math.isnan(single) and math.isnan(dask)
        ), (where, single, dask)
    else:
        assert single == dask, (where, single, dask)


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("policy") / "policy.yaml"
    path.write_text(POLICY_FAILING)
    return path


@pytest.fixture(scope="module")
def both_audits(
    tmp_path_factory: pytest.TempPathFactory,
    policy_file: Path,
    partitioned: dict[str, Path],
    compas_split: dict[str, Path],
    dask_address: str,
    runner: InProcessRunner,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The single-process audit of the COMPAS files and the Dask audit of their partitions (run once)."""
    out = tmp_path_factory.mktemp("audits")
    single = runner.invoke(app, audit_args(policy_file, compas_split, out / "single"))
    assert single.exit_code == 1, single.output  # POLICY_FAILING fails on COMPAS
    on_dask = runner.invoke(app, audit_args(policy_file, partitioned, out / "dask", "--dask-address", dask_address))
    assert on_dask.exit_code == 1, (on_dask.output, on_dask.stderr)
    return document_in(out / "single"), document_in(out / "dask")


def test_dask_audit_equals_the_single_process_audit(
    both_audits: tuple[dict[str, Any], dict[str, Any]], partitioned: dict[str, Path]
) -> None:
    reference, document = both_audits
    assert document["n_rows"] == reference["n_rows"] == 7214
    # Groups (counts, every metric with its interval, exact AUC included), results, verdict, diagnostics.
    assert any("roc_auc" in g["metrics"] for g in document["groups"])
    for key in ("groups", "results", "verdict", "verdict_detail", "diagnostics"):
        assert_close(reference[key], document[key], key)
    alignment = document["alignment"]
    assert alignment["partitions"] == N_PARTS
    for key in ("matched", "predictions_without_labels", "labels_without_predictions", "people_without_attributes"):
        assert alignment[key] == reference["alignment"][key], key
    assert alignment["missing_attribute_values"] == reference["alignment"]["missing_attribute_values"]
    for role, summary in document["inputs"].items():
        assert summary["rows"] == 7214, role
        assert summary["partitions"] == N_PARTS, role
        assert summary["source"] == str(partitioned[role])


def test_every_partition_was_validated_and_ids_checked_across_partitions(
    both_audits: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """Each partition passed the single-process checks; ids were proved unique across partitions (the ranges
    overlap here, so by the exact hash-bucket check)."""
    _, document = both_audits
    checks = document["validation"]["checks"]
    assert document["validation"]["success"]
    for k in range(N_PARTS):
        per_partition = {c["expectation"] for c in checks if c["input"].endswith(f"part-{k:03d}.parquet")}
        assert per_partition >= {
            "expect_column_values_to_not_be_null",
            "expect_column_values_to_be_between",
            "expect_column_values_to_be_in_set",
        }, k
    across = [c for c in checks if c["expectation"] == "ids_unique_across_partitions"]
    assert [c["kwargs"]["method"] for c in across] == ["hash buckets"] * 3


def test_partition_tasks_ran_as_prefect_task_runs(both_audits: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The nested flow and its per-partition tasks are recorded by the real Prefect server (the workers
    reported to it: none started an ephemeral server of its own)."""
    flow_runs, task_runs = _partitions_flow_runs()
    assert all(run.state and run.state.is_completed() for run in flow_runs)
    names = {run.name for run in task_runs}
    assert {f"cube partition {k}" for k in range(N_PARTS)} <= names
    assert {f"check partition {k}" for k in range(N_PARTS)} <= names
    assert any(name.startswith("metrics ") for name in names)


def test_cubes_are_summed_in_one_lane_per_worker(both_audits: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """No worker gathers every partition's cube: with two single-threaded workers, partition k's cube task adds
    its cube to the running sum of partition k - 2 (lanes 0, 2 and 1, 3, as the real Prefect server recorded
    the tasks' inputs), and one ``add cubes`` task adds the two lanes' sums."""
    _, runs = _partitions_flow_runs()
    by_id = {run.id: run.name for run in runs}
    running = {
        run.name: [by_id[i.id] for i in run.task_inputs.get("running", []) if hasattr(i, "id")]
        for run in runs
        if run.name.startswith("cube partition")
    }
    assert running == {
        "cube partition 0": [],
        "cube partition 1": [],
        "cube partition 2": ["cube partition 0"],
        "cube partition 3": ["cube partition 1"],
    }
    (added,) = [run for run in runs if run.name.startswith("add cubes")]
    inputs = {name: [by_id[i.id] for i in added.task_inputs[name] if hasattr(i, "id")] for name in ("left", "right")}
    assert inputs == {"left": ["cube partition 2"], "right": ["cube partition 3"]}


def _partitions_flow_runs(wait_s: float = 60.0) -> tuple[list[Any], list[Any]]:
    """The partitions' flow runs as the Prefect server recorded them, and the first one's task runs once every
    partition's cube and check task run is there: the Dask workers report their task runs as events, which
    the server records asynchronously (after the audit's command has returned, on a loaded machine)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    expected = {f"{step} partition {k}" for k in range(N_PARTS) for step in ("cube", "check")}
    deadline = time.monotonic() + wait_s
    with get_client(sync_client=True) as client:
        while True:
            flow_runs = client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=["fairness-audit-partitions"]))
            )
            assert flow_runs
            runs = [run for run in client.read_task_runs(limit=200) if run.flow_run_id == flow_runs[0].id]
            if expected <= {run.name for run in runs} or time.monotonic() > deadline:
                return flow_runs, runs
            time.sleep(0.5)


def _assert_refused(result: Any, fragments: list[str], out: Path) -> None:
    message = " ".join(result.stderr.split())
    assert result.exit_code == 2, (result.exit_code, result.output, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert not out.exists()


def test_partition_lists_of_different_lengths_exit_2(
    tmp_path: Path, policy_file: Path, partitioned: dict[str, Path], dask_address: str, runner: InProcessRunner
) -> None:
    labels = tmp_path / "labels"
    shutil.copytree(partitioned["labels"], labels)
    (labels / "part-003.parquet").unlink()
    inputs = {**partitioned, "labels": labels}
    result = runner.invoke(app, audit_args(policy_file, inputs, tmp_path / "out", "--dask-address", dask_address))
    _assert_refused(
        result, ["different numbers of files", "labels: 3 file(s)", "predictions: 4 file(s)"], tmp_path / "out"
    )


def test_partitions_whose_part_numbers_differ_exit_2(
    tmp_path: Path, policy_file: Path, partitioned: dict[str, Path], dask_address: str, runner: InProcessRunner
) -> None:
    labels = tmp_path / "labels"
    shutil.copytree(partitioned["labels"], labels)
    (labels / "part-003.parquet").rename(labels / "part-004.parquet")
    inputs = {**partitioned, "labels": labels}
    result = runner.invoke(app, audit_args(policy_file, inputs, tmp_path / "out", "--runner", "dask"))
    _assert_refused(
        result, ["partition 3 pairs files that do not look like the same partition", "part-004"], tmp_path / "out"
    )


def test_an_id_in_two_partitions_exits_2(
    tmp_path: Path, policy_file: Path, partitioned: dict[str, Path], dask_address: str, runner: InProcessRunner
) -> None:
    """Each file's ids are unique, but person 1 (partition 1) is also written to partition 2: the exact check
    across partitions finds it on the workers."""
    predictions = tmp_path / "predictions"
    shutil.copytree(partitioned["predictions"], predictions)
    con = duckdb.connect()
    part = str(predictions / "part-002.parquet")
    con.sql(
        f"select * from read_parquet('{part}') union all "
        f"select * from read_parquet('{partitioned['predictions'] / 'part-001.parquet'}') where id = 1"
    ).to_parquet(str(tmp_path / "tmp.parquet"))
    con.close()
    (tmp_path / "tmp.parquet").replace(part)
    inputs = {**partitioned, "predictions": predictions}
    result = runner.invoke(app, audit_args(policy_file, inputs, tmp_path / "out", "--dask-address", dask_address))
    _assert_refused(result, ["hold the same id more than once across files", "1 (2 times)"], tmp_path / "out")


def test_runner_local_with_an_address_exits_2(
    tmp_path: Path, policy_file: Path, partitioned: dict[str, Path], runner: InProcessRunner
) -> None:
    args = audit_args(policy_file, partitioned, tmp_path / "out", "--runner", "local", "--dask-address", "tcp://x:1")
    _assert_refused(runner.invoke(app, args), ["--dask-address names a Dask scheduler"], tmp_path / "out")


@pytest.mark.slow
def test_a_refusal_on_a_local_cluster_is_one_quiet_line(tmp_path: Path, partitioned: dict[str, Path]) -> None:
    """runner: dask without an address starts a LocalCluster for the run: with --quiet its INFO lines stay off
    the terminal, and an id repeated across partitions is one error line, last, with no flow-engine traceback."""
    from pipeline_helpers import run_fairgate

    predictions = tmp_path / "predictions"
    shutil.copytree(partitioned["predictions"], predictions)
    part = predictions / "part-002.parquet"
    con = duckdb.connect()
    con.sql(
        f"select * from read_parquet('{part}') union all "
        f"select * from read_parquet('{partitioned['predictions'] / 'part-001.parquet'}') where id = 1"
    ).to_parquet(str(tmp_path / "tmp.parquet"))
    con.close()
    (tmp_path / "tmp.parquet").replace(part)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY_FAILING + "  execution: {runner: dask}\n")
    inputs = {**partitioned, "predictions": predictions}
    completed = run_fairgate(audit_args(policy, inputs, tmp_path / "out"), cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    assert " INFO " not in completed.stderr
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: the predictions partitions"), completed.stderr
    assert sum(line.startswith("error:") for line in lines) == 1
    assert not (tmp_path / "out").exists()
