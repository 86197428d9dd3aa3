"""The policy reference is generated from the policy's models: every field documented, the committed page and
JSON Schema equal to what tools/write_policy_reference.py writes, and the schema true to real policies."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from pydantic import BaseModel, Field

from fairgate.policy.core import Policy
from tools import write_policy_reference as reference

REPO = Path(__file__).resolve().parents[2]


def test_every_policy_field_has_a_description() -> None:
    assert reference.missing_descriptions() == []


def test_a_field_without_a_description_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    class Bare(BaseModel):
        described: int = Field(default=1, description="has one")
        documented: int = 3
        """An attribute docstring counts."""
        bare: int = 2

    monkeypatch.setattr(reference, "_models", lambda root: [Bare])
    assert reference.missing_descriptions() == [f"{Bare.__module__}.Bare.bare"]
    assert reference.description(Bare, "documented") == "An attribute docstring counts."


def test_the_committed_reference_is_what_the_script_writes() -> None:
    assert reference.MARKDOWN_PATH.read_text(encoding="utf-8") == reference.markdown(), (
        "docs/reference/policy.md is stale: run .venv/bin/python tools/write_policy_reference.py"
    )
    assert reference.SCHEMA_PATH.read_text(encoding="utf-8") == reference.schema_text(), (
        "docs/reference/policy.schema.json is stale: run .venv/bin/python tools/write_policy_reference.py"
    )


def test_the_reference_lists_every_key_with_its_default() -> None:
    page = reference.markdown()
    assert '| `json` | `"full"` \\| `"suppressed"` | `"full"` |' in page  # the YAML key, not the field name
    assert "| `min_group_size` | integer | `30` |" in page
    for model in reference._models(Policy):
        for name, field in model.model_fields.items():
            assert f"| `{field.alias or name}` |" in page, (model.__name__, name)


@pytest.mark.parametrize("policy_file", sorted((REPO / "fairgate" / "policies").glob("*.yaml")), ids=lambda p: p.name)
def test_the_shipped_policies_satisfy_the_schema(policy_file: Path) -> None:
    schema = json.loads(reference.SCHEMA_PATH.read_text(encoding="utf-8"))
    document = yaml.safe_load(policy_file.read_text(encoding="utf-8"))
    jsonschema.validate(document, schema)
    Policy.model_validate(document["fairness_checker"])  # and fairgate itself accepts them


def test_the_schema_refuses_what_the_policy_refuses() -> None:
    schema = json.loads(reference.SCHEMA_PATH.read_text(encoding="utf-8"))
    base = {
        "sensitive_attributes": [{"name": "sex"}],
        "metrics": [{"name": "disparate_impact_ratio", "threshold": 0.8}],
    }
    jsonschema.validate({"fairness_checker": base}, schema)
    for wrong in (
        {**base, "ci_cd_gate": {"fail_on": "some"}},  # not one of any | majority | critical_only
        {**base, "statistics": {"n_bootstrap": -1}},  # below its minimum
        {**base, "reportng": {}},  # a misspelt section
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"fairness_checker": wrong}, schema)
