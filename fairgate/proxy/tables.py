"""Factor tables: the long-format probability tables the posterior SQL multiplies, built from frames handed in.

Reading the shipped (or user) files and running the SQL stays in ``tasks/inputs/proxy.py``; the shaping is here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from fairgate.errors import DataError, PolicyError
from fairgate.policy.proxy import CustomTables
from fairgate.proxy.districts import reconcile_districts
from fairgate.proxy.keys import exact_key, state_key, state_key_expr, surname_key

BISG_GROUPS: tuple[str, ...] = ("white", "black", "api", "native", "multiple", "hispanic")
INDIA_GROUPS: tuple[str, ...] = ("sc", "st", "other")
US_PRIOR_KEY = "all"
INDIA_PRIOR_KEY = "india"


# eq=False: identity hashing, so the tasks can cache per-table work (the factor vectors) beside each instance.
@dataclass(frozen=True, eq=False)
class ProxyTables:
    """The long-format factor tables one method multiplies, and what to say about them."""

    method: str
    groups: tuple[str, ...]
    name_given: pl.DataFrame  # key, grp, p      P(group | name)
    first_given: pl.DataFrame  # key, grp, p     P(first name | group)
    area_given: pl.DataFrame  # key, grp, p      P(area | group)
    prior: pl.DataFrame  # prior_key, grp, p
    description: str
    notes: dict[str, Any] = field(default_factory=dict)


def empty_factor() -> pl.DataFrame:
    """A factor table with no keys (every lookup misses)."""
    return pl.DataFrame(schema={"key": pl.String, "grp": pl.String, "p": pl.Float64})


def long_factor(wide: pl.DataFrame, key: str, groups: Iterable[str]) -> pl.DataFrame:
    """A wide probability table (``key`` + one column per group) as long ``key, grp, p`` rows.

    Null cells are dropped (a key with no defined probabilities is unknown); zeros are kept, so a known key
    has a row for every group.
    """
    groups = list(groups)
    return (
        wide.select(pl.col(key).cast(pl.String).alias("key"), *[pl.col(g).cast(pl.Float64) for g in groups])
        .unpivot(index="key", on=groups, variable_name="grp", value_name="p")
        .drop_nulls("p")
    )


def normalise_prior(prior: Mapping[str, float], groups: Iterable[str], *, key: str = "all") -> pl.DataFrame:
    """A prior P(group) as long ``prior_key, grp, p`` rows, rescaled to sum to 1."""
    groups = list(groups)
    total = sum(float(prior.get(g, 0.0)) for g in groups)
    if total <= 0:
        raise DataError(f"the prior {dict(prior)} has no positive mass over the groups {groups}")
    return pl.DataFrame(
        {
            "prior_key": [key] * len(groups),
            "grp": groups,
            "p": [float(prior.get(g, 0.0)) / total for g in groups],
        }
    )


def bisg_factor_tables(
    surnames: pl.DataFrame, zctas: pl.DataFrame, population: pl.DataFrame, first_names: pl.DataFrame | None
) -> ProxyTables:
    """BISG (or BIFSG when ``first_names`` is given) from the Census 2010 surname, ZCTA and population tables."""
    groups = BISG_GROUPS
    # 'ALL OTHER NAMES' is a residual row, not a name: unknown surnames take the documented fallbacks instead.
    surnames = surnames.filter(pl.col("name") != "ALL OTHER NAMES")
    prior = normalise_prior(dict(population.select("group", "count").iter_rows()), groups, key=US_PRIOR_KEY)
    first = empty_factor() if first_names is None else long_factor(first_names, "name", groups)
    return ProxyTables(
        method="bisg" if first_names is None else "bifsg",
        groups=groups,
        name_given=long_factor(surnames, "name", groups),
        first_given=first,
        area_given=long_factor(zctas, "zcta5", groups),
        prior=prior,
        description="US Census 2010 surname list and ZCTA table (SF1 P5)"
        + ("" if first_names is None else ", Tzioumis first-name table")
        + "; prior: US population 2010",
    )


def india_sql_inputs(
    secc: pl.DataFrame, census: pl.DataFrame, pincodes: pl.DataFrame
) -> tuple[dict[str, pl.DataFrame], dict[str, Any]]:
    """The relations the India factor SQL reads (``secc``, ``census``, ``crosswalk``) and the district coverage.

    ``secc``: the SECC surname composition; ``census``: the 2011 census districts; ``pincodes``: the India Post
    directory (see ``fairgate/data/india/PROVENANCE.md``).
    """
    crosswalk, coverage = reconcile_districts(pincodes, census)
    relations = {
        "secc": secc.select(
            state_key_expr(pl.col("state").cast(pl.String)).alias("state_key"),
            surname_key("last_name").alias("surname_key"),
            "n_sc",
            "n_st",
            "n_other",
        ),
        "census": census.select(
            pl.col("District code").alias("district_code"),
            pl.col("State name").map_elements(state_key, return_dtype=pl.String).alias("state_key"),
            pl.col("Population").alias("population"),
            pl.col("SC").alias("sc"),
            pl.col("ST").alias("st"),
        ),
        "crosswalk": crosswalk.select("pincode", "district_code"),
    }
    return relations, coverage


def india_factor_tables(
    name_given: pl.DataFrame,
    area_given: pl.DataFrame,
    prior: pl.DataFrame,
    pincodes: pl.DataFrame,
    coverage: dict[str, Any],
) -> ProxyTables:
    """The India method from the factor relations the SQL produced and the India Post directory."""
    # A person's state when only the PIN is known: the state the India Post directory gives it (first one).
    pin_states = (
        pincodes.group_by("pincode", maintain_order=True)
        .agg(pl.col("state").first())
        .select("pincode", state_key_expr("state").alias("state_key"))
    )
    return ProxyTables(
        method="india",
        groups=INDIA_GROUPS,
        name_given=name_given,
        first_given=empty_factor(),
        area_given=area_given,
        prior=prior,
        description="SECC 2011 surname x state caste-category counts; 2011 census district SC/ST/population "
        "reached through India Post PIN codes; prior: the state's 2011 census shares",
        notes={"district_reconciliation": coverage, "pin_states": pin_states},
    )


def custom_name_factor(names: pl.DataFrame, custom: CustomTables) -> tuple[tuple[str, ...], pl.DataFrame]:
    """The groups (the columns after ``name``) and P(group | name) of a user name table."""
    groups = tuple(c for c in names.columns if c != "name")
    if not groups:
        raise DataError(f"{custom.name_table}: no group columns after 'name'; add one column per group")
    key = surname_key("name") if custom.name_normalisation == "surname" else exact_key("name")
    return groups, long_factor(names.with_columns(key.alias("name")).drop_nulls("name"), "name", groups)


def custom_area_factor(areas: pl.DataFrame, groups: tuple[str, ...], custom: CustomTables) -> pl.DataFrame:
    """P(area | group) of a user area table, which must have the name table's group columns."""
    missing = sorted(set(groups) - set(areas.columns))
    if missing:
        raise DataError(
            f"{custom.area_table} lacks the group column(s) {missing} that {custom.name_table} has; both "
            "tables need the same group columns"
        )
    return long_factor(areas.with_columns(exact_key("area").alias("area")), "area", groups)


def custom_factor_tables(
    custom: CustomTables, groups: tuple[str, ...], name_given: pl.DataFrame, area_given: pl.DataFrame | None
) -> ProxyTables:
    """User tables: P(group | name), optionally P(area | group), and the prior (uniform unless given)."""
    prior_counts = custom.prior or dict.fromkeys(groups, 1.0)
    unknown = sorted(set(prior_counts) - set(groups))
    if unknown:
        raise PolicyError(f"proxy.custom.prior names group(s) {unknown} that are not columns of {custom.name_table}")
    return ProxyTables(
        method="custom",
        groups=groups,
        name_given=name_given,
        first_given=empty_factor(),
        area_given=empty_factor() if area_given is None else area_given,
        prior=normalise_prior(prior_counts, groups, key=US_PRIOR_KEY),
        description=f"user tables {custom.name_table}" + (f" and {custom.area_table}" if custom.area_table else ""),
    )
