"""reporting.json: full or suppressed. The suppressed JSON hides what the report hides, validates against the
shipped schema, and survives the same attacker; the report says which JSON was written."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from suppression_attacker import from_rows, linear, subtraction
from test_suppression_attack import K, cell_of, levels

import fairgate
from fairgate.document import SCHEMA_PATH, AuditDocument
from fairgate.errors import PolicyError
from fairgate.report import build_view
from fairgate.report.published import published_document
from tasks.outputs import write_outputs

DEMO_POLICY = Path(__file__).resolve().parents[2] / "fairgate" / "policies" / "compas_demo.yaml"


def with_json(document: dict[str, Any], content: str) -> dict[str, Any]:
    out = copy.deepcopy(document)
    out["policy"]["reporting"]["json"] = content
    return out


def schema_errors(document: dict[str, Any]) -> list[str]:
    schema = json.loads(SCHEMA_PATH.read_text())
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(document)]


def test_policy_key_defaults_to_full_and_refuses_other_values() -> None:
    text = DEMO_POLICY.read_text()
    assert fairgate.Policy.from_yaml(text).reporting.json_content == "full"
    assert fairgate.Policy.from_yaml(text).model_dump(mode="json")["reporting"]["json"] == "full"
    chosen = text.replace("output_dir: ./fairness_reports/", "output_dir: ./fairness_reports/\n    json: suppressed")
    assert fairgate.Policy.from_yaml(chosen).reporting.json_content == "suppressed"
    with pytest.raises(PolicyError, match=r"reporting\.json"):
        fairgate.Policy.from_yaml(chosen.replace("json: suppressed", "json: partial"))
    with pytest.raises(PolicyError, match=r"reporting\.json_content: unknown key"):  # the Python name is not a key
        fairgate.Policy.from_yaml(chosen.replace("json: suppressed", "json_content: suppressed"))


def test_full_json_holds_every_value_and_says_so(compas_doc: dict[str, Any]) -> None:
    out = published_document(compas_doc, K, "full")
    assert {k: v for k, v in out.items() if k != "suppression"} == compas_doc
    assert out["suppression"]["content"] == "full"
    assert out["suppression"]["n_groups_suppressed"] > 0
    assert schema_errors(out) == []


def test_suppressed_json_hides_exactly_what_the_report_hides(compas_doc: dict[str, Any]) -> None:
    out = published_document(compas_doc, K, "suppressed")
    assert schema_errors(out) == []
    view = build_view(compas_doc, min_cell_size=K)
    in_report = {cell_of(s.attributes, g.group) for s in view.sections for g in s.groups if g.suppressed}
    in_json = {cell_of(g["slicing"], g["group"]) for g in out["groups"] if g.get("suppressed")}
    assert in_json == in_report
    assert out["suppression"]["n_groups_suppressed"] == len(in_json)
    printed = {cell_of(s.attributes, g.group): g.n for s in view.sections for g in s.groups}
    for g in out["groups"]:
        if g.get("suppressed"):
            # The size is kept exactly where the report prints it (only a count of the group is hidden).
            assert g["n"] == printed[cell_of(g["slicing"], g["group"])]
            assert all(v == {"value": None, "ci_low": None, "ci_high": None} for v in g["metrics"].values())
    # Every other part that states a number about a group hides it too.
    hidden = in_json
    for c in out["comparisons"]:
        if cell_of(c["slicing"], c["group"]) in hidden:
            assert c["suppressed"]
            assert c["difference"] is None
            assert c["ratio"] is None
            assert c["p_value"] is None
    for item in out["diagnostics"]["base_rates"]:
        for g in item["groups"]:
            if cell_of(item["slicing"], g["group"]) in hidden:
                assert g["n"] is None
                assert g["base_rate"] is None
    for item in out["diagnostics"]["insufficient_groups"]:
        if cell_of(item["slicing"], item["group"]) in hidden:
            assert item["n"] is None
    for item in out["curves"]["roc"] + out["curves"]["calibration"]:
        if cell_of(item["slicing"], item["group"]) in hidden:
            assert item["suppressed"]
            assert not item.get("fpr")
            assert not item.get("bins")


def test_suppressed_json_survives_the_attacker(compas_doc: dict[str, Any]) -> None:
    out = published_document(compas_doc, K, "suppressed")
    doc = AuditDocument.model_validate(compas_doc)
    hidden = {cell_of(g["slicing"], g["group"]) for g in out["groups"] if g["n"] is None}
    pub = from_rows([(g["slicing"], g["group"], g["n"] or 0.0) for g in out["groups"]], hidden, out["n_rows"])
    assert subtraction(pub) == {}
    assert linear(pub, levels(doc)) == set()
    # Read back, it is a valid document, and a report built from it hides the same groups (and no more).
    view = build_view(out, min_cell_size=K)
    marked = {cell_of(g["slicing"], g["group"]) for g in out["groups"] if g.get("suppressed")}
    assert hidden < marked  # some hidden groups keep their size (only a count of theirs is hidden)
    assert {cell_of(s.attributes, g.group) for s in view.sections for g in s.groups if g.suppressed} == marked


def test_write_outputs_follows_the_policy(tmp_path: Path, compas_doc: dict[str, Any]) -> None:
    full = json.loads(Path(write_outputs.fn(compas_doc, tmp_path / "full")["json"]).read_text())
    suppressed = json.loads(
        Path(write_outputs.fn(with_json(compas_doc, "suppressed"), tmp_path / "s")["json"]).read_text()
    )
    assert full["suppression"]["content"] == "full"
    assert all(g["n"] is not None for g in full["groups"])
    assert suppressed["suppression"]["content"] == "suppressed"
    n_hidden = suppressed["suppression"]["n_groups_suppressed"]
    assert sum(bool(g.get("suppressed")) for g in suppressed["groups"]) == n_hidden
    assert 0 < sum(g["n"] is None for g in suppressed["groups"]) < n_hidden  # some keep their size


def test_report_says_which_json_was_written(compas_doc: dict[str, Any]) -> None:
    from tasks.render.report import render_html

    full = render_html(build_view(compas_doc, min_cell_size=K), charts={})
    suppressed = render_html(build_view(with_json(compas_doc, "suppressed"), min_cell_size=K), charts={})
    assert "holds every value" in full
    assert "reporting.json: full" in full
    assert "is suppressed the same way" in suppressed
    assert "holds every value" not in suppressed


def test_writing_leaves_the_document_as_it_was(compas_doc: dict[str, Any]) -> None:
    """The full JSON shares the document's values, the suppressed one is a deep copy: neither changes it."""
    before = copy.deepcopy(compas_doc)
    full = published_document(compas_doc, K, "full")
    suppressed = published_document(compas_doc, K, "suppressed")
    assert compas_doc == before
    assert "suppression" not in compas_doc
    assert full["groups"] is compas_doc["groups"]
    assert suppressed["groups"] != compas_doc["groups"]
