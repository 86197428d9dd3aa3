"""Proxy inference helpers and proxy-feature detection (pure: Polars/NumPy over data handed in).

What lives here:

- name, ZIP and PIN normalisation as Polars expressions (vectorised: a million names in well under a second);
- the long-format factor tables the posterior SQL (``sql/proxy_posterior.sql``) multiplies together;
- the reconciliation of India Post district names (current) with the 2011 census district names;
- the weighting helpers that turn a posterior into audited rows (probabilistic or most-likely);
- proxy-feature detection (Cramer's V, correlation ratio, mutual information, a held-out predictive check);
- the stale-attribute check.

The posterior itself is computed by DuckDB in ``tasks/proxy.py`` from the SQL files, as the project's layering
asks; everything here is the maths and the shaping around it.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import polars as pl

from fairgate.errors import DataError

BISG_GROUPS: tuple[str, ...] = ("white", "black", "api", "native", "multiple", "hispanic")
INDIA_GROUPS: tuple[str, ...] = ("sc", "st", "other")

# Whole-token generational and professional suffixes; matched only as separate trailing tokens, so the
# "IV" of YANIV or the "V" of "MARKOV" is never touched.
NAME_SUFFIXES: frozenset[str] = frozenset(
    {"JR", "SR", "II", "III", "IV", "V", "VI", "VII", "VIII", "2ND", "3RD", "4TH", "ESQ", "MD", "PHD", "DDS"}
)
_SUFFIX_TAIL = r"(\s+(" + "|".join(sorted(NAME_SUFFIXES, key=len, reverse=True)) + r"))+$"

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

CAVEATS = (
    "Groups are inferred, not declared: each person's membership is an estimate from name and place tables "
    "({tables}). Such proxies are less accurate for some groups (in the US, Black and multiracial people and "
    "people living in integrated areas; in India, surnames shared across caste categories), and the tables "
    "age. Read the results as estimates for the population, never as labels for individuals."
)


# ------------------------------------------------------------------------------------------- normalisation
def surname_key(column: str | pl.Expr) -> pl.Expr:
    """Census-style surname key: upper case, accents removed, trailing suffix tokens dropped, letters only.

    The 2010 Census surname list removes spaces, apostrophes and hyphens (DELACRUZ, OBRIEN, GARCIALOPEZ).
    Empty results become null (an unknown surname).

    >>> names = pl.Series(["Yaniv", "O'Brien", "de la Cruz", "Smith, Jr.", "  "])
    >>> pl.select(surname_key(pl.lit(names))).to_series().to_list()
    ['YANIV', 'OBRIEN', 'DELACRUZ', 'SMITH', None]
    """
    expr = pl.col(column) if isinstance(column, str) else column
    cleaned = (
        expr.cast(pl.String)
        .str.normalize("NFKD")
        .str.replace_all(r"\p{M}", "")
        .str.to_uppercase()
        .str.replace_all(r"[.,]", " ")
        .str.strip_chars()
        .str.replace(_SUFFIX_TAIL, "")
        .str.replace_all(r"[^A-Z]", "")
    )
    return pl.when(cleaned.str.len_chars() > 0).then(cleaned).otherwise(None)


def surname_alt_key(column: str | pl.Expr) -> pl.Expr:
    """Second key for compound surnames: the first hyphen- or space-separated part ("GARCIA-LOPEZ" -> GARCIA).

    Tried only when the whole compound is not in the table; null for single-part names.
    """
    expr = pl.col(column) if isinstance(column, str) else column
    compound = expr.cast(pl.String).str.strip_chars().str.contains(r"[\s-]")
    first_part = surname_key(expr.cast(pl.String).str.strip_chars().str.extract(r"^([^\s-]+)", 1))
    return pl.when(compound).then(first_part).otherwise(None)


def first_name_key(column: str | pl.Expr) -> pl.Expr:
    """First-name key for the Tzioumis table: the first token, upper case, accents removed, letters only."""
    expr = pl.col(column) if isinstance(column, str) else column
    first = (
        expr.cast(pl.String)
        .str.normalize("NFKD")
        .str.replace_all(r"\p{M}", "")
        .str.to_uppercase()
        .str.strip_chars()
        .str.extract(r"^([^\s]+)", 1)
        .str.replace_all(r"[^A-Z]", "")
    )
    return pl.when(first.str.len_chars() > 0).then(first).otherwise(None)


def exact_key(column: str | pl.Expr) -> pl.Expr:
    """Trimmed upper-case text; for user tables whose names must match as written."""
    expr = pl.col(column) if isinstance(column, str) else column
    cleaned = expr.cast(pl.String).str.strip_chars().str.to_uppercase()
    return pl.when(cleaned.str.len_chars() > 0).then(cleaned).otherwise(None)


def _digits_key(series: pl.Series, width: int, what: str) -> pl.Series:
    """Zero-padded digit strings from text or integer codes; floats are refused (digits may be lost)."""
    if series.dtype.is_float():
        raise DataError(
            f"column {series.name!r} holds floating-point numbers; {what} codes must be read as text "
            f"(e.g. dtype=str) so that leading zeros survive, then passed again"
        )
    text = series.cast(pl.String).str.strip_chars()
    # ZIP+4 ("02134-1234") keeps its first part; anything else that is not all digits is unknown.
    head = text.str.extract(r"^(\d+)(?:-\d+)?$", 1)
    padded = head.str.zfill(width)
    return pl.select(
        pl.when(padded.str.len_chars() == width).then(padded).otherwise(None).alias(series.name)
    ).to_series()


def zip5(series: pl.Series) -> pl.Series:
    """ZIP codes as 5-character strings: ``2134`` and ``"02134-1234"`` both give ``"02134"``.

    >>> zip5(pl.Series("z", [2134, 10027, None])).to_list()
    ['02134', '10027', None]
    """
    return _digits_key(series, 5, "ZIP")


def pincode6(series: pl.Series) -> pl.Series:
    """India PIN codes as 6-character strings."""
    return _digits_key(series, 6, "PIN")


# States are keyed by their 2011 boundaries (the census and SECC year): later splits map to their parent.
_STATE_RENAMES = {
    "orissa": "odisha",
    "pondicherry": "puducherry",
    "nctofdelhi": "delhi",
    "uttaranchal": "uttarakhand",
    "telangana": "andhrapradesh",
    "ladakh": "jammuandkashmir",
    "tamilnadu": "tamilnadu",
}
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


def state_key(name: str | None) -> str | None:
    """Canonical state key: lower case letters only, '&' read as 'and', 2011 boundaries.

    >>> [state_key(s) for s in ["Tamil Nadu", "tamilnadu", "ORISSA", "Jammu & Kashmir", "Telangana"]]
    ['tamilnadu', 'tamilnadu', 'odisha', 'jammuandkashmir', 'andhrapradesh']
    """
    if name is None:
        return None
    key = "".join(ch for ch in name.lower().replace("&", "and") if ch.isalpha())
    return _STATE_RENAMES.get(key, key) or None


def state_key_expr(column: str | pl.Expr) -> pl.Expr:
    """:func:`state_key` as a Polars expression."""
    expr = pl.col(column) if isinstance(column, str) else column
    key = expr.cast(pl.String).str.to_lowercase().str.replace_all("&", "and").str.replace_all(r"[^a-z]", "")
    return key.replace(_STATE_RENAMES).replace("", None)


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


# Current (India Post) district names -> the 2011 census district they are, or were carved from, as keys.
# Renames first, then new districts mapped to their 2011 parent where the split is well known.
KNOWN_DISTRICT_RENAMES: dict[str, str] = {
    "gurugram": "gurgaon",
    "nuh": "mewat",
    "prayagraj": "allahabad",
    "ayodhya": "faizabad",
    "kasganj": "kanshiramnagar",
    "amroha": "jyotibaphulenagar",
    "hathras": "mahamayanagar",
    "bhadohi": "santravidasnagar",
    "amethi": "sultanpur",
    "shamli": "muzaffarnagar",
    "sambhal": "moradabad",
    "hapur": "ghaziabad",
    "mysuru": "mysore",
    "mysore": "mysore",
    "bengaluru": "bangalore",
    "bengaluruurban": "bangalore",
    "bangalorerural": "bangalorerural",
    "bengalururural": "bangalorerural",
    "belagavi": "belgaum",
    "ballari": "bellary",
    "vijayapura": "bijapur",
    "kalaburagi": "gulbarga",
    "shivamogga": "shimoga",
    "tumakuru": "tumkur",
    "chikkamagaluru": "chikmagalur",
    "mangaluru": "dakshinakannada",
    "kanchipuram": "kancheepuram",
    "tuticorin": "thoothukkudi",
    "thoothukudi": "thoothukkudi",
    "villupuram": "viluppuram",
    "nilgiris": "thenilgiris",
    "kallakurichi": "viluppuram",
    "chengalpattu": "kancheepuram",
    "tenkasi": "tirunelveli",
    "tirupathur": "vellore",
    "ranipet": "vellore",
    "mayiladuthurai": "nagapattinam",
    "ysrkadapa": "ysr",
    "kadapa": "ysr",
    "cuddapah": "ysr",
    "nellore": "sripottisriramulunellore",
    "spsrnellore": "sripottisriramulunellore",
    "ananthapur": "anantapur",
    "ananthapuramu": "anantapur",
    "rangareddy": "rangareddy",
    "rangareddi": "rangareddy",
    "hanumakonda": "warangal",
    "medchalmalkajgiri": "rangareddy",
    "medchal": "rangareddy",
    "vikarabad": "rangareddy",
    "sangareddy": "medak",
    "siddipet": "medak",
    "kamareddy": "nizamabad",
    "mahabubabad": "warangal",
    "jangaon": "warangal",
    "jangoan": "warangal",
    "mulugu": "warangal",
    "jayashankarbhupalapally": "warangal",
    "jayashankarbhupalpally": "warangal",
    "mancherial": "adilabad",
    "nirmal": "adilabad",
    "kumurambheemasifabad": "adilabad",
    "peddapalli": "karimnagar",
    "jagtial": "karimnagar",
    "jagitial": "karimnagar",
    "narayanpet": "mahbubnagar",
    "rajannasircilla": "karimnagar",
    "suryapet": "nalgonda",
    "yadadribhuvanagiri": "nalgonda",
    "wanaparthy": "mahbubnagar",
    "nagarkurnool": "mahbubnagar",
    "jogulambagadwal": "mahbubnagar",
    "mahabubnagar": "mahbubnagar",
    "bhadradrikothagudem": "khammam",
    "sasnagar": "sahibzadaajitsinghnagar",
    "mohali": "sahibzadaajitsinghnagar",
    "nawanshahr": "shahidbhagatsinghnagar",
    "ropar": "rupnagar",
    "fazilka": "firozpur",
    "pathankot": "gurdaspur",
    "palghar": "thane",
    "raigarh": "raigarh",
    "ahmednagar": "ahmadnagar",
    "beed": "bid",
    "gondia": "gondiya",
    "buldhana": "buldana",
    "mumbaisuburban": "mumbaisuburban",
    "panchmahal": "panchmahals",
    "dahod": "dohad",
    "kutch": "kachchh",
    "ahmedabad": "ahmadabad",
    "banaskantha": "banaskantha",
    "sabarkantha": "sabarkantha",
    "aravalli": "sabarkantha",
    "arvalli": "sabarkantha",
    "mahisagar": "panchmahals",
    "botad": "bhavnagar",
    "devbhoomidwarka": "jamnagar",
    "devbhumidwarka": "jamnagar",
    "girsomnath": "junagadh",
    "morbi": "rajkot",
    "chhotaudepur": "vadodara",
    "east": "east",
    "northwest": "northwest",
    "balasore": "baleshwar",
    "baleswar": "baleshwar",
    "bolangir": "balangir",
    "sonepur": "subarnapur",
    "keonjhar": "kendujhar",
    "angul": "anugul",
    "boudh": "baudh",
    "deogarh": "debagarh",
    "jajpur": "jajapur",
    "jagatsinghapur": "jagatsinghapur",
    "nabarangpur": "nabarangapur",
    "khurda": "khordha",
    "sundergarh": "sundargarh",
    "purbabardhaman": "barddhaman",
    "paschimbardhaman": "barddhaman",
    "bardhaman": "barddhaman",
    "burdwan": "barddhaman",
    "hooghly": "hugli",
    "howrah": "haora",
    "darjeeling": "darjiling",
    "kalimpong": "darjiling",
    "jhargram": "paschimmedinipur",
    "alipurduar": "jalpaiguri",
    "coochbehar": "kochbihar",
    "cooch": "kochbihar",
    "maldah": "maldah",
    "malda": "maldah",
    "paraganassouth": "southtwentyfourparganas",
    "paraganasnorth": "northtwentyfourparganas",
    "dinajpurdakshin": "dakshindinajpur",
    "dinajpuruttar": "uttardinajpur",
    "purulia": "puruliya",
    "kamrupmetro": "kamrupmetropolitan",
    "southsalmaramankachar": "dhubri",
    "biswanath": "sonitpur",
    "charaideo": "sivasagar",
    "sibsagar": "sivasagar",
    "hojai": "nagaon",
    "westkarbianglong": "karbianglong",
    "majuli": "jorhat",
    "marigaon": "morigaon",
    "arwal": "arwal",
    "purnia": "purnia",
    "kaimurbhabua": "kaimur",
    "eastchamparan": "purbachamparan",
    "westchamparan": "pashchimchamparan",
    "khunti": "khunti",
    "ramgarh": "ramgarh",
    "saraikelakharsawan": "saraikelakharsawan",
    "eastsinghbhum": "purbisinghbhum",
    "eastsinghbum": "purbisinghbhum",
    "westsinghbhum": "pashchimisinghbhum",
    "koderma": "kodarma",
    "palamau": "palamu",
    "sahebganj": "sahibganj",
    "narsinghpur": "narsimhapur",
    "agarmalwa": "shajapur",
    "niwari": "tikamgarh",
    "kanker": "uttarbastarkanker",
    "dantewada": "dakshinbastardantewada",
    "kawardha": "kabeerdham",
    "kabirdham": "kabeerdham",
    "janjgirchampa": "janjgirchampa",
    "balodabazar": "raipur",
    "gariaband": "raipur",
    "gariyaband": "raipur",
    "balod": "durg",
    "bemetara": "durg",
    "mungeli": "bilaspur",
    "surajpur": "surguja",
    "balrampur": "surguja",
    "kondagaon": "bastar",
    "sukma": "dakshinbastardantewada",
    "gaurelapendramarwahi": "bilaspur",
    "gaurellapendramarwahi": "bilaspur",
    "haridwar": "hardwar",
    "udhamsinghnagar": "udhamsinghnagar",
    "charkhidadri": "bhiwani",
    "charkidadri": "bhiwani",
    "leh": "leh",
    "lehladakh": "leh",
    "shopian": "shupiyan",
    "baramulla": "baramula",
    "bandipora": "bandipore",
    "poonch": "punch",
    "lahulspiti": "lahulandspiti",
    "lahaulspiti": "lahulandspiti",
    "lahaulandspiti": "lahulandspiti",
    "dangs": "thedangs",
    "dang": "thedangs",
    "kamrup": "kamrup",
    "ribhoi": "ribhoi",
    "pondicherry": "puducherry",
    "kanyakumari": "kanniyakumari",
    "sivaganga": "sivaganga",
    "tiruvallur": "thiruvallur",
    "tiruvarur": "thiruvarur",
    "tiruchirappalli": "tiruchirappalli",
    "trichy": "tiruchirappalli",
    "kasargod": "kasaragod",
    "ernakulam": "ernakulam",
    "alleppey": "alappuzha",
    "calicut": "kozhikode",
    "trivandrum": "thiruvananthapuram",
    "palghat": "palakkad",
    "quilon": "kollam",
    "cannanore": "kannur",
    "trichur": "thrissur",
    # Andhra Pradesh's 2022 districts -> the 2011 district most of each came from.
    "allurisitharamaraju": "visakhapatnam",
    "anakapalli": "visakhapatnam",
    "annamayya": "ysr",
    "bapatla": "guntur",
    "palnadu": "guntur",
    "eluru": "westgodavari",
    "kakinada": "eastgodavari",
    "konaseema": "eastgodavari",
    "nandyal": "kurnool",
    "ntr": "krishna",
    "parvathipurammanyam": "vizianagaram",
    "srisathyasai": "anantapur",
    "tirupati": "chittoor",
    # North-east: districts created after 2011.
    "bajali": "barpeta",
    "southsalmaramancachar": "dhubri",
    "eastjaintiahills": "jaintiahills",
    "westjaintiahills": "jaintiahills",
    "northgarohills": "eastgarohills",
    "southwestgarohills": "westgarohills",
    "southwestkhasihills": "westkhasihills",
    "gomati": "southtripura",
    "sepahijala": "westtripura",
    "khowai": "westtripura",
    "unakoti": "northtripura",
    "jiribam": "imphaleast",
    "kakching": "thoubal",
    "kamjong": "ukhrul",
    "kangpokpi": "senapati",
    "noney": "tamenglong",
    "pherzawl": "churachandpur",
    "tengnoupal": "chandel",
    "kamle": "lowersubansiri",
    "kradaadi": "kurungkumey",
    "leparada": "westsiang",
    "lowersiang": "westsiang",
    "shiyomi": "westsiang",
    "siang": "westsiang",
    "longding": "tirap",
    "namsai": "lohit",
    "pakkekessang": "eastkameng",
    "hnahthial": "lunglei",
    "khawzawl": "champhai",
    "saitual": "aizawl",
    "noklak": "tuensang",
    "pakyong": "east",
    "soreng": "west",
    # Elsewhere: spellings and post-2011 splits.
    "medinipureast": "purbamedinipur",
    "purbichamparan": "purbachamparan",
    "medinipurwest": "paschimmedinipur",
    "budgam": "badgam",
    "chittorgarh": "chittaurgarh",
    "dholpur": "dhaulpur",
    "eastnimar": "khandwa",
    "westnimar": "khargone",
    "korea": "koriya",
    "malerkotla": "sangrur",
    "srimuktsarsahib": "muktsar",
    "raigad": "raigarh",
    "paurigarhwal": "garhwal",
    "vijaynagar": "bellary",
    "vijayanagara": "bellary",
    "southeast": "south",
    "shahdara": "east",
    "southandamans": "southandaman",
}


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
    census_keys = census.select(
        pl.col("District code").alias("district_code"),
        pl.col("State name").map_elements(state_key, return_dtype=pl.String).alias("census_state"),
        pl.col("District name").map_elements(district_key, return_dtype=pl.String).alias("census_key"),
    )
    by_state: dict[str, dict[str, int]] = {}
    for code, state, key in census_keys.iter_rows():
        by_state.setdefault(state, {})[key] = code

    names = pincodes.select("district", "state").unique()
    matches: list[tuple[str, str, int | None, str]] = []
    for district, state in names.iter_rows():
        skey = state_key(state)
        states = _STATE_SPLITS.get(skey or "", (skey,))
        candidates = {k: c for s in states for k, c in by_state.get(s or "", {}).items()}
        code, how = _match_district(district_key(district), candidates, fuzzy_cutoff)
        matches.append((district, state, code, how))
    match_frame = pl.DataFrame(
        matches,
        schema={"district": pl.String, "state": pl.String, "district_code": pl.Int64, "match": pl.String},
        orient="row",
    )
    crosswalk = pincodes.join(match_frame, on=["district", "state"], how="left").select(
        "pincode", "district", "state", "district_code", "match"
    )
    per_pin = crosswalk.group_by("pincode").agg(
        pl.col("district_code").is_not_null().all().alias("all_matched"),
        pl.col("district_code").is_not_null().any().alias("any_matched"),
    )
    coverage = {
        "pincodes": per_pin.height,
        "pincodes_reaching_a_census_district": int(per_pin["any_matched"].sum()),
        "pincodes_fully_matched": int(per_pin["all_matched"].sum()),
        "post_district_names": match_frame.height,
        "post_district_names_by_match": dict(match_frame.group_by("match").len().sort("match").iter_rows()),
        "census_districts": census.height,
        "census_districts_reached": crosswalk["district_code"].drop_nulls().n_unique(),
        "unmatched_district_names": sorted(f"{d} ({s})" for d, s, c, _ in matches if c is None),
    }
    return crosswalk, coverage


def _match_district(key: str, candidates: Mapping[str, int], cutoff: float) -> tuple[int | None, str]:
    if not key or not candidates:
        return None, "unmatched"
    if key in candidates:
        return candidates[key], "exact"
    renamed = KNOWN_DISTRICT_RENAMES.get(key)
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


# ------------------------------------------------------------------------------------------- factor tables
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


# ------------------------------------------------------------------------------------------- weighting
PERSON, GROUP, PROBABILITY, FALLBACK = "person", "grp", "probability", "fallback"


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


def expand_probabilistic(
    frame: pl.DataFrame,
    posterior: pl.DataFrame,
    *,
    attribute: str,
    weight_column: str,
    labels: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """One row per (person, inferred group) with weight = P(group | ...) (times any existing weight).

    ``frame``'s rows are the people in order (person i is row i). Zero-probability rows are dropped: they
    add nothing to any count.
    """
    probs = posterior.filter(pl.col(PROBABILITY) > 0).select(
        PERSON, pl.col(GROUP).replace(dict(labels or {})).alias(attribute), PROBABILITY
    )
    base = frame.drop(attribute, strict=False).with_row_index(PERSON)
    rows = base.join(probs, on=PERSON, how="inner").sort(PERSON, maintain_order=True)
    if weight_column in frame.columns:
        weight = pl.col(weight_column).cast(pl.Float64) * pl.col(PROBABILITY)
    else:
        weight = pl.col(PROBABILITY)
    return rows.with_columns(weight.alias(weight_column)).drop(PERSON, PROBABILITY)


def assign_most_likely(
    frame: pl.DataFrame,
    posterior: pl.DataFrame,
    *,
    attribute: str,
    confidence_cut: float,
    unknown_label: str | None,
    labels: Mapping[str, str] | None = None,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Hard assignment: the most likely group when its probability reaches ``confidence_cut``.

    Below the cut a person gets ``unknown_label``, or is left out when ``unknown_label`` is None. Returns the
    rows and the counts (assigned, below_cut, excluded).
    """
    best = most_likely(posterior)
    confident = best["max_probability"] >= confidence_cut - 1e-12
    group = best["most_likely"].replace(dict(labels or {}))
    assigned = pl.select(
        pl.when(confident).then(group).otherwise(pl.lit(unknown_label, dtype=pl.String)).alias(attribute)
    ).to_series()
    rows = frame.drop(attribute, strict=False).with_row_index(PERSON)
    rows = rows.join(pl.DataFrame({PERSON: best[PERSON], attribute: assigned}), on=PERSON, how="left")
    n_below = int((~confident).sum())
    if unknown_label is None:
        rows = rows.filter(pl.col(attribute).is_not_null())
    counts = {
        "assigned": int(confident.sum()),
        "below_cut": n_below,
        "excluded": n_below if unknown_label is None else 0,
    }
    return rows.sort(PERSON).drop(PERSON), counts


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


