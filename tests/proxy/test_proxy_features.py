"""Proxy-feature detection: the maths against scipy/sklearn, and the flag on obvious cases."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from scipy.stats.contingency import association
from sklearn.metrics import mutual_info_score

from fairgate.errors import DataError
from fairgate.proxy import (
    correlation_ratio,
    cramers_v,
    mutual_information,
    proxy_feature_strength,
    stale_attributes,
)

RNG = np.random.default_rng(11)


def test_cramers_v_matches_scipy() -> None:
    table = np.array([[30, 10, 5], [5, 25, 20], [1, 4, 40]])
    assert cramers_v(table) == pytest.approx(association(table, method="cramer"), abs=1e-12)
    assert cramers_v(np.array([[10, 0], [0, 10]])) == pytest.approx(1.0)
    assert cramers_v(np.array([[10, 10]])) is None  # one row: undefined


def test_mutual_information_matches_sklearn() -> None:
    x = RNG.integers(0, 5, 2000)
    y = (x + RNG.integers(0, 3, 2000)) % 4
    table = np.zeros((5, 4))
    np.add.at(table, (x, y), 1)
    assert mutual_information(table) == pytest.approx(mutual_info_score(x, y), abs=1e-12)


def test_correlation_ratio_by_hand() -> None:
    categories = np.array([0, 0, 0, 1, 1, 2])
    values = np.array([1.0, 2.0, 3.0, 4.0, 6.0, 9.0])
    mean = values.mean()
    between = 3 * (2.0 - mean) ** 2 + 2 * (5.0 - mean) ** 2 + (9.0 - mean) ** 2
    total = ((values - mean) ** 2).sum()
    assert correlation_ratio(categories, values) == pytest.approx(np.sqrt(between / total), abs=1e-12)


def test_the_attribute_itself_is_flagged_and_a_random_column_is_not() -> None:
    n = 5000
    race = RNG.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])
    pin = np.array([f"{i:06d}" for i in RNG.integers(0, 2000, n)])  # high cardinality, unrelated
    income = RNG.normal(50, 10, n) + (race == "b") * 15  # numeric, associated
    features = pl.DataFrame(
        {
            "race_copy": race,
            "noise": RNG.choice(["x", "y"], n),
            "pin": pin,
            "income": income,
            "coin": RNG.normal(size=n),
        }
    )
    rows = proxy_feature_strength(features, pl.DataFrame({"race": race}))
    by_feature = {r["feature"]: r for r in rows}
    assert by_feature["race_copy"]["flag"]
    assert by_feature["race_copy"]["cramers_v"] == pytest.approx(1.0)
    assert by_feature["race_copy"]["balanced_accuracy"] == pytest.approx(1.0)
    assert by_feature["race_copy"]["normalized_mutual_information"] == pytest.approx(1.0)
    assert not by_feature["noise"]["flag"]
    assert not by_feature["coin"]["flag"]
    assert by_feature["coin"]["kind"] == "numeric"
    # A random high-cardinality code has a sizeable plug-in Cramer's V, but predicts nothing held out.
    assert not by_feature["pin"]["flag"]
    assert by_feature["pin"]["balanced_accuracy_lift"] < 0.05
    assert by_feature["income"]["flag"]
    assert by_feature["income"]["measure"] == "correlation_ratio"


def test_a_pin_code_that_encodes_the_group_is_flagged() -> None:
    n = 4000
    pin = RNG.integers(0, 200, n)
    # Each PIN area is dominated by one group (segregation): the PIN is a proxy.
    majority = np.where(pin % 3 == 0, "sc", np.where(pin % 3 == 1, "st", "other"))
    caste = np.where(RNG.random(n) < 0.8, majority, RNG.choice(["sc", "st", "other"], n))
    rows = proxy_feature_strength(pl.DataFrame({"pin": pin.astype(str)}), pl.DataFrame({"caste": caste}))
    assert rows[0]["flag"]
    assert rows[0]["balanced_accuracy_lift"] > 0.3


def test_rows_must_align() -> None:
    with pytest.raises(DataError, match="same people"):
        proxy_feature_strength(pl.DataFrame({"f": [1, 2]}), pl.DataFrame({"a": ["x"]}))


def test_stale_attributes() -> None:
    dates = pl.Series("collected", [dt.date(2020, 1, 1), dt.date(2021, 1, 1), dt.date(2025, 6, 1)])
    old = stale_attributes(dates, as_of=dt.date(2025, 12, 31), max_age_days=730)
    assert old["stale"] is True
    assert old["n_older_than_max"] == 2
    fresh = stale_attributes(dates, as_of=dt.date(2022, 6, 1), max_age_days=730)
    assert fresh["stale"] is False
    assert fresh["n_older_than_max"] == 1
    text = stale_attributes(pl.Series("c", ["2024-01-01", "nonsense"]), as_of=dt.date(2024, 2, 1), max_age_days=730)
    assert text["n"] == 1
    assert text["n_unparsed"] == 1
    assert text["stale"] is False
