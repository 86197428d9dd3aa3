"""Validation warnings name a group in words, as every report does (never ``race='Asian'``)."""

from __future__ import annotations

from tasks.validation.validate import small_group_warning


def test_a_small_group_is_named_by_its_value() -> None:
    text = small_group_warning("race", "Asian", 30)
    assert text.startswith("race group Asian has fewer than min_group_size 30 rows")
    assert "'" not in text
    assert "=" not in text.split("min_group_size")[0]


def test_a_coded_value_reads_as_the_policys_label() -> None:
    assert small_group_warning("sex", "2", 30, {"sex": {"2": "Female"}}).startswith("sex group Female has")
