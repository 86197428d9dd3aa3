"""Bench: complementary small-cell suppression on the report bench's document (461 groups, 10 x 6 x 5 values).

The suppression solves every slicing jointly (exact rank tests by SVD), so its cost grows with the number of
small cells, not with the row count. The document is the synthetic one of bench/report_render.py; fewer stated
rows make more small cells: at 10M rows none, at 20k rows a few (each needing a block of complements across the
triple and its margins), at 3k rows most of the triple.

    .venv/bin/python bench/suppression.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "report"))

from report_docgen import synthetic_document  # noqa: E402

from fairgate.report.suppress import Suppression  # noqa: E402

ATTRIBUTES = {
    "race": [f"race_{i}" for i in range(10)],
    "age_band": [f"age_{i}" for i in range(6)],
    "region": [f"region_{i}" for i in range(5)],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--min-cell-size", type=int, default=10)
    args = parser.parse_args()
    for n_rows in (10_000_000, 20_000, 3_000):
        doc = synthetic_document(ATTRIBUTES, pairs=True, triples=True, n_rows=n_rows, seed=7)
        small = sum(1 for g in doc.groups if g.n is not None and 0 < g.n < args.min_cell_size)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            suppression = Suppression.of(doc.groups, args.min_cell_size, doc.n_rows)
            times.append(time.perf_counter() - start)
        print(
            f"n_rows={n_rows:>10,}: {len(doc.groups)} groups, {small:>3} under {args.min_cell_size}, "
            f"{suppression.n_hidden:>3} suppressed; median {statistics.median(times):.3f} s "
            f"(min {min(times):.3f}, n={len(times)})"
        )


if __name__ == "__main__":
    main()
