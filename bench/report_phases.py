"""Bench: the report step of ``fairgate demo`` split into its phases, each run in a fresh process.

    .venv/bin/python bench/report_phases.py [--runs 3] [--doc AUDIT.json] [--task binary] [--baseline CHECKOUT]

Without ``--doc`` the demo's audit document is made once first (``fairgate demo --json`` of ``--task`` into a
temporary folder). Each run is a new Python process that times, on that document: the imports the report needs
(Jinja, matplotlib, the view models), WeasyPrint's import, the view (``build_view``), the charts (SVG), the HTML
of each variant (the full HTML report and the PDF's), and the PDF (WeasyPrint, fonts found on first use). The
cold run is what one ``fairgate demo`` pays; a second, warm PDF in the same process shows what is start-up.

``--baseline CHECKOUT``: the same phases run by another checkout (e.g. main: ``git worktree add DIR main`` with
its own ``.venv``), alternating process by process with this one, on the same document.

Prints the median wall and CPU (the process's, threads included) of each phase over the runs, the PDF's pages
and size, and the load average before and after; the machine is shared, so quote the figures with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

CHILD = r"""
import json, sys, time
clock = [("start", time.perf_counter(), time.process_time())]
def mark(name):
    clock.append((name, time.perf_counter(), time.process_time()))
from fairgate.report import build_view
from tasks.render.report import html_to_pdf, render_charts, render_html
mark("imports")
import weasyprint
mark("import weasyprint")
doc = json.loads(open(sys.argv[1], encoding="utf-8").read())
mark("read document")
view = build_view(doc, min_cell_size=int(sys.argv[2]))
mark("view")
charts = render_charts(view)
mark("charts")
html = render_html(view, charts)
mark("html (report)")
pdf_html = render_html(view, charts, full_tables=False)
mark("html (pdf)")
pdf = html_to_pdf(pdf_html)
mark("pdf")
html_to_pdf(pdf_html)
mark("pdf again (warm)")
phases = {}
for (_, w0, c0), (name, w1, c1) in zip(clock, clock[1:]):
    phases[name] = (w1 - w0, c1 - c0)
import io, pypdf
pages = len(pypdf.PdfReader(io.BytesIO(pdf)).pages)
print(json.dumps({"phases": phases, "pages": pages, "pdf_bytes": len(pdf), "html_bytes": len(pdf_html),
                  "charts_bytes": sum(len(c) for c in charts.values()), "charts": len(charts)}))
"""


def _load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def demo_document(task: str, folder: Path) -> Path:
    """The demo's audit document, made by ``fairgate demo --json`` into ``folder``."""
    subprocess.run(
        [str(BIN / "fairgate"), "demo", "--task", task, "--json", "--out", str(folder)],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    found = sorted(p for p in folder.glob("fairness_*.json") if ".model_card" not in p.name)
    if not found:
        raise SystemExit(f"fairgate demo --task {task} wrote no audit document into {folder}")
    return found[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes (the medians are over these)")
    parser.add_argument("--doc", type=Path, default=None, help="an audit document (default: the demo's)")
    parser.add_argument("--task", default="binary", help="the demo to take the document from")
    parser.add_argument("--min-cell-size", type=int, default=10)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to alternate with (its .venv)")
    args = parser.parse_args()

    sides = {"this checkout": (Path(sys.executable), REPO)}
    if args.baseline is not None:
        sides["baseline"] = (args.baseline.resolve() / ".venv" / "bin" / "python", args.baseline.resolve())
    with tempfile.TemporaryDirectory(prefix="fairgate-report-") as tmp:
        doc = args.doc or demo_document(args.task, Path(tmp))
        print(f"document: {doc.name} ({doc.stat().st_size / 1024:.0f} KiB); start: load average {_load()}")
        runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for run in range(args.runs):
            for side, (python, checkout) in sides.items():
                runs[side].append(phases(python, checkout, doc, args.min_cell_size))
                total = sum(cpu for _, cpu in runs[side][-1]["phases"].values())
                print(f"run {run + 1} {side}: {total:.2f} s CPU in all phases", flush=True)
    print(f"end: load average {_load()}")
    for side, results in runs.items():
        report(side, results)


def phases(python: Path, checkout: Path, doc: Path, min_cell_size: int) -> dict[str, Any]:
    """One fresh process of ``checkout`` timing the phases on ``doc``."""
    done = subprocess.run(
        [str(python), "-c", CHILD, str(doc), str(min_cell_size)],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(checkout)},
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def report(side: str, runs: list[dict[str, Any]]) -> None:
    """The medians of one side's runs, phase by phase."""
    last = runs[-1]
    print(
        f"\n{side}: pdf {last['pages']} pages, {last['pdf_bytes'] / 1024:.0f} KiB; its html "
        f"{last['html_bytes'] / 1024:.0f} KiB with {last['charts']} charts ({last['charts_bytes'] / 1024:.0f} KiB)"
    )
    print(f"{'phase':>18}  {'wall':>7}  {'CPU':>7}   (medians of {len(runs)} fresh processes)")
    for name in last["phases"]:
        wall = statistics.median(r["phases"][name][0] for r in runs)
        cpu = statistics.median(r["phases"][name][1] for r in runs)
        print(f"{name:>18}  {wall:6.2f}s  {cpu:6.2f}s")


if __name__ == "__main__":
    main()
