"""Partitioned inputs for the audit on a Dask cluster (issue 13): which files make up each partition, the
checks each partition passes on its worker, and the checks across partitions.

An input given as a directory (its ``*.parquet`` or ``*.csv`` files), a glob (``preds/part-*.parquet``) or one
file is a sorted list of files; the k-th files of predictions, labels and attributes form partition k and must
hold the same people. :func:`plan_partitions` refuses lists that cannot be meant to line up (different lengths,
or k-th names whose part numbers differ), naming the files and the fix.

Each partition is read on a worker by :func:`check_partition` (the same staging and Great Expectations checks as
the single-process audit: columns, id types, unique ids, scores in [0, 1], binary labels, declared attribute
values; all DuckDB aggregates) and cubed by scale-stream's ``cube_partition``. Only small results come back: the
cube, counts, the checks' outcomes, and each input's smallest and largest id. Ids unique within each partition
and partitions whose id ranges do not overlap prove every id unique overall; where ranges overlap,
:func:`duplicate_ids_in_bucket` settles it exactly, one hash bucket of ids per task.

A partition larger than ``tasks.inputs.align.ROWS_PER_BUCKET`` rows is joined, its ids grouped and its cube built one
id hash bucket at a time inside its task (counts and cubes add), so a worker's memory does not grow with the
partition's size: only the files are rescanned once per bucket.
"""

from __future__ import annotations

import glob
import hashlib
import itertools
import re
import socket
import tempfile
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate import Cube
from fairgate.errors import DataError, PolicyError
from fairgate.policy.core import Policy
from tasks.inputs.io import Source, parse_source, register_source
from tasks.inputs.sql import quote_identifier, render_sql

if TYPE_CHECKING:
    from tasks.inputs.staged import Staged

ROLES = ("predictions", "labels", "attributes")
_DATA_SUFFIXES = (".parquet", ".pq", ".csv", ".csv.gz", ".tsv")
_GLOB_CHARS = re.compile(r"[*?\[]")
_DIGITS = re.compile(r"\d+")
_MAX_DUPLICATES_SHOWN = 5


@dataclass(frozen=True)
class Partition:
    """Partition ``index``: one file per input, holding the same people."""

    index: int
    files: dict[str, str]  # role -> path

    @property
    def label(self) -> str:
        return f"partition {self.index} ({', '.join(Path(p).name for p in self.files.values())})"


@dataclass
class PartitionCheck:
    """What one partition's worker found, small enough to send back: counts, id ranges, checks, provenance."""

    index: int
    row_counts: dict[str, int]
    sha256: dict[str, str]
    id_ranges: dict[str, tuple[Any, Any]]  # role -> (smallest id, largest id)
    join: dict[str, int]  # matched, predictions_without_labels, labels_without_predictions, people_without_attributes
    missing: dict[str, int]  # sensitive attribute -> matched people without its value
    checks: list[dict[str, Any]]
    warnings: list[str]
    provenance: list[dict[str, Any]] = field(default_factory=list)


def expand_input(role: str, text: str) -> list[str]:
    """The files of one input, sorted: a directory's data files, a glob's matches, or the one file given.

    >>> expand_input("labels", "/no/such/dir/part-*.parquet")
    Traceback (most recent call last):
    fairgate.errors.DataError: --labels '/no/such/dir/part-*.parquet' matches no file; ...
    """
    path = Path(text).expanduser()
    if path.is_dir():
        files = sorted(str(p) for p in path.iterdir() if p.is_file() and p.name.lower().endswith(_DATA_SUFFIXES))
        if not files:
            raise DataError(
                f"--{role} {text!r} is a directory without .parquet or .csv files; give the folder holding the "
                f"{role} partitions (part-000.parquet, part-001.parquet, ...) or a glob such as {text}/part-*.parquet"
            )
        return files
    if _GLOB_CHARS.search(text):
        files = sorted(p for p in glob.glob(str(path)) if Path(p).is_file())
        if not files:
            raise DataError(
                f"--{role} {text!r} matches no file; check the folder and the pattern (e.g. DIR/part-*.parquet)"
            )
        return files
    return [str(parse_source(role, text).path)]


