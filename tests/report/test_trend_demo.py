"""Issue 11's done-when: a second ``fairgate demo`` into the same output folder shows the trend and the change
since the first run. Both runs go through the real CLI and Prefect flow (the session's server), as a user runs
them."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from tasks.store import list_runs, verify

# The session's Prefect server (tests/conftest.py); the two demo runs are shared with test_report_layout.py (one
# unit of work for pytest-xdist: tests/conftest.py, SHARED_UNITS).
pytestmark = pytest.mark.usefixtures("prefect_server")


def _section(html: str) -> str:
    start = html.index('<section class="trend"')
    return html[start : html.index("</section>", start)]


@pytest.mark.slow
def test_a_second_demo_run_into_the_same_folder_shows_the_trend_and_the_change(two_demo_runs: Any) -> None:
    out, first, second = two_demo_runs.out, two_demo_runs.first, two_demo_runs.second
    assert first.returncode == 1, first.stderr  # COMPAS fails its policy
    (first_html,) = [
        p for p in two_demo_runs.first_files if p.suffix == ".html" and not p.name.endswith(".explorer.html")
    ]
    assert "first audit of model compas in this trail" in _section(first_html.read_text())
    assert "data:image" not in _section(first_html.read_text())  # no empty chart for one run

    assert second.returncode == 1, second.stderr
    runs = list_runs(out / "audit_trail.duckdb")
    assert len(runs) == 2
    assert verify(out / "audit_trail.duckdb")["ok"]
    (second_json,) = [p for p in out.glob("*.json") if p.name.endswith(f"{runs[1]['run_id']}.json")]
    trend = json.loads(second_json.read_text())["trend"]
    assert [r["run_id"] for r in trend["runs"]] == [runs[0]["run_id"], runs[1]["run_id"]]
    assert trend["same_data_as_previous"] is True  # the demo audits the same bundled file twice
    for series in trend["series"]:
        assert len(series["points"]) == 2
        change = series["change"]
        assert change["previous_run_id"] == runs[0]["run_id"]
        assert change["tested"] is False  # the same sample: nothing to test
        assert change["delta"] == pytest.approx(0.0, abs=1e-12)  # seeded: the same data give the same values
    (second_html,) = [
        p for p in out.glob("*.html") if runs[1]["run_id"] in p.name and not p.name.endswith(".explorer.html")
    ]
    section = _section(second_html.read_text())
    assert "2 audits of model compas in this trail" in section
    assert "the input files are identical" in section
    # One small multiple per judged metric and their shared legend.
    assert section.count("data:image/svg+xml") == len({s["metric"] for s in trend["series"]}) + 1
    assert "Changes since the previous run" in section
    # A change of zero is printed without a sign (the one rule, fmt_signed), one per series.
    assert len(re.findall(r'<td class="num">0\.000(?:</td>| <span)', section)) == len(trend["series"])
    assert "+0.000" not in section
    (second_pdf,) = [p for p in out.glob("*.pdf") if runs[1]["run_id"] in p.name]
    text = subprocess.run(["pdftotext", str(second_pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "Trend against earlier runs" in text
    assert "the input files are identical" in " ".join(text.split())
