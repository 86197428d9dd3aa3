"""Bench: where WeasyPrint's time goes in one PDF of the report, stage by stage, in one process.

    .venv/bin/python bench/pdf_stages.py [--doc AUDIT.json] [--task binary] [--repeats 3]

Without ``--doc`` the demo's audit document is made first (``fairgate demo --json`` of ``--task``). The report's
PDF HTML is built once (view, charts, template), then rendered ``--repeats`` times as ``html_to_pdf`` renders it
(chart labels as one run, the collector paused), timing WeasyPrint's stages by wrapping its functions: the
styles (CSS cascade), the boxes, each page's layout (a page laid out again counts again), the SVG charts'
drawing, and the drawing and writing of the PDF (the charts included). Prints the CPU of each stage, the count
of calls, the PDF's total and the load average; the first repeat pays the fonts' first use. The collector's
young generation runs at the CLI's threshold (``cli.YOUNG_GENERATION_THRESHOLD``), as in ``fairgate demo``.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from report_phases import demo_document  # noqa: E402  (the same demo document)

SPENT: collections.Counter[str] = collections.Counter()
CALLS: collections.Counter[str] = collections.Counter()
DEPTH: collections.Counter[str] = collections.Counter()


def timed(owner: Any, name: str, stage: str) -> None:
    """Replace ``owner.name`` by a wrapper adding its CPU (outermost calls only) to ``stage``."""
    function: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        DEPTH[stage] += 1
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            DEPTH[stage] -= 1
            CALLS[stage] += 1
            if DEPTH[stage] == 0:
                SPENT[stage] += time.process_time() - start

    setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--doc", type=Path, default=None)
    parser.add_argument("--task", default="binary")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import gc
    import json

    from cli import YOUNG_GENERATION_THRESHOLD

    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, *gc.get_threshold()[1:])
    import weasyprint.document as document
    import weasyprint.layout.page as page
    import weasyprint.svg as svg

    from fairgate.report import build_view
    from tasks.render.report import html_to_pdf, render_charts, render_html

    timed(document, "get_all_computed_styles", "styles")
    timed(document, "build_formatting_structure", "boxes")
    timed(page, "make_page", "page layouts")
    timed(svg.SVG, "draw", "SVG charts drawn")
    timed(document, "generate_pdf", "drawing and writing the PDF")
    with tempfile.TemporaryDirectory(prefix="fairgate-pdf-") as tmp:
        doc_path = args.doc or demo_document(args.task, Path(tmp))
        view = build_view(json.loads(doc_path.read_text(encoding="utf-8")), min_cell_size=10)
    html = render_html(view, render_charts(view), full_tables=False)
    print(f"load average before: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for repeat in range(args.repeats):
        SPENT.clear()
        CALLS.clear()
        start = time.process_time()
        pdf = html_to_pdf(html)
        total = time.process_time() - start
        stages = ", ".join(f"{stage} {SPENT[stage]:.2f} s ({CALLS[stage]})" for stage in SPENT)
        print(f"repeat {repeat + 1}: PDF {total:.2f} s CPU, {len(pdf) / 1024:.0f} KiB; {stages}")
    print(f"load average after: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
