"""The JSON document (valid JSON, no NaN, matches the shipped JSON Schema) and the reviewer diagnostics:
Simpson's-paradox flags and the impossibility note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pydantic
import pytest

import fairgate
from fairgate.document import AuditDocument, audit_json_schema

SCHEMA = Path(fairgate.__file__).resolve().parent / "document" / "schema" / "audit_result.schema.json"
METRICS = [
    {"name": "demographic_parity_difference", "threshold": 0.1},
    {"name": "disparate_impact_ratio", "threshold": 0.8},
    {"name": "equalized_odds_difference", "threshold": 0.1},
    {"name": "predictive_parity_difference", "threshold": 0.1},
    {"name": "calibration_difference", "threshold": 0.1},
    {"name": "auc_difference", "threshold": 0.1},
    {"name": "theil_index", "threshold": 0.5},
]


def _refuse_constant(name: str) -> None:
    raise AssertionError(f"the JSON document contains {name}, which is not JSON")


@pytest.fixture(scope="module")
def documents(h: Any, compas: pl.DataFrame) -> list[str]:
    """Audits whose documents hold nulls (tiny triples, undefined rates), with/without scores and context."""
    with_scores = fairgate.audit(
        compas,
        h.make_policy(["race", "sex", "age_cat"], METRICS, min_group_size=1, n_bootstrap=30),
        model=fairgate.ModelInfo(name="compas", version="2016"),
        run_id="run-1",
        context={"inputs": {"rows": compas.height}},
    )
    without_scores = fairgate.audit(
        compas.drop("score"),
        h.make_policy(["race", "sex"], METRICS[:3], min_group_size=50, n_bootstrap=30, favorable_label=0),
    )
    return [with_scores.to_json(), without_scores.to_json(indent=None)]


def test_json_is_valid_and_has_no_nan(documents: list[str]) -> None:
    for text in documents:
        document = json.loads(text, parse_constant=_refuse_constant)
        assert document["schema_version"] == fairgate.SCHEMA_VERSION
        assert document["verdict"] in ("pass", "fail")
    first = json.loads(documents[0])
    assert first["run_id"] == "run-1"
    assert first["model"] == {"name": "compas", "version": "2016"}
    assert first["inputs"] == {"rows": 7214}
    assert any(g["metrics"]["true_positive_rate"]["value"] is None for g in first["groups"])  # nulls exercised


def test_context_cannot_overwrite_result_fields(h: Any, compas: pl.DataFrame) -> None:
    with pytest.raises(ValueError, match="verdict"):
        fairgate.audit(compas, h.make_policy(["sex"], n_bootstrap=0), context={"verdict": "pass"})


def test_shipped_schema_is_the_one_generated_from_the_models() -> None:
    """The schema is generated, never edited: rerun tools/write_document_schema.py after changing a model."""
    shipped = json.loads(SCHEMA.read_text())
    assert shipped == audit_json_schema(), "stale schema: run .venv/bin/python tools/write_document_schema.py"
    assert shipped["$id"].endswith(f"/{fairgate.SCHEMA_VERSION}.json")


def test_document_validates_against_the_shipped_schema(documents: list[str]) -> None:
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    checked = 0
    for text in documents:
        errors = sorted(validator.iter_errors(json.loads(text)), key=lambda e: list(e.absolute_path))
        assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
        checked += 1
    assert checked == 2


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ((), ("verdict", None), "verdict"),
        (("results", 0), ("status", "maybe"), "maybe"),
        (("results", 0), ("surprise", 1), "surprise"),
        (("groups", 0, "metrics", "selection_rate"), ("value", "high"), "high"),
    ],
)
def test_schema_and_models_reject_a_broken_document(
    documents: list[str], path: tuple[Any, ...], value: tuple[str, Any], message: str
) -> None:
    """Both the shipped schema and the models must be able to fail: a missing verdict, an unknown status, a key
    the shape does not have, a non-number metric."""
    import jsonschema

    broken = json.loads(documents[0])
    part = broken
    for step in path:
        part = part[step]
    key, new = value
    if new is None:
        del part[key]
    else:
        part[key] = new
    with pytest.raises(jsonschema.ValidationError, match=message):
        jsonschema.validate(broken, json.loads(SCHEMA.read_text()))
    with pytest.raises(pydantic.ValidationError, match=key):
        AuditDocument.model_validate(broken)


def test_new_statuses_and_reason_are_part_of_the_contract(documents: list[str]) -> None:
    document = json.loads(documents[0])
    document["results"][0].update(status="inconclusive", reason="the interval contains the threshold")
    document["results"][1]["status"] = "insufficient_data"
    typed = fairgate.AuditResult(document)
    assert typed.document.results[0].reason == "the interval contains the threshold"
    assert typed.to_dict() == document
    import jsonschema

    jsonschema.validate(document, json.loads(SCHEMA.read_text()))


def test_to_dict_round_trips_the_engine_document(documents: list[str]) -> None:
    """Validating the engine's dict into the model and dumping it changes nothing, key order included."""
    for text in documents:
        document = json.loads(text)
        assert json.dumps(fairgate.AuditResult(document).to_dict()) == json.dumps(document)


