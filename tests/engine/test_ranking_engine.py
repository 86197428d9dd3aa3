"""The ranking engine against oracles and a simulation.

- Exposure of a group in a list is sklearn's DCG of that list with relevance = the group's membership indicator
  (ranking by -rank: ranks are distinct, so sklearn's tie averaging changes nothing; ``ignore_ties`` both ways);
  summed over lists it must equal the cube's exposure sum, to 1e-9, on the law school data and generated data.
- Every per-group metric against a plain pandas row implementation, to 1e-9, for every discount, weighted too.
- Cubes of disjoint sets of lists add; row order does not matter.
- Coverage (seeded, bounded): the cluster bootstrap's per-group intervals cover the true mean exposure and top-k
  rate, and with equal groups the gate's test of "a disparity > 0" rejects at about its level; with a real
  disparity it rejects nearly always (the check can fail).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from sklearn.metrics import dcg_score

from fairgate.engine.ranking import build_ranking_cube, metric_names, ranking_slicing
from fairgate.engine.ranking.discount import discount
from fairgate.errors import DataError
from fairgate.policy.ranking import RankingOptions

LAW_CSV = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "law" / "law_data.csv"


def law_rankings(list_size: int = 40) -> pd.DataFrame:
    """Law school applicants in lists of ``list_size`` per region (file order), ranked by a linear model of ZFYA
    on LSAT and UGPA; relevance = the quartile (0..3) of the actual first-year average ZFYA."""
    law = pd.read_csv(LAW_CSV)
    assert len(law) == 21791  # shared/data/README.md
    design = np.column_stack([np.ones(len(law)), law["LSAT"], law["UGPA"]])
    coef, *_ = np.linalg.lstsq(design, law["ZFYA"].to_numpy(), rcond=None)
    law["score"] = design @ coef
    law["relevance"] = pd.qcut(law["ZFYA"], 4, labels=False).astype(float)
    law["list_id"] = law["region_first"] + "-" + (law.groupby("region_first").cumcount() // list_size).astype(str)
    law["rank"] = law.groupby("list_id")["score"].rank(ascending=False, method="first").astype(int)
    law["sex"] = law["sex"].astype(str)
    return law[["list_id", "rank", "relevance", "race", "sex"]]


def generated(seed: int, lists: int = 300, weighted: bool = False) -> pd.DataFrame:
    """Lists of 5..40 items; group b ranked lower on average; relevance 0..4; optional weights."""
    rng = np.random.default_rng(seed)
    frames = []
    for q in range(lists):
        size = int(rng.integers(5, 41))
        group = rng.choice(["a", "b", "c"], size=size, p=[0.5, 0.3, 0.2])
        score = rng.normal(size=size) - 0.4 * (group == "b")
        order = np.argsort(-score)
        rank = np.empty(size, dtype=int)
        rank[order] = np.arange(1, size + 1)
        frames.append(
            pd.DataFrame(
                {
                    "list_id": f"q{q}",
                    "rank": rank,
                    "relevance": rng.integers(0, 5, size).astype(float),
                    "g": group,
                    "h": rng.choice(["x", "y"], size=size),
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    if weighted:
        frame["w"] = rng.uniform(0.2, 3.0, len(frame))
    return frame


def row_metrics(
    frame: pd.DataFrame, attributes: list[str], options: RankingOptions, weight: str | None
) -> pd.DataFrame:
    """Every per-group metric, straight from the rows with pandas."""
    rows = frame.assign(
        _w=frame[weight] if weight else 1.0,
        _d=discount(frame["rank"].to_numpy(), options),
    )
    rows["_e"] = rows["_w"] * rows["_d"]
    rows["_r"] = rows["_w"] * rows["relevance"]
    for k in options.top_k:
        rows[f"_t{k}"] = rows["_w"] * (rows["rank"] <= k)
    sums = rows.groupby(attributes).sum(numeric_only=True)
    out = pd.DataFrame(index=sums.index)
    out["population_share"] = sums["_w"] / sums["_w"].sum()
    for k in options.top_k:
        out[f"top_{k}_share"] = sums[f"_t{k}"] / sums[f"_t{k}"].sum()
        out[f"top_{k}_rate"] = sums[f"_t{k}"] / sums["_w"]
    out["mean_exposure"] = sums["_e"] / sums["_w"]
    out["exposure_share"] = sums["_e"] / sums["_e"].sum()
    out["mean_relevance"] = sums["_r"] / sums["_w"]
    out["exposure_per_relevance"] = (sums["_e"] / sums["_r"]).where(sums["_r"] > 0)
    return out


def engine_metrics(
    frame: pd.DataFrame, attributes: list[str], options: RankingOptions, weight: str | None
) -> pd.DataFrame:
    cube = build_ranking_cube(
        frame,
        attributes=attributes,
        list_id="list_id",
        rank="rank",
        relevance="relevance",
        weight=weight,
        options=options,
    )
    part = ranking_slicing(cube, tuple(attributes), n_bootstrap=0, min_group_size=1)
    index = pd.MultiIndex.from_tuples([tuple(g[a] for a in attributes) for g in part.groups], names=attributes)
    if len(attributes) == 1:
        index = index.get_level_values(0)
    return pd.DataFrame({name: part.metrics[name]["value"] for name in metric_names(options)}, index=index)


def sklearn_exposure(frame: pd.DataFrame, attribute: str, weight: str | None, ignore_ties: bool) -> pd.Series:
    """Sum over lists of sklearn's DCG of the list with relevance = membership (times weight)."""
    totals: dict[str, float] = {}
    for _, items in frame.groupby("list_id"):
        ranks = items["rank"].to_numpy()
        if len(items) < 2:
            continue  # sklearn's dcg_score needs two or more items; a single item's exposure is 1, added below
        for value in frame[attribute].unique():
            member = (items[attribute] == value).to_numpy().astype(float)
            if weight:
                member = member * items[weight].to_numpy()
            with warnings.catch_warnings():  # sklearn's own deprecation noise, not the engine's
                warnings.simplefilter("ignore")
                dcg = dcg_score(member[None, :], -ranks[None, :].astype(float), ignore_ties=ignore_ties)
            totals[value] = totals.get(value, 0.0) + float(dcg)
    singles = frame[frame.groupby("list_id")["rank"].transform("size") == 1]
    for value, items in singles.groupby(attribute):
        totals[value] = totals.get(value, 0.0) + float((items[weight] if weight else pd.Series(1.0, items.index)).sum())
    return pd.Series(totals)


