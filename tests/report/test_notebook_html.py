"""``AuditResult._repr_html_``: what a notebook shows, parsed back: the verdict, one row per failing result with
its interval from the report's formatter, what was not judged, the report files linked; group names from the
data escaped (a group called ``<script>`` is text, never markup)."""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np
import polars as pl

import fairgate
from fairgate.report.format import estimate_text

HOSTILE = '<script>alert("x")</script>'
POLICY = """\
fairness_checker:
  sensitive_attributes: [{name: group}]
  metrics:
    - {name: demographic_parity_difference, threshold: 0.1}
    - {name: equal_opportunity_difference, threshold: 0.1}
  intersectional_analysis: {min_group_size: 30}
  statistics: {n_bootstrap: 200, seed: 1}
"""


class _Page(HTMLParser):
    """The tables (title -> rows of cell texts), the verdict attribute, the links and every tag seen."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.verdict: str | None = None
        self.links: list[str] = []
        self.tags: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        found = dict(attrs)
        if tag == "span" and "data-verdict" in found:
            self.verdict = found["data-verdict"]
        elif tag == "table":
            self._table = found["data-title"]
            self.tables[self._table or ""] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag == "td":
            self._cell = []
        elif tag == "a":
            self.links.append(found["href"] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _rows(seed: int, small: int = 400) -> pl.DataFrame:
    """A hostile-named group selected far less often than the others (the worst off); a tiny third group."""
    rng = np.random.default_rng(seed)
    group = np.array([HOSTILE] * small + ["b"] * 600 + ["c"] * 5)
    rate = np.where(group == HOSTILE, 0.3, 0.7)
    return pl.DataFrame(
        {
            "y_true": (rng.random(group.size) < 0.5).astype(np.int64),
            "y_pred": (rng.random(group.size) < rate).astype(np.int64),
            "group": group,
        }
    )


def _page(result: fairgate.AuditResult) -> _Page:
    page = _Page()
    page.feed(result._repr_html_())
    page.close()
    return page


def test_a_failing_audit_shows_its_verdict_failing_rows_and_intervals() -> None:
    result = fairgate.audit(_rows(0), fairgate.Policy.from_yaml(POLICY))
    assert result.verdict == "fail"
    page = _page(result)
    assert page.verdict == "fail"
    failing = [r for r in result.document.results if r.status == "fail"]
    rows = page.tables["Failing results"][1:]  # the header row has no <td>
    assert len(rows) == len(failing) >= 1
    for row, expected in zip(rows, failing, strict=True):
        assert row[2] == estimate_text(expected.value, expected.ci_low, expected.ci_high)
    assert any(HOSTILE in row[5] for row in rows)  # the worst group, shown as text
    assert "script" not in page.tags  # ... never as markup
    assert "not written" in result._repr_html_()  # no files known


def test_report_files_are_linked_and_escaped() -> None:
    result = fairgate.audit(_rows(1), fairgate.Policy.from_yaml(POLICY))
    result.files = {"pdf": 'out/report_"a<img src=x>".pdf', "json": "out/audit.json"}
    page = _page(result)
    assert page.links == ['out/report_"a<img src=x>".pdf', "out/audit.json"]
    assert "img" not in page.tags


def test_a_passing_audit_has_no_failing_table() -> None:
    pattern = {"y_true": [0, 1, 0, 1], "y_pred": [0, 1, 1, 0]}  # the same rates in every group
    rows = pl.DataFrame({k: v * 300 for k, v in pattern.items()} | {"group": [HOSTILE, "b"] * 600})
    result = fairgate.audit(rows, fairgate.Policy.from_yaml(POLICY))
    assert result.verdict == "pass"
    page = _page(result)
    assert page.verdict == "pass"
    assert "Failing results" not in page.tables
