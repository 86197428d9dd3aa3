"""India variant: P(SC/ST/Other | surname, state) x P(district | group), from SECC and the 2011 census."""

from __future__ import annotations

import polars as pl
import pytest

from fairgate import proxy as fp
from fairgate.policy.proxy import ProxyConfig
from fairgate.proxy import reconcile_districts
from tasks.inputs import proxy as tp

GROUPS = ["sc", "st", "other"]
INDIA = ProxyConfig(method="india", columns={"surname": "surname", "pincode": "pin", "state": "state"})


@pytest.fixture(scope="module")
def census(data_dir):  # type: ignore[no-untyped-def]
    frame = pl.read_csv(data_dir / "india" / "india-districts-census-2011.csv")
    return frame.select(
        pl.col("State name").alias("state"),
        pl.col("District name").alias("district"),
        pl.col("SC").cast(pl.Float64).alias("sc"),
        pl.col("ST").cast(pl.Float64).alias("st"),
        (pl.col("Population") - pl.col("SC") - pl.col("ST")).cast(pl.Float64).alias("other"),
    )


@pytest.fixture(scope="module")
def secc(data_dir):  # type: ignore[no-untyped-def]
    return pl.read_parquet(data_dir / "india" / "secc_surname_composition.parquet").with_columns(
        pl.col("state").cast(pl.String)
    )


def surname_share(secc: pl.DataFrame, state: str, surname: str) -> dict[str, float]:
    row = (
        secc.filter((pl.col("state") == state) & (pl.col("last_name") == surname))
        .select(
            pl.col("n_sc").sum().alias("sc"),
            pl.col("n_st").sum().alias("st"),
            pl.col("n_other").sum().alias("other"),
        )
        .row(0, named=True)
    )
    total = sum(row.values())
    return {g: row[g] / total for g in GROUPS}


def district_given_group(census: pl.DataFrame, state: str, district: str) -> dict[str, float]:
    in_state = census.filter(pl.col("state") == state)
    row = in_state.filter(pl.col("district") == district).row(0, named=True)
    return {g: row[g] / in_state[g].sum() for g in GROUPS}


def normalised(values: dict[str, float]) -> dict[str, float]:
    total = sum(values.values())
    return {g: v / total for g, v in values.items()}


@pytest.mark.parametrize(
    ("surname", "state", "pin", "secc_state", "census_state", "district"),
    [
        ("Paswan", "Bihar", "800001", "bihar", "BIHAR", "Patna"),
        ("MEENA", "Rajasthan", "302001", "rajasthan", "RAJASTHAN", "Jaipur"),
        ("das", "Assam", "781001", "assam", "ASSAM", "Kamrup Metropolitan"),  # post name 'Kamrup Metro'
        ("Kumar", "Tamil Nadu", "600001", "tamilnadu", "TAMIL NADU", "Chennai"),
    ],
)
def test_india_posterior_equals_hand_computation(  # type: ignore[no-untyped-def]
    secc, census, surname, state, pin, secc_state, census_state, district
) -> None:
    people = pl.DataFrame({"surname": [surname], "pin": [pin], "state": [state]})
    posterior, tables = tp.infer_posterior(people, INDIA)
    row = fp.wide_posterior(posterior, tables.groups).row(0, named=True)
    by_surname = surname_share(secc, secc_state, surname.lower())
    by_district = district_given_group(census, census_state, district)
    expected = normalised({g: by_surname[g] * by_district[g] for g in GROUPS})
    assert row["fallback"] == "surname_geography"
    for g in GROUPS:
        assert row[g] == pytest.approx(expected[g], abs=1e-12)


def test_paswan_in_patna_is_mostly_sc() -> None:
    people = pl.DataFrame({"surname": ["Paswan"], "pin": [800001], "state": ["Bihar"]})
    posterior, tables = tp.infer_posterior(people, INDIA)
    assert fp.wide_posterior(posterior, tables.groups).row(0, named=True)["sc"] > 0.85


def test_india_fallbacks(census, secc) -> None:  # type: ignore[no-untyped-def]
    people = pl.DataFrame(
        {
            "surname": ["Qxzvbn", "Paswan", "Qxzvbn", "Paswan", "Paswan"],
            "pin": ["800001", None, None, "800001", "800001"],
            "state": ["Bihar", "Bihar", "Bihar", None, "Bihar"],  # the 4th one's state comes from its PIN
        }
    )
    posterior, tables = tp.infer_posterior(people, INDIA)
    wide = fp.wide_posterior(posterior, tables.groups)
    assert wide["fallback"].to_list() == [
        "geography_only",
        "surname_only",
        "prior",
        "surname_geography",
        "surname_geography",
    ]
    # geography only: P(g | district) is the district's own composition
    patna = census.filter(pl.col("district") == "Patna").row(0, named=True)
    expected = normalised({g: patna[g] for g in GROUPS})
    assert wide.row(0, named=True)["sc"] == pytest.approx(expected["sc"], abs=1e-12)
    # surname only: the SECC share in the state
    assert wide.row(1, named=True)["sc"] == pytest.approx(surname_share(secc, "bihar", "paswan")["sc"], abs=1e-12)
    # prior: the state's 2011 shares
    bihar = census.filter(pl.col("state") == "BIHAR").select(pl.col(GROUPS).sum()).row(0, named=True)
    assert wide.row(2, named=True)["st"] == pytest.approx(normalised(bihar)["st"], abs=1e-12)
    assert wide.row(3, named=True)["sc"] == pytest.approx(wide.row(4, named=True)["sc"], abs=1e-15)


def test_district_reconciliation_coverage_and_care(data_dir) -> None:  # type: ignore[no-untyped-def]
    pincodes = pl.read_csv(data_dir / "india" / "pincode_district.csv", infer_schema=False)
    census = pl.read_csv(data_dir / "india" / "india-districts-census-2011.csv")
    crosswalk, coverage = reconcile_districts(pincodes, census)
    assert coverage["pincodes"] == pincodes["pincode"].n_unique()
    assert coverage["pincodes_reaching_a_census_district"] / coverage["pincodes"] > 0.99
    assert coverage["census_districts_reached"] == 640
    # The only names left unmatched are the source's 'NA' placeholders.
    assert all(name.startswith("Na (") for name in coverage["unmatched_district_names"])

    def census_name(district: str, state: str) -> str:
        code = crosswalk.filter((pl.col("district") == district) & (pl.col("state") == state))["district_code"][0]
        return census.filter(pl.col("District code") == code)["District name"][0]

    assert census_name("Gurugram", "Haryana") == "Gurgaon"  # renamed
    assert census_name("Kamrup Metro", "Assam") == "Kamrup Metropolitan"
    assert census_name("South East", "Delhi") == "South"  # carved out of South; never fuzzy-matched to South West
    assert census_name("Medinipur West", "West Bengal") == "Paschim Medinipur"
    # State-scoped: Aurangabad exists in Bihar and in Maharashtra, and each maps within its own state.
    aurangabad = crosswalk.filter(pl.col("district") == "Aurangabad").select("state", "district_code").unique()
    codes = dict(aurangabad.iter_rows())
    assert len(set(codes.values())) == len(codes) >= 2
