"""The cube computed inside DuckDB (tasks/inputs/cube_sql.py) equals fairgate.build_cube on the same rows.

Integer columns and keys exactly; float sums (weights, squared weights, score sums) up to summation order.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.engine.cube import add_score_histogram
from fairgate.errors import DataError, PolicyError
from tasks.inputs.cube_sql import cube_from_relation, cube_partition

FLOATS = ["__weight", "__weight_sq", "__person_sq", "__score_sum"]


def _sql_cube(frame: pl.DataFrame, policy: fairgate.Policy, *, histogram: bool = False) -> fairgate.Cube:
    con = duckdb.connect()
    con.register("rows_in", frame.to_arrow())
    return cube_from_relation(con, "select * from rows_in", policy, score_histogram=histogram, source="the rows")


def _assert_same_cells(sql: fairgate.Cube, memory: fairgate.Cube) -> None:
    left, right = sql.cells, memory.cells
    assert left.columns == right.columns
    assert left.dtypes == right.dtypes
    exact = [c for c in left.columns if c not in FLOATS]
    assert left.select(exact).equals(right.select(exact))
    for column in FLOATS:
        np.testing.assert_allclose(left[column].to_numpy(), right[column].to_numpy(), rtol=1e-12, atol=0)
    assert sql.excluded_missing == memory.excluded_missing
    assert (sql.attributes, sql.calibration_bins, sql.has_scores) == (
        memory.attributes,
        memory.calibration_bins,
        memory.has_scores,
    )


@pytest.mark.parametrize("favourable", [0, 1])
def test_compas_cells_equal_build_cube(compas: pl.DataFrame, h: Any, favourable: int) -> None:
    policy = h.make_policy(["race", "sex", "age_cat"], favorable_label=favourable)
    memory = fairgate.build_cube(compas, policy, exact_auc=False)
    sql = _sql_cube(compas, policy)
    _assert_same_cells(sql, memory)
    assert sql.n_rows == 7214
    # COMPAS deciles sit on the calibration edges: the edge rule puts each in its own bin (score 1.0 shares
    # the top bin with 0.9 when 1 is favourable).
    assert sql.cells.group_by("__score_bin").len().height == (10 if favourable == 0 else 9)


def test_generated_with_weights_and_missing_values(h: Any) -> None:
    frame = h.generate(5, n=20_000)
    rng = np.random.default_rng(3)
    frame = frame.with_columns(
        pl.Series("w", rng.gamma(2.0, 0.7, frame.height)),
        pl.when(pl.Series(rng.random(frame.height) < 0.05)).then(None).otherwise(pl.col("a")).alias("a"),
        pl.when(pl.Series(rng.random(frame.height) < 0.03)).then(None).otherwise(pl.col("b")).alias("b"),
    )
    policy = h.make_policy(
        [{"name": "a", "missing": "unknown"}, {"name": "b"}, "c", "d"],
        columns={"weight": "w"},
    )
    memory = fairgate.build_cube(frame, policy, exact_auc=False)
    sql = _sql_cube(frame, policy)
    _assert_same_cells(sql, memory)
    assert sql.excluded_missing["b"] > 0
    assert "unknown" in sql.levels("a")
    assert sql.weighted


def test_predictions_from_scores_and_no_scores(h: Any) -> None:
    frame = h.generate(8, n=5000, ties=True)
    policy = h.make_policy(["a", "b"], columns={"decision_threshold": 0.4})
    no_pred = frame.drop("y_pred")
    _assert_same_cells(_sql_cube(no_pred, policy), fairgate.build_cube(no_pred, policy, exact_auc=False))
    no_score = frame.drop("score")
    sql = _sql_cube(no_score, policy)
    _assert_same_cells(sql, fairgate.build_cube(no_score, policy, exact_auc=False))
    assert not sql.has_scores


def test_histogram_equals_the_polars_histogram_and_adds(h: Any) -> None:
    frame = h.generate(11, n=30_000)
    policy = h.make_policy(["a", "b"], execution={"auc_bins": 1024})
    sql = _sql_cube(frame, policy, histogram=True)
    memory = add_score_histogram(fairgate.build_cube(frame, policy, exact_auc=False), frame, policy, 1024)
    assert sql.score_histogram is not None
    assert memory.score_histogram is not None
    keys = ["a", "b", "__y_true", "__score_hbin"]
    assert sql.score_histogram.sort(keys).equals(memory.score_histogram.sort(keys))
    assert sql.histogram_bins == 1024
    assert sql.auc_method == "histogram"
    halves = _sql_cube(frame[:12_345], policy, histogram=True) + _sql_cube(frame[12_345:], policy, histogram=True)
    assert halves.score_histogram is not None
    assert halves.score_histogram.sort(keys).equals(sql.score_histogram.sort(keys))
    _assert_same_cells(halves, sql)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (pl.col("y_true") * 2, "y_true"),
        (pl.col("score") + 1.0, "score"),
        (pl.col("score") - 1.0, "score"),
        (pl.when(pl.int_range(pl.len()) % 7 == 3).then(float("nan")).otherwise(pl.col("score")), "score"),
        (pl.when(pl.int_range(pl.len()) % 5 == 1).then(None).otherwise(pl.col("score")), "score"),
    ],
)
def test_bad_values_are_refused_with_the_engine_message(h: Any, change: pl.Expr, message: str) -> None:
    frame = h.generate(2, n=500)
    frame = frame.with_columns(change.alias(message))
    policy = h.make_policy(["a"])
    with pytest.raises(DataError) as in_sql:
        _sql_cube(frame, policy)
    with pytest.raises(DataError) as in_memory:
        fairgate.build_cube(frame, policy, exact_auc=False, source="the rows")
    # The same message and count; the example value may be another of the bad rows (cells group in any order).
    example = re.compile(r"found \S+ in")
    assert example.sub("found X in", in_sql.value.message) == example.sub("found X in", in_memory.value.message)


def test_partition_files_cube_like_the_rows(compas: pl.DataFrame, h: Any, tmp_path: Path) -> None:
    people = compas.with_row_index("id").with_columns(pl.col("id").cast(pl.Int64))
    paths = {}
    for role, columns in {
        "predictions": ["id", "y_pred", "score"],
        "labels": ["id", "y_true"],
        "attributes": ["id", "race", "sex", "age_cat"],
    }.items():
        paths[role] = str(tmp_path / f"{role}.parquet")
        people.select(columns).write_parquet(paths[role])
    policy = h.make_policy(["race", "sex", "age_cat"], favorable_label=0)
    cube = cube_partition(paths, policy, score_histogram=True, memory_limit="500MB")
    _assert_same_cells(cube, fairgate.build_cube(compas, policy, exact_auc=False))
    assert cube.score_histogram is not None


def test_execution_section_keeps_old_hashes_and_refuses_nonsense(h: Any) -> None:
    plain = h.make_policy(["a"])
    assert "execution" not in plain.canonical_json()  # a policy without the section keeps its hash
    streaming = h.make_policy(["a"], execution={"streaming": "always"})
    assert streaming.sha256() != plain.sha256()
    assert streaming.execution.streams(rows=1)
    assert not plain.execution.streams(rows=1000)
    assert plain.execution.streams(rows=10**8)
    assert plain.execution.histogram_auc(rows=10**8)
    assert not plain.execution.histogram_auc(rows=1000)
    for bad, words in (
        ({"memory_limit": "lots"}, "is not a size"),
        ({"address": "tcp://x:8786"}, "runner: dask"),
        ({"auc_bins": 4}, "auc_bins"),
        ({"streamin": "always"}, "unknown key"),
    ):
        with pytest.raises(PolicyError, match=words):
            h.make_policy(["a"], execution=bad)


def _partition_files(compas: pl.DataFrame, folder: Path, *, repeated_label: int | None = None) -> dict[str, str]:
    people = compas.with_row_index("id").with_columns(pl.col("id").cast(pl.Int64))
    paths = {}
    for role, columns in {
        "predictions": ["id", "y_pred", "score"],
        "labels": ["id", "y_true"],
        "attributes": ["id", "race", "sex", "age_cat"],
    }.items():
        rows = people.select(columns)
        if role == "labels" and repeated_label is not None:
            rows = pl.concat([rows, rows.filter(pl.col("id") == repeated_label)])
        paths[role] = str(folder / f"{role}.parquet")
        rows.write_parquet(paths[role])
    return paths


def test_id_buckets_give_the_whole_partitions_cube_and_checks(
    compas: pl.DataFrame, h: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partition joined, grouped and cubed one id hash bucket at a time (tasks/inputs/align.py, ROWS_PER_BUCKET:
    bounded memory on a Dask worker) yields the same cube, histogram, join counts and checks as in one go."""
    import tasks.inputs.align
    import tasks.inputs.cube_sql
    from tasks.inputs.partitions import Partition, check_partition

    paths = _partition_files(compas, tmp_path)
    policy = h.make_policy(["race", "sex", "age_cat"], favorable_label=0)
    whole = cube_partition(paths, policy, score_histogram=True, memory_limit="500MB")
    whole_check = check_partition.fn(Partition(0, paths), policy)

    buckets_seen: set[tuple[int, int]] = set()
    restrict = tasks.inputs.align.restrict_to_bucket

    def spy(staged: Any, bucket: int, buckets: int) -> None:
        buckets_seen.add((bucket, buckets))
        restrict(staged, bucket, buckets)

    monkeypatch.setattr(tasks.inputs.align, "ROWS_PER_BUCKET", 1000)
    monkeypatch.setattr(tasks.inputs.cube_sql, "restrict_to_bucket", spy)
    monkeypatch.setattr(tasks.inputs.align, "restrict_to_bucket", spy)
    bucketed = cube_partition(paths, policy, score_histogram=True, memory_limit="500MB")
    assert buckets_seen == {(b, 8) for b in range(8)}  # 7214 rows in buckets of about 1000
    _assert_same_cells(bucketed, whole)
    _assert_same_cells(bucketed, fairgate.build_cube(compas, policy, exact_auc=False))
    assert whole.score_histogram is not None
    assert bucketed.score_histogram is not None
    keys = [c for c in whole.score_histogram.columns if c != "__weight"]
    assert bucketed.score_histogram.schema == whole.score_histogram.schema
    assert bucketed.score_histogram.sort(keys).equals(whole.score_histogram.sort(keys))
    assert bucketed.histogram_bins == whole.histogram_bins > 0

    checked = check_partition.fn(Partition(0, paths), policy)
    for name in ("row_counts", "id_ranges", "join", "missing", "warnings"):
        assert getattr(checked, name) == getattr(whole_check, name)
    assert [(c["expectation"], c["success"]) for c in checked.checks] == [
        (c["expectation"], c["success"]) for c in whole_check.checks
    ]
    assert checked.join["matched"] == 7214

    (tmp_path / "repeated").mkdir()
    repeated = _partition_files(compas, tmp_path / "repeated", repeated_label=4321)
    with pytest.raises(DataError, match="duplicate values") as found:
        check_partition.fn(Partition(0, repeated), policy)
    assert "e.g. 4321 (" in found.value.message  # the id as given, not 4321.0


