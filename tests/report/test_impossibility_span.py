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


def _levels(values: tuple[float, float, float]) -> Diagnostics:
    """A regression's (or ranking's) outcome levels, with the engine's own note over every group."""
    from fairgate.engine.diagnostics import _independence_sufficiency_note

    groups = [
        GroupBaseRate(group={"race": name}, base_rate=value, n=n)
        for name, value, n in zip(("A", "B", "C"), values, (500, 12, 800), strict=True)
    ]
    note = _independence_sufficiency_note("race", list(values), "mean outcome")
    item = BaseRates(slicing=["race"], groups=groups, min=min(values), max=max(values), differ=None, impossibility=note)
    return Diagnostics.model_construct(base_rates=[item])


def test_a_withheld_groups_mean_outcome_is_not_in_a_regression_range() -> None:
    """The regression and ranking note states its range over the groups shown, as the binary one does."""
    (row, *_rest) = notes.impossibility(_levels((-0.3312, 1.8765, 0.25)), _Hiding("B"))  # type: ignore[arg-type]
    assert "1.877" not in row.text
    assert "1.876" not in row.text
    assert "ranges from −0.331 to 0.250 among the groups shown" in row.text
    (row, *_rest) = notes.impossibility(_levels((-0.3312, 1.8765, 0.25)), _Hiding())  # type: ignore[arg-type]
    assert "from −0.331 to 1.877 across its groups" in row.text  # nothing withheld: the engine's text stands


def test_one_group_shown_reads_as_one_mean_outcome() -> None:
    (row, *_rest) = notes.impossibility(_levels((0.5, 2.0, 1.25)), _Hiding("B", "C"))  # type: ignore[arg-type]
    assert "The mean outcome of 'race' is 0.500 in the one group shown" in row.text
    assert "2.000" not in row.text
    assert "1.250" not in row.text
