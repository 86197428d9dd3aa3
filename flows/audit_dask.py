"""The audit's counting half on a Dask cluster (issue 13): the nested flow ``fairness-audit-partitions``.

``execution: {runner: dask, address: ...}`` in the policy (or ``fairgate audit --runner dask`` /
``--dask-address``) makes :func:`flows.audit.fairness_audit` run this flow, on prefect-dask's
``DaskTaskRunner``, in place of its in-process read -> validate -> cube -> metrics steps:

1. one ``check partition`` task per partition on the workers (staging and the Great Expectations checks of the
   single-process audit, on that partition's files only), then the checks across partitions (ids unique
   overall: disjoint id ranges, else exact hash-bucket tasks);
2. one ``cube partition`` task per partition (DuckDB on the worker), each adding its cube to its lane's running
   sum on the worker (cubes add; one lane per worker thread), the lanes' sums added last;
3. the metric fan-out, one ``metrics`` task per slicing, on the same cluster.

No process holds all rows: the flow process holds the summed cube, the workers one partition at a time. The
rest of the audit (adjudicate, trend, outputs, report, trail) runs in the parent flow as usual.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, cast

import polars as pl
import pyarrow as pa
from prefect import Flow, flow, get_run_logger, unmapped
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture
from pydantic import ValidationError

import fairgate
from fairgate.engine.columns import ROWS
from fairgate.errors import DataError, PolicyError
from fairgate.policy.execution import Execution
from tasks.audit import compute_slicing
from tasks.inputs.partitions import (
    ROLES,
    Partition,
    PartitionCheck,
    add_cubes,
    check_partition,
    check_scheduler,
    cross_partition_duplicates,
    cube_of_partition,
    digest_of,
    duplicate_ids_in_bucket,
    misplaced_rows_warning,
    overlapping_roles,
    plan_partitions,
)
from tasks.inputs.staged import Aligned, Staged
from tasks.validation.validate import Validation, validate_aligned

# Ids per hash bucket when partitions' id ranges overlap: a worker's hash table of one bucket stays small.
BUCKET_IDS = 5_000_000


def requested_execution(execution: Execution, runner: str | None, address: str | None) -> Execution:
    """The policy's ``execution`` section with the command line's ``--runner`` / ``--dask-address`` on top.

    >>> requested_execution(Execution(), None, "tcp://10.0.0.5:8786").runner
    'dask'
    >>> requested_execution(Execution(), "threads", None)
    Traceback (most recent call last):
    fairgate.errors.PolicyError: --runner 'threads' is not a runner; use local or dask
    """
    update: dict[str, Any] = {}
    if runner is not None:
        if runner not in ("local", "dask"):
            raise PolicyError(f"--runner {runner!r} is not a runner; use local or dask")
        update["runner"] = runner
    if address:
        if runner == "local":
            raise PolicyError("--dask-address names a Dask scheduler; drop --runner local, or the address")
        update |= {"runner": "dask", "address": address}
    if runner == "local":
        update["address"] = None
    try:
        return Execution.model_validate(execution.model_dump() | update)
    except ValidationError as exc:
        raise PolicyError(f"execution: {exc.errors()[0]['msg']}") from None


def dask_task_runner(execution: Execution) -> Any:
    """prefect-dask's task runner: connected to ``execution.address``, or a temporary local cluster."""
    try:
        from prefect_dask.task_runners import DaskTaskRunner
    except ImportError:
        raise PolicyError(
            "execution.runner is dask but prefect-dask is not installed; pip install 'fairgate[dask]' (on the "
            "machine running the audit and on every Dask worker), or set execution.runner: local"
        ) from None
    if execution.address:
        check_scheduler(execution.address)
        return DaskTaskRunner(address=execution.address)
    # A distributed.LocalCluster for this run, sized to the machine; its dashboard on a free port (the default
    # 8787 may be another cluster's: distributed then warns on stderr).
    return DaskTaskRunner(cluster_kwargs={"dashboard_address": ":0"})


@dataclass
class PartitionedSources:
    """The partitioned inputs as the document and the trail describe them (``Staged``'s role on one machine)."""

    given: dict[str, str]  # role -> the directory, glob or file as given
    checks: list[PartitionCheck]

    @property
    def provenance(self) -> list[dict[str, Any]]:
        """Models named in the predictions, over all partitions, with each model's whole time span."""
        merged: dict[tuple[Any, Any], dict[str, Any]] = {}
        for entry in (e for c in self.checks for e in c.provenance):
            key = (entry.get("model_name"), entry.get("model_version"))
            seen = merged.setdefault(key, dict(entry))
            for end, pick in (("first_timestamp", min), ("last_timestamp", max)):
                values = [v for v in (seen.get(end), entry.get(end)) if v is not None]
                seen[end] = pick(values) if values else None
        return list(merged.values())

    @property
    def model(self) -> tuple[str | None, str | None]:
        provenance = self.provenance
        if len(provenance) == 1:
            return provenance[0].get("model_name"), provenance[0].get("model_version")
        return None, None


