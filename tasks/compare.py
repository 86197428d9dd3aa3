"""Adapters of ``fairgate compare``: resolve each model's input (a file or a recorded audit run), pair the
baseline's aligned rows with each candidate's, compare them, write the document."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.document.comparison import COMPARISON_SCHEMA_VERSION, ComparisonDocument
from fairgate.document.result import fairgate_version
from fairgate.engine.labels import slicing_label
from fairgate.engine.text import fmt_signed
from fairgate.errors import DataError, FairgateError
from fairgate.mitigation.compare import JointCube, compare_candidates, group_sizes, joint_cube
from fairgate.mitigation.promotion import ModelAudit, model_audit
from fairgate.report.sizes import published_sizes
from tasks.audit import artifact_slug
from tasks.inputs.io import parse_source, sha256_of
from tasks.outputs import write_atomic
from tasks.store import show_run

_ROLES = ("predictions", "labels", "attributes")


@dataclass(frozen=True)
class ModelInput:
    """One compared model's predictions: a file given as is, or the one an audit run in the trail recorded.

    ``recorded`` holds the run's recorded inputs (role -> source, sha256) when the model is a run.
    """

    option: str
    predictions: str
    run: dict[str, Any] | None = None
    recorded: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """How the comparison names the model: the run's model and version, else the file's stem."""
        if self.run is not None:
            return f"{self.run['model_name']} {self.run['model_version']} (run {self.run['run_id']})"
        return Path(self.predictions.partition("::")[0]).stem + (
            f"::{self.predictions.partition('::')[2]}" if "::" in self.predictions else ""
        )


def resolve_input(option: str, text: str, trail_path: Path | None) -> ModelInput:
    """A predictions input as given, or a recorded audit run (run id or seq) whose inputs still hold.

    A file (or ``DB::TABLE``) that exists is taken as predictions. Otherwise ``text`` is looked up in the trail;
    every input the run recorded must still be at its recorded place with its recorded sha256.
    """
    try:
        parse_source(option, text)
        return ModelInput(option, text)
    except DataError as missing:
        if trail_path is None or not trail_path.exists():
            raise DataError(
                f"{missing.message}; nor is {text!r} an audit run: no trail at {trail_path} (pass --trail)"
            ) from None
        try:
            record = show_run(trail_path, text)
        except FairgateError as exc:
            raise DataError(f"--{option} {text!r} is neither a predictions file nor a run: {exc.message}") from None
    recorded = record.get("inputs") or {}
    for role in _ROLES:
        _check_recorded(option, text, role, recorded.get(role))
    run = {k: record[k] for k in ("run_id", "seq", "model_name", "model_version", "verdict")}
    return ModelInput(option, recorded["predictions"]["source"], run=run, recorded=recorded)


def _check_recorded(option: str, run: str, role: str, entry: dict[str, Any] | None) -> None:
    """The run's input for ``role`` is still where the run read it, byte for byte."""
    if not entry or not entry.get("source"):
        raise DataError(f"--{option} {run!r}: the run recorded no {role} input; pass the predictions file instead")
    try:
        source = parse_source(role, entry["source"])
    except DataError:
        raise DataError(
            f"--{option} {run!r}: the run's {role} input {entry['source']!r} is gone (recorded relative to where "
            "the audit ran, if relative); run compare from that folder or pass the files instead"
        ) from None
    if sha256_of(source) != entry.get("sha256"):
        raise DataError(
            f"--{option} {run!r}: the run's {role} input {entry['source']!r} has changed since the run was recorded "
            f"(sha256 {sha256_of(source)[:12]}..., recorded {str(entry.get('sha256'))[:12]}...); it no longer holds "
            "what was audited: pass the predictions file instead"
        )


def shared_inputs(
    baseline: ModelInput, candidates: list[ModelInput], labels: str | None, attributes: str | None
) -> tuple[str, str]:
    """The labels and attributes every model is compared against: as given, else the baseline run's.

    A model that is a run must have been audited against the very same labels and attributes (sha256).
    """
    recorded = baseline.recorded
    labels = labels or (recorded["labels"]["source"] if recorded else None)
    attributes = attributes or (recorded["attributes"]["source"] if recorded else None)
    if labels is None or attributes is None:
        raise DataError(
            "--labels and --attributes are needed when the baseline is a predictions file "
            "(a baseline given as an audit run brings its own)"
        )
    hashes = {
        "labels": sha256_of(parse_source("labels", labels)),
        "attributes": sha256_of(parse_source("attributes", attributes)),
    }
    for model in [baseline, *candidates]:
        for role, digest in hashes.items():
            if model.recorded and model.recorded[role]["sha256"] != digest:
                raise DataError(
                    f"--{model.option} {model.run and model.run['run_id']!r} was audited against other {role} "
                    f"({model.recorded[role]['source']}) than this comparison uses; compare needs every model "
                    "judged on the same people with the same labels and attributes"
                )
    return labels, attributes


def unique_names(models: list[ModelInput]) -> list[str]:
    """Each model's name, made unique with a suffix when two share one.

    >>> unique_names([ModelInput("c", "a/m.csv"), ModelInput("c", "b/m.csv"), ModelInput("c", "x.csv")])
    ['m', 'm #2', 'x']
    """
    seen: dict[str, int] = {}
    names = []
    for model in models:
        seen[model.name] = seen.get(model.name, 0) + 1
        names.append(model.name if seen[model.name] == 1 else f"{model.name} #{seen[model.name]}")
    return names


