"""Where the numbers come from: data window, inputs, validation checks, the policy text and the audit trail."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

import yaml

from fairgate.document.document import AuditDocument
from fairgate.report.format import fmt, fmt_count, interval_text, metric_label
from fairgate.report.model import AttenuationRow, CheckRow, KeyValue

NO_WINDOW = "not stated in the inputs"


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
    return NO_WINDOW


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


def validation_line(checks: list[CheckRow]) -> str:
    """One line for the checks: "16/16 checks passed" (the failures are listed beneath it)."""
    if not checks:
        return ""
    passed = sum(c.passed for c in checks)
    failed = len(checks) - passed
    tail = "" if not failed else f"; {failed} did not (listed below)"
    return f"{passed}/{len(checks)} checks passed{tail}."


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
    ('Gaps shrink.', '0.150 [0.100–0.200]', '0.200')
    """
    block = (proxy or {}).get("attenuation")
    if not block:
        return "", []
    rows = []
    for entry in block.get("metrics", []):
        corrected = entry.get("corrected") or {}
        value = corrected.get("value")
        interval = f" [{interval_text(corrected.get('ci_low'), corrected.get('ci_high'))}]"
        rows.append(
            AttenuationRow(
                metric=metric_label(entry["metric"]),
                naive=fmt(entry.get("naive_value")),
                corrected=fmt(value) + (interval if corrected.get("ci_low") is not None else ""),
                factor=fmt(entry.get("attenuation_factor")),
                note=str(entry.get("reason", "")),
            )
        )
    statement = str(block.get("statement", ""))
    if block.get("reason"):
        statement = f"{statement} {block['reason']}".strip()
    return statement, rows


def policy_text(policy: Mapping[str, Any]) -> str:
    """The policy as applied, as compact YAML under its top-level key (JSON if it cannot be dumped as YAML).

    Every list or mapping of plain values sits on one line (a metric is one line), so it fits an appendix; the
    sections the policy leaves unset (null) are named together on the last line.

    >>> print(policy_text({"metrics": [{"name": "x", "threshold": 0.1}], "statistics": {"seed": 0}, "proxy": None}))
    fairness_checker:
      metrics:
        - {name: x, threshold: 0.1}
      statistics: {seed: 0}
      # not set (null): proxy
    """
    attributes = policy.get("sensitive_attributes")
    if isinstance(attributes, list):  # an attribute without labels: (most) shows no "labels: null"
        attrs = [{k: v for k, v in a.items() if not (k == "labels" and v is None)} for a in attributes]
        policy = {**policy, "sensitive_attributes": attrs}
    unset = [key for key, value in policy.items() if value is None]
    shown = {key: value for key, value in policy.items() if value is not None}
    try:
        lines = ["fairness_checker:", *_compact_lines(shown, "  ")]
        return "\n".join(lines + ([f"  # not set (null): {', '.join(unset)}"] if unset else []))
    except yaml.YAMLError:
        return json.dumps(policy, indent=2, default=str)


def _compact_lines(value: Mapping[str, Any], indent: str) -> list[str]:
    lines = []
    for key, item in value.items():
        if isinstance(item, Mapping) and any(isinstance(v, Mapping | list) and v for v in item.values()):
            lines += [f"{indent}{key}:", *_compact_lines(item, indent + "  ")]
        elif isinstance(item, list) and item and all(isinstance(v, Mapping) for v in item):
            lines += [f"{indent}{key}:", *(f"{indent}  - {_flow(v)}" for v in item)]
        else:
            lines.append(f"{indent}{key}: {_flow(item)}")
    return lines


def _flow(value: Any) -> str:
    text: str = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, allow_unicode=True, width=10_000)
    return text.strip().removesuffix("...").strip()


#: Join and validation keys in words (the JSON keeps the raw keys).
_KEY_WORDS = {
    "matched": "People matched across the inputs",
    "predictions_without_labels": "Predictions without a label",
    "labels_without_predictions": "Labels without a prediction",
    "people_without_attributes": "People without sensitive attributes",
    "aligned_rows": "Rows audited",
    "excluded_for_missing_attributes": "Rows left out for a missing attribute",
    "count": "missing values",
    "handling": "handled by",
    "unknown_label": "grouped as",
    "engine": "Validation engine",
    "great_expectations_version": "Great Expectations version",
    "success": "All critical checks passed",
    "n_expectations": "Checks run",
}


def join_facts(alignment: Mapping[str, Any] | None) -> list[KeyValue]:
    """The join summary in words: a line per attribute with missing values, one naming those without any.

    >>> [(kv.key, kv.value) for kv in join_facts({"missing_attribute_values": {
    ...     "race": {"count": 0}, "sex": {"count": 0}, "age": {"count": 3, "handling": "exclude"}}})]
    [('Missing age', '3 rows, left out'), ('No missing values', 'race, sex')]
    """
    rows = []
    for key, value in (alignment or {}).items():
        if key == "missing_attribute_values" and isinstance(value, Mapping):
            texts = {attribute: _missing_text(info) for attribute, info in value.items()}
            rows += [KeyValue(f"Missing {a}", text) for a, text in texts.items() if text != "none"]
            if complete := [a for a, text in texts.items() if text == "none"]:
                rows.append(KeyValue("No missing values", ", ".join(complete)))
        elif not isinstance(value, Mapping | list):
            rows.append(KeyValue(_KEY_WORDS.get(key, key.replace("_", " ").capitalize()), _plain(value)))
    return rows


