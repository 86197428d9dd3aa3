"""Each person's lookup keys: the input frame's name and area columns, normalised as the method's tables are.

Row i of the input is person i; the keys frame feeds the posterior SQL (``sql/proxy_posterior.sql``).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from fairgate.errors import DataError
from fairgate.policy.proxy import ProxyConfig
from fairgate.proxy.keys import exact_key, first_name_key, pincode6, state_key_expr, surname_alt_key, surname_key, zip5
from fairgate.proxy.posterior import PERSON
from fairgate.proxy.tables import INDIA_PRIOR_KEY, US_PRIOR_KEY, ProxyTables

KEY_COLUMNS = ("name_key", "name_alt_key", "first_key", "area_key", "prior_key")


def people_keys(frame: pl.DataFrame, config: ProxyConfig, tables: ProxyTables, source: str) -> pl.DataFrame:
    """The normalised lookup keys of each person (row i -> person i).

    Columns: ``person`` then :data:`KEY_COLUMNS`; a key the method does not use is null. ``source`` names the
    input in error messages.
    """
    _require_columns(frame, config, source)
    n = frame.height
    keys: dict[str, pl.Series] = {
        "name_key": _nothing(n),
        "name_alt_key": _nothing(n),
        "first_key": _nothing(n),
        "area_key": _nothing(n),
        "prior_key": pl.Series([US_PRIOR_KEY] * n, dtype=pl.String),
    }
    if config.method in ("bisg", "bifsg"):
        keys.update(_us_keys(frame, config, source))
    elif config.method == "india":
        keys.update(_india_keys(frame, config, tables, source))
    else:
        keys.update(_custom_keys(frame, config, source))
    return pl.DataFrame(
        {PERSON: pl.int_range(n, dtype=pl.UInt32, eager=True), **{k: keys[k].cast(pl.String) for k in KEY_COLUMNS}}
    )


def _nothing(n: int) -> pl.Series:
    return pl.Series([None] * n, dtype=pl.String)


def _us_keys(frame: pl.DataFrame, config: ProxyConfig, source: str) -> dict[str, pl.Series]:
    """Census surname (and its compound alternative), Tzioumis first name (bifsg), ZIP5."""
    c = config.columns
    surname = _text(frame, c.surname, source)  # checked first, as the error order promises
    keys: dict[str, pl.Series] = {}
    if config.method == "bifsg" and c.first_name:
        (keys["first_key"],) = _by_unique(_text(frame, c.first_name, source), first_name_key)
    if c.zip:
        keys["area_key"] = zip5(frame[c.zip])
    keys["name_key"], keys["name_alt_key"] = _by_unique(surname, surname_key, surname_alt_key)
    return keys


def _india_keys(frame: pl.DataFrame, config: ProxyConfig, tables: ProxyTables, source: str) -> dict[str, pl.Series]:
    """PIN code; state (given, else the PIN's); ``state|surname`` names; the state's prior where known."""
    c = config.columns
    n = frame.height
    surname = _text(frame, c.surname, source)
    area = pincode6(frame[c.pincode]) if c.pincode else _nothing(n)
    pin_states: pl.DataFrame = tables.notes["pin_states"]
    from_pin = pl.DataFrame({"pincode": area}).join(pin_states, on="pincode", how="left", maintain_order="left")
    given = _by_unique(_text(frame, c.state, source), state_key_expr)[0] if c.state else _nothing(n)
    state = given.fill_null(from_pin["state_key"])
    surname_part, alt_part = _by_unique(surname, surname_key, surname_alt_key)
    name = pl.select(pl.concat_str([pl.lit(state), pl.lit("|"), pl.lit(surname_part)])).to_series()
    alt = pl.select(pl.concat_str([pl.lit(state), pl.lit("|"), pl.lit(alt_part)])).to_series()
    known = state.is_in(tables.prior["prior_key"].unique().implode())
    prior_key = pl.select(pl.when(pl.lit(known)).then(pl.lit(state)).otherwise(pl.lit(INDIA_PRIOR_KEY))).to_series()
    return {"name_key": name, "name_alt_key": alt, "area_key": area, "prior_key": prior_key}


def _custom_keys(frame: pl.DataFrame, config: ProxyConfig, source: str) -> dict[str, pl.Series]:
    """User tables: names normalised as configured, areas matched as written (trimmed, upper case)."""
    assert config.custom is not None
    c = config.columns
    normalise = surname_key if config.custom.name_normalisation == "surname" else exact_key
    keys: dict[str, pl.Series] = {}
    (keys["name_key"],) = _by_unique(_text(frame, c.surname, source), normalise)
    if c.area:
        keys["area_key"] = _by_unique(_text(frame, c.area, source), exact_key)[0]
    return keys


def _by_unique(series: pl.Series, *make_keys: Callable[[pl.Expr], pl.Expr]) -> list[pl.Series]:
    """Apply key expressions to the distinct values only, then map back: names repeat a lot.

    The second key (the compound-surname alternative) is computed only for values that can have one.
    """
    distinct = series.unique()
    keys = pl.select(make_keys[0](pl.lit(distinct)).alias("k0"), distinct.alias("raw"))
    for i, make in enumerate(make_keys[1:], start=1):
        subset = distinct.filter(distinct.str.contains(r"[\s-]").fill_null(False))
        extra = pl.select(make(pl.lit(subset)).alias(f"k{i}"), subset.alias("raw"))
        keys = keys.join(extra, on="raw", how="left")
    joined = pl.DataFrame({"raw": series}).join(keys, on="raw", how="left", maintain_order="left")
    return [joined[f"k{i}"] for i in range(len(make_keys))]


def _require_columns(frame: pl.DataFrame, config: ProxyConfig, source: str) -> None:
    c = config.columns
    needed = {
        "surname": c.surname,
        "first_name": c.first_name,
        "zip": c.zip,
        "pincode": c.pincode,
        "state": c.state,
        "area": c.area,
    }
    for setting, column in needed.items():
        if column is not None and column not in frame.columns:
            raise DataError(
                f"column {column!r} is missing from {source}; columns present: {frame.columns}. Rename the "
                f"column, or set proxy.columns.{setting} (CLI: --{setting.replace('_', '-')}-col) to its name"
            )


def _text(frame: pl.DataFrame, column: str, source: str) -> pl.Series:
    series = frame[column]
    if series.dtype.is_numeric():
        raise DataError(
            f"column {column!r} in {source} holds numbers ({series.dtype}), not names; check the column given"
        )
    return series.cast(pl.String)
