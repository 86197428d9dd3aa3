"""Bench: render the HTML and PDF report of an audit with 300 intersectional subgroups.

The report reads only the audit result document, so its cost depends on the number of groups and slicings,
never on the row count; the document here is synthetic (tests/report/report_docgen.py) with attributes of
10 x 6 x 5 values, audited as singles, pairs and the triple (300 subgroups in the triple alone).

    .venv/bin/python bench/report_render.py [--repeat 3] [--out bench/out]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "report")]

from report_docgen import synthetic_doc  # noqa: E402

from fairgate.report import build_view  # noqa: E402
from tasks.outputs import write_atomic  # noqa: E402
from tasks.render.report import html_to_pdf, render_charts, render_html  # noqa: E402

ATTRIBUTES = {
    "race": [f"race_{i}" for i in range(10)],
    "age_band": [f"age_{i}" for i in range(6)],
    "region": [f"region_{i}" for i in range(5)],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=10_000_000, help="n_rows stated in the document")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args()

    doc = synthetic_doc(ATTRIBUTES, pairs=True, triples=True, n_rows=args.rows, seed=7)
    intersections = sum(1 for g in doc["groups"] if len(g["slicing"]) > 1)
    triple = sum(1 for g in doc["groups"] if len(g["slicing"]) == 3)
    print(
        f"document: {len(doc['groups'])} groups ({intersections} intersectional, {triple} in the triple), "
        f"{len(doc['results'])} results, n_rows={args.rows:,}"
    )
    html_to_pdf("<p>warm-up</p>")  # fonts and WeasyPrint start-up are paid once per process

    stages: dict[str, list[float]] = {}
    pdf = b""
    for _ in range(args.repeat):
        clock: list[tuple[str, float, float]] = [("start", time.perf_counter(), time.process_time())]
        view = build_view(doc)
        clock.append(("view", time.perf_counter(), time.process_time()))
        charts = render_charts(view)
        clock.append(("charts", time.perf_counter(), time.process_time()))
        html = render_html(view, charts, full_tables=False)  # the PDF's variant
        clock.append(("html", time.perf_counter(), time.process_time()))
        pdf = html_to_pdf(html)
        clock.append(("pdf", time.perf_counter(), time.process_time()))
        for (_, wall0, cpu0), (name, wall1, cpu1) in itertools.pairwise(clock):
            stages.setdefault(name, []).append(wall1 - wall0)
            stages.setdefault(f"{name} cpu", []).append(cpu1 - cpu0)
        stages.setdefault("total", []).append(clock[-1][1] - clock[0][1])
        stages.setdefault("total cpu", []).append(clock[-1][2] - clock[0][2])
    path = write_atomic(args.out / "report_300_subgroups.pdf", pdf)
    for name, values in stages.items():
        print(f"{name:>12}: median {statistics.median(values):6.2f} s  (min {min(values):.2f}, n={len(values)})")
    print(f"pdf: {len(pdf) / 1024:.0f} KiB -> {path}")


if __name__ == "__main__":
    main()
