"""Partition lists (tasks/inputs/partitions.py): which files pair up, what is refused, the checks across partitions.
No Prefect server or cluster: the planning runs before either."""

from __future__ import annotations

import socket
from pathlib import Path

import duckdb
import pytest

from fairgate.errors import DataError, PolicyError
from tasks.inputs.partitions import (
    PartitionCheck,
    check_scheduler,
    duplicate_ids_in_bucket,
    misplaced_rows_warning,
    overlapping_roles,
    plan_partitions,
)


def _write(folder: Path, names: list[str], ids: list[range] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    for k, name in enumerate(names):
        span = ids[k] if ids else range(10 * k, 10 * k + 10)
        con.sql(f"select range as id from range({span.start}, {span.stop})").to_parquet(str(folder / name))
    con.close()
    return folder


def test_directory_glob_and_file_pair_the_kth_files(tmp_path: Path) -> None:
    predictions = _write(tmp_path / "p", ["part-000.parquet", "part-001.parquet"])
    labels = _write(tmp_path / "l", ["labels_000.parquet", "labels_001.parquet"])  # same part numbers
    attributes = _write(tmp_path / "a", ["part-000.parquet", "part-001.parquet"])
    (attributes / "README.md").write_text("not data")  # other files in a folder are not partitions
    partitions = plan_partitions(str(predictions), str(labels / "labels_*.parquet"), str(attributes))
    assert [p.index for p in partitions] == [0, 1]
    assert Path(partitions[1].files["labels"]).name == "labels_001.parquet"
    assert Path(partitions[1].files["attributes"]).name == "part-001.parquet"
    single = plan_partitions(*(str(folder / "part-000.parquet") for folder in (predictions, attributes, attributes)))
    assert len(single) == 1
    # One file per input is one partition, whatever the files are called (pred.csv, labels.csv, attrs.csv).
    named = [_write(tmp_path / role, [f"{role}.parquet"]) / f"{role}.parquet" for role in ("pred", "truth", "who")]
    assert [Path(f).name for f in plan_partitions(*map(str, named))[0].files.values()] == [
        "pred.parquet",
        "truth.parquet",
        "who.parquet",
    ]


def test_lists_that_do_not_line_up_are_refused_with_the_fix(tmp_path: Path) -> None:
    predictions = _write(tmp_path / "p", ["part-000.parquet", "part-001.parquet"])
    labels = _write(tmp_path / "l", ["part-000.parquet"])
    with pytest.raises(DataError, match=r"different numbers of files .*labels: 1 file\(s\).*Write one file per"):
        plan_partitions(str(predictions), str(labels), str(predictions))
    shifted = _write(tmp_path / "s", ["part-000.parquet", "part-002.parquet"])
    with pytest.raises(DataError, match="partition 1 pairs files that do not look like the same partition"):
        plan_partitions(str(predictions), str(shifted), str(predictions))
    with pytest.raises(DataError, match="matches no file"):
        plan_partitions(str(predictions), str(tmp_path / "l" / "nothing-*.parquet"), str(predictions))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"is a directory without \.parquet or \.csv files"):
        plan_partitions(str(predictions), str(tmp_path / "empty"), str(predictions))


def _check(index: int, ranges: dict[str, tuple[int, int]], join: dict[str, int]) -> PartitionCheck:
    return PartitionCheck(index, {}, {}, ranges, join, {}, [], [])


def test_overlapping_ranges_and_misplaced_rows() -> None:
    joined = {"predictions_without_labels": 0, "labels_without_predictions": 0}
    disjoint = [_check(0, {"predictions": (0, 9)}, joined), _check(1, {"predictions": (10, 19)}, joined)]
    assert overlapping_roles(disjoint) == []
    nested = [*disjoint, _check(2, {"predictions": (3, 4)}, joined)]
    assert overlapping_roles(nested) == ["predictions"]
    assert misplaced_rows_warning(disjoint) is None
    lonely_prediction = {"predictions_without_labels": 1, "labels_without_predictions": 0}
    lonely_label = {"predictions_without_labels": 0, "labels_without_predictions": 1}
    split = [_check(0, {}, lonely_prediction), _check(1, {}, lonely_label)]
    assert "partitions [0] have predictions without labels and partitions [1]" in (misplaced_rows_warning(split) or "")


def test_hash_buckets_find_exactly_the_repeated_ids(tmp_path: Path) -> None:
    """Ids 0-99 over three files, 40-44 written twice: every bucket reports its repeats, together all of them."""
    files = _write(
        tmp_path / "p", ["a.parquet", "b.parquet", "c.parquet"], [range(0, 50), range(50, 100), range(40, 45)]
    )
    paths = [str(files / name) for name in ("a.parquet", "b.parquet", "c.parquet")]
    found = [hit for b in range(3) for hit in duplicate_ids_in_bucket.fn("predictions", paths, "id", b, 3, "1GB")]
    assert sorted(found) == [(i, 2) for i in range(40, 45)]
    assert duplicate_ids_in_bucket.fn("predictions", paths[:2], "id", 0, 1, None) == []


def test_a_scheduler_address_is_checked_before_any_work() -> None:
    with socket.socket() as listening:  # something answers here: accepted
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        check_scheduler(f"tcp://127.0.0.1:{listening.getsockname()[1]}")
        free_port = listening.getsockname()[1]
    with pytest.raises(
        PolicyError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:\d+ .*dask scheduler"
    ):
        check_scheduler(f"tcp://127.0.0.1:{free_port}")  # closed now: refused at once, not after 30 s of retries
    for malformed in ("nonsense:address", "http://host:8786", "tcp://host"):
        with pytest.raises(PolicyError, match="is not tcp://host:port"):
            check_scheduler(malformed)
