"""What staging holds: the registered inputs (:class:`Staged`) and the aligned rows (:class:`Aligned`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from fairgate.policy.core import Policy
from tasks.inputs.io import Source


@dataclass
class Staged:
    """The inputs, registered and renamed to the contract, in one DuckDB connection."""

    con: duckdb.DuckDBPyConnection
    policy: Policy
    sources: dict[str, Source]
    input_columns: dict[str, str]  # role of a column (id, y_true, y_pred, score) -> its name in the input
    attributes: list[str]  # sensitive attributes read from the attributes input
    passthrough: list[str]  # extra attribute-file columns the proxy reads
    has_score: bool
    has_y_pred: bool
    # task: ranking: the predictions' list id and rank columns, carried from staging to the aligned rows.
    ranking_columns: list[str] = field(default_factory=list)
    # The input holding the policy's weight column (columns.weight): carried from its staging view to the aligned
    # rows. None without one, or when a proxy section writes the weights after alignment.
    weight_role: str | None = None
    # An audit without labels: the predictions stand in as the labels input, with a placeholder label.
    labels_absent: bool = False
    row_counts: dict[str, int] = field(default_factory=dict)
    sha256: dict[str, str] = field(default_factory=dict)
    # Models named in the predictions input (optional columns model_name, model_version, timestamp).
    provenance: list[dict[str, Any]] = field(default_factory=list)

    @property
    def model(self) -> tuple[str | None, str | None]:
        """The model name and version the predictions carry, when they name exactly one model."""
        if len(self.provenance) == 1:
            only = self.provenance[0]
            return only["model_name"], only["model_version"]
        return None, None


@dataclass
class Aligned:
    """The aligned rows (contract columns) and the join report."""

    table: pa.Table
    join_report: dict[str, Any]
    group_sizes: list[dict[str, Any]]
