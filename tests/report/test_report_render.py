"""The rendered report: PDF pages as images, extractable text, charts embedded, escaping, offline, names."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from pypdf import PdfReader
from report_docgen import synthetic_doc

from fairgate.report import build_view
from tasks.render.report import (
    OfflineURLFetcher,
    build_report_files,
    html_to_pdf,
    output_stem,
    render_charts,
    render_html,
)

CHART_URI = re.compile(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"')


def _pdf_text(path: Path) -> str:
    return "\n".join(page.extract_text() or "" for page in PdfReader(path).pages)


@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="needs poppler-utils (pdftoppm)")
def test_compas_pdf_pages_render_to_non_blank_images(compas_report: dict[str, Path], tmp_path: Path) -> None:
    subprocess.run(
        ["pdftoppm", "-r", "40", "-png", str(compas_report["pdf"]), str(tmp_path / "page")],
        check=True,
        capture_output=True,
    )
    pages = sorted(tmp_path.glob("page-*.png"))
    assert len(pages) == len(PdfReader(compas_report["pdf"]).pages) >= 5
    for page in pages:
        pixels = np.asarray(Image.open(page).convert("L"), dtype=float)
        assert pixels.std() > 5, f"{page.name} looks blank"
    # The first page carries the red FAIL verdict band: a reviewer sees the verdict before reading.
    first = np.asarray(Image.open(pages[0]).convert("RGB"), dtype=int)
    red = (first[..., 0] > 150) & (first[..., 1] < 80) & (first[..., 2] < 80)
    assert red.sum() > 200


def test_compas_pdf_text_is_extractable(compas_report: dict[str, Path], compas_doc: dict[str, Any]) -> None:
    reader = PdfReader(compas_report["pdf"])
    first = reader.pages[0].extract_text()
    assert "FAIL" in first
    assert "compas" in first
    assert "northpointe-2013" in first
    assert "What failed" in first
    assert "What to do" in first
    text = _pdf_text(compas_report["pdf"])
    for heading in (
        "By sensitive attribute",
        "Intersections",
        "Base rates and what they imply",
        "Insufficient groups",
        "Join and validation",
        "How to reproduce",
        "Sign-off",
        "Appendix: policy applied",
    ):
        assert heading in text
    assert compas_doc["policy_sha256"] in text.replace("\n", "")
    assert "report-test-run" in text
    # Chart text stays text (svg.fonttype none): axis titles are searchable in the PDF, in the policy's words.
    assert "False positive rate" in text
    assert "Observed share who did not reoffend" in text


def test_content_comes_in_the_reviewers_order(compas_report: dict[str, Path]) -> None:
    text = _pdf_text(compas_report["pdf"])
    order = [
        "What failed",
        "What to do",
        "By sensitive attribute",
        "Intersections",
        "Base rates and what",
        "Insufficient groups",
        "Join and validation",
        "How to reproduce",
        "Sign-off",
        "Appendix: policy applied",
    ]
    positions = [text.index(h) for h in order]
    assert positions == sorted(positions)


def test_html_embeds_every_chart_as_vector_graphics(compas_report: dict[str, Path]) -> None:
    html = compas_report["html"].read_text()
    svgs = [base64.b64decode(m).decode() for m in CHART_URI.findall(html)]
    titles = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", " ".join(svgs)))
    # ROC and calibration by group, rates with the threshold line, heatmaps, demographic breakdown.
    for expected in (
        "ROC by race",
        "Calibration by race",
        "Selection rate",
        "False negative rate",
        "threshold",
        "over race × sex",
        "Native American",
    ):
        assert expected in titles, expected
    assert all(svg.startswith("<svg") and "<image" not in svg for svg in svgs)  # vectors, no raster


def test_html_is_self_contained(compas_report: dict[str, Path]) -> None:
    html = compas_report["html"].read_text()
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:|#)""", html)
    assert "@import" not in html
    assert "url(http" not in html
    assert "<link" not in html
    # One inline script (sortable tables), loading nothing: no src, no URL, no fetch.
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, flags=re.S)
    assert [attributes for attributes, _ in scripts] == [""]
    assert not re.search(r"https?:|fetch\(|XMLHttpRequest|import\(", scripts[0][1])


def test_pdf_rendering_fetches_nothing_outside_the_document(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc)
    fetcher = OfflineURLFetcher()
    html_to_pdf(render_html(view), fetcher)
    assert fetcher.requested
    assert all(url.startswith("data:") for url in fetcher.requested)


