"""The audit result: a versioned JSON document (fairgate's public contract) with convenient views."""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any

import polars as pl

SCHEMA_VERSION = "1.0"


def fairgate_version() -> str:
    try:
        return metadata.version("fairgate")
    except metadata.PackageNotFoundError:  # running from a checkout that was not installed
        return "0.0.0+checkout"


class AuditResult:
    """A judged audit. ``to_dict()`` is the JSON document described by ``schema/audit_result.schema.json``."""

    def __init__(self, document: dict[str, Any]) -> None:
        self._document = document

    @property
    def verdict(self) -> str:
        return str(self._document["verdict"])

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail (0 as well when the policy disables the CI/CD gate)."""
        return int(self._document["exit_code"])

    @property
    def run_id(self) -> str:
        return str(self._document["run_id"])

    def to_dict(self) -> dict[str, Any]:
        return self._document

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self._document, indent=indent, allow_nan=False)

    def by_group(self, slicing: tuple[str, ...] | list[str]) -> pl.DataFrame:
        """One row per group of a slicing: the attribute values, n, sufficiency, and each metric with its CI.

        Metrics are columns ``<metric>``, ``<metric>_ci_low``, ``<metric>_ci_high``.
        """
        wanted = list(slicing)
        rows = []
        for entry in self._document["groups"]:
            if entry["slicing"] != wanted:
                continue
            row: dict[str, Any] = {**entry["group"], "n": entry["n"], "sufficient": entry["sufficient"]}
            for name, value in entry["metrics"].items():
                row[name] = value["value"]
                row[f"{name}_ci_low"] = value["ci_low"]
                row[f"{name}_ci_high"] = value["ci_high"]
            rows.append(row)
        if not rows:
            known = [s for s in self._document["slicings"]]
            raise KeyError(f"slicing {wanted} was not audited; audited slicings: {known}")
        return pl.DataFrame(rows, infer_schema_length=None)

    def results_frame(self) -> pl.DataFrame:
        """The judged policy metrics, one row per (metric, slicing)."""
        rows = [
            {
                **{
                    k: v
                    for k, v in r.items()
                    if k
                    not in (
                        "worst_group",
                        "best_group",
                        "excluded_groups",
                        "insufficient_groups",
                        "override_reasons",
                    )
                },
                "slicing": " x ".join(r["slicing"]) or "(all)",
            }
            for r in self._document["results"]
        ]
        return pl.DataFrame(rows, infer_schema_length=None)

    def __repr__(self) -> str:
        detail = self._document["verdict_detail"]
        return (
            f"<AuditResult {self.verdict.upper()} model={self._document['model']['name']} "
            f"failed={detail['n_failed']}/{detail['n_judged']} rows={self._document['n_rows']}>"
        )