@task(name="pair models", cache_policy=NO_CACHE)
def pair_models(baseline: pa.Table, candidate: pa.Table, policy: fairgate.Policy) -> JointCube:
    """The joint cube of both models' aligned rows (staged inputs name their id column ``id``)."""
    return joint_cube(baseline, candidate, policy, id_column="id")


@task(name="audit candidate", cache_policy=NO_CACHE)
def audit_candidate(rows: pa.Table, policy: fairgate.Policy) -> ModelAudit:
    """The candidate's own audit against the policy (its aligned rows, scores included): promotable only on pass."""
    return model_audit(rows, policy)


@task(name="compare models", cache_policy=NO_CACHE)
def compare_models(
    joints: dict[str, JointCube], policy: fairgate.Policy, audits: dict[str, ModelAudit]
) -> dict[str, Any]:
    """Each candidate's changes with paired intervals, a decision per candidate, and the chosen one."""
    return compare_candidates(joints, policy, audits)


def comparison_document(
    result: dict[str, Any],
    run_id: str,
    policy: fairgate.Policy,
    baseline: dict[str, Any],
    candidates: list[dict[str, Any]],
    joint: JointCube | None = None,
    command_line: str | None = None,
) -> dict[str, Any]:
    """The comparison document: run metadata, the baseline's and each candidate's model entry, the result.

    ``baseline`` and ``candidates`` are ``ComparedModel`` entries (name, version, run, inputs, alignment), the
    candidates in the order of ``result["candidates"]``. ``joint``: a pairing of the compared people, whose
    group sizes the document publishes (small-cell suppressed); ``command_line``: the command that ran it.
    """
    k = policy.reporting.min_cell_size
    groups = [] if joint is None else published_sizes(group_sizes(joint), joint.n_rows, k)
    card = policy.model_card
    for entry, model in zip(result["candidates"], candidates, strict=True):
        entry["model"] = model
    return {
        "schema_version": COMPARISON_SCHEMA_VERSION,
        "kind": "comparison",
        "run_id": run_id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "fairgate_version": fairgate_version(),
        "policy_sha256": policy.sha256(),
        "baseline": baseline,
        **result,
        "groups": groups,
        "command_line": command_line,
        "model_card": None if card is None else card.model_dump(mode="json"),
        "min_cell_size": k,
    }


def comparison_path(out_dir: Path, run_id: str) -> Path:
    """Where a comparison document goes: ``comparison_<run id>.json`` in the output folder.

    >>> comparison_path(Path("out"), "a/b 1").as_posix()
    'out/comparison_a_b_1.json'
    """
    return out_dir / f"comparison_{re.sub(r'[^A-Za-z0-9._-]+', '_', run_id)}.json"


@task(name="write comparison", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1)
def write_comparison(document: dict[str, Any], out_dir: Path) -> str:
    """Write the comparison document atomically (a temporary sibling, then a rename); return its path.

    The document is first validated against its models (fairgate/document/comparison.py), so every file
    written matches the shipped schema.
    """
    ComparisonDocument.model_validate(document)
    path = comparison_path(out_dir, str(document["run_id"]))
    return str(write_atomic(path, (json.dumps(document, indent=2, allow_nan=False) + "\n").encode()))


@task(name="publish comparison", cache_policy=NO_CACHE)
def publish_comparison(document: dict[str, Any]) -> None:
    """The decision (markdown) and the table of changes of every candidate as Prefect artifacts of the run."""
    baseline = document["baseline"]
    chosen = document["chosen"]
    lines = [
        f"# Comparison: **{document['decision'].replace('_', ' ').upper()}**",
        "",
        f"{len(document['candidates'])} candidate(s) vs baseline `{baseline.get('name') or 'baseline'}`, run "
        f"`{document['run_id']}`, {document['n_rows']} people; rule `{document['rule']['rule']}`"
        + (f"; chosen: `{chosen}`." if chosen else "."),
        *(
            ["", f"**Warning: the promoted model `{chosen}` still FAILS the policy.**", ""]
            if document["chosen_fails_policy"]
            else []
        ),
        *[f"- {reason}" for reason in document["reasons"]],
    ]
    for entry in document["candidates"]:
        accuracy = entry["accuracy"]
        lines.append(
            f"- `{entry['name']}`: {entry['decision'].replace('_', ' ')}; its own audit: {entry['audit']['verdict']}; "
            f"accuracy change {_signed(accuracy['change'])} ({accuracy['status'].replace('_', ' ')})"
        )
    slug = artifact_slug(str(baseline.get("name") or "baseline"))
    create_markdown_artifact("\n".join(lines), key=f"comparison-{slug}", description="fairgate compare decision")
    rows = [
        {
            "candidate": entry["name"],
            "metric": r["metric"],
            "slicing": slicing_label(r["slicing"]),
            "baseline": _rounded(r["baseline"]),
            "candidate_value": _rounded(r["candidate"]),
            "change": _rounded(r["change"]),
            "ci_low": _rounded(r["ci_low"]),
            "ci_high": _rounded(r["ci_high"]),
            "status": r["status"],
        }
        for entry in document["candidates"]
        for r in [entry["accuracy"], *entry["changes"]]
    ]
    create_table_artifact(rows, key=f"comparison-changes-{slug}", description="fairgate compare: each change")


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _signed(value: float | None) -> str:
    return "n/a" if value is None else fmt_signed(value, 4)
