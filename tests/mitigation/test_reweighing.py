"""Reweighing equals AIF360's ``Reweighing`` to 1e-12, on COMPAS and on generated data, with and without base
weights, for one attribute and for an intersection.

AIF360 compares one privileged group with one unprivileged group; for a group ``g`` of a many-valued attribute,
AIF360 run with privileged = ``g`` and unprivileged = every other value gives ``g``'s rows exactly the weights
``P(g) P(y) / P(g, y)``. Every group is checked that way.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from mitigation_helpers import generated

from fairgate.errors import DataError
from fairgate.mitigation.reweighing import reweigh

_CODE = "__group_code"


def _aif360_weights(frame: pl.DataFrame, attributes: list[str], label: str, base: str | None) -> np.ndarray:
    """Each row's weight from AIF360, one privileged-vs-rest run per group (see the module docstring)."""
    from aif360.algorithms.preprocessing import Reweighing
    from aif360.datasets import BinaryLabelDataset

    groups = frame.select(pl.concat_str([pl.col(a).cast(pl.String) for a in attributes], separator="|"))
    codes = np.unique(groups.to_series().to_numpy(), return_inverse=True)[1]
    data = pl.DataFrame({_CODE: codes.astype(np.float64), "y": frame[label].cast(pl.Float64)}).to_pandas()
    out = np.full(frame.height, np.nan)
    for code in np.unique(codes):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dataset = BinaryLabelDataset(
                df=data.copy(),
                label_names=["y"],
                protected_attribute_names=[_CODE],
                favorable_label=1.0,
                unfavorable_label=0.0,
                instance_weights_name=None,
            )
            if base is not None:
                dataset.instance_weights = frame[base].to_numpy().astype(np.float64)
            others = [{_CODE: float(c)} for c in np.unique(codes) if c != code]
            rw = Reweighing(unprivileged_groups=others, privileged_groups=[{_CODE: float(code)}])
            transformed = rw.fit_transform(dataset)
        out[codes == code] = transformed.instance_weights[codes == code]
    assert not np.isnan(out).any()
    return out


@pytest.mark.parametrize("attributes", [["race"], ["sex"], ["race", "sex"], ["race", "sex", "age_cat"]])
def test_equals_aif360_on_compas(compas_train: pl.DataFrame, attributes: list[str]) -> None:
    ours = reweigh(compas_train, attributes, "two_year_recid")
    theirs = _aif360_weights(compas_train, attributes, "two_year_recid", None)
    np.testing.assert_allclose(ours.weights.to_numpy(), theirs, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("base", [None, "w"])
def test_equals_aif360_on_generated_data(seed: int, base: str | None) -> None:
    frame = generated(seed)
    for attributes in (["group"], ["group", "sex"]):
        ours = reweigh(frame, attributes, "label", base_weight=base)
        theirs = _aif360_weights(frame, attributes, "label", base)
        np.testing.assert_allclose(ours.weights.to_numpy(), theirs, rtol=0, atol=1e-12)


def test_weighted_data_has_the_same_base_rate_in_every_group(compas_train: pl.DataFrame) -> None:
    """The point of reweighing: under the weights, label and group are independent, total mass is kept."""
    result = reweigh(compas_train, ["race", "sex"], "two_year_recid")
    weighted = compas_train.with_columns(result.weights)
    overall = float((weighted["weight"] * weighted["two_year_recid"]).sum() / weighted["weight"].sum())
    rates = weighted.group_by("race", "sex").agg(
        ((pl.col("weight") * pl.col("two_year_recid")).sum() / pl.col("weight").sum()).alias("rate")
    )
    np.testing.assert_allclose(rates["rate"].to_numpy(), overall, atol=1e-12)
    assert float(result.weights.sum()) == pytest.approx(compas_train.height, abs=1e-9)
    raw = compas_train.group_by("race").agg(pl.col("two_year_recid").mean())["two_year_recid"]
    assert float(raw.max() - raw.min()) > 0.1  # the raw data did differ: the test above is not vacuous


def test_table_counts_and_weights_match_rows(compas_train: pl.DataFrame) -> None:
    result = reweigh(compas_train, ["sex"], "two_year_recid")
    assert result.table["rows"].sum() == compas_train.height
    assert result.table.height == 4
    joined = compas_train.with_columns(result.weights).join(result.table, on=["sex", "two_year_recid"])
    assert (joined["weight"] == joined["weight_right"]).all()


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (pl.col("two_year_recid") * 2, "must hold 0/1"),
        (pl.when(pl.col("id") == 1).then(None).otherwise(pl.col("two_year_recid")), "must hold 0/1"),
    ],
)
def test_bad_labels_are_refused(compas_train: pl.DataFrame, edit: pl.Expr, fragment: str) -> None:
    with pytest.raises(DataError, match=fragment):
        reweigh(compas_train.with_columns(edit.alias("two_year_recid")), ["race"], "two_year_recid")


def test_missing_column_and_group_are_refused(compas_train: pl.DataFrame) -> None:
    with pytest.raises(DataError, match="no column 'ethnicity'"):
        reweigh(compas_train, ["ethnicity"], "two_year_recid")
    holed = compas_train.with_columns(pl.when(pl.col("id") == 1).then(None).otherwise(pl.col("race")).alias("race"))
    with pytest.raises(DataError, match="'race' is missing in 1 training row"):
        reweigh(holed, ["race"], "two_year_recid")
    with pytest.raises(DataError, match="non-negative"):
        reweigh(generated(3).with_columns(-pl.col("w")), ["group"], "label", base_weight="w")


def test_the_weights_csv_writes_formula_like_cells_as_text(tmp_path: Path) -> None:
    from tasks.outputs import write_frame

    frame = pl.DataFrame({"id": ["=cmd|' /C calc'!A0", "@SUM(A1)", "7"], "weight": [-1.5, 0.5, 2.0]})
    written = pl.read_csv(write_frame(frame, tmp_path / "weights.csv"), schema_overrides={"id": pl.String})
    assert written["id"].to_list() == ["'=cmd|' /C calc'!A0", "'@SUM(A1)", "7"]
    assert written["weight"].to_list() == [-1.5, 0.5, 2.0]  # numbers stay numbers
