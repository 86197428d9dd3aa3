"""Name, ZIP and PIN normalisation: real names survive, suffixes go only as whole tokens, codes stay text."""

from __future__ import annotations

import polars as pl
import pytest

from fairgate.errors import DataError
from fairgate.proxy import first_name_key, pincode6, state_key, surname_alt_key, surname_key, zip5


def keys(names: list[str | None], expr=surname_key) -> list[str | None]:  # type: ignore[no-untyped-def]
    return pl.select(expr(pl.lit(pl.Series(names, dtype=pl.String)))).to_series().to_list()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("YANIV", "YANIV"),  # the trailing IV is part of the name
        ("Yaniv", "YANIV"),
        ("IVANOV", "IVANOV"),
        ("MARKOV V", "MARKOV"),  # a separate V token is a suffix
        ("O'BRIEN", "OBRIEN"),
        ("DE LA CRUZ", "DELACRUZ"),
        ("SMITH JR", "SMITH"),
        ("Smith, Jr.", "SMITH"),
        ("JOHNSON III", "JOHNSON"),
        ("KING SR.", "KING"),
        ("Muñoz", "MUNOZ"),
        ("García-López", "GARCIALOPEZ"),
        ("NULL", "NULL"),  # a real surname in the Census list, not a missing value
        ("  ", None),
        (None, None),
    ],
)
def test_surname_key(raw: str | None, expected: str | None) -> None:
    assert keys([raw]) == [expected]


def test_suffix_alone_is_kept_as_a_name() -> None:
    # "JR" alone is not stripped to nothing: the regex needs a preceding token.
    assert keys(["JR"]) == ["JR"]


def test_compound_alternative_is_the_first_part() -> None:
    assert keys(["Garcia-Lopez", "de la Cruz", "Smith"], surname_alt_key) == ["GARCIA", "DE", None]


def test_first_name_key() -> None:
    assert keys(["josé maria", "Ann-Marie", ""], first_name_key) == ["JOSE", "ANNMARIE", None]


def test_zip_codes_stay_zero_padded_strings() -> None:
    assert zip5(pl.Series("z", [2134, 10027, None])).to_list() == ["02134", "10027", None]
    assert zip5(pl.Series("z", ["02134", "2134", "02134-1234", "abcde", ""])).to_list() == [
        "02134",
        "02134",
        "02134",
        None,
        None,
    ]
    assert zip5(pl.Series("z", ["02134"])).dtype == pl.String


def test_float_zip_codes_are_refused_with_the_fix() -> None:
    with pytest.raises(DataError, match="read as text"):
        zip5(pl.Series("zip", [2134.0]))


def test_pincodes() -> None:
    assert pincode6(pl.Series("p", [110001, None])).to_list() == ["110001", None]
    assert pincode6(pl.Series("p", ["11000"])).to_list() == ["011000"]


def test_state_keys_use_2011_boundaries() -> None:
    assert state_key("Tamil Nadu") == state_key("tamilnadu") == "tamilnadu"
    assert state_key("ORISSA") == state_key("Odisha") == "odisha"
    assert state_key("NCT OF DELHI") == state_key("Delhi") == "delhi"
    assert state_key("Telangana") == "andhrapradesh"
