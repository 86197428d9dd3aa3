"""Every kind of model through the same pipeline contract.

Parametrised over the registry (``fairgate.engine.kinds.KINDS``), so a new kind is held to it the moment it is
registered: its demo's inputs audited through ``fairgate audit`` (staging, validation, the flow, the outputs,
the trail), and the refusals every kind shares. What is checked is what a consumer of any kind may rely on:
the exit code is the document's, the document carries the shared keys and names the largest group as the
reference when the policy names none, the JUnit file has one case per judged result, the trail records the run
with the document's verdict, a prediction without a label is counted (never silently dropped), and bad input
is refused with exit 2 before anything is written.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from pipeline_helpers import InProcessRunner, Inputs, assert_refused, parquet_inputs_as_csv, rewrite_csv

from cli import app
from cli.demos import DEMOS
from fairgate.engine.kinds import KINDS
from tasks.store import list_runs

# The keys every kind's document has, whatever its own block holds.
SHARED_KEYS = {
    "schema_version",
    "task",
    "run_id",
    "created_at",
    "fairgate_version",
    "verdict",
    "exit_code",
    "model",
    "n_rows",
    "policy_sha256",
    "attributes",
    "results",
    "alignment",
    "inputs",
    "validation",
    "output_dir",
}


def test_every_kind_has_a_demo() -> None:
    assert set(DEMOS) == set(KINDS)


def _policy_text(kind: str, *, drop_references: bool) -> str:
    """The kind's demo policy writing JSON and JUnit only (the contract, not the PDF), optionally with no
    configured reference group."""
    document = yaml.safe_load(DEMOS[kind].policy.read_text())
    body = document["fairness_checker"]
    body["reporting"]["format"] = ["json", "junit"]
    body["reporting"].pop("output_dir", None)
    body.pop("audit_trail", None)
    if drop_references:
        for attribute in body["sensitive_attributes"]:
            attribute.pop("reference_group", None)
    return yaml.safe_dump(document, sort_keys=False)


def _inputs(folder: Path, kind: str, *, drop_references: bool = False) -> Inputs:
    folder.mkdir(parents=True, exist_ok=True)
    paths = DEMOS[kind].write_inputs(folder)
    policy = folder / "policy.yaml"
    policy.write_text(_policy_text(kind, drop_references=drop_references))
    return Inputs(folder, paths["predictions"], paths["labels"], paths["attributes"], policy)


def _as_csv(inputs: Inputs) -> Inputs:
    """The same inputs as CSV files (rewrite_csv edits CSV): Parquet ones converted, the originals removed."""
    paths = {role: getattr(inputs, role) for role in ("predictions", "labels", "attributes")}
    paths |= parquet_inputs_as_csv({role: path for role, path in paths.items() if path.suffix != ".csv"})
    return Inputs(inputs.folder, paths["predictions"], paths["labels"], paths["attributes"], inputs.policy)


def _args(inputs: Inputs, kind: str) -> list[str]:
    """``fairgate audit`` of ``inputs`` as the kind's demo model, quiet, with a trail in the inputs' folder."""
    args = inputs.args("--quiet", "--trail", str(inputs.folder / "trail.duckdb"), model=DEMOS[kind].model)
    args[args.index("--model-version") + 1] = DEMOS[kind].version
    return args


@pytest.fixture(scope="module", params=sorted(KINDS))
def audited(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    runner: InProcessRunner,
    prefect_server: str,
) -> tuple[str, Inputs, Any, dict[str, Any]]:
    """Each kind's demo inputs audited once, with no reference group configured: (kind, inputs, result, document)."""
    kind = request.param
    inputs = _inputs(tmp_path_factory.mktemp(f"contract-{kind}"), kind, drop_references=True)
    result = runner.invoke(app, _args(inputs, kind))
    documents = sorted(inputs.out.glob("*.json"))
    assert len(documents) == 1, (result.exit_code, result.stderr, documents)
    return kind, inputs, result, json.loads(documents[0].read_text())


def test_the_exit_code_is_the_documents(audited: tuple[str, Inputs, Any, dict[str, Any]]) -> None:
    kind, _, result, document = audited
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr)
    assert result.exit_code == document["exit_code"] == (0 if document["verdict"] == "pass" else 1)
    assert document["task"] == kind


def test_the_document_has_the_shared_keys(audited: tuple[str, Inputs, Any, dict[str, Any]]) -> None:
    _, _, _, document = audited
    assert set(document) >= SHARED_KEYS, SHARED_KEYS - set(document)
    assert document["results"], "a judged policy gives at least one result"
    for entry in document["results"]:
        assert {"metric", "status"} <= set(entry), entry


def test_without_a_configured_reference_the_largest_group_is_named(
    audited: tuple[str, Inputs, Any, dict[str, Any]],
) -> None:
    _, _, _, document = audited
    for attribute in document["attributes"]:
        name, reference = attribute["name"], attribute["reference_group"]
        sizes = {g["group"][name]: g["rows"] for g in document["groups"] if g["slicing"] == [name]}
        assert reference is not None, name
        assert sizes[reference] == max(sizes.values()), (name, reference, sizes)


def test_the_junit_file_has_one_case_per_result(audited: tuple[str, Inputs, Any, dict[str, Any]]) -> None:
    _, inputs, _, document = audited
    (junit,) = inputs.out.glob("*.junit.xml")
    cases = ET.parse(junit).getroot().iter("testcase")
    assert sum(1 for _ in cases) == len(document["results"])


def test_the_trail_records_the_run(audited: tuple[str, Inputs, Any, dict[str, Any]]) -> None:
    kind, inputs, _, document = audited
    (run,) = list_runs(inputs.folder / "trail.duckdb")
    assert run["run_id"] == document["run_id"]
    assert run["verdict"] == document["verdict"]
    assert run["n_rows"] == document["n_rows"]
    assert run["model_name"] == DEMOS[kind].model


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_prediction_without_a_label_is_counted_not_dropped_silently(
    kind: str, tmp_path: Path, runner: InProcessRunner
) -> None:
    inputs = _as_csv(_inputs(tmp_path, kind))
    rewrite_csv(inputs.labels, "select * from t where id <> (select min(id) from t)")
    result = runner.invoke(app, _args(inputs, kind))
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr)
    (path,) = inputs.out.glob("*.json")
    alignment = json.loads(path.read_text())["alignment"]
    assert alignment["predictions_without_labels"] == 1, alignment


def _duplicate_label(inputs: Inputs) -> list[str]:
    rewrite_csv(inputs.labels, "select * from t union all (select * from t where id = (select min(id) from t))")
    return [inputs.labels.name, "duplicate"]


def _missing_attribute(inputs: Inputs) -> list[str]:
    name = yaml.safe_load(inputs.policy.read_text())["fairness_checker"]["sensitive_attributes"][0]["name"]
    rewrite_csv(inputs.attributes, f'select * exclude ("{name}") from t')
    return [inputs.attributes.name, f"'{name}'", "is missing"]


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(
    "break_input", [_duplicate_label, _missing_attribute], ids=["duplicate-id", "missing-attribute"]
)
def test_every_kind_refuses_bad_input_before_writing(
    kind: str, break_input: Any, tmp_path: Path, runner: InProcessRunner
) -> None:
    inputs = _as_csv(_inputs(tmp_path, kind))
    expected = break_input(inputs)
    before = sorted(p.name for p in inputs.folder.iterdir())
    result = runner.invoke(app, _args(inputs, kind))
    assert_refused(result, expected, inputs, before)
