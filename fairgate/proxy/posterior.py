"""The posterior P(group | name, place) in its shapes, and what it says about coverage and agreement.

Coverage of the tables, the most likely group, agreement with a declared attribute.

The posterior itself is computed by DuckDB (``sql/proxy_posterior.sql``) in ``tasks/inputs/proxy.py``; its per-person
shape is ``person, probabilities (a list in the tables' group order), fallback, has_*`` flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

PERSON, GROUP, PROBABILITY, FALLBACK = "person", "grp", "probability", "fallback"

# Fallback labels, in the order the posterior SQL tries them (see sql/proxy_posterior.sql).
FALLBACKS: tuple[str, ...] = (
    "surname_first_name_geography",
    "surname_geography",
    "surname_first_name",
    "surname_only",
    "first_name_geography",
    "geography_only",
    "first_name_only",
    "prior",
)


def long_posterior(posterior: pl.DataFrame, groups: tuple[str, ...]) -> pl.DataFrame:
    """One row per person x group: ``person, grp, probability, fallback`` (the shape fairgate.proxy uses)."""
    return (
        posterior.with_columns(pl.lit(pl.Series(list(groups), dtype=pl.String)).implode().alias(GROUP))
        .explode(["probabilities", GROUP])
        .select(PERSON, GROUP, pl.col("probabilities").alias(PROBABILITY), FALLBACK)
    )


def wide_posterior(posterior: pl.DataFrame, groups: tuple[str, ...]) -> pl.DataFrame:
    """One row per person: a probability column per group (in the table's group order) and the fallback."""
    return posterior.select(
        PERSON,
        *[pl.col("probabilities").list.get(i).alias(g) for i, g in enumerate(groups)],
        FALLBACK,
    )  # has_* flags stay internal: the CLI's output is the id, the probabilities and the fallback


def coverage(posterior: pl.DataFrame) -> dict[str, Any]:
    """How many people took each fallback, and how many had their name / area found."""
    counts = dict(posterior.group_by(FALLBACK).len().iter_rows())
    n = posterior.height
    found = {
        "surname_in_table": int(posterior["has_name"].sum()),
        "first_name_in_table": int(posterior["has_first_name"].sum()),
        "area_in_table": int(posterior["has_area"].sum()),
    }
    fallbacks = {label: int(counts.get(label, 0)) for label in FALLBACKS}
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


def most_likely(posterior: pl.DataFrame) -> pl.DataFrame:
    """Per person, the most probable group and its probability (ties: the first group in name order).

    ``posterior``: long rows ``person, grp, probability, fallback``.
    """
    return (
        posterior.sort([PERSON, PROBABILITY, GROUP], descending=[False, True, False])
        .group_by(PERSON, maintain_order=True)
        .first()
        .select(PERSON, pl.col(GROUP).alias("most_likely"), pl.col(PROBABILITY).alias("max_probability"), FALLBACK)
    )


def disagreement(
    declared: pl.Series, posterior: pl.DataFrame, *, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Declared vs inferred group for the same people: a cross-tab and agreement rates.

    ``declared`` holds person i's declared value at position i (nulls are skipped). ``expected_agreement`` is
    the mean probability the proxy gives to the declared group; ``most_likely_agreement`` the share whose most
    likely group is the declared one. Large gaps flag where auditing on proxies would mislead (or where a
    model could discriminate through the proxy while the declared attribute looks fair).
    """
    people = pl.DataFrame({PERSON: np.arange(declared.len(), dtype=np.uint32), "declared": declared.cast(pl.String)})
    people = people.filter(pl.col("declared").is_not_null())
    mapped = posterior.with_columns(pl.col(GROUP).replace(dict(labels or {})))
    best = most_likely(mapped).with_columns(pl.col(PERSON).cast(pl.UInt32))
    joined = people.join(best, on=PERSON, how="inner")
    p_declared = people.join(
        mapped.with_columns(pl.col(PERSON).cast(pl.UInt32)).rename({GROUP: "declared"}),
        on=[PERSON, "declared"],
        how="left",
    )[PROBABILITY].fill_null(0.0)
    table = joined.group_by("declared", "most_likely").len("n").sort("declared", "most_likely")
    return {
        "n_compared": joined.height,
        "most_likely_agreement": _mean(joined["declared"] == joined["most_likely"]),
        "expected_agreement": _mean(p_declared),
        "table": table.to_dicts(),
    }


def _mean(series: pl.Series) -> float | None:
    return float(series.cast(pl.Float64).to_numpy().mean()) if series.len() else None
