"""Generate an audit's inputs at scale: N rows as K Parquet files per input, seeded, in bounded memory.

    python bench/scale_data.py --rows 100_000_000 --parts 20 --out /work/scale-data/100m

writes ``DIR/predictions/part-000.parquet`` (id, score, y_pred, timestamp over ``--days`` days),
``DIR/labels/part-000.parquet`` (id, y_true) and ``DIR/attributes/part-000.parquet`` (id, race, sex,
age_group, region), the same ids in part k of every input. Each part is written in chunks of ``--chunk`` rows
from its own seeded generator (seed, part), so the output does not depend on the chunk size or on which parts
are written, and no more than one chunk is ever in memory. A part already present with the expected row
count is kept (``--force`` rewrites), so a directory can be shared between benchmarks.

The data has group-dependent base rates and a model whose scores favour some groups, so the audit finds real
disparities; scores are continuous (AUC from the histogram then has a small, non-zero error bound).
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ATTRIBUTES: dict[str, tuple[list[str], list[float]]] = {
    "race": (["White", "Black", "Hispanic", "Asian", "Other"], [0.55, 0.2, 0.15, 0.07, 0.03]),
    "sex": (["Male", "Female"], [0.52, 0.48]),
    "age_group": (["18-25", "26-40", "41-60", "60+"], [0.18, 0.37, 0.32, 0.13]),
    "region": (["North", "South", "East", "West"], [0.3, 0.25, 0.25, 0.2]),
}
# Per-value shifts of the outcome's log-odds (the base rates differ by group) and of the score (model bias).
_OUTCOME_SHIFT = {"race": [0.0, 0.3, 0.2, -0.2, 0.1], "age_group": [0.4, 0.1, -0.1, -0.4]}
_SCORE_BIAS = {"race": [0.0, 0.25, 0.1, -0.1, 0.0], "sex": [0.0, -0.1]}
START = datetime(2026, 1, 1)


def _chunk(rng: np.random.Generator, first_id: int, n: int, days: int) -> dict[str, pa.Table]:
    """One chunk of ``n`` people (ids from ``first_id``): the three inputs' rows."""
    codes = {name: rng.choice(len(values), size=n, p=p).astype(np.int8) for name, (values, p) in ATTRIBUTES.items()}
    outcome = np.full(n, -0.3)
    bias = np.zeros(n)
    for name, shifts in _OUTCOME_SHIFT.items():
        outcome += np.asarray(shifts)[codes[name]]
    for name, shifts in _SCORE_BIAS.items():
        bias += np.asarray(shifts)[codes[name]]
    y_true = (rng.random(n) < 1.0 / (1.0 + np.exp(-outcome))).astype(np.int8)
    logit = 1.6 * (y_true - 0.5) + 0.6 * outcome + bias + rng.normal(0.0, 1.0, n)
    score = 1.0 / (1.0 + np.exp(-logit))
    y_pred = (score >= 0.5).astype(np.int8)
    ids = np.arange(first_id, first_id + n, dtype=np.int64)
    seconds = rng.integers(0, days * 86_400, size=n)
    timestamp = np.datetime64(START, "s") + seconds.astype("timedelta64[s]")
    attributes = {
        name: pa.DictionaryArray.from_arrays(pa.array(codes[name]), pa.array(values))
        for name, (values, _) in ATTRIBUTES.items()
    }
    return {
        "predictions": pa.table({"id": ids, "score": score, "y_pred": y_pred, "timestamp": timestamp}),
        "labels": pa.table({"id": ids, "y_true": y_true}),
        "attributes": pa.table({"id": ids, **attributes}),
    }


def write_part(out: Path, part: int, first_id: int, rows: int, *, seed: int, days: int, chunk: int) -> None:
    """Write part ``part`` of every input, chunk by chunk."""
    rng = np.random.default_rng([seed, part])
    writers: dict[str, pq.ParquetWriter] = {}
    try:
        for start in range(0, rows, chunk):
            tables = _chunk(rng, first_id + start, min(chunk, rows - start), days)
            for role, table in tables.items():
                if role not in writers:
                    (out / role).mkdir(parents=True, exist_ok=True)
                    writers[role] = pq.ParquetWriter(_part_path(out, role, part), table.schema, compression="zstd")
                writers[role].write_table(table, row_group_size=chunk)
    finally:
        for writer in writers.values():
            writer.close()


def _part_path(out: Path, role: str, part: int) -> Path:
    return out / role / f"part-{part:03d}.parquet"


def _complete(out: Path, part: int, rows: int) -> bool:
    paths = [_part_path(out, role, part) for role in ("predictions", "labels", "attributes")]
    return all(p.exists() and pq.ParquetFile(p).metadata.num_rows == rows for p in paths)


def generate(
    out: Path, rows: int, parts: int, *, seed: int = 0, days: int = 90, chunk: int = 1_000_000, force: bool = False
) -> dict[str, object]:
    """Write (or keep) the ``parts`` parts of ``rows`` rows in all; returns the manifest written beside them."""
    out.mkdir(parents=True, exist_ok=True)
    sizes = [rows // parts + (1 if k < rows % parts else 0) for k in range(parts)]
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for part, (size, first_id) in enumerate(zip(sizes, first, strict=True)):
        if not force and _complete(out, part, size):
            continue
        write_part(out, part, int(first_id), size, seed=seed, days=days, chunk=chunk)
    manifest: dict[str, object] = {
        "rows": rows,
        "parts": parts,
        "seed": seed,
        "days": days,
        "first_day": START.date().isoformat(),
        "last_day": (START + timedelta(days=days - 1)).date().isoformat(),
        "inputs": {role: str(out / role / "*.parquet") for role in ("predictions", "labels", "attributes")},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=lambda s: int(s.replace("_", "")), required=True)
    parser.add_argument("--parts", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--chunk", type=int, default=1_000_000)
    parser.add_argument("--force", action="store_true", help="rewrite parts that already exist")
    args = parser.parse_args()
    started = time.perf_counter()
    generate(args.out, args.rows, args.parts, seed=args.seed, days=args.days, chunk=args.chunk, force=args.force)
    print(
        f"{args.rows:,} rows in {args.parts} parts per input under {args.out} ({time.perf_counter() - started:.1f} s)"
    )


if __name__ == "__main__":
    main()
