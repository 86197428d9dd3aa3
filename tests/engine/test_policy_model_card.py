"""The policy's model_card section: optional fields, strict keys, and a policy without it keeps its hash."""

from __future__ import annotations

from pathlib import Path

import pytest

import fairgate
from fairgate.errors import PolicyError

BASE = """\
fairness_checker:
  sensitive_attributes: [{name: sex, values: [Male, Female], reference_group: Male}]
  metrics: [{name: disparate_impact_ratio, threshold: 0.8}]
"""
# The hash of BASE before the model_card section existed (main at beb70e6).
BASE_SHA256 = "70a69ceedf518ff48a46743b2255bb62797a2e8584b0ec1ecaefa46d805bf6c8"
# The demo policy's hash before it gained its model_card section (main at beb70e6).
DEMO_WITHOUT_CARD = "64a5ee2aec42a6983ef56166681f97be80333349af1b99dcea8b4d6f25e320d0"
DEMO = Path(__file__).resolve().parents[2] / "fairgate" / "policies" / "compas_demo.yaml"


def test_a_policy_without_the_section_keeps_its_hash() -> None:
    plain = fairgate.Policy.from_yaml(BASE)
    assert plain.sha256() == BASE_SHA256
    assert '"model_card"' not in plain.canonical_json()
    assert fairgate.Policy.from_yaml(BASE + "  model_card: {}\n").sha256() == plain.sha256()
    assert fairgate.Policy.from_yaml(BASE + "  model_card: null\n").sha256() == plain.sha256()


def test_the_demo_policy_without_its_card_has_its_old_hash() -> None:
    demo = fairgate.Policy.from_yaml(DEMO.read_text())
    assert demo.model_card is not None
    assert demo.model_card.intended_use
    formats = [f for f in demo.reporting.format if f != "model_card"]  # the demo also asks for the card's files
    reporting = demo.reporting.model_copy(update={"format": formats})
    assert demo.model_copy(update={"model_card": None, "reporting": reporting}).sha256() == DEMO_WITHOUT_CARD
    assert demo.sha256() != DEMO_WITHOUT_CARD


def test_the_section_counts_in_the_hash_when_present() -> None:
    card = fairgate.Policy.from_yaml(BASE + "  model_card: {intended_use: Pretrial risk research}\n")
    assert card.model_card is not None
    assert card.model_card.intended_use == "Pretrial risk research"
    assert card.sha256() != BASE_SHA256


def test_one_text_or_a_list_and_missing_fields_named() -> None:
    policy = fairgate.Policy.from_yaml(
        BASE + "  model_card: {owner: Risk team, out_of_scope_uses: Bail decisions, limitations: [a, b]}\n"
    )
    card = policy.model_card
    assert card is not None
    assert card.out_of_scope_uses == ["Bail decisions"]
    assert card.limitations == ["a", "b"]
    assert card.missing() == ["Intended use", "Training data", "Evaluation data", "Contact"]


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ("{intended_us: x}", "fairness_checker.model_card.intended_us: unknown key"),
        ("{owner: ''}", "fairness_checker.model_card.owner"),
        ("{limitations: ['  ']}", "an entry is empty"),
    ],
)
def test_bad_sections_are_refused_with_the_place(section: str, expected: str) -> None:
    with pytest.raises(PolicyError, match=expected.replace(".", r"\.")):
        fairgate.Policy.from_yaml(BASE + f"  model_card: {section}\n")
