"""``fairgate explore`` in a real browser (Debian's chromium through Playwright) over a trail of three COMPAS audits.

Listing, opening an audit, its report and the what-if explorer linked from it, a metric's trend, two runs side by
side, the monitored nights; a request without the token refused on a non-loopback bind; traversal attempts. The
numbers on the pages are checked against the audit documents through the report's formatter. Screenshots go to
FAIRGATE_SCREENSHOTS (docs/assets/screenshots when the docs are refreshed), else the test's temporary folder.
"""

from __future__ import annotations

import http.client
import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from explore_server import ServedTrail, compas_trail, serving, watched

import fairgate
from fairgate.engine.labels import slicing_label
from fairgate.report.format import fmt, interval_text, metric_label
from tasks.outputs import output_stem
from tasks.serve.explore_app import explore_app

TOKEN = "a-token-of-thirty-two-characters"
SCREENSHOTS_ENV = "FAIRGATE_SCREENSHOTS"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, compas_rows: pl.DataFrame, compas_policy: fairgate.Policy
) -> ServedTrail:
    folder, outside = tmp_path_factory.mktemp("reports"), tmp_path_factory.mktemp("outside")
    return compas_trail(folder, outside, compas_rows, compas_policy)


@pytest.fixture(scope="module")
def base(served: ServedTrail) -> Iterator[str]:
    with serving(explore_app(served.trail, served.folder)) as url:
        yield url


def shot(page: Any, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name), full_page=True)


def test_listing_an_audit_its_report_and_the_explorer(
    browser: Any, base: str, served: ServedTrail, tmp_path: Path
) -> None:
    page, problems = watched(browser, base)
    page.goto(base + "/")
    runs = page.locator("section[data-model=compas] table.runs tbody tr")
    assert runs.count() == 3
    assert runs.nth(0).locator("td").nth(1).inner_text() == "run-3"  # newest first
    shot(page, "explore_index.png", tmp_path)
    page.click("text=run-3")
    newest = served.documents[-1]
    assert page.locator("#verdict").inner_text() == newest["verdict"]
    rows = page.locator("#results tbody tr")
    assert rows.count() == len(newest["results"])
    for i, result in enumerate(newest["results"]):
        cells = rows.nth(i).locator("td").all_inner_texts()
        assert cells[:4] == [
            metric_label(result["metric"]),
            slicing_label(result["slicing"]),
            fmt(result["value"]),
            interval_text(result["ci_low"], result["ci_high"]),
        ]
    shot(page, "explore_run.png", tmp_path)
    page.click("a[data-kind=report]")
    page.wait_for_load_state("load")
    assert page.url.endswith(f"/files/{output_stem(newest)}.html")
    page.click("#explorer-link")  # the report links to its explorer, beside it
    page.wait_for_load_state("load")
    assert page.url.endswith(f"/files/{output_stem(newest)}.explorer.html")
    assert "race" in page.evaluate("fairgateExplorer.slicings()")
    page.evaluate("fairgateExplorer.setAll('race', 0.65)")
    assert page.evaluate("fairgateExplorer.state('race')") == page.evaluate("fairgateExplorer.at('race', 0.65)")
    shot(page, "explore_explorer.png", tmp_path)
    assert problems == []


def test_a_metrics_trend_across_runs(browser: Any, base: str, served: ServedTrail, tmp_path: Path) -> None:
    page, problems = watched(browser, base)
    page.goto(f"{base}/runs/run-3")
    page.click("#results tbody tr:first-child a.trend")
    metric = served.documents[-1]["results"][0]["metric"]
    assert page.locator("h1").inner_text().startswith(metric_label(metric))
    expected = [(d["run_id"], r) for d in served.documents for r in d["results"] if r["metric"] == metric]
    rows = page.locator("#trend-table tbody tr")
    assert rows.count() == len(expected)
    for i, (run_id, result) in enumerate(expected):
        cells = rows.nth(i).locator("td").all_inner_texts()
        assert [cells[1], cells[3], cells[4], cells[5]] == [
            run_id,
            slicing_label(result["slicing"]),
            fmt(result["value"]),
            interval_text(result["ci_low"], result["ci_high"]),
        ]
    assert page.locator("#trend-chart svg circle").count() == len(expected)
    shot(page, "explore_trend.png", tmp_path)
    assert problems == []