@dataclass
class PartitionedInputs:
    """The audit's inputs once checked partition by partition (``flows.audit.Inputs``'s role)."""

    staged: PartitionedSources
    aligned: Aligned
    validation: Validation
    # How the rows were read (the document's ``execution`` block, as the single-process paths record it).
    execution: dict[str, Any] = field(default_factory=lambda: {"path": "dask"})

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per input: as given, one sha256 over its files' sha256s, the rows, the number of partitions."""
        checks = self.staged.checks
        return {
            role: {
                "source": self.staged.given[role],
                "sha256": digest_of([c.sha256[role] for c in checks]),
                "rows": sum(c.row_counts[role] for c in checks),
                "partitions": len(checks),
            }
            for role in ROLES
        }


@dataclass
class PartitionedAudit:
    """What the nested flow hands back: the inputs' record, the summed cube and the metrics of each slicing."""

    inputs: PartitionedInputs
    cube: fairgate.Cube
    parts: list[fairgate.SlicingResult]


def audit_on_dask(
    policy: fairgate.Policy, execution: Execution, predictions: str, labels: str, attributes: str
) -> PartitionedAudit:
    """Run :func:`audit_partitions` (as its flow) on a Dask task runner for ``execution``."""
    if policy.proxy is not None:
        raise PolicyError(
            "execution.runner dask does not run proxy inference (it needs the rows in one place); remove the "
            "proxy section, or set execution.runner: local"
        )
    runner = dask_task_runner(execution)
    counted = partitions_flow().with_options(task_runner=runner)(policy, predictions, labels, attributes)
    counted.inputs.execution = {
        "path": "dask",
        "scheduler": execution.address or "a temporary local cluster",
        "partitions": len(counted.inputs.staged.checks),
        "memory_limit": execution.memory_limit,
    }
    return counted


@functools.cache
def partitions_flow() -> Flow[..., PartitionedAudit]:
    """The ``fairness-audit-partitions`` flow, made when a Dask audit first needs it: Prefect builds a flow's
    parameter schema (here the policy's whole JSON schema, about 0.1 s) when the flow is made, which an audit on
    one machine, importing this module, never needs."""
    return flow(name="fairness-audit-partitions")(audit_partitions)


def audit_partitions(policy: fairgate.Policy, predictions: str, labels: str, attributes: str) -> PartitionedAudit:
    """Check and cube each partition on the workers, sum the cubes, fan the metrics out: the recipe."""
    partitions = plan_partitions(predictions, labels, attributes)
    get_run_logger().info(f"{len(partitions)} partition(s) of predictions, labels and attributes")
    checks = check_partition.map(partitions, unmapped(policy)).result()
    cross_checks = check_across_partitions(checks, partitions, policy)
    matched = sum(c.join["matched"] for c in checks)
    histogram = policy.execution.histogram_auc(matched)
    summed = cube_in_lanes(partitions, policy, histogram)
    cube = summed.result()
    parts = compute_slicing.map(unmapped(summed), fairgate.plan_slicings(cube, policy), unmapped(policy)).result()
    given = {"predictions": predictions, "labels": labels, "attributes": attributes}
    inputs = partitioned_inputs(policy, given, checks, cross_checks, cube)
    for warning in inputs.validation.warnings:
        get_run_logger().warning(warning)
    return PartitionedAudit(inputs=inputs, cube=cube, parts=parts)


def cube_in_lanes(
    partitions: list[Partition], policy: fairgate.Policy, histogram: bool
) -> PrefectFuture[fairgate.Cube]:
    """The cube of all partitions, summed on the workers as the partitions are cubed.

    One lane per worker thread: lane j cubes partitions j, j + n, j + 2n, ..., each task adding its cube to the
    lane's running sum (which Dask keeps on the worker that holds it), so a worker holds one running sum and the
    cube it is building, never the other partitions' cubes (gathering all 20 cubes of a 100M-row audit on one
    worker took 1.9 GB); the lanes' sums are added pairwise at the end. The order of the additions is fixed by
    the partitions, so the float sums repeat from run to run.
    """
    lanes: list[PrefectFuture[fairgate.Cube] | None] = [None] * max(1, min(len(partitions), worker_threads()))
    for k, partition in enumerate(partitions):
        lane = k % len(lanes)
        running = cast(fairgate.Cube | None, lanes[lane])  # a future: Dask hands its cube to the task
        lanes[lane] = cube_of_partition.submit(partition, policy, histogram, running)  # the old future dropped
    sums = [future for future in lanes if future is not None]
    while len(sums) > 1:
        pairs = zip(sums[::2], sums[1::2], strict=False)
        added = [add_cubes.submit(cast(fairgate.Cube, a), cast(fairgate.Cube, b)) for a, b in pairs]
        sums = added + sums[2 * len(added) :]
    return sums[0]


