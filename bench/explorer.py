"""Bench: the what-if explorer of a large audit (1,000 groups) in headless chromium: write, size, load, update.

Generated rows (seeded): one attribute with ``--groups`` values of skewed sizes and continuous scores, counted into
the binary cube with its score table as the audit does; the page data is built from the cube (cells of width 0.01,
suppression decided on the groups' sizes) and written as the pipeline writes it. Then, in Debian's chromium:
the load time (navigation to a laid-out page) and the time per threshold change (``setThreshold`` plus the
layout it causes), and the page size at 500 groups. The engine's audit itself is not timed (bench/scale_*.py).

    .venv/bin/python bench/explorer.py [--rows 10000000] [--groups 1000] [--changes 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import fairgate  # noqa: E402
from fairgate.engine.cube import build_cube  # noqa: E402
from fairgate.report.explorer import explorer_data  # noqa: E402
from tasks.render.explorer import render_explorer  # noqa: E402
from tests.report.explorer_browser import chromium  # noqa: E402


def generated_rows(rows: int, groups: int, seed: int = 0) -> pl.DataFrame:
    """Rows of ``groups`` segments (Zipf-like sizes), labels with segment-dependent base rates, logistic scores."""
    rng = np.random.default_rng(seed)
    sizes = 1.0 / np.arange(1, groups + 1) ** 0.6
    segment = rng.choice(groups, size=rows, p=sizes / sizes.sum())
    shift = rng.normal(0.0, 0.5, groups)[segment]
    y_true = (rng.random(rows) < 1.0 / (1.0 + np.exp(-shift))).astype(np.int8)
    score = 1.0 / (1.0 + np.exp(-(1.5 * (y_true - 0.5) + shift + rng.normal(0.0, 1.0, rows))))
    names = [f"segment_{i:04d}" for i in range(groups)]
    column = pl.Series("segment", names, dtype=pl.Enum(names)).gather(segment)  # codes, not 10M strings
    return pl.DataFrame([column, pl.Series("y_true", y_true), pl.Series("score", score)])


def policy_for(groups: int) -> fairgate.Policy:
    values = [f"segment_{i:04d}" for i in range(groups)]
    return fairgate.Policy.from_mapping(
        {
            "fairness_checker": {
                "sensitive_attributes": [{"name": "segment", "values": values}],
                "metrics": [
                    {"name": "demographic_parity_difference", "threshold": 0.1},
                    {"name": "disparate_impact_ratio", "threshold": 0.8},
                    {"name": "equal_opportunity_difference", "threshold": 0.1},
                    {"name": "equalized_odds_difference", "threshold": 0.1},
                ],
                "intersectional_analysis": {"enabled": False, "min_group_size": 30},
                "limits": {"max_values_per_attribute": max(groups, 100)},
            }
        },
        source="bench-explorer",
    )


def group_entries(cube: fairgate.Cube) -> list[dict[str, Any]]:
    """The document's group entries as the page needs them (slicing, group, n): the whole population and segments."""
    sizes = cube.cells.group_by("segment").agg(pl.col("__rows").sum()).sort("segment")
    entries: list[dict[str, Any]] = [{"slicing": [], "group": {}, "n": float(cube.n_rows), "sufficient": True}]
    for segment, n in sizes.iter_rows():
        entries.append({"slicing": ["segment"], "group": {"segment": segment}, "n": float(n), "sufficient": n >= 30})
    return [e | {"metrics": {}} for e in entries]


def write_page(rows: int, groups: int, out: Path) -> tuple[Path, dict[str, float]]:
    frame = generated_rows(rows, groups)
    policy = policy_for(groups)
    started = time.perf_counter()
    cube = build_cube(frame, policy, exact_auc=True)
    counted = time.perf_counter()
    data = explorer_data(cube, group_entries(cube), policy, min_cell_size=10)
    out.write_text(render_explorer(data, f"bench audit, {groups} groups"), encoding="utf-8")
    written = time.perf_counter()
    shown = len(data["slicings"][0]["groups"])
    return out, {"cube_s": counted - started, "page_s": written - counted, "shown": shown, "bytes": out.stat().st_size}


def browser_times(page_path: Path, changes: int) -> dict[str, float]:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        started = time.perf_counter()
        page.goto(page_path.as_uri(), wait_until="load")
        page.evaluate("document.body.offsetHeight")  # layout done
        wall = time.perf_counter() - started
        navigation = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
        per_change = page.evaluate(
            """([n]) => {
                const s = fairgateExplorer.slicings()[0], groups = fairgateExplorer.groups(s), out = [];
                for (let i = 0; i < n; i++) {
                    const g = groups[(i * 7919) % groups.length], t0 = performance.now();
                    fairgateExplorer.setThreshold(s, g, 0.2 + 0.6 * ((i * 37) % 100) / 100);
                    document.body.offsetHeight;  // the layout the change causes
                    out.push(performance.now() - t0);
                }
                const t0 = performance.now();
                fairgateExplorer.setAll(s, 0.4);
                document.body.offsetHeight;
                out.push(performance.now() - t0);
                return out;
            }""",
            [changes],
        )
        if errors:
            raise SystemExit(f"error: the page raised {errors[0]}")
    singles = per_change[:-1]
    return {
        "load_wall_ms": wall * 1000,
        "load_event_ms": navigation,
        "change_median_ms": statistics.median(singles),
        "change_p90_ms": float(np.percentile(singles, 90)),
        "change_max_ms": max(singles),
        "set_all_ms": per_change[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        _, small_facts = write_page(args.rows // 2, 500, Path(folder) / "g500.explorer.html")
        large, facts = write_page(args.rows, args.groups, Path(folder) / "large.explorer.html")
        times = browser_times(large, args.changes)
    load = os.getloadavg()
    print(f"rows {args.rows:,}, groups {args.groups} ({facts['shown']} shown), load average {load[0]:.2f}")
    print(f"cube with score table {facts['cube_s']:.2f} s; explorer data + page written {facts['page_s']:.2f} s")
    print(
        f"page size: {facts['bytes'] / 1e6:.2f} MB at {args.groups} groups; {small_facts['bytes'] / 1e6:.2f} MB at 500"
    )
    print(f"load in chromium: {times['load_wall_ms']:.0f} ms to a laid-out page", end="")
    print(f" (load event at {times['load_event_ms']:.0f} ms)")
    print(
        f"per threshold change ({args.changes} changes): median {times['change_median_ms']:.1f} ms, "
        f"90th percentile {times['change_p90_ms']:.1f} ms, "
        f"max {times['change_max_ms']:.1f} ms; one threshold for all {times['set_all_ms']:.1f} ms"
    )


if __name__ == "__main__":
    main()
