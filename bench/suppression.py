"""Bench: complementary small-cell suppression on the COMPAS demo audit and on the report bench's document.

COMPAS (7,214 people; race, sex, age_cat, their pairs and the triple: 75 groups) is what ``fairgate demo``
reports: the suppression there runs over the sizes and each group's TP, FP, TN, FN jointly (exact rank tests by
SVD, then one non-negativity bound per small hidden cell on a warm-started HiGHS model). It prints the CPU and
wall time of the sizes alone and of sizes with counts (what every report builds), and how many groups each hides.

The synthetic document (461 groups, 10 x 6 x 5 values, bench/report_render.py's) has sizes only and its tables
are not sums of one another, so it times the rank tests alone: fewer stated rows make more small cells.

    .venv/bin/python bench/suppression.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "report"))

from conftest import compas_frame, demo_policy  # noqa: E402
from report_docgen import synthetic_document  # noqa: E402

import fairgate  # noqa: E402
from fairgate.document import AuditDocument  # noqa: E402
from fairgate.report.suppress import Suppression  # noqa: E402

ATTRIBUTES = {
    "race": [f"race_{i}" for i in range(10)],
    "age_band": [f"age_{i}" for i in range(6)],
    "region": [f"region_{i}" for i in range(5)],
}


def timed(run: Callable[[], Suppression], repeat: int) -> tuple[Suppression, list[float], list[float]]:
    """The last suppression, and the CPU and wall seconds of each run."""
    cpu, wall, out = [], [], None
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        out = run()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    assert out is not None
    return out, cpu, wall


def compas(repeat: int, k: int) -> None:
    model = fairgate.ModelInfo(name="compas", version="bench")
    result = fairgate.audit(compas_frame(), demo_policy(), model=model, run_id="bench")
    doc = AuditDocument.model_validate(json.loads(result.to_json()))
    n_groups = sum(1 for g in doc.groups if g.slicing)
    runs = {
        "sizes only      ": lambda: Suppression.of(doc.groups, k, doc.n_rows),
        "sizes and counts": lambda: Suppression.of_document(doc, k),
    }
    for label, run in runs.items():
        s, cpu, wall = timed(run, repeat)
        n_size = sum(len(v) for v in s.size_hidden.values())
        print(
            f"COMPAS {label}: {n_groups} groups, {s.n_hidden:>2} with rates withheld ({n_size} sizes); "
            f"CPU median {statistics.median(cpu):.3f} s (min {min(cpu):.3f}), "
            f"wall median {statistics.median(wall):.3f} s, n={repeat}"
        )


def synthetic(repeat: int, k: int) -> None:
    for n_rows in (10_000_000, 20_000, 3_000):
        doc = synthetic_document(ATTRIBUTES, pairs=True, triples=True, n_rows=n_rows, seed=7)
        small = sum(1 for g in doc.groups if g.n is not None and 0 < g.n < k)

        def run(doc: Any = doc) -> Suppression:
            return Suppression.of(doc.groups, k, doc.n_rows)

        s, cpu, wall = timed(run, repeat)
        print(
            f"synthetic n_rows={n_rows:>10,}: {len(doc.groups)} groups, {small:>3} under {k}, "
            f"{s.n_hidden:>3} suppressed; CPU median {statistics.median(cpu):.3f} s, "
            f"wall median {statistics.median(wall):.3f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--min-cell-size", type=int, default=10)
    args = parser.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load average: {' '.join(f.read().split()[:3])}")
    compas(args.repeat, args.min_cell_size)
    synthetic(args.repeat, args.min_cell_size)


if __name__ == "__main__":
    main()
