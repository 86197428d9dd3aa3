"""Where the numbers come from: data window, inputs, validation checks, the policy text and the audit trail."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from fairgate.document.document import AuditDocument
from fairgate.report.format import fmt, fmt_count, metric_label, round_number
from fairgate.report.model import AttenuationRow, CheckRow, KeyValue


def data_window(document: AuditDocument) -> str:
    """The time span of the predictions: the pipeline's provenance (timestamp column), or a stated window."""
    spans = document.predictions_provenance or []
    starts = sorted(str(p["first_prediction_at"]) for p in spans if p.get("first_prediction_at"))
    ends = sorted(str(p["last_prediction_at"]) for p in spans if p.get("last_prediction_at"))
    if starts and ends:
        return f"{starts[0]} to {ends[-1]}"
    for source in (document.inputs or {}, document.alignment or {}):
        window = source.get("data_window") or source.get("window")
        if isinstance(window, Mapping):
            start, end = window.get("start") or window.get("from"), window.get("end") or window.get("to")
            return f"{start or '…'} to {end or '…'}"
        if window:
            return str(window)
    return "not stated in the inputs"


def validation_checks(validation: Mapping[str, Any] | None) -> list[CheckRow]:
    """Every Great Expectations check the pipeline recorded, one row each."""
    rows = []
    for check in (validation or {}).get("checks") or []:
        if not isinstance(check, Mapping):
            continue
        count = check.get("unexpected_count")
        source = str(check.get("input") or "")
        rows.append(
            CheckRow(
                input=source.replace("\\", "/").rsplit("/", 1)[-1],
                column=str(check.get("column") or "–"),
                expectation=str(check.get("expectation") or "–").removeprefix("expect_").replace("_", " "),
                severity=str(check.get("severity") or ""),
                passed=bool(check.get("success")),
                detail="" if not count else f"{fmt_count(count)} unexpected",
            )
        )
    return rows


def validation_summary(validation: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The validation facts without the bulky raw entries (the JSON document keeps them)."""
    if validation is None:
        return None
    return {k: v for k, v in validation.items() if k not in ("checks", "results", "warnings")}


def validation_warnings(validation: Mapping[str, Any] | None) -> list[str]:
    """The validation's warnings (e.g. groups below the minimum size)."""
    return [str(w) for w in (validation or {}).get("warnings") or []]


def proxy_facts(proxy: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The proxy summary without its attenuation block, which the report shows as its own table."""
    if proxy is None:
        return None
    return {k: v for k, v in proxy.items() if k != "attenuation"}


def proxy_attenuation(proxy: Mapping[str, Any] | None) -> tuple[str, list[AttenuationRow]]:
    """What the attenuation of proxy-weighted disparities means here, and each metric as measured and corrected.

    >>> block = {"statement": "Gaps shrink.", "metrics": [{"metric": "demographic_parity_difference",
    ...     "naive_value": 0.03, "attenuation_factor": 0.2,
    ...     "corrected": {"value": 0.15, "ci_low": 0.1, "ci_high": 0.2}}]}
    >>> statement, rows = proxy_attenuation({"attenuation": block})
    >>> statement, rows[0].corrected, rows[0].factor
    ('Gaps shrink.', '0.150 [0.100, 0.200]', '0.200')
    """
    block = (proxy or {}).get("attenuation")
    if not block:
        return "", []
    rows = []
    for entry in block.get("metrics", []):
        corrected = entry.get("corrected") or {}
        value = corrected.get("value")
        interval = f" [{fmt(round_number(corrected.get('ci_low')))}, {fmt(round_number(corrected.get('ci_high')))}]"
        rows.append(
            AttenuationRow(
                metric=metric_label(entry["metric"]),
                naive=fmt(round_number(entry.get("naive_value"))),
                corrected=fmt(round_number(value)) + (interval if corrected.get("ci_low") is not None else ""),
                factor=fmt(round_number(entry.get("attenuation_factor"))),
                note=str(entry.get("reason", "")),
            )
        )
    statement = str(block.get("statement", ""))
    if block.get("reason"):
        statement = f"{statement} {block['reason']}".strip()
    return statement, rows


def policy_text(policy: Mapping[str, Any]) -> str:
    """The policy as applied, as YAML under its top-level key (JSON if it cannot be dumped as YAML)."""
    try:
        text: str = yaml.safe_dump({"fairness_checker": dict(policy)}, sort_keys=False, allow_unicode=True, width=100)
        return text
    except yaml.YAMLError:
        return json.dumps(policy, indent=2, default=str)


def trail(document: AuditDocument) -> list[KeyValue]:
    """The audit-trail facts that identify this run."""
    return [
        KeyValue("Run id", document.run_id or "–"),
        KeyValue("Policy SHA-256", document.policy_sha256 or "–"),
        KeyValue("Schema version", document.schema_version or "–"),
        KeyValue("fairgate version", document.fairgate_version or "–"),
        KeyValue("Created at", document.created_at or "–"),
    ]
