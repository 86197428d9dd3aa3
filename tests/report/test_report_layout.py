"""The COMPAS demo PDF's layout (issue 11): at most 10 pages, every page but the last at least a third full and
the last not near-empty; a second run into the same folder (the trend section with two points) at most 10 pages
too, by the same fill rule.

The demo runs as a user runs it (``fairgate demo --out DIR``, a subprocess on the session's Prefect server), so
the page count includes everything the pipeline adds (join, validation, reproduce block, policy appendix).
Fill is measured on the rendered page: the lowest inked pixel row inside the page's content box (the running
footer in the bottom margin does not count), as a share of the content box's height.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tasks.render.report import html_to_pdf

REPO = Path(__file__).resolve().parents[2]
DPI = 40
MM = DPI / 25.4  # pixels per millimetre
# The @page margins of reports/report.css: content runs from 13 mm below the top to 15 mm above the bottom.
TOP_MM, BOTTOM_MM, PAGE_MM = 13, 15, 297
# Ten on a first and a second run: the PDF gathers the attributes' ROC and calibration curves three to a row, an
# undecided result's reason runs across its table, the appendix names unset sections on one line.
MAX_PAGES = 10
MAX_PAGES_WITH_TREND = 10  # the trend's charts and the runs table fit in the same ten pages
MIN_FILL = 1 / 3
# The last page carries more than a few overflow lines (a page 10 holding two lines of a paragraph is a page lost).
MIN_LAST_FILL = 0.15


def page_fills(pdf: Path, work: Path) -> list[float]:
    """Per page, how far down the content box the ink reaches (0 empty, 1 full)."""
    prefix = work / "page"
    subprocess.run(["pdftoppm", "-r", str(DPI), "-gray", "-png", str(pdf), str(prefix)], check=True)
    fills = []
    for png in sorted(work.glob("page-*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1])):
        image = Image.open(png).convert("L")
        width, height = image.size
        top, bottom = round(TOP_MM * MM), height - round(BOTTOM_MM * MM)
        pixels = image.load()
        assert pixels is not None
        inked = [y for y in range(top, bottom) if any(pixels[x, y] < 200 for x in range(0, width, 2))]
        fills.append(0.0 if not inked else (max(inked) - top) / (bottom - top))
    return fills


def _demo_pdf(run: subprocess.CompletedProcess[str], files: Iterable[Path]) -> Path:
    assert run.returncode == 1, run.stderr[-3000:]  # COMPAS fails its policy
    (pdf,) = [p for p in files if p.suffix == ".pdf"]
    return pdf


@pytest.fixture(scope="module")
def demo_pdf(two_demo_runs: Any) -> Path:
    """The first demo run's PDF (``two_demo_runs``, tests/report/conftest.py: shared with the trend's test)."""
    return _demo_pdf(two_demo_runs.first, two_demo_runs.first_files)


@pytest.fixture(scope="module")
def second_demo_pdf(two_demo_runs: Any) -> Path:
    """The same demo again into the same folder: the trail now holds the first run, so the trend is drawn."""
    return _demo_pdf(two_demo_runs.second, set(two_demo_runs.out.iterdir()) - two_demo_runs.first_files)


def _assert_fits(pdf: Path, work: Path, max_pages: int) -> None:
    fills = page_fills(pdf, work)
    assert len(fills) <= max_pages, [round(f, 2) for f in fills]
    thin = [(page, round(fill, 2)) for page, fill in enumerate(fills[:-1], start=1) if fill < MIN_FILL]
    assert not thin, f"pages under a third full: {thin} (all: {[round(f, 2) for f in fills]})"
    assert fills[-1] >= MIN_LAST_FILL, f"a near-empty last page: {[round(f, 2) for f in fills]}"


def test_the_demo_pdf_has_at_most_ten_pages_none_under_a_third_full_but_the_last(
    demo_pdf: Path, tmp_path: Path
) -> None:
    _assert_fits(demo_pdf, tmp_path, MAX_PAGES)


def test_a_second_demo_run_with_its_trend_has_at_most_ten_pages_by_the_same_rule(
    second_demo_pdf: Path, tmp_path: Path
) -> None:
    text = subprocess.run(["pdftotext", str(second_demo_pdf), "-"], capture_output=True, text=True).stdout
    assert "Trend against earlier runs" in text
    assert "there is no trend to show yet" not in text
    _assert_fits(second_demo_pdf, tmp_path, MAX_PAGES_WITH_TREND)


def test_the_demo_pdf_prints_no_interval_that_rounds_to_a_point(demo_pdf: Path) -> None:
    text = subprocess.run(["pdftotext", "-layout", str(demo_pdf), "-"], capture_output=True, text=True).stdout
    for block in ("How to reproduce", "Sign-off", "Appendix: policy applied", "Glossary", "Worst-off subgroups"):
        assert block in text
    collapsed = re.findall(r"\b(\d\.\d+)–\1\b", text)  # "0.01–0.01": an ECE of 0.007 at two decimals
    assert not collapsed, collapsed


def test_the_fill_measure_tells_a_near_empty_page_from_a_full_one(tmp_path: Path) -> None:
    """The measure itself: one line of text is a nearly empty page, a page-high block is a full one."""
    footer = "@bottom-right { content: 'Page ' counter(page) }"
    css = f"<style>@page {{ size: A4; margin: 13mm 12mm 15mm 12mm; {footer} }}</style>"
    html = css + "<p>One line.</p><div style='break-before: page; height: 265mm; background: #555'></div><p>x</p>"
    pdf = tmp_path / "probe.pdf"
    pdf.write_bytes(html_to_pdf(html))
    (tmp_path / "pages").mkdir()
    first, second, last = page_fills(pdf, tmp_path / "pages")
    assert first < 0.05  # the footer in the margin is not counted
    assert second > 0.95
    assert last < 0.05