@pytest.mark.parametrize("weighted", [False, True])
def test_audit_of_the_duckdb_cube_equals_the_audit_of_the_rows(h: Any, weighted: bool) -> None:
    """The whole judged document from the cube DuckDB counts (no row in Python) equals ``fairgate.audit`` on the
    rows, field by field: counts and verdicts exactly, every value and interval to 1e-12 (float sums are
    added in another order)."""
    from fairgate.engine.audit import audit_counted

    frame = h.generate(21, n=20_000)
    columns: dict[str, Any] = {}
    if weighted:
        frame = frame.with_columns(pl.Series("w", np.random.default_rng(4).gamma(2.0, 0.7, frame.height)))
        columns = {"columns": {"weight": "w"}}
    metrics = [
        {"name": "demographic_parity_difference", "threshold": 0.1},
        {"name": "equalized_odds_difference", "threshold": 0.1},
        {"name": "predictive_parity_difference", "threshold": 0.1},
        {"name": "calibration_difference", "threshold": 0.05},
    ]
    policy = h.make_policy(
        ["a", "b", "c", "d"],
        metrics,
        min_group_size=30,
        n_bootstrap=100,
        intersectional_analysis={"include_triples": True},
        **columns,
    )
    rows = fairgate.audit(frame, policy, exact_auc=False, run_id="same").to_dict()
    counted = audit_counted(_sql_cube(frame, policy), policy, run_id="same").to_dict()
    assert len(rows["groups"]) > 200  # triples were audited
    h.assert_close_tree(h.stable_view(counted), h.stable_view(rows), tol=1e-12)