def test_two_runs_side_by_side(browser: Any, base: str, served: ServedTrail, tmp_path: Path) -> None:
    page, problems = watched(browser, base)
    page.goto(base + "/")
    form = page.locator("section[data-model=compas] form.compare")
    form.locator("select[name=a]").select_option("run-1")
    form.locator("select[name=b]").select_option("run-3")
    form.locator("button").click()
    first, last = served.documents[0]["results"][0], served.documents[-1]["results"][0]
    assert (first["metric"], first["slicing"]) == (last["metric"], last["slicing"])
    cells = page.locator("#compare-results tbody tr").first.locator("td").all_inner_texts()
    assert cells[0] == metric_label(first["metric"])
    assert [cells[2], cells[3], cells[5], cells[6]] == [
        fmt(first["value"]),
        interval_text(first["ci_low"], first["ci_high"]),
        fmt(last["value"]),
        interval_text(last["ci_low"], last["ci_high"]),
    ]
    assert cells[8] == fmt(last["value"] - first["value"])
    shot(page, "explore_compare.png", tmp_path)
    assert problems == []


def test_the_monitored_nights(browser: Any, base: str, tmp_path: Path) -> None:
    page, problems = watched(browser, base)
    page.goto(base + "/")
    page.click("text=monitored nights")
    cells = page.locator("table.night tbody tr").first.locator("td").all_inner_texts()
    assert cells[:5] == ["30", "Disparate impact ratio", "race", "0.700", "0.650–0.750"]
    shot(page, "explore_nights.png", tmp_path)
    assert problems == []


def test_a_non_loopback_bind_refuses_every_request_without_the_token(browser: Any, served: ServedTrail) -> None:
    with serving(explore_app(served.trail, served.folder, token=TOKEN), host="0.0.0.0") as url:
        context = browser.new_context()
        page, _ = watched(browser, url, context)
        for path in ("/", "/runs/run-3", f"/files/{output_stem(served.documents[-1])}.html", "/nope"):
            response = page.goto(url + path)
            assert response.status == 401, path
            assert "compas" not in page.content()
        wrong = page.request.get(url + "/", headers={"Authorization": "Bearer " + "x" * len(TOKEN)})
        assert wrong.status == 401
        assert page.request.get(url + "/", headers={"Authorization": f"Bearer {TOKEN}"}).status == 200
        response = page.goto(f"{url}/runs/run-3?token={TOKEN}")  # once: kept as a cookie, dropped from the URL
        assert response.status == 200
        assert page.url == f"{url}/runs/run-3"
        assert page.goto(url + "/").status == 200
        context.close()
        fresh, _ = watched(browser, url, browser.new_context())
        assert fresh.goto(url + "/").status == 401


ATTEMPTS = [
    "/files/../audit_trail.duckdb",
    "/files/%2e%2e/audit_trail.duckdb",
    "/files/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
    "/files/..%2f..%2f..%2fetc%2fpasswd",
    "/files//etc/passwd",
    "/files/%2fetc%2fpasswd",
    "/files/audit_trail.duckdb",
    "/files/audit_trail.duckdb.lock",
    "/files/leak.html",  # a symlink out of the folder
]


def raw_get(base: str, path: str) -> tuple[int, bytes]:
    """A GET of ``path`` exactly as written (no client normalises the dots away)."""
    parts = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", parts.netloc)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_traversal_attempts_are_refused(browser: Any, base: str, served: ServedTrail) -> None:
    outside = os.path.relpath(served.secret, served.folder)
    attempts = [
        *ATTEMPTS,
        "/files/" + outside,
        "/files/" + urllib.parse.quote(outside, safe=""),
        f"/files/{served.secret}",
    ]
    for path in attempts:
        status, body = raw_get(base, path)
        assert status == 404, path
        for leaked in (b"TOP SECRET", b"root:", b"DUCK"):
            assert leaked not in body, path
    page, _ = watched(browser, base)
    for path in ("/files/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/files/leak.html"):
        response = page.request.get(base + path)
        assert response.status == 404
        assert b"TOP SECRET" not in response.body()
    status, body = raw_get(base, f"/files/{output_stem(served.documents[-1])}.json")
    assert status == 200
    assert b'"run_id": "run-3"' in body