def plan_partitions(predictions: str, labels: str, attributes: str) -> list[Partition]:
    """Pair the k-th files of the three inputs; refuse lists that cannot line up.

    Lists must be equally long, and (when there are several) the k-th files' names must carry the same part
    numbers (digits), unless the names are equal: ``predictions/part-003.parquet`` goes with
    ``labels/part-003.parquet`` or ``labels_003.parquet``, never with ``labels/part-004.parquet``.
    """
    given = {"predictions": predictions, "labels": labels, "attributes": attributes}
    files = {role: expand_input(role, text) for role, text in given.items()}
    counts = {role: len(paths) for role, paths in files.items()}
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"{role}: {n} file(s) from {given[role]!r}" for role, n in counts.items())
        raise DataError(
            f"the partitioned inputs have different numbers of files ({listed}); partition k of each input must "
            "hold the same people. Write one file per partition for every input (predictions/part-000.parquet, "
            "labels/part-000.parquet, attributes/part-000.parquet, ...)"
        )
    partitions = []
    for k in range(counts["predictions"]):
        paths = {role: files[role][k] for role in ROLES}
        if counts["predictions"] > 1:  # one file per input is one partition, whatever the files are called
            _check_names_line_up(k, paths)
        partitions.append(Partition(index=k, files=paths))
    return partitions


def _check_names_line_up(k: int, paths: dict[str, str]) -> None:
    names = {role: Path(p).name for role, p in paths.items()}
    if len(set(names.values())) == 1:
        return
    numbers = {role: tuple(_DIGITS.findall(name)) for role, name in names.items()}
    if len(set(numbers.values())) == 1 and numbers["predictions"]:
        return
    listed = ", ".join(f"{role}: {paths[role]}" for role in ROLES)
    raise DataError(
        f"partition {k} pairs files that do not look like the same partition ({listed}); the k-th file of each "
        "input (sorted by name) must hold the same people. Name them alike or with the same part number "
        "(part-000.parquet in each input's folder), and give each input the same set of parts"
    )


def digest_of(sha256s: list[str]) -> str:
    """One sha256 for a partitioned input: the hash of its files' hashes, in partition order.

    >>> digest_of(["a", "b"]) == digest_of(["a", "b"]) != digest_of(["b", "a"])
    True
    """
    return hashlib.sha256("\n".join(sha256s).encode()).hexdigest()


@task(name="check partition", task_run_name="check partition {partition.index}", cache_policy=NO_CACHE)
def check_partition(partition: Partition, policy: Policy) -> PartitionCheck:
    """Stage and validate one partition on its worker, as the single-process audit validates its inputs."""
    # Imported here: a worker loads them (and Great Expectations) on its first partition only.
    from tasks.inputs.align import id_buckets, stage
    from tasks.inputs.cube_sql import configure
    from tasks.validation.validate import validate_inputs

    files = partition.files
    with tempfile.TemporaryDirectory(prefix="fairgate-duckdb-") as spill:
        staged = stage(policy, files["predictions"], files["labels"], files["attributes"])
        try:
            configure(staged.con, policy.execution.memory_limit, Path(spill))
            buckets = id_buckets(staged)  # ids grouped and joined one bucket at a time: memory flat in rows
            validation = validate_inputs.fn(staged, id_buckets=buckets)
            ranges = {role: _id_range(staged.con, f"stg_{role}") for role in ROLES}
            join, missing = _join_counts(staged, buckets)
        finally:
            staged.con.close()
    return PartitionCheck(
        index=partition.index,
        row_counts=dict(staged.row_counts),
        sha256=dict(staged.sha256),
        id_ranges=ranges,
        join=join,
        missing=missing,
        checks=validation.checks,
        warnings=validation.warnings,
        provenance=staged.provenance,
    )


def _id_range(con: duckdb.DuckDBPyConnection, view: str) -> tuple[Any, Any]:
    low, high = con.execute(f"select min(id), max(id) from {view}").fetchall()[0]  # view: fixed name
    return low, high


