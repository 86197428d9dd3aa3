"""The model card: the report's block (binary and the other kinds), the Model Card Toolkit JSON validated against
the vendored public schema, the Markdown rendering, and the files written when the policy asks for them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fairgate.document.json_schema import SCHEMA_PATH
from fairgate.report.build import as_document, build_view
from fairgate.report.model_card import TOOLKIT_SCHEMA_FILE, card_markdown, model_card_view, toolkit_card
from tasks.outputs import write_outputs

TOOLKIT_SCHEMA = json.loads((SCHEMA_PATH.parent / TOOLKIT_SCHEMA_FILE).read_text())


def _validate(card: dict[str, Any]) -> None:
    validator = jsonschema.Draft7Validator(TOOLKIT_SCHEMA, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(card), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]


def _without_card(doc: dict[str, Any]) -> dict[str, Any]:
    bare = copy.deepcopy(doc)
    bare["policy"]["model_card"] = None
    return bare


def test_the_vendored_schema_is_the_toolkits_and_checks_what_it_should() -> None:
    jsonschema.Draft7Validator.check_schema(TOOLKIT_SCHEMA)
    assert TOOLKIT_SCHEMA["properties"]["schema_version"]["type"] == "string"
    validator = jsonschema.Draft7Validator(TOOLKIT_SCHEMA)
    assert not validator.is_valid({"schema_version": "0.0.2", "unknown": 1})  # additionalProperties: false
    assert not validator.is_valid({"quantitative_analysis": {"performance_metrics": [{"value": 0.5}]}})  # strings


def test_toolkit_card_of_the_demo_validates_and_carries_the_policy_words(compas_doc: dict[str, Any]) -> None:
    card = toolkit_card(as_document(compas_doc))
    _validate(card)
    considerations = card["considerations"]
    assert "research and demonstration only" in considerations["use_cases"][0]["description"]
    assert considerations["ethical_considerations"][0]["name"].startswith("Out-of-scope use: Any decision")
    assert considerations["limitations"][0]["description"].startswith("Reoffending is measured")
    names = [d["name"] for d in card["model_parameters"]["data"]]
    assert names == ["training data", "evaluation data"]
    assert card["model_parameters"]["data"][1]["sensitive"]["sensitive_data"] == ["race", "sex", "age_cat"]
    metrics = card["quantitative_analysis"]["performance_metrics"]
    assert len(metrics) == len(compas_doc["results"])
    first, result = metrics[0], compas_doc["results"][0]
    assert first["value"] == repr(result["value"])
    assert first["confidence_interval"] == {
        "lower_bound": repr(result["ci_low"]),
        "upper_bound": repr(result["ci_high"]),
    }
    details = card["model_details"]
    assert details["name"] == "compas"
    assert details["version"] == {"name": "northpointe-2013"}
    assert compas_doc["policy_sha256"] in details["documentation"]
    assert compas_doc["verdict"].upper() in details["overview"]
    assert "Not stated by the model's owner: Owner, Contact." in details["documentation"]
    assert "owners" not in details  # neither owner nor contact given


def test_toolkit_card_without_the_section_validates_and_names_every_field(compas_doc: dict[str, Any]) -> None:
    card = toolkit_card(as_document(_without_card(compas_doc)))
    _validate(card)
    assert card["considerations"] == {}
    assert (
        "Not stated by the model's owner: Owner, Intended use, Out-of-scope uses"
        in card["model_details"]["documentation"]
    )


def test_the_view_shows_the_stated_fields_and_names_the_missing(compas_doc: dict[str, Any]) -> None:
    frame = build_view(compas_doc).frame  # the model card is part of the frame every report type shows
    assert frame is not None
    view = frame.model_card
    assert view is not None
    assert [kv.key for kv in view.stated] == [
        "Intended use",
        "Out-of-scope uses",
        "Training data",
        "Evaluation data",
        "Limitations",
    ]
    assert view.missing == ["Owner", "Contact"]
    assert view.missing_note == "Not stated in the policy's model_card section: Owner, Contact."
    facts = {kv.key: kv.value for kv in view.facts}
    assert facts["Rows evaluated"] == "7,214"
    assert facts["Policy SHA-256"] == compas_doc["policy_sha256"]
    assert facts["Evaluation window"].startswith("not stated")  # the engine-only document carries no timestamp
    assert compas_doc["policy_sha256"][:16] in view.facts_line


def test_without_the_section_the_view_says_so(compas_doc: dict[str, Any]) -> None:
    view = model_card_view(as_document(_without_card(compas_doc)))
    assert view.stated == []
    assert view.missing_note.startswith("The policy has no model_card section")
    assert "Intended use" in view.missing_note
    assert "Contact" in view.missing_note


def test_the_evaluation_window_comes_from_the_predictions_timestamps(compas_doc: dict[str, Any]) -> None:
    dated = copy.deepcopy(compas_doc)
    dated["predictions_provenance"] = [
        {
            "model_name": None,
            "model_version": None,
            "first_prediction_at": "2013-01-01",
            "last_prediction_at": "2014-12-31",
            "n": 7214,
        }
    ]
    view = model_card_view(as_document(dated))
    assert {kv.key: kv.value for kv in view.facts}["Evaluation window"] == "2013-01-01 to 2014-12-31"
    assert (
        "window 2013-01-01 to 2014-12-31"
        in toolkit_card(as_document(dated))["model_parameters"]["data"][1]["description"]
    )


def test_the_report_shows_the_card_on_the_summary_pages(compas_report: dict[str, Path]) -> None:
    html = compas_report["html"].read_text()
    start = html.index('id="model-card"')
    assert html.index('id="summary"') < start < html.index('id="population"')
    block = html[start : html.index("</section>", start)]
    assert ">Model card</h2>" in block
    assert ">Intended use<" in block
    assert "Not stated in the policy&#39;s model_card section: Owner, Contact." in block


def test_markdown_lists_the_fields_facts_and_results(compas_doc: dict[str, Any]) -> None:
    text = card_markdown(as_document(compas_doc))
    assert text.startswith("# Model card: compas northpointe-2013\n")
    assert "- **Intended use:** COMPAS pretrial risk" in text
    assert "_Not stated in the policy's model\\_card section: Owner, Contact._" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| Metric")]
    assert len(rows) == len(compas_doc["results"])
    hostile = copy.deepcopy(compas_doc)
    hostile["policy"]["model_card"]["intended_use"] = "a | b *c*\nd"
    assert "- **Intended use:** a \\| b \\*c\\* d" in card_markdown(as_document(hostile))


def test_an_owners_markup_and_hidden_characters_are_shown_as_text(compas_doc: dict[str, Any]) -> None:
    """A policy's "<script>" must not run where the Markdown card is rendered (a registry's UI), and a bidi
    override must not turn the rest of a line around, in the card file or on the report's page."""
    hostile = copy.deepcopy(compas_doc)
    hostile["policy"]["model_card"]["intended_use"] = "<script>alert(1)</script> & Black\u202eetihW"
    hostile["model"]["name"] = "<img src=x onerror=alert(1)>"
    document = as_document(hostile)
    text = card_markdown(document)
    assert "<script" not in text
    assert "<img" not in text
    assert "- **Intended use:** &lt;script&gt;alert(1)&lt;/script&gt; &amp; Black\\\\u202eetihW" in text
    assert "\u202e" not in text
    (stated,) = [kv.value for kv in model_card_view(document).stated if kv.key == "Intended use"]
    assert stated == "<script>alert(1)</script> & Black\\u202eetihW"  # the HTML template escapes the markup


@pytest.mark.parametrize("asked", [True, False])
def test_the_card_files_are_written_when_the_policy_asks(
    compas_doc: dict[str, Any], tmp_path: Path, asked: bool
) -> None:
    doc = copy.deepcopy(compas_doc)
    formats = ["json", "model_card"] if asked else ["json"]
    doc["policy"]["reporting"]["format"] = formats
    written = write_outputs.fn(doc, tmp_path)
    assert ("model_card" in written) is asked
    files = sorted(p.name for p in tmp_path.iterdir())
    if not asked:
        assert not [name for name in files if "model_card" in name]
        return
    card = json.loads(Path(written["model_card"]).read_text())
    _validate(card)
    assert card == toolkit_card(as_document(doc))
    assert Path(written["model_card_md"]).read_text() == card_markdown(as_document(doc))
    assert not [name for name in files if name.endswith(".tmp")]