# ------------------------------------------------------------------------------------------- Simpson
def _cells(spec: list[tuple[str, str, int, int]]) -> pl.DataFrame:
    """spec: (grp, stratum, rows, selected). Labels alternate 1, 0 within each cell."""
    grp, stratum, y_true, y_pred = [], [], [], []
    for g, s, n, selected in spec:
        grp += [g] * n
        stratum += [s] * n
        y_true += [i % 2 for i in range(n)]
        y_pred += [1] * selected + [0] * (n - selected)
    return pl.DataFrame({"grp": grp, "stratum": stratum, "y_true": y_true, "y_pred": y_pred})


def _simpson(h: Any, frame: pl.DataFrame) -> list[dict[str, Any]]:
    policy = h.make_policy(["grp", "stratum"], min_group_size=10, n_bootstrap=20)
    flags = fairgate.audit(frame, policy).to_dict()["diagnostics"]["simpson"]
    return [f for f in flags if f["metric"] == "selection_rate"]


def test_simpson_reversal_is_flagged(h: Any) -> None:
    # a: 400/500 in s1, 10/100 in s2 (410/600 overall); b: 90/100 in s1, 100/500 in s2 (190/600 overall).
    frame = _cells([("a", "s1", 500, 400), ("a", "s2", 100, 10), ("b", "s1", 100, 90), ("b", "s2", 500, 100)])
    flags = _simpson(h, frame)
    assert len(flags) == 1, flags
    flag = flags[0]
    assert (flag["attribute"], flag["stratified_by"], flag["groups"]) == ("grp", "stratum", ["a", "b"])
    assert flag["overall_difference"] == pytest.approx(410 / 600 - 190 / 600)
    assert flag["strata"] == ["s1", "s2"]
    assert flag["stratum_differences"] == pytest.approx([0.8 - 0.9, 0.1 - 0.2])
    # Equal Mantel-Haenszel weights (500 * 100 / 600) in both strata: the stratified difference is -0.1.
    assert flag["stratified_difference"] == pytest.approx(-0.1)
    assert flag["stratified_ci_high"] < 0 < flag["overall_ci_low"]
    assert flag["n_strata_opposite"] == 2
    assert "opposite sign in 2 of them" in flag["note"]
    assert "every stratum" not in flag["note"]


def test_reversal_without_evidence_is_not_flagged(h: Any) -> None:
    """The same proportions on a fifth of the rows: the within-stratum gap of -0.1 is not distinguishable from 0."""
    frame = _cells([("a", "s1", 100, 80), ("a", "s2", 20, 2), ("b", "s1", 20, 18), ("b", "s2", 100, 20)])
    assert _simpson(h, frame) == []


def test_small_strata_are_kept_and_the_note_says_what_holds(h: Any) -> None:
    """A tiny third stratum without a reversal still counts; the note does not claim every stratum reverses."""
    frame = _cells(
        [
            ("a", "s1", 500, 400),
            ("a", "s2", 100, 10),
            ("a", "s3", 4, 4),
            ("b", "s1", 100, 90),
            ("b", "s2", 500, 100),
            ("b", "s3", 4, 2),
        ]
    )
    flags = _simpson(h, frame)
    assert len(flags) == 1, flags
    flag = flags[0]
    assert flag["strata"] == ["s1", "s2", "s3"]
    assert flag["stratum_differences"] == pytest.approx([-0.1, -0.1, 0.5])
    assert flag["n_strata_opposite"] == 2
    assert "opposite sign in 2 of them" in flag["note"]
    assert "3 strata" in flag["note"]


def test_no_reversal_no_flag(h: Any) -> None:
    frame = _cells([("a", "s1", 100, 90), ("a", "s2", 20, 6), ("b", "s1", 20, 16), ("b", "s2", 100, 20)])
    assert _simpson(h, frame) == []


# ------------------------------------------------------------------------------------------- impossibility
def _base_rate_frame(rate_x: float, rate_y: float, n: int = 1000) -> pl.DataFrame:
    pos_x, pos_y = int(rate_x * n), int(rate_y * n)
    return pl.DataFrame(
        {
            "grp": ["x"] * n + ["y"] * n,
            "y_true": [1] * pos_x + [0] * (n - pos_x) + [1] * pos_y + [0] * (n - pos_y),
            "y_pred": ([1, 0] * n)[:n] + ([1, 0] * n)[:n],
        }
    )


def _note(h: Any, frame: pl.DataFrame) -> dict[str, Any]:
    metrics = [METRICS[0], METRICS[2]]  # independence and separation together
    document = fairgate.audit(frame, h.make_policy(["grp"], metrics, n_bootstrap=20)).to_dict()
    return next(b for b in document["diagnostics"]["base_rates"] if b["slicing"] == ["grp"])


def test_impossibility_note_when_base_rates_differ(h: Any) -> None:
    entry = _note(h, _base_rate_frame(0.6, 0.3))
    assert entry["differ"] is True
    assert (entry["min"], entry["max"]) == (pytest.approx(0.3), pytest.approx(0.6))
    note = entry["impossibility"]
    assert "differ significantly" in note
    assert "30.0%" in note
    assert "60.0%" in note
    assert "cannot" in note
    assert "demographic parity difference (independence)" in note  # in words, lower case inside the sentence
    assert "equalized odds difference (separation)" in note


def test_no_impossibility_claim_when_base_rates_are_equal(h: Any) -> None:
    entry = _note(h, _base_rate_frame(0.4, 0.4))
    assert entry["differ"] is False
    assert "not statistically significant" in entry["impossibility"]
    assert "no conclusion" in entry["impossibility"]
    assert "cannot all hold" not in entry["impossibility"]
    assert "can in principle hold" not in entry["impossibility"]
