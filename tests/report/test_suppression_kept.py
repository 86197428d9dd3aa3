"""A run suppresses the same document's groups more than once (JSON document, report): the pattern is kept.

The kept pattern must be the one a fresh computation gives, be asked for again only on the very same input, and
not carry one caller's changes (``Suppression.withhold``) to the next.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fairgate.document import AuditDocument
from fairgate.document.groups import GroupEntry
from fairgate.report import disclosure
from fairgate.report.disclosure import clear_patterns
from fairgate.report.suppress import Suppression

K = 10


def _groups() -> list[GroupEntry]:
    """Asian 32 = Asian-Male 30 + Asian-Female 2, with White and Black, and their margins."""
    sizes = {("Asian", "Male"): 30, ("Asian", "Female"): 2, ("White", "Male"): 50, ("White", "Female"): 50}
    sizes |= {("Black", "Male"): 40, ("Black", "Female"): 40}
    groups = [
        GroupEntry(slicing=["race", "sex"], group={"race": r, "sex": s}, n=n, sufficient=n >= 30, metrics={})
        for (r, s), n in sizes.items()
    ]
    for race in ("Asian", "White", "Black"):
        n = sum(n for (r, _), n in sizes.items() if r == race)
        groups.append(GroupEntry(slicing=["race"], group={"race": race}, n=n, sufficient=True, metrics={}))
    for sex in ("Male", "Female"):
        n = sum(n for (_, s), n in sizes.items() if s == sex)
        groups.append(GroupEntry(slicing=["sex"], group={"sex": sex}, n=n, sufficient=True, metrics={}))
    return groups


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many patterns were computed (not served from the kept ones), from an empty store."""
    clear_patterns()
    calls: list[int] = []
    real = disclosure._suppress

    def counted(*args: Any, **kwargs: Any) -> disclosure.Pattern:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(disclosure, "_suppress", counted)
    yield calls
    clear_patterns()


def test_the_same_groups_are_suppressed_once_and_alike(computed: list[int]) -> None:
    first = Suppression.of(_groups(), K, 212)
    second = Suppression.of(_groups(), K, 212)  # equal entries, new objects: the same input
    assert len(computed) == 1
    assert second == first
    hidden = {json.loads(k)["race"] + "-" + json.loads(k)["sex"] for k in second.hidden[("race", "sex")]}
    assert hidden == {"Asian-Female", "Asian-Male", "Black-Female", "Black-Male"}
    clear_patterns()
    assert Suppression.of(_groups(), K, 212) == first  # computed afresh: the same pattern
    assert len(computed) == 2


def test_another_input_is_computed_afresh(computed: list[int]) -> None:
    at_k = Suppression.of(_groups(), K, 212)
    at_1 = Suppression.of(_groups(), 1, 212)
    assert len(computed) == 2
    assert at_1.hidden[("race", "sex")] == set() != at_k.hidden[("race", "sex")]
    fewer = Suppression.of(_groups()[1:], K, 212)  # one group less: another input
    assert len(computed) == 3
    assert fewer != at_k


def test_one_callers_withholding_does_not_reach_the_next(computed: list[int]) -> None:
    first = Suppression.of(_groups(), K, 212)
    first.withhold(["race"], {"race": "White"})
    second = Suppression.of(_groups(), K, 212)
    assert len(computed) == 1
    assert first.hides(["race"], {"race": "White"})
    assert not second.hides(["race"], {"race": "White"})


def test_the_compas_document_is_suppressed_once_per_run(computed: list[int], compas_doc: dict[str, Any]) -> None:
    """The JSON document and the report ask for the same pattern; only the first computes it."""
    doc = AuditDocument.model_validate(compas_doc)
    first = Suppression.of_document(doc, K)
    again = Suppression.of_document(AuditDocument.model_validate(compas_doc), K)
    assert len(computed) == 1
    assert again == first
    clear_patterns()
    assert Suppression.of_document(doc, K) == first
    assert len(computed) == 2