def worker_threads() -> int:
    """The Dask cluster's worker threads (each runs one lane); 1 without a Dask client."""
    context = FlowRunContext.get()
    client = getattr(context.task_runner, "client", None) if context is not None else None
    if client is None:
        return 1
    return max(1, sum(int(n) for n in client.nthreads().values()))


def check_across_partitions(
    checks: list[PartitionCheck], partitions: list[Partition], policy: fairgate.Policy
) -> list[dict[str, Any]]:
    """Ids unique over all partitions of each input; the checks' records. Disjoint id ranges prove it at no
    cost; where ranges overlap, one task per hash bucket of ids counts repeats exactly."""
    _same_id_types(checks, partitions)
    overlapping = overlapping_roles(checks)
    records = []
    for role in ROLES:
        method = "hash buckets" if role in overlapping else "disjoint id ranges"
        if role in overlapping:
            rows = sum(c.row_counts[role] for c in checks)
            n_buckets = max(1, math.ceil(rows / BUCKET_IDS))
            files = [p.files[role] for p in partitions]
            futures = [
                duplicate_ids_in_bucket.submit(
                    role, files, policy.columns.id, bucket, n_buckets, policy.execution.memory_limit
                )
                for bucket in range(n_buckets)
            ]
            found = [hit for future in futures for hit in future.result()]
            if found:
                raise cross_partition_duplicates(role, found, source=", ".join(files[:3]) + ", ...")
        records.append(
            {
                "input": f"{role} ({len(partitions)} partitions)",
                "column": policy.columns.id,
                "expectation": "ids_unique_across_partitions",
                "kwargs": {"method": method},
                "severity": "critical",
                "success": True,
                "unexpected_count": 0,
                "example": None,
            }
        )
    return records


def _same_id_types(checks: list[PartitionCheck], partitions: list[Partition]) -> None:
    """Ids are numbers in every partition or text in every partition (each partition checked its own inputs)."""
    kinds = {c.index: isinstance(c.id_ranges["predictions"][0], str) for c in checks}
    if len(set(kinds.values())) > 1:
        text = [partitions[i].files["predictions"] for i, is_text in kinds.items() if is_text][:3]
        raise DataError(
            f"the ids are text in some partitions ({', '.join(text)}) and numbers in others; fairgate does not "
            "convert ids (00001 and 1 would be the same person). Write the ids the same way in every file"
        )


def partitioned_inputs(
    policy: fairgate.Policy,
    given: dict[str, str],
    checks: list[PartitionCheck],
    cross_checks: list[dict[str, Any]],
    cube: fairgate.Cube,
) -> PartitionedInputs:
    """The inputs' record: the join report and validation summed over partitions, as one machine reports them."""
    join: dict[str, Any] = {key: sum(c.join[key] for c in checks) for key in checks[0].join}
    join["missing_attribute_values"] = {
        attribute.name: {
            "count": sum(c.missing.get(attribute.name, 0) for c in checks),
            "handling": attribute.missing,
            "unknown_label": attribute.unknown_label if attribute.missing == "unknown" else None,
        }
        for attribute in policy.sensitive_attributes
    }
    join["aligned_rows"] = cube.n_rows
    join["excluded_for_missing_attributes"] = join["matched"] - cube.n_rows
    join["partitions"] = len(checks)
    warnings = list(dict.fromkeys(w for c in checks for w in c.warnings))
    misplaced = misplaced_rows_warning(checks)
    if misplaced:
        warnings.append(misplaced)
    validation = Validation(checks=[check for c in checks for check in c.checks] + cross_checks, warnings=warnings)
    aligned = Aligned(table=pa.table({}), join_report=join, group_sizes=group_sizes(cube))
    # Group sizes against min_group_size: the single-process check, on the summed cube's group sizes.
    validation = validate_aligned.fn(cast(Staged, _PolicyOnly(policy)), aligned, validation)
    return PartitionedInputs(PartitionedSources(given, checks), aligned, validation)


@dataclass(frozen=True)
class _PolicyOnly:
    """What ``validate_aligned`` reads of the staged inputs: the policy."""

    policy: fairgate.Policy


def group_sizes(cube: fairgate.Cube) -> list[dict[str, Any]]:
    """Rows per (attribute, group) of the cube, largest group first within each attribute (as on one machine)."""
    sizes: list[dict[str, Any]] = []
    for attribute in cube.attributes:
        counts = (
            cube.cells.group_by(attribute).agg(pl.col(ROWS).sum()).sort([ROWS, attribute], descending=[True, False])
        )
        sizes += [{"attribute": attribute, "group": g, "n": int(n)} for g, n in counts.iter_rows()]
    return sizes