# ------------------------------------------------------------------------------------------- proxy features
def _codes(series: pl.Series) -> tuple[np.ndarray, int]:
    """Integer codes 0..k-1 for a categorical series (null is a category of its own)."""
    text = series.cast(pl.String).fill_null("\x00null")
    codes = text.rank("dense").cast(pl.Int64).to_numpy() - 1
    return codes, int(codes.max()) + 1 if codes.size else 0


def _contingency(x: np.ndarray, kx: int, y: np.ndarray, ky: int) -> np.ndarray:
    return np.bincount(x * ky + y, minlength=kx * ky).reshape(kx, ky).astype(float)


def cramers_v(table: np.ndarray) -> float | None:
    """Cramer's V of a contingency table (no bias correction), as ``scipy.stats.contingency.association``.

    >>> cramers_v(np.array([[10, 0], [0, 10]]))
    1.0
    """
    table = np.asarray(table, dtype=float)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    n = table.sum()
    k = min(table.shape) - 1 if table.ndim == 2 and table.size else 0
    if n == 0 or k <= 0:
        return None
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return math.sqrt(min(1.0, chi2 / (n * k)))


def correlation_ratio(categories: np.ndarray, values: np.ndarray) -> float | None:
    """Correlation ratio eta: sqrt(between-category sum of squares / total sum of squares).

    >>> round(correlation_ratio(np.array([0, 0, 1, 1]), np.array([1.0, 1.0, 3.0, 3.0])), 6)
    1.0
    """
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(values)
    categories, values = np.asarray(categories)[ok], values[ok]
    if values.size == 0:
        return None
    total = float(((values - values.mean()) ** 2).sum())
    if total == 0:
        return None
    _, inverse = np.unique(categories, return_inverse=True)
    counts = np.bincount(inverse)
    means = np.bincount(inverse, weights=values) / counts
    between = float((counts * (means - values.mean()) ** 2).sum())
    return math.sqrt(min(1.0, between / total))


