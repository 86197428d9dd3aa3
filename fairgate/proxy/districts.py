"""India district reconciliation: India Post (current) district names -> 2011 census district codes.

The known renames and post-2011 splits are shipped data (``fairgate/data/india/district_renames.csv``, see that
folder's ``PROVENANCE.md``), read once from the package.
"""

from __future__ import annotations

import csv
import difflib
import functools
import io
from collections.abc import Mapping
from importlib import resources
from typing import Any

import polars as pl

from fairgate.proxy.keys import state_key

RENAMES_RESOURCE = ("data", "india", "district_renames.csv")

# A union territory merged in 2020 maps to the two 2011 territories it came from.
# The India Post source also files the Andaman and Nicobar PINs under that merged territory: search it too.
_STATE_SPLITS = {
    "dadraandnagarhavelianddamananddiu": ("dadraandnagarhaveli", "damananddiu", "andamanandnicobarislands"),
}
# Fuzzy matching never crosses these words: "South East" must not become "South West".
_DIRECTION_WORDS = (
    "north",
    "south",
    "east",
    "west",
    "upper",
    "lower",
    "central",
    "purb",
    "paschim",
    "pashchim",
    "uttar",
    "dakshin",
    "middle",
)


def district_key(name: str) -> str:
    """District name key: lower case letters only, without '(...)' asides and the word 'district'.

    >>> names = ["Leh(Ladakh)", "Sri Potti Sriramulu Nellore", "Y.S.R.", "North 24 Parganas"]
    >>> [district_key(s) for s in names]
    ['leh', 'sripottisriramulunellore', 'ysr', 'northparganas']
    """
    text = name.lower().replace("&", "and")
    text = "".join(ch for ch in _drop_parenthesised(text) if ch.isalpha() or ch == " ")
    words = [w for w in text.split() if w not in {"district", "dist"}]
    return "".join(words)


def _drop_parenthesised(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        depth += ch == "("
        if depth == 0:
            out.append(ch)
        depth -= ch == ")" and depth > 0
    return "".join(out)


@functools.lru_cache(maxsize=1)
def known_district_renames() -> dict[str, str]:
    """Current (India Post) district key -> the 2011 census district key it is, or was carved from.

    Renames first, then new districts mapped to their 2011 parent where the split is well known.

    >>> known_district_renames()["gurugram"]
    'gurgaon'
    """
    text = resources.files("fairgate").joinpath(*RENAMES_RESOURCE).read_text(encoding="utf-8")
    rows = csv.DictReader(line for line in io.StringIO(text) if not line.startswith("#"))
    return {row["post_district_key"]: row["census_district_key"] for row in rows}


def reconcile_districts(
    pincodes: pl.DataFrame,
    census: pl.DataFrame,
    *,
    fuzzy_cutoff: float = 0.88,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Map India Post (pincode, district, state) rows to 2011 census district codes, state by state.

    ``pincodes``: columns ``pincode, district, state``.
    ``census``: columns ``District code, State name, District name``.
    Matching, within the census state(s) the post state covered in 2011: normalised names equal ("exact"),
    then a known rename or post-2011 split ("renamed"), then a unique close spelling ("fuzzy": difflib
    ratio >= ``fuzzy_cutoff``, never across compass words). Returns the crosswalk (``pincode,
    district_code, match``; unmatched rows have a null code) and a coverage summary.
    """
    by_state = _census_codes_by_state(census)
    match_frame = _match_post_districts(pincodes, by_state, fuzzy_cutoff)
    crosswalk = pincodes.join(match_frame, on=["district", "state"], how="left").select(
        "pincode", "district", "state", "district_code", "match"
    )
    return crosswalk, _coverage(crosswalk, match_frame, census)


def _census_codes_by_state(census: pl.DataFrame) -> dict[str, dict[str, int]]:
    """Census state key -> {district key: district code}."""
    census_keys = census.select(
        pl.col("District code").alias("district_code"),
        pl.col("State name").map_elements(state_key, return_dtype=pl.String).alias("census_state"),
        pl.col("District name").map_elements(district_key, return_dtype=pl.String).alias("census_key"),
    )
    by_state: dict[str, dict[str, int]] = {}
    for code, state, key in census_keys.iter_rows():
        by_state.setdefault(state, {})[key] = code
    return by_state


def _match_post_districts(
    pincodes: pl.DataFrame, by_state: Mapping[str, Mapping[str, int]], fuzzy_cutoff: float
) -> pl.DataFrame:
    """One row per distinct (district, state) of the post directory: its census code and how it matched."""
    matches: list[tuple[str, str, int | None, str]] = []
    for district, state in pincodes.select("district", "state").unique().iter_rows():
        skey = state_key(state)
        states = _STATE_SPLITS.get(skey or "", (skey,))
        candidates = {k: c for s in states for k, c in by_state.get(s or "", {}).items()}
        code, how = _match_district(district_key(district), candidates, fuzzy_cutoff)
        matches.append((district, state, code, how))
    return pl.DataFrame(
        matches,
        schema={"district": pl.String, "state": pl.String, "district_code": pl.Int64, "match": pl.String},
        orient="row",
    )


def _coverage(crosswalk: pl.DataFrame, match_frame: pl.DataFrame, census: pl.DataFrame) -> dict[str, Any]:
    per_pin = crosswalk.group_by("pincode").agg(
        pl.col("district_code").is_not_null().all().alias("all_matched"),
        pl.col("district_code").is_not_null().any().alias("any_matched"),
    )
    unmatched = match_frame.filter(pl.col("district_code").is_null())
    return {
        "pincodes": per_pin.height,
        "pincodes_reaching_a_census_district": int(per_pin["any_matched"].sum()),
        "pincodes_fully_matched": int(per_pin["all_matched"].sum()),
        "post_district_names": match_frame.height,
        "post_district_names_by_match": dict(match_frame.group_by("match").len().sort("match").iter_rows()),
        "census_districts": census.height,
        "census_districts_reached": crosswalk["district_code"].drop_nulls().n_unique(),
        "unmatched_district_names": sorted(f"{d} ({s})" for d, s in unmatched.select("district", "state").iter_rows()),
    }


def _match_district(key: str, candidates: Mapping[str, int], cutoff: float) -> tuple[int | None, str]:
    if not key or not candidates:
        return None, "unmatched"
    if key in candidates:
        return candidates[key], "exact"
    renamed = known_district_renames().get(key)
    if renamed is not None and renamed in candidates:
        return candidates[renamed], "renamed"
    if any(word in key for word in _DIRECTION_WORDS):
        return None, "unmatched"
    close = difflib.get_close_matches(key, list(candidates), n=2, cutoff=cutoff)
    # Only an unambiguous close spelling is accepted: two near candidates are left unmatched.
    if len(close) == 1 or (
        len(close) == 2
        and difflib.SequenceMatcher(None, key, close[0]).ratio() - difflib.SequenceMatcher(None, key, close[1]).ratio()
        > 0.05
    ):
        return candidates[close[0]], "fuzzy"
    return None, "unmatched"