# ----------------------------------------------------------------------------------------------- oracles
@pytest.mark.parametrize("ignore_ties", [True, False])
@pytest.mark.parametrize("source", ["law", "generated", "weighted"])
def test_group_exposure_is_sklearn_dcg_of_membership(source: str, ignore_ties: bool) -> None:
    frame = law_rankings() if source == "law" else generated(1, weighted=source == "weighted")
    attribute = "race" if source == "law" else "g"
    weight = "w" if source == "weighted" else None
    if source == "law":
        frame = frame[frame["list_id"].str.startswith(("NE", "NW"))]  # keep sklearn's per-list loop short
    expected = sklearn_exposure(frame, attribute, weight, ignore_ties)
    cube = build_ranking_cube(
        frame, attributes=[attribute], list_id="list_id", rank="rank", relevance="relevance", weight=weight
    )
    exposure = cube.cells.group_by(attribute).agg(pl.col("__exposure").sum())
    got = dict(zip(exposure[attribute].to_list(), exposure["__exposure"].to_list(), strict=True))
    assert set(got) == set(expected.index)
    for value, total in expected.items():
        assert got[value] == pytest.approx(total, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(
    "options",
    [
        RankingOptions(top_k=[10, 3]),
        RankingOptions(top_k=[5], discount="reciprocal"),
        RankingOptions(top_k=[20, 1], discount="rbp", patience=0.7),
    ],
)
@pytest.mark.parametrize("attributes", [["g"], ["g", "h"]])
@pytest.mark.parametrize("weight", [None, "w"])
def test_group_metrics_equal_the_row_implementation(
    options: RankingOptions, attributes: list[str], weight: str | None
) -> None:
    frame = generated(2, weighted=True)
    expected = row_metrics(frame, attributes, options, weight)
    got = engine_metrics(frame, attributes, options, weight).loc[expected.index]
    np.testing.assert_allclose(got.to_numpy(float), expected.to_numpy(float), rtol=1e-9, atol=1e-12, equal_nan=True)


def test_law_school_metrics_equal_the_row_implementation() -> None:
    frame = law_rankings()
    options = RankingOptions(top_k=[10, 5])
    for attributes in (["race"], ["sex"], ["race", "sex"]):
        expected = row_metrics(frame, attributes, options, None)
        got = engine_metrics(frame, attributes, options, None).loc[expected.index]
        np.testing.assert_allclose(got.to_numpy(float), expected.to_numpy(float), rtol=1e-9, atol=1e-12)
    # A model trained on LSAT and UGPA places Black applicants in the top 10 of their list far less often.
    rates = engine_metrics(frame, ["race"], options, None)["top_10_rate"]
    assert rates["Black"] < 0.5 * rates["White"]


def test_cubes_of_disjoint_lists_add_and_row_order_does_not_matter() -> None:
    frame = generated(3)
    first = frame[frame["list_id"].isin([f"q{i}" for i in range(150)])]
    second = frame.drop(first.index)
    kwargs = {"attributes": ["g", "h"], "list_id": "list_id", "rank": "rank", "relevance": "relevance"}
    whole = build_ranking_cube(frame, **kwargs)
    summed = build_ranking_cube(first, **kwargs) + build_ranking_cube(second, **kwargs)
    shuffled = build_ranking_cube(frame.sample(frac=1.0, random_state=0), **kwargs)
    for cube in (summed, shuffled):
        assert cube.cells.select(pl.exclude("__weight", "__exposure", "__relevance")).equals(
            whole.cells.select(pl.exclude("__weight", "__exposure", "__relevance"))
        )
        for column in ("__weight", "__exposure", "__relevance"):
            np.testing.assert_allclose(cube.cells[column].to_numpy(), whole.cells[column].to_numpy(), rtol=1e-12)
        assert cube.n_lists == whole.n_lists == 300
    a = ranking_slicing(whole, ("g",), n_bootstrap=200)
    b = ranking_slicing(shuffled, ("g",), n_bootstrap=200)
    assert a.summaries[0]["ci_high"] == pytest.approx(b.summaries[0]["ci_high"], rel=1e-9)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rank": 0}, "ranks >= 1"),
        ({"rank": 1.5}, "whole-number ranks"),
        ({"relevance": -1.0}, "finite numbers >= 0"),
        ({"relevance": float("nan")}, "finite numbers >= 0"),
        ({"g": None}, "attribute 'g'"),
    ],
)
def test_bad_rows_are_refused_with_the_fix(change: dict[str, object], message: str) -> None:
    frame = generated(4, lists=5)
    frame = frame.astype({"rank": float, "g": object})
    for column, value in change.items():
        frame.loc[3, column] = value
    with pytest.raises(DataError, match=message):
        build_ranking_cube(frame, attributes=["g"], list_id="list_id", rank="rank", relevance="relevance")


