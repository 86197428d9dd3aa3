"""Policy section ``execution:``: where and how an audit runs (issue 13: large inputs, Dask).

``runner`` picks the task runner of the metric fan-out (``local`` threads, or ``dask`` on prefect-dask's
``DaskTaskRunner``, at ``address`` or on a local cluster when it is null). ``streaming`` decides whether the
audit pulls the aligned rows into Python (``never``), or builds the cube inside DuckDB and validates with SQL
aggregates so that no row reaches Python (``always``; ``auto``: when the staged inputs hold more than
``STREAMING_AUTO_ROWS`` predictions). ``memory_limit`` bounds DuckDB on the streaming path (it spills to a
temporary directory beyond it). ``auc`` chooses exact ROC AUC from a per-row score table or AUC from a score
histogram of ``auc_bins`` equal bins with a stated error bound (``auto``: exact up to ``EXACT_AUC_MAX_ROWS``
rows).

A policy without the section keeps its hash and its behaviour (``Policy.canonical_json`` drops the defaults).

>>> e = Execution.model_validate({"streaming": "always", "memory_limit": "2GB"})
>>> e.runner, e.streaming, e.memory_limit, e.auc, e.auc_bins
('local', 'always', '2GB', 'auto', 65536)
>>> e.streams(rows=10)
True
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from fairgate.policy.base import STRICT

Runner = Literal["local", "dask"]
Streaming = Literal["auto", "always", "never"]
AucMethod = Literal["exact", "histogram", "auto"]

# ``streaming: auto`` streams above this many prediction rows: below it the rows fit in memory comfortably
# (10M aligned rows take about 3 GB on the in-memory path, docs/benchmarks/scale.md).
STREAMING_AUTO_ROWS = 5_000_000
# ``auc: auto`` keeps the exact per-row score table up to this many rows (about 40 bytes a row once sorted),
# and uses the histogram beyond.
EXACT_AUC_MAX_ROWS = 5_000_000
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)
_UNIT_BYTES = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_UNIT_BYTES |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
# Below this DuckDB cannot hold even the staging of a small file ("1B" and "0GB" ran out of memory at once).
MIN_MEMORY_BYTES = 64 * 10**6


class Execution(BaseModel):
    """The ``execution:`` section: task runner, streaming, DuckDB memory bound, AUC method."""

    model_config = STRICT

    runner: Runner = "local"
    """`local` (the in-process thread pool) or `dask` (partitions on a Dask cluster, via prefect-dask)."""
    address: str | None = None
    """A Dask scheduler (`tcp://host:8786`); null with `runner: dask` starts a local cluster."""
    streaming: Streaming = "auto"
    """`auto` (stream through DuckDB above 5M prediction rows), `always` or `never`."""
    memory_limit: str | None = "3GB"
    """DuckDB's memory bound on the streaming path (`3GB`, `512MB`; at least 64MB); null leaves DuckDB's default (80% of
    RAM)."""
    auc: AucMethod = "auto"
    """`exact`, `histogram` (bounded error) or `auto` (exact up to 5M rows)."""
    auc_bins: int = Field(default=65536, ge=16, le=1 << 24)
    """Equal-width score bins on [0, 1] of the AUC histogram: the error bound shrinks as scores spread over more."""

    @field_validator("memory_limit")
    @classmethod
    def _memory_size(cls, value: str | None) -> str | None:
        if value is None:
            return value
        size = _MEMORY.match(value)
        if size is None:
            raise ValueError(f"memory_limit {value!r} is not a size; write e.g. '3GB', '512MB' or '2GiB'")
        if float(size.group(1)) * _UNIT_BYTES[size.group(2).lower()] < MIN_MEMORY_BYTES:
            raise ValueError(
                f"memory_limit {value!r} is too small for DuckDB to read the inputs; give at least '64MB' "
                "(e.g. '3GB'), or null for DuckDB's default"
            )
        return value

    @model_validator(mode="after")
    def _address_needs_dask(self) -> Execution:
        if self.address is not None and self.runner != "dask":
            raise ValueError("address names a Dask scheduler; set runner: dask with it, or remove address")
        return self

    def streams(self, rows: int) -> bool:
        """Whether an audit of ``rows`` prediction rows takes the streaming path."""
        if self.streaming == "auto":
            return rows > STREAMING_AUTO_ROWS
        return self.streaming == "always"

    def histogram_auc(self, rows: int) -> bool:
        """Whether AUC of ``rows`` audited rows comes from the score histogram instead of the score table."""
        if self.auc == "auto":
            return rows > EXACT_AUC_MAX_ROWS
        return self.auc == "histogram"
