"""The audit result: the typed audit document (fairgate's public contract) with convenient views."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from fairgate.document.document import SCHEMA_VERSION, AuditDocument
from fairgate.engine.labels import slicing_label

__all__ = ["SCHEMA_VERSION", "AuditResult", "fairgate_version"]

#: Result keys that hold groups or lists, left out of the flat results frame.
_NESTED_RESULT_KEYS = ("worst_group", "best_group", "excluded_groups", "insufficient_groups", "override_reasons")


@functools.cache  # the package metadata is read once per process (a millisecond a document otherwise)
def fairgate_version() -> str:
    """The installed fairgate version (``0.0.0+checkout`` when running from a checkout that was not installed)."""
    try:
        return metadata.version("fairgate")
    except metadata.PackageNotFoundError:
        return "0.0.0+checkout"


class AuditResult:
    """A judged audit. ``to_dict()`` is the JSON document described by ``schema/audit_result.schema.json``.

    Parameters
    ----------
    document
        The typed document, or its dict form (validated into :class:`AuditDocument`).

    files
        The report files written for this audit, by kind (``{"pdf": "out/fairness_report_<run>.pdf", ...}``), when
        known; :meth:`_repr_html_` links them.
    """

    def __init__(
        self, document: AuditDocument | Mapping[str, Any], files: Mapping[str, str | Path] | None = None
    ) -> None:
        self.document = document if isinstance(document, AuditDocument) else AuditDocument.model_validate(document)
        self.files: dict[str, str | Path] = dict(files or {})

    @property
    def verdict(self) -> str:
        """``pass`` or ``fail``."""
        return self.document.verdict

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail (0 as well when the policy disables the CI/CD gate)."""
        return self.document.exit_code

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.document.run_id

    def to_dict(self) -> dict[str, Any]:
        """The document as plain JSON-ready data; keys the producer did not set are left out."""
        return self.document.model_dump(exclude_unset=True)

    def to_json(self, *, indent: int | None = 2) -> str:
        """The document as JSON text (never NaN: undefined values are null)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def by_group(self, slicing: tuple[str, ...] | list[str]) -> pl.DataFrame:
        """One row per group of a slicing: the attribute values, n, sufficiency, and each metric with its CI.

        Metrics are columns ``<metric>``, ``<metric>_ci_low``, ``<metric>_ci_high``.
        """
        wanted = list(slicing)
        rows = []
        for entry in self.document.groups:
            if entry.slicing != wanted:
                continue
            row: dict[str, Any] = {**entry.group, "n": entry.n, "sufficient": entry.sufficient}
            for name, value in entry.metrics.items():
                row[name] = value.value
                row[f"{name}_ci_low"] = value.ci_low
                row[f"{name}_ci_high"] = value.ci_high
            rows.append(row)
        if not rows:
            raise KeyError(f"slicing {wanted} was not audited; audited slicings: {self.document.slicings}")
        return pl.DataFrame(rows, infer_schema_length=None)

    def results_frame(self) -> pl.DataFrame:
        """The judged policy metrics, one row per (metric, slicing)."""
        rows = [
            {
                **{k: v for k, v in result.items() if k not in _NESTED_RESULT_KEYS},
                "slicing": slicing_label(result["slicing"]),
            }
            for result in self.to_dict()["results"]
        ]
        return pl.DataFrame(rows, infer_schema_length=None)

    def _repr_html_(self) -> str:
        """What a notebook shows: the verdict, the failing results, what was not judged, the report files.

        The results carry their intervals, the unjudged ones why; built by fairgate/report/notebook.py.
        """
        from fairgate.report.notebook import audit_html

        return audit_html(self.document, self.files)

    def __repr__(self) -> str:
        """The verdict, model, failures and rows at a glance."""
        detail = self.document.verdict_detail
        return (
            f"<AuditResult {self.verdict.upper()} model={self.document.model.name} "
            f"failed={detail.n_failed}/{detail.n_judged} rows={self.document.n_rows}>"
        )