def mutual_information(table: np.ndarray) -> float:
    """Mutual information (nats) of a contingency table, as ``sklearn.metrics.mutual_info_score``."""
    table = np.asarray(table, dtype=float)
    n = table.sum()
    if n == 0:
        return 0.0
    pxy = table / n
    px, py = pxy.sum(axis=1, keepdims=True), pxy.sum(axis=0, keepdims=True)
    nz = pxy > 0
    return float(max(0.0, (pxy[nz] * np.log(pxy[nz] / (px @ py)[nz])).sum()))


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def predictive_check(
    x: np.ndarray, kx: int, y: np.ndarray, ky: int, *, folds: int = 5, seed: int = 0
) -> dict[str, float]:
    """Held-out balanced accuracy of predicting ``y`` from ``x`` alone with a per-value frequency classifier.

    Each fold is predicted from the other folds' counts: the class maximising P(value | class) (which is what
    maximises balanced accuracy); values never seen in training predict the majority class. The baseline is
    the majority-class predictor, whose balanced accuracy is 1/K. Memorising a high-cardinality feature
    (a PIN code with a handful of people each) gains nothing here, unlike in Cramer's V.
    """
    n = x.size
    fold = np.random.default_rng(seed).permutation(n) % folds
    predicted = np.empty(n, dtype=np.int64)
    for f in range(folds):
        train, test = fold != f, fold == f
        counts = _contingency(x[train], kx, y[train], ky)
        class_totals = counts.sum(axis=0)
        majority = int(np.argmax(class_totals))
        likelihood = counts / np.where(class_totals > 0, class_totals, 1.0)
        best = np.argmax(likelihood, axis=1)
        seen = counts.sum(axis=1) > 0
        best[~seen] = majority
        predicted[test] = best[x[test]]
    recalls = [float((predicted[y == k] == k).mean()) for k in range(ky) if (y == k).any()]
    present = len(recalls)
    return {
        "balanced_accuracy": float(np.mean(recalls)) if recalls else float("nan"),
        "baseline_balanced_accuracy": 1.0 / present if present else float("nan"),
    }


