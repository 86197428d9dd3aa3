"""Earlier audits of one model as the audit trail recorded them (filled by ``tasks.store.model_history``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PastResult:
    """One judged (metric, slicing) of an earlier run, as its ``metric_results`` row holds it."""

    metric: str
    slicing: tuple[str, ...]
    value: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float | None
    direction: str | None
    status: str | None
    standard_error: float | None = None  # the bootstrap one the document records (schema 1.2 on); None before


@dataclass(frozen=True)
class PastRun:
    """One earlier run of the model: its trail row's identity, inputs and judged results."""

    run_id: str
    seq: int
    recorded_at: str
    model_version: str | None
    verdict: str | None
    input_sha256: dict[str, str]  # role -> sha256 of the input file
    confidence_level: float | None  # the level of its intervals (None: unknown, treated as 0.95)
    results: tuple[PastResult, ...]


@dataclass(frozen=True)
class History:
    """The model's earlier runs in one trail, oldest first, and why there are none when the trail is unusable."""

    runs: tuple[PastRun, ...] = ()
    note: str | None = None  # e.g. the trail could not be read; shown in the report's trend section
    trail: str | None = None
