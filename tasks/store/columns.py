"""The trail's hashed columns: every chain's row, in the order its hash reads it.

Column order is part of the hash: never reorder, only append (and bump ``TRAIL_VERSION``). The tables
themselves are created from ``sql/store/`` (tasks/store/schema.py).
"""

from __future__ import annotations

TRAIL_VERSION = 2
RUN_COLUMNS = [
    "seq",
    "run_id",
    "recorded_at",
    "created_at",
    "model_name",
    "model_version",
    "fairgate_version",
    "verdict",
    "exit_code",
    "n_rows",
    "inputs",
    "policy_text",
    "policy_sha256",
    "validation",
    "join_report",
    "document",
    "chain",  # TRAIL_VERSION 2; a version-1 row has none and is hashed without it
]
METRIC_COLUMNS = [
    "run_id",
    "position",
    "metric",
    "slicing",
    "value",
    "ci_low",
    "ci_high",
    "threshold",
    "direction",
    "status",
    "uncertain",
    "critical",
]
CUBE_COLUMNS = ["run_id", "cells"]
DELIVERY_COLUMNS = ["seq", "run_id", "recorded_at", "recipients", "status", "detail", "chain"]
LEGACY_RUN_COLUMNS, LEGACY_DELIVERY_COLUMNS = len(RUN_COLUMNS) - 1, len(DELIVERY_COLUMNS) - 1
REGISTRATION_COLUMNS = ["seq", "registered_at", "model_name", "model_version", "status", "detail", "chain"]
REGISTRATION_STATUSES = ("accepted", "rejected")
# Monitoring chains (tasks/store/monitor.py writes them); hashed columns in this order, never reorder.
PERIOD_CUBE_COLUMNS = [
    "seq",
    "recorded_at",
    "run_id",
    "model_name",
    "period_start",
    "period_end",
    "version",
    "supersedes",
    "rows",
    "labelled_rows",
    "input_sha256",
    "cube",
    "chain",
]
NIGHT_COLUMNS = ["seq", "recorded_at", "run_id", "model_name", "night", "windows", "observations", "chain"]
ALERT_COLUMNS = [
    "seq",
    "recorded_at",
    "run_id",
    "model_name",
    "night",
    "stream",
    "metric",
    "slicing",
    "grp",
    "statistic",
    "threshold",
    "change",
    "detail",
    "chain",
]
# Estimates of periods without labels ("estimate") and, once their labels arrived, the check ("check").
ESTIMATE_COLUMNS = [
    "seq",
    "recorded_at",
    "run_id",
    "model_name",
    "period_start",
    "kind",
    "reference_run_id",
    "content",
    "chain",
]
MONITOR_CHAINS = {
    "period_cubes": PERIOD_CUBE_COLUMNS,
    "monitor_nights": NIGHT_COLUMNS,
    "drift_alerts": ALERT_COLUMNS,
    "label_estimates": ESTIMATE_COLUMNS,
}
# One row per mitigation run (a failing audit's proposal, or `fairgate mitigate`), pointing to the audit it answers.
MITIGATION_COLUMNS = [
    "seq",
    "recorded_at",
    "mitigation_id",
    "answers",
    "method",
    "status",
    "verdict_before",
    "verdict_after",
    "outputs",
    "chain",
]
