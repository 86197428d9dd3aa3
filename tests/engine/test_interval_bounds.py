"""Gap intervals stay in the metric's range: a difference of rates is at most 1, a ratio of rates at most 1.

Small groups with a large gap put |d| + c se past 1 (the demo's COMPAS triples did: [0.448, 1.186]); the
interval is cut at the largest gap the metric allows.
"""

from __future__ import annotations

import numpy as np
import polars as pl

import fairgate

POLICY = """
fairness_checker:
  sensitive_attributes: [{name: grp}]
  metrics:
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: equalized_odds_difference, threshold: 0.1}
    - {name: disparate_impact_ratio, threshold: 0.8}
  intersectional_analysis: {min_group_size: 10}
  statistics: {n_bootstrap: 200, min_events: 1}
"""


def _small_groups_far_apart() -> pl.DataFrame:
    """Three groups of 12 to 14 people: one nearly always selected, one nearly never, one in between."""
    rng = np.random.default_rng(7)
    frames = []
    for name, size, rate in (("a", 12, 0.95), ("b", 13, 0.05), ("c", 14, 0.5)):
        y_true = rng.integers(0, 2, size)
        y_true[:2] = (0, 1)  # both classes in every group, so TPR and FPR are defined
        frames.append(pl.DataFrame({"grp": [name] * size, "y_true": y_true, "y_pred": rng.random(size) < rate}))
    return pl.concat(frames).with_columns(pl.col("y_pred").cast(pl.Int8))


def test_difference_and_ratio_intervals_stay_within_their_range() -> None:
    document = fairgate.audit(_small_groups_far_apart(), fairgate.Policy.from_yaml(POLICY)).to_dict()
    bounds = [(r["metric"], r["ci_low"], r["ci_high"]) for r in document["results"] if r["ci_high"] is not None]
    bounds += [
        (s["metric"], s[f"{kind}_ci_low"], s[f"{kind}_ci_high"])
        for s in document["summaries"]
        for kind in ("difference", "ratio")
        if s[f"{kind}_ci_high"] is not None and s["metric"] not in ("theil_index", "generalized_entropy_index")
    ]
    assert len(bounds) >= 10
    for metric, low, high in bounds:
        assert 0.0 <= low <= high <= 1.0, (metric, low, high)
    # The cut is reached here: without it the equalized-odds bound passes 1.
    assert max(high for metric, _, high in bounds if metric == "equalized_odds_difference") == 1.0


def test_an_interval_holds_its_own_point_estimate_when_a_group_has_no_events() -> None:
    """A group never selected makes the ratio exactly 0. Its log rate enters the family with half an event
    added, so the ratio's interval alone would start above 0 (e.g. [0.03, 1.00]); it must hold the 0."""
    frame = _small_groups_far_apart().with_columns(
        y_pred=pl.when(pl.col("grp") == "b").then(0).otherwise(pl.col("y_pred")).cast(pl.Int8)
    )
    document = fairgate.audit(frame, fairgate.Policy.from_yaml(POLICY)).to_dict()
    ratio = next(r for r in document["results"] if r["metric"] == "disparate_impact_ratio" and r["slicing"])
    assert ratio["value"] == 0.0
    assert ratio["ci_low"] == 0.0 < ratio["ci_high"]
    summaries = [s for s in document["summaries"] if s["metric"] == "selection_rate" and s["ratio_ci_high"]]
    assert summaries
    assert all(s["ratio_ci_low"] <= s["ratio"] <= s["ratio_ci_high"] for s in summaries)
    for result in document["results"]:
        if result["ci_low"] is not None:
            assert result["ci_low"] <= result["value"] <= result["ci_high"], result["metric"]


def test_the_deciding_interval_stays_within_the_range_too() -> None:
    """The gate's interval (``decision_ci_low/high``, printed beside the status) is cut like the reporting one:
    with Holm over many results its ends reach further out, past 1 for these small groups far apart."""
    document = fairgate.audit(_small_groups_far_apart(), fairgate.Policy.from_yaml(POLICY)).to_dict()
    decided = [
        (r["metric"], r["decision_ci_low"], r["decision_ci_high"])
        for r in document["results"]
        if r["decision_ci_high"] is not None
    ]
    assert len(decided) >= 3
    for metric, low, high in decided:
        assert 0.0 <= low <= high <= 1.0, (metric, low, high)
    assert max(high for _, _, high in decided) == 1.0  # the cut is reached
    for r in document["results"]:  # the cut changes no status: a failing result's deciding end is still beyond
        if r["status"] == "fail" and r["metric"].endswith("_difference"):
            assert r["decision_ci_low"] > r["threshold"]
