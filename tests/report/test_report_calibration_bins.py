"""COMPAS's decile scores fall into their own calibration bins (issue 11).

The demo audits favourable outcome 0, so the engine's score is 1 - decile / 10: 0.0, 0.1, ..., 0.9 exactly on
the edges of ten equal-width bins, where floating point (1 - 0.8 = 0.19999999999999996) used to push a decile
into the bin below, leaving 0.2-0.3 empty and merging deciles 9 and 10.
"""

from __future__ import annotations

from typing import Any

import polars as pl


def _whole_population_bins(doc: dict[str, Any]) -> list[dict[str, Any]]:
    curve = next(c for c in doc["curves"]["calibration"] if c["slicing"] == [])
    return list(curve["bins"])


def test_every_compas_decile_has_its_own_bin_with_exactly_its_people(
    compas_doc: dict[str, Any], compas_rows: pl.DataFrame
) -> None:
    bins = _whole_population_bins(compas_doc)
    deciles = compas_rows.group_by("score").len()
    people = {round(1 - s, 6): n for s, n in deciles.iter_rows()}  # favourable score -> count
    assert len(people) == 10
    occupied = [b for b in bins if b["n"] > 0]
    assert len(occupied) == 10, [(b["lower"], b["n"]) for b in bins]
    for b in occupied:
        # Each bin holds exactly one decile, the one on its lower edge.
        assert abs(b["mean_score"] - b["lower"]) < 1e-9, b
        assert b["n"] == people[round(b["lower"], 6)], b


def test_a_decile_group_bins_the_same_in_every_slicing(compas_doc: dict[str, Any], compas_rows: pl.DataFrame) -> None:
    frame = compas_rows.with_columns((1 - pl.col("score")).round(6).alias("favourable_score"))
    for curve in compas_doc["curves"]["calibration"]:
        if curve["slicing"] != ["race"]:
            continue
        race = curve["group"]["race"]
        expected = dict(frame.filter(pl.col("race") == race).group_by("favourable_score").len().iter_rows())
        got = {round(b["lower"], 6): b["n"] for b in curve["bins"] if b["n"] > 0}
        assert got == expected, race