def _is_numeric(series: pl.Series, bins: int) -> bool:
    return series.dtype.is_numeric() and not series.dtype == pl.Boolean and series.n_unique() > bins


def _quantile_bins(series: pl.Series, bins: int) -> np.ndarray:
    values = series.cast(pl.Float64).to_numpy()
    finite = values[np.isfinite(values)]
    edges = np.unique(np.quantile(finite, np.linspace(0, 1, bins + 1)[1:-1])) if finite.size else np.array([])
    codes = np.searchsorted(edges, values, side="right")
    codes[~np.isfinite(values)] = edges.size + 1  # missing values: their own bin
    return codes


def proxy_feature_strength(
    features: pl.DataFrame,
    attributes: pl.DataFrame,
    *,
    cramers_v_threshold: float = 0.3,
    correlation_ratio_threshold: float = 0.3,
    min_balanced_accuracy_lift: float = 0.05,
    folds: int = 5,
    numeric_bins: int = 10,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """How strongly each model input predicts each sensitive attribute, with a flag for strong proxies.

    Categorical features (text, booleans, numbers with at most ``numeric_bins`` distinct values) get Cramer's
    V; numeric ones the correlation ratio, and are cut into ``numeric_bins`` quantile bins for the mutual
    information and the predictive check. A feature is flagged when its association reaches the threshold
    AND its held-out balanced accuracy beats the majority baseline by ``min_balanced_accuracy_lift``:
    association alone overstates high-cardinality features, prediction alone ignores effect size.
    Rows whose attribute is null are left out of that attribute's measures.
    """
    if features.height != attributes.height:
        raise DataError(
            f"features ({features.height} rows) and attributes ({attributes.height} rows) must describe the "
            "same people in the same order"
        )
    out: list[dict[str, Any]] = []
    for attribute in attributes.columns:
        keep = attributes[attribute].is_not_null()
        y, ky = _codes(attributes[attribute].filter(keep))
        h_y = _entropy(np.bincount(y).astype(float)) if y.size else 0.0
        for feature in features.columns:
            column = features[feature].filter(keep)
            numeric = _is_numeric(column, numeric_bins)
            if numeric:
                x = _quantile_bins(column, numeric_bins)
                kx = int(x.max()) + 1 if x.size else 0
                strength = correlation_ratio(y, column.cast(pl.Float64).to_numpy())
                measure, threshold = "correlation_ratio", correlation_ratio_threshold
            else:
                x, kx = _codes(column)
                strength = cramers_v(_contingency(x, kx, y, ky)) if y.size else None
                measure, threshold = "cramers_v", cramers_v_threshold
            table = _contingency(x, kx, y, ky) if y.size else np.zeros((1, 1))
            mi = mutual_information(table)
            check = (
                predictive_check(x, kx, y, ky, folds=folds, seed=seed)
                if y.size
                else {"balanced_accuracy": float("nan"), "baseline_balanced_accuracy": float("nan")}
            )
            lift = check["balanced_accuracy"] - check["baseline_balanced_accuracy"]
            out.append(
                {
                    "feature": feature,
                    "attribute": attribute,
                    "kind": "numeric" if numeric else "categorical",
                    "measure": measure,
                    "value": strength,
                    "cramers_v": None if numeric else strength,
                    "correlation_ratio": strength if numeric else None,
                    "mutual_information": mi,
                    "normalized_mutual_information": mi / h_y if h_y > 0 else None,
                    "balanced_accuracy": _finite_or_none(check["balanced_accuracy"]),
                    "baseline_balanced_accuracy": _finite_or_none(check["baseline_balanced_accuracy"]),
                    "balanced_accuracy_lift": _finite_or_none(lift),
                    "threshold": threshold,
                    "n": int(y.size),
                    "flag": bool(
                        strength is not None
                        and strength >= threshold
                        and math.isfinite(lift)
                        and lift >= min_balanced_accuracy_lift
                    ),
                }
            )
    return out


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


# ------------------------------------------------------------------------------------------- stale attributes
def stale_attributes(collected_at: pl.Series, *, as_of: dt.date, max_age_days: int) -> dict[str, Any]:
    """Age of the sensitive attributes: flagged stale when the median collection date is older than allowed.

    The median (not the oldest record) decides, so a few old records do not flag a fresh dataset; the share
    of records older than ``max_age_days`` is reported beside it.
    """
    if collected_at.dtype == pl.String:
        dates = collected_at.str.to_date(strict=False)
    elif collected_at.dtype == pl.Date:
        dates = collected_at
    else:
        dates = collected_at.cast(pl.Date, strict=False)  # datetimes
    n_unparsed = dates.null_count() - collected_at.null_count()
    valid = dates.drop_nulls()
    if valid.len() == 0:
        return {
            "column": collected_at.name,
            "max_age_days": max_age_days,
            "n": 0,
            "stale": None,
            "n_unparsed": n_unparsed,
        }
    days = [d for d in valid.to_list() if isinstance(d, dt.date)]
    ages = np.array([(as_of - d).days for d in days])
    median_age = float(np.median(ages))
    return {
        "column": collected_at.name,
        "as_of": as_of.isoformat(),
        "max_age_days": max_age_days,
        "n": int(valid.len()),
        "n_unparsed": n_unparsed,
        "oldest": min(days).isoformat(),
        "newest": max(days).isoformat(),
        "median_age_days": median_age,
        "n_older_than_max": int((ages > max_age_days).sum()),
        "share_older_than_max": float((ages > max_age_days).mean()),
        "stale": median_age > max_age_days,
    }