def _join_counts(staged: Staged, buckets: int) -> tuple[dict[str, int], dict[str, int]]:
    """How the partition's inputs match on id (ids are unique here, validated just before), and the matched
    people without each attribute's value; joined one id bucket at a time when ``buckets`` > 1 (counts add)."""
    from tasks.inputs.align import restrict_to_bucket

    attributes, row_counts = staged.attributes, staged.row_counts
    missing_counts = [
        f"count(*) filter (where attributes.{quote_identifier(a)} is null) as {quote_identifier(a)}" for a in attributes
    ]
    sql = render_sql("partition_join", missing_counts=",\n        ".join(missing_counts) or "0 as _none")
    totals = [0] * (2 + max(1, len(attributes)))
    for bucket in range(buckets):
        if buckets > 1:
            restrict_to_bucket(staged, bucket, buckets)
        counts = staged.con.execute(sql).fetchall()[0]
        totals = [total + int(n or 0) for total, n in zip(totals, counts, strict=True)]
    matched, without_attributes, *missing = totals
    join = {
        "matched": matched,
        "predictions_without_labels": row_counts["predictions"] - matched,
        "labels_without_predictions": row_counts["labels"] - matched,
        "people_without_attributes": without_attributes,
    }
    return join, {a: n for a, n in zip(attributes, missing, strict=False)}


def overlapping_roles(checks: list[PartitionCheck]) -> list[str]:
    """The inputs whose partitions' id ranges overlap: only there can an id sit in two partitions.

    >>> a = PartitionCheck(0, {}, {}, {"labels": (1, 5)}, {}, {}, [], [])
    >>> b = PartitionCheck(1, {}, {}, {"labels": (6, 9)}, {}, {}, [], [])
    >>> overlapping_roles([a, b]), overlapping_roles([a, a])
    ([], ['labels'])
    """
    roles = []
    for role in checks[0].id_ranges if checks else ():
        ranges = sorted((c.id_ranges[role] for c in checks), key=lambda r: r[0])
        if any(later[0] <= earlier[1] for earlier, later in itertools.pairwise(ranges)):
            roles.append(role)
    return roles


@task(name="duplicate ids", task_run_name="duplicate ids {role} bucket {bucket}", cache_policy=NO_CACHE)
def duplicate_ids_in_bucket(
    role: str, files: list[str], id_column: str, bucket: int, n_buckets: int, memory_limit: str | None
) -> list[tuple[Any, int]]:
    """Ids of one input that occur more than once across all its files, among those whose hash falls in
    ``bucket`` (of ``n_buckets``): a worker holds the distinct ids of one bucket only."""
    con = duckdb.connect()
    try:
        if memory_limit is not None:
            con.execute(f"set memory_limit = '{memory_limit}'")
        views = []
        for k, path in enumerate(files):
            view = f"part_{k}"
            register_source(con, Source(role=role, path=Path(path)), view, id_column=id_column)
            views.append(f"select {quote_identifier(id_column)} as id from {view}")
        con.sql(" union all ".join(views)).create_view("ids")
        sql = render_sql("id_bucket_duplicates")
        params = {"bucket": bucket, "n_buckets": n_buckets, "max_rows": _MAX_DUPLICATES_SHOWN}
        return [(value, int(n)) for value, n in con.execute(sql, params).fetchall()]
    finally:
        con.close()


def cross_partition_duplicates(role: str, found: list[tuple[Any, int]], source: str) -> DataError:
    """The error for ids of one input found in more than one partition."""
    examples = ", ".join(f"{value!r} ({n} times)" for value, n in found[:_MAX_DUPLICATES_SHOWN])
    return DataError(
        f"the {role} partitions ({source}) hold the same id more than once across files, e.g. {examples}; each "
        "person may appear in one partition only (each file's ids are unique, but together they repeat). Remove "
        "the repeated rows, or write each person to one partition (e.g. partition by id)"
    )