# ----------------------------------------------------------------------------------------------- simulation
def _equal_groups(rng: np.random.Generator, lists: int, size: int, shift: float = 0.0) -> pl.DataFrame:
    """Lists whose group mix varies by list (clustered), groups ranked at random unless ``shift`` > 0."""
    mix = rng.dirichlet([2.0, 1.5, 1.0], size=lists)
    cumulative = mix.cumsum(axis=1)
    u = rng.random((lists, size))
    group = (u[:, :, None] > cumulative[:, None, :]).sum(axis=2)
    score = rng.normal(size=(lists, size)) - shift * (group == 1)
    rank = np.argsort(np.argsort(-score, axis=1), axis=1) + 1
    return pl.DataFrame(
        {
            "list_id": np.repeat(np.arange(lists), size),
            "rank": rank.ravel(),
            "relevance": rng.integers(0, 3, lists * size).astype(float),
            "g": np.array(["a", "b", "c"])[group.ravel()],
        }
    )


def test_cluster_bootstrap_covers_and_the_gate_rarely_fails_equal_groups() -> None:
    rng = np.random.default_rng(20260101)
    options = RankingOptions(top_k=[5])
    size = 20
    truth_exposure = float(discount(np.arange(1, size + 1), options).mean())  # random order: every position alike
    runs, covered_exposure, covered_rate, rejected = 150, 0, 0, 0
    for run in range(runs):
        frame = _equal_groups(rng, lists=120, size=size)
        cube = build_ranking_cube(
            frame, attributes=["g"], list_id="list_id", rank="rank", relevance="relevance", options=options
        )
        part = ranking_slicing(cube, ("g",), n_bootstrap=300, seed=run)
        exposure, rate = part.metrics["mean_exposure"], part.metrics["top_5_rate"]
        covered_exposure += all(
            lo <= truth_exposure <= hi for lo, hi in zip(exposure["ci_low"], exposure["ci_high"], strict=True)
        )
        covered_rate += all(lo <= 5 / size <= hi for lo, hi in zip(rate["ci_low"], rate["ci_high"], strict=True))
        family = part.summary("top_k_rate_difference", 5)["_family"]
        rejected += family.p_beyond(0.0) <= 0.05  # the strictest threshold: any disparity at all
    # Three groups each at 95%: joint coverage about 0.86 (they are dependent; bounded well below and above).
    assert 0.78 <= covered_exposure / runs <= 0.97
    assert 0.78 <= covered_rate / runs <= 0.97
    assert rejected / runs <= 0.10


def test_the_gate_detects_a_real_disparity() -> None:
    rng = np.random.default_rng(7)
    rejected = 0
    for run in range(20):
        frame = _equal_groups(rng, lists=120, size=20, shift=0.6)
        cube = build_ranking_cube(frame, attributes=["g"], list_id="list_id", rank="rank", relevance="relevance")
        part = ranking_slicing(cube, ("g",), n_bootstrap=300, seed=run)
        rejected += part.summary("exposure_difference")["_family"].p_beyond(0.02) <= 0.05
        assert part.summary("exposure_ratio")["worst_group"] == {"g": "b"}
    assert rejected >= 18
