"""Snapshot of the report's structure: headings, tables (class, columns, row count) and figures, in order.

Numbers are left out, so the snapshot guards the layout a reviewer relies on, not the engine's arithmetic.
Update after an intended change with: FAIRGATE_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/report -k snapshot
"""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path

SNAPSHOT = Path(__file__).parent / "snapshots" / "compas_outline.txt"


class _Outline(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self._text: list[str] | None = None
        self._table: dict[str, object] | None = None
        self._in_thead = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag in ("h1", "h2", "h3"):
            self._text = []
        elif tag == "section":
            self.lines.append(f"section.{(attributes.get('class') or '').split()[0]}")
        elif tag == "table":
            self._table = {"class": attributes.get("class") or "", "columns": [], "rows": 0}
        elif tag == "thead":
            self._in_thead = True
        elif tag == "tr" and self._table is not None and not self._in_thead:
            self._table["rows"] = int(self._table["rows"]) + 1  # type: ignore[call-overload]
        elif tag == "th" and self._in_thead:
            self._cell = []
        elif tag == "img":
            self.lines.append(f"  figure: {attributes.get('alt')}")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h1", "h2", "h3") and self._text is not None:
            self.lines.append(f"{tag}: {_norm(''.join(self._text))}")
            self._text = None
        elif tag == "thead":
            self._in_thead = False
        elif tag == "th" and self._cell is not None and self._table is not None:
            self._table["columns"].append(_norm("".join(self._cell)))  # type: ignore[attr-defined]
            self._cell = None
        elif tag == "table" and self._table is not None:
            columns = " | ".join(self._table["columns"])  # type: ignore[arg-type]
            self.lines.append(f"  table.{self._table['class']} [{columns}] rows={self._table['rows']}")
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def _norm(text: str) -> str:
    """Collapse whitespace and replace numbers, which the engine owns, by '#'."""
    return re.sub(r"\d+(\.\d+)?", "#", " ".join(text.split()))


def outline(html: str) -> str:
    parser = _Outline()
    parser.feed(html)
    return "\n".join(parser.lines) + "\n"


def test_report_structure_matches_the_snapshot(compas_report: dict[str, Path]) -> None:
    actual = outline(compas_report["html"].read_text())
    if os.environ.get("FAIRGATE_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(actual)
    assert SNAPSHOT.exists(), f"no snapshot yet: run with FAIRGATE_UPDATE_SNAPSHOTS=1 to create {SNAPSHOT}"
    assert actual == SNAPSHOT.read_text()


def test_outline_sees_structure_changes() -> None:
    base = "<h2>A</h2><table class='t'><thead><tr><th>x</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>"
    assert outline(base) == "h2: A\n  table.t [x] rows=1\n"
    assert outline(base.replace("<td>1</td></tr>", "<td>1</td></tr><tr><td>2</td></tr>")) != outline(base)