def test_an_external_resource_stops_the_rendering() -> None:
    fetcher = OfflineURLFetcher()
    with pytest.raises(BaseException, match=r"127\.0\.0\.1"):
        html_to_pdf('<p>x</p><img src="http://127.0.0.1:9/x.png">', fetcher)
    assert fetcher.requested == ["http://127.0.0.1:9/x.png"]


def test_text_from_the_data_is_escaped(tmp_path: Path) -> None:
    evil = "<script>alert(1)</script>"
    doc = synthetic_doc({"sex": ["M", evil], "race": ["a", "b"]}, seed=1)
    doc["model"] = {"name": "<b>model</b>", "version": "1&2"}
    paths = build_report_files(doc, out_dir=tmp_path, formats=["html", "pdf"])
    html = paths["html"].read_text()  # type: ignore[union-attr]
    assert evil not in html
    assert "<b>model</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;model&lt;/b&gt;" in html
    text = _pdf_text(paths["pdf"])  # type: ignore[arg-type]
    assert "<script>alert(1)</script>" in text.replace("\n", "")  # shown as text, verbatim
    svgs = " ".join(base64.b64decode(m).decode() for m in CHART_URI.findall(html))
    assert "<script" not in svgs
    assert "&lt;script&gt;" in svgs


def test_output_names_carry_model_version_and_run(tmp_path: Path) -> None:
    doc = synthetic_doc({"g": ["x", "y"]}, pairs=False)
    doc["model"] = {"name": "credit risk/v2", "version": "3.1"}
    doc["run_id"] = "run 42"
    paths = build_report_files(doc, out_dir=tmp_path, formats=["html"])
    assert paths["pdf"] is None
    assert paths["html"] == tmp_path / "fairness_credit_risk_v2_3.1_run_42.html"
    assert output_stem(doc) == "fairness_credit_risk_v2_3.1_run_42"
    assert sorted(p.name for p in tmp_path.iterdir()) == [paths["html"].name]  # no temp files left


def test_json_only_policy_writes_nothing(tmp_path: Path) -> None:
    doc = synthetic_doc({"g": ["x", "y"]}, pairs=False)
    assert build_report_files(doc, out_dir=tmp_path / "out", formats=["json"]) == {"html": None, "pdf": None}
    assert not (tmp_path / "out").exists()


def test_charts_never_show_a_suppressed_group() -> None:
    doc = synthetic_doc({"sex": ["M", "F"], "race": ["a", "b", "c", "zz_tiny"]}, tiny=("zz_tiny",), seed=2)
    view = build_view(doc, min_cell_size=10)
    charts = {key: base64.b64decode(uri.split(",", 1)[1]).decode() for key, uri in render_charts(view).items()}
    group_charts = {key: svg for key, svg in charts.items() if key.startswith(("roc:", "calibration:", "rates:"))}
    assert group_charts
    for key, svg in group_charts.items():
        assert "zz_tiny" not in svg, key  # curves and bars of a small group are not drawn at all
    # The breakdown and the heatmap name the group (its row) but show no figure for it.
    assert "zz_tiny" in charts["breakdown"]
    assert "suppressed" in charts["breakdown"]
    assert "&lt;10" not in charts["breakdown"]  # a complement is not under 10: the chart does not say so
    assert "·" in charts["heatmap:sex × race"]
    hidden_n = next(g["n"] for g in doc["groups"] if g["group"] == {"race": "zz_tiny"})
    assert f">{int(hidden_n):,} (" not in charts["breakdown"]


def test_inconclusive_and_insufficient_results_have_their_own_badge_and_reason() -> None:
    doc = synthetic_doc({"g": ["x", "y"]}, pairs=False)
    first, second = doc["results"]
    first.update(status="inconclusive", reason="the interval straddles the threshold")
    second.update(status="insufficient_data", value=None, ci_low=None, ci_high=None, reason="fewer than 50 people")
    html = render_html(build_view(doc), charts={})
    assert html.count('class="mark mark-inconclusive">INCONCLUSIVE</span>') == 1  # the results table
    assert html.count('class="mark mark-insufficient_data">NO DATA</span>') == 1
    view = build_view(doc)
    assert view.frame is not None  # page 1 names both, with their marks, in the frame's "Not judged" sentence
    assert "<strong>Not judged:</strong> 2 result(s) are neither pass nor fail: " in html
    assert " INCONCLUSIVE" in view.frame.not_judged
    assert " NO DATA" in view.frame.not_judged
    assert 'class="status-reason">the interval straddles the threshold</div>' in html
    assert 'class="status-reason">fewer than 50 people</div>' in html
    assert 'sc-inconclusive" title="the interval straddles the threshold"' in html
    assert "sc-insufficient_data" in html
    assert 'class="undecided"' in html
