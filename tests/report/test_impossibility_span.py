"""The impossibility note's base-rate range never spans a group whose rates the report withholds."""

from __future__ import annotations

from typing import Any

from fairgate.document.diagnostics import BaseRates, Diagnostics, GroupBaseRate
from fairgate.report import notes


class _Hiding:
    """A suppression that withholds the named groups (the one method the notes ask of it)."""

    def __init__(self, *hidden: str) -> None:
        self.hidden = set(hidden)

    def hides(self, slicing: Any, group: Any) -> bool:
        return group["race"] in self.hidden


def _diagnostics() -> Diagnostics:
    groups = [
        GroupBaseRate(group={"race": name}, base_rate=rate, n=n)
        for name, rate, n in (("A", 0.30, 500), ("B", 0.486, 12), ("C", 0.40, 800))
    ]
    note = (
        "Base rates of 'race' differ significantly (from 30.0% to 48.6%). Unless the model is perfect, calibration "
        "and equal error rates cannot all hold exactly."
    )
    item = BaseRates(slicing=["race"], groups=groups, min=0.30, max=0.486, differ=True, impossibility=note)
    return Diagnostics.model_construct(base_rates=[item])


def test_a_withheld_groups_base_rate_is_not_in_the_range() -> None:
    (row, *_rest) = notes.impossibility(_diagnostics(), _Hiding("B"))  # type: ignore[arg-type]
    assert "48.6%" not in row.text
    assert "from 30.0% to 40.0% among the groups shown" in row.text


def test_with_nothing_withheld_the_engines_text_stands() -> None:
    (row, *_rest) = notes.impossibility(_diagnostics(), _Hiding())  # type: ignore[arg-type]
    assert "from 30.0% to 48.6%" in row.text


def test_one_group_shown_reads_as_one_rate_not_a_range() -> None:
    """ "from 30.0% to 30.0%" would read as if every group had that rate."""
    (row, *_rest) = notes.impossibility(_diagnostics(), _Hiding("B", "C"))  # type: ignore[arg-type]
    assert "30.0% in the one group shown" in row.text
    assert "to 30.0%" not in row.text