def _missing_text(info: Any) -> str:
    if not isinstance(info, Mapping):
        return _plain(info)
    count = info.get("count") or 0
    if not count:
        return "none"
    handling = str(info.get("handling") or "")
    if handling == "exclude":
        return f"{fmt_count(count)} rows, left out"
    label = info.get("unknown_label")
    return f"{fmt_count(count)} rows, grouped as {label!r}" if label else f"{fmt_count(count)} rows ({handling})"


def validation_facts(validation: Mapping[str, Any] | None) -> list[KeyValue]:
    """The validation summary in words (the checks themselves are one line plus the failures)."""
    rows = []
    for key, value in (validation_summary(validation) or {}).items():
        if isinstance(value, Mapping | list):
            continue
        rows.append(KeyValue(_KEY_WORDS.get(key, key.replace("_", " ").capitalize()), _plain(value)))
    return rows


def _plain(value: Any) -> str:
    """A fact as a short cell: one huge cell makes WeasyPrint's table layout quadratic (the JSON has it all)."""
    text = _plain_text(value)
    return text if len(text) <= 240 else text[:239] + "…"


def _plain_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return fmt_count(value) if float(value).is_integer() else fmt(value)
    return str(value)


def reproduce(document: AuditDocument) -> tuple[str, list[KeyValue]]:
    """How to re-run this audit: an equivalent command line, and the hashes and window that pin its inputs.

    The report shows these after :func:`trail` (run id, policy SHA-256, versions).
    """
    facts = _input_facts(document)
    if document.command_line:  # the command actually run (schema 1.10), one option a line
        return command_text(document.command_line), facts
    inputs = document.inputs or {}
    args = ["fairgate audit --policy POLICY.yaml"]
    for role in ("predictions", "labels", "attributes"):
        if role == "labels" and document.label_free is not None:
            continue  # an audit without labels (its label-dependent results estimated)
        source = (inputs.get(role) or {}).get("source") if isinstance(inputs.get(role), Mapping) else None
        args.append(f"--{role} {_quoted(str(source)) if source else role.upper()}")
    if document.label_bias is not None and document.label_bias.source:
        args.append(f"--external-labels {_quoted(document.label_bias.source)}")
    for role in ("features", "counterfactual"):  # individual fairness's inputs, when the audit had them
        if isinstance(inputs.get(role), Mapping) and inputs[role].get("source"):
            args.append(f"--{role} {_quoted(str(inputs[role]['source']))}")
    args.append(f"--model {_quoted(document.model.name)} --model-version {_quoted(document.model.version)}")
    return " \\\n    ".join(args), facts


def command_text(command: str) -> str:
    r"""A recorded command line with each option on a line of its own (a shell reads it as the same command).

    >>> print(command_text("fairgate demo --task 'multi class' --quiet"))
    fairgate demo \
        --task 'multi class' \
        --quiet
    """
    try:
        words = shlex.split(command)
    except ValueError:  # not a shell line (hand-edited JSON): shown as recorded
        return command
    lines: list[list[str]] = [[]]
    for word in words:
        if word.startswith("-") and lines[-1]:
            lines.append([])
        lines[-1].append(shlex.quote(word))
    return " \\\n    ".join(" ".join(line) for line in lines)


def _input_facts(document: AuditDocument) -> list[KeyValue]:
    """The inputs' hashes, the data window and the seed: what pins a re-run to the same numbers."""
    facts = []  # the policy's SHA-256 is in the trail facts shown with these
    for role, info in (document.inputs or {}).items():
        if isinstance(info, Mapping) and info.get("sha256"):
            rows = f" ({fmt_count(info['rows'])} rows)" if info.get("rows") is not None else ""
            facts.append(KeyValue(f"{str(role).capitalize()} SHA-256", f"{info['sha256']}{rows}"))
    window = data_window(document)
    if window == NO_WINDOW:
        window = "none: the inputs have no timestamp column, so the run covers whatever rows the files held"
    facts += [
        KeyValue("Data window", window),
        KeyValue("Seed and resamples", f"seed {document.seed}, {fmt_count(document.n_bootstrap)} bootstrap replicates"),
    ]
    return facts


def _quoted(text: str) -> str:
    return text if text and all(c.isalnum() or c in "-_./:=" for c in text) else "'" + text.replace("'", "'\\''") + "'"


def trail(document: AuditDocument) -> list[KeyValue]:
    """The audit-trail facts that identify this run."""
    return run_record(document.model_dump(include={"run_id", "policy_sha256", "schema_version", "fairgate_version",
                                                   "created_at"}))  # fmt: skip


def run_record(document: Mapping[str, Any]) -> list[KeyValue]:
    """The facts that identify a run of any report type (audit, monitoring, comparison), as its JSON has them.

    >>> [kv.value for kv in run_record({"run_id": "r1", "policy_sha256": "ab", "schema_version": "2.1"})]
    ['r1', 'ab', '2.1', '–', '–']
    """
    return [
        KeyValue("Run id", str(document.get("run_id") or "–")),
        KeyValue("Policy SHA-256", str(document.get("policy_sha256") or "–")),
        KeyValue("Schema version", str(document.get("schema_version") or "–")),
        KeyValue("fairgate version", str(document.get("fairgate_version") or "–")),
        KeyValue("Created at", str(document.get("created_at") or "–")),
    ]