def misplaced_rows_warning(checks: list[PartitionCheck]) -> str | None:
    """A warning when some partition has predictions without labels while another has labels without
    predictions: if those are the same people, their rows sit in different partitions and are not matched
    (the single-process audit would match them)."""
    lonely_predictions = [c.index for c in checks if c.join["predictions_without_labels"]]
    lonely_labels = [c.index for c in checks if c.join["labels_without_predictions"]]
    if not any(i != j for i in lonely_predictions for j in lonely_labels):
        return None
    return (
        f"partitions {lonely_predictions} have predictions without labels and partitions {lonely_labels} labels "
        "without predictions; partitions are joined one by one, so a person whose prediction and label are in "
        "different partitions is counted as unmatched. Check that the k-th files of each input hold the same ids"
    )


@task(name="cube partition", task_run_name="cube partition {partition.index}", cache_policy=NO_CACHE)
def cube_of_partition(partition: Partition, policy: Policy, score_histogram: bool, running: Cube | None = None) -> Cube:
    """The cube of one partition, built in DuckDB on its worker, added to ``running`` when given.

    ``running`` is the sum of the cubes built before in the same lane (flows/audit_dask.py): the cubes are summed
    where they are built, so no worker ever gathers every partition's cube (each carries a score histogram of up
    to groups x 2 x bins cells). With ``score_histogram`` (``execution.auc``: histogram, or auto beyond its row
    limit) the cube carries the score histogram (scale-stream's ``cube_partition``); else, when the policy wants
    exact AUC, the partition's score table (its rows' attributes, score and label: the whole audit is then small
    enough to hold them).
    """
    from tasks.inputs.cube_sql import cube_partition  # scale-stream's streaming cube

    memory_limit = policy.execution.memory_limit
    if score_histogram or not policy.statistics.exact_auc:
        cube: Cube = cube_partition(partition.files, policy, score_histogram=score_histogram, memory_limit=memory_limit)
    else:
        cube = _cube_with_score_table(partition, policy, memory_limit)
    return cube if running is None else running + cube


def _cube_with_score_table(partition: Partition, policy: Policy, memory_limit: str | None) -> Cube:
    from fairgate.engine.cube import add_score_table
    from tasks.inputs.align import matched_relation, stage
    from tasks.inputs.cube_sql import configure, cube_from_relation

    files = partition.files
    with tempfile.TemporaryDirectory(prefix="fairgate-duckdb-") as spill:
        staged = stage(policy, files["predictions"], files["labels"], files["attributes"])
        try:
            configure(staged.con, memory_limit, Path(spill))
            relation = matched_relation(staged)
            source = f"the rows of {staged.sources['predictions'].label}"
            cube = cube_from_relation(staged.con, relation, policy, score_histogram=False, source=source)
            if not cube.has_scores:
                return cube
            return add_score_table(cube, staged.con.sql(relation).to_arrow_table(), policy, source=source)
        finally:
            staged.con.close()


@task(name="add cubes", cache_policy=NO_CACHE)
def add_cubes(left: Cube, right: Cube) -> Cube:
    """The cube of two lanes' partitions (cubes of disjoint rows add), on a worker: the metric tasks fetch the
    final sum from there once per worker instead of each task carrying it in its submission."""
    return left + right


def check_scheduler(address: str, timeout_s: float = 5.0) -> None:
    """Refuse (before any work) a Dask scheduler address that is malformed or that nothing answers at.

    Without this, the Dask client retries for 30 s and the audit ends as a crash with a traceback.
    """
    parsed = urllib.parse.urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        port = parsed.port
    except ValueError:
        port = None
    if parsed.scheme not in ("tcp", "tls") or not parsed.hostname or port is None:
        raise PolicyError(
            f"the Dask scheduler address {address!r} is not tcp://host:port; write it as `dask scheduler` prints "
            "it, e.g. tcp://10.0.0.5:8786 (execution.address or --dask-address)"
        )
    try:
        socket.create_connection((parsed.hostname, port), timeout=timeout_s).close()
    except OSError as exc:
        raise PolicyError(
            f"cannot reach the Dask scheduler at {address} ({exc.strerror or exc}); start one there with `dask "
            f"scheduler` and workers with `dask worker {address}`, or fix execution.address / --dask-address, or "
            "leave the address out for a temporary local cluster"
        ) from None
