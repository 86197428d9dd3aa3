"""Chart labels drawn as one run of text each (tasks/render/svg_text.py) land where WeasyPrint's own letter-by-letter
drawing puts them, stay searchable, and every label that places letters one by one keeps WeasyPrint's drawing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tasks.render import svg_text
from tasks.render.report import html_to_pdf, svg_data_uri

FONT = 'font-family="\'DejaVu Sans\'" font-size="7.5"'
SVG = f"""<svg xmlns="http://www.w3.org/2000/svg" width="300pt" height="200pt" viewBox="0 0 300 200" font-size="16">
<text x="10" y="20" {FONT}>Start label AV</text>
<text x="150" y="40" text-anchor="middle" {FONT}>Middle label Ta</text>
<text x="290" y="60" text-anchor="end" fill="#b42318" {FONT}>End label</text>
<text font-weight="700" transform="translate(20 90)" {FONT}>Translated title</text>
<text x="100" y="150" transform="rotate(-90 100 150)" text-anchor="middle" {FONT}>Rotated axis</text>
<text x="10 30 50" y="180" {FONT}>xyz</text>
<text x="200" y="180" {FONT}>Head<tspan x="240">tail</tspan></text>
</svg>"""
#: The labels above that are drawn as one run: all but the per-letter ``x`` and the one with a child element.
SINGLE_RUNS = 5
WORD = re.compile(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>')


def _words(pdf: bytes, tmp_path: Path, name: str) -> list[tuple[str, float, float, float]]:
    path = tmp_path / f"{name}.pdf"
    path.write_bytes(pdf)
    out = subprocess.run(["pdftotext", "-bbox", str(path), "-"], check=True, capture_output=True, text=True).stdout
    return [(word, float(x0), float(y0), float(x1)) for x0, y0, x1, _, word in WORD.findall(out)]


def _stock_drawing(monkeypatch: pytest.MonkeyPatch) -> None:
    """WeasyPrint's own SVG text drawing back in place for the rest of the test."""
    import weasyprint.svg as weasy_svg

    original = sys.modules["weasyprint.svg.text"].text
    monkeypatch.setattr(weasy_svg, "text", original)
    for tag, drawer in list(weasy_svg.TAGS.items()):
        if drawer is not original and drawer.__module__ == svg_text.__name__:
            monkeypatch.setitem(weasy_svg.TAGS, tag, original)


def test_labels_land_where_weasyprint_draws_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    html = f'<img style="width:300pt" src="{svg_data_uri(SVG)}">'
    calls: list[Any] = []
    drawn = svg_text._draw_single_run
    monkeypatch.setattr(svg_text, "_draw_single_run", lambda *args: calls.append(args) or drawn(*args))
    assert svg_text.install()
    one_run = _words(html_to_pdf(html), tmp_path, "one_run")
    assert len(calls) == SINGLE_RUNS
    _stock_drawing(monkeypatch)
    letters = _words(html_to_pdf(html), tmp_path, "letters")
    assert len(calls) == SINGLE_RUNS  # the stock drawing did not come here
    # Searchable as words in both, the same words in the same order ...
    assert [w[0] for w in one_run] == [w[0] for w in letters]
    assert {"Start", "Middle", "End", "Translated", "title", "Rotated", "axis", "Head", "tail"} <= {
        w[0] for w in one_run
    }
    # ... at the same place to within a point: one run is shaped with the font's kerning ("AV", "Ta", "Tr" close
    # up by a few tenths of a point, as matplotlib measured them), letters drawn one by one are not.
    for ours, theirs in zip(one_run, letters, strict=True):
        assert max(abs(a - b) for a, b in zip(ours[1:], theirs[1:], strict=True)) < 1.0, (ours, theirs)
    # The labels left to WeasyPrint's drawing are drawn exactly as before.
    kept = {"x", "y", "z", "Head", "tail"}
    assert [w for w in one_run if w[0] in kept] == [w for w in letters if w[0] in kept]


def test_a_label_placing_letters_one_by_one_is_not_a_single_run() -> None:
    class Node:
        def __init__(self, attrib: dict[str, str], text: str = "label", tag: str = "text") -> None:
            self.attrib, self.text, self.tag = attrib, text, tag

        def get(self, key: str, default: Any = None) -> Any:
            return self.attrib.get(key, default)

        def __iter__(self) -> Any:
            return iter(())

    assert svg_text.is_single_run(Node({"x": "1", "y": "2"}))
    assert svg_text.is_single_run(Node({"transform": "translate(3 4)"}))
    for attrib in ({"x": "1 2", "y": "2"}, {"x": "1,2"}, {"x": ""}, {"x": "1", "dx": "1"}, {"rotate": "5"}):
        assert not svg_text.is_single_run(Node(attrib)), attrib
    assert not svg_text.is_single_run(Node({"x": "1"}, tag="tspan"))
    assert not svg_text.is_single_run(Node({"x": "1"}, text=""))


def test_the_lean_chart_draws_the_same_pixels(tmp_path: Path) -> None:
    """Dropping matplotlib's bare groups, identity rotations and style attributes changes no pixel of a chart."""
    import io

    from tasks.render.charts import chart_figure, lean_svg

    with chart_figure(4, 2.5) as (fig, (ax,)):
        ax.bar(["a", "b", "c"], [0.3, 0.7, 0.5], color="#0072B2")
        ax.plot([0, 1, 2], [0.2, 0.6, 0.4], marker="o")
        ax.set_title("Selection rate")
        ax.set_ylabel("share")
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    raw = buffer.getvalue()
    raw = raw[raw.index("<svg") :]
    lean = lean_svg(raw)
    assert lean.count("<g") < raw.count("<g") / 3
    assert "rotate(-0 " not in lean
    assert 'id="axes_1"' in lean
    pages = []
    for name, svg in (("raw", raw), ("lean", lean)):
        (tmp_path / f"{name}.pdf").write_bytes(html_to_pdf(f'<img style="width:120mm" src="{svg_data_uri(svg)}">'))
        render = ["pdftoppm", "-r", "80", "-gray", "-png", str(tmp_path / f"{name}.pdf"), str(tmp_path / name)]
        subprocess.run(render, check=True)
        pages.append((tmp_path / f"{name}-1.png").read_bytes())
    assert pages[0] == pages[1]
