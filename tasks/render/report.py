"""Render the audit result as HTML (Jinja2) and PDF (WeasyPrint), and write the files atomically.

Reads only the audit result document (never rows), so the cost does not depend on the row count. The HTML is
self-contained (inline CSS, charts as SVG data URIs) and the PDF renderer is given a URL fetcher that refuses
everything but inline ``data:`` URLs, so rendering never touches the network.
"""

from __future__ import annotations

import base64
import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.report import ReportView, build_view, email_summary
from fairgate.report.build import as_document
from fairgate.report.suppress import Suppression
from tasks.outputs import output_stem, write_atomic
from tasks.render import charts as chart_lib
from tasks.render import svg_text
from tasks.render.frontier_chart import frontier_svg
from tasks.render.kind_charts import kind_charts
from tasks.render.trend_charts import trend_charts

TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "reports"
log = logging.getLogger(__name__)


class OfflineFetchError(ValueError):
    """The report tried to load a resource from outside the document; reports must render offline."""


@functools.cache
def template_environment() -> Environment:
    """The Jinja environment of every report template in reports/ (autoescaped; an undefined field is an error).

    One per process: a template is compiled once, so the HTML report and the PDF's variant share the work."""
    return Environment(
        loader=FileSystemLoader(TEMPLATE_DIR),
        autoescape=select_autoescape(["html", "j2", "html.j2"], default_for_string=True, default=True),
        undefined=StrictUndefined,  # a missing field is a bug in the view model, not an empty cell
        trim_blocks=True,
        lstrip_blocks=True,
    )


def svg_data_uri(svg: str) -> str:
    """An SVG chart as a data URI, embedded in the HTML so the report is one self-contained file."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def render_charts(view: ReportView) -> dict[str, str]:
    """Every chart of the report as an SVG data URI, keyed by its place in the template.

    Curves go on attribute slicings (and small intersections); intersections get a heatmap instead, so the
    number of charts, and the rendering time, stays bounded however many subgroups there are.
    """
    out: dict[str, str | None] = {"breakdown": chart_lib.breakdown_chart(view.breakdowns, view.min_cell_size)}
    small = {s.key for s in view.sections if not s.intersection or len(s.groups) <= chart_lib.MAX_SERIES}
    for section in view.sections:
        if section.key in small:
            out[f"rates:{section.key}"] = chart_lib.rates_chart(section, view.rate_phrases)
    for curves in view.roc:
        if curves.key in small:
            out[f"roc:{curves.key}"] = chart_lib.roc_chart(curves)
    for curves in view.calibration:
        if curves.key in small:
            out[f"calibration:{curves.key}"] = chart_lib.calibration_chart(curves)
    for heatmap in view.heatmaps:
        out[f"heatmap:{heatmap.key}"] = chart_lib.heatmap_chart(heatmap, view.min_cell_size, view.rate_phrases)
    out.update(trend_charts(view.trend))
    out.update(kind_charts(view))
    if view.mitigation is not None and view.mitigation.frontier is not None:
        out["mitigation:frontier"] = frontier_svg(view.mitigation.frontier)
    return {key: svg_data_uri(svg) for key, svg in out.items() if svg}


def render_html(
    view: ReportView, charts: Mapping[str, str] | None = None, *, full_tables: bool = True, explorer: str | None = None
) -> str:
    """The report as one self-contained HTML page; ``explorer``: the file name of its what-if explorer page, linked
    from the HTML (not the PDF).

    ``full_tables=False`` is the PDF's variant: a large intersection's group table lists only its most
    divergent groups (the heatmap shows all), which keeps the PDF readable and its rendering time bounded.
    """
    template = template_environment().get_template("base.html.j2")
    return template.render(
        view=view,
        charts=dict(render_charts(view) if charts is None else charts),
        full_tables=full_tables,
        explorer=explorer if full_tables else None,
    )


@functools.cache
def _offline_url_fetcher() -> type:
    """The class of :data:`OfflineURLFetcher`, built on first use: WeasyPrint (about 1 s to import) is loaded only
    when a PDF is rendered, not for an HTML-only report."""
    from weasyprint.urls import URLFetcher

    class OfflineURLFetcher(URLFetcher):  # type: ignore[misc]  # weasyprint ships no type hints
        """WeasyPrint URL fetcher for inline ``data:`` URLs only: anything else stops the rendering.

        ``requested`` lists every URL the document asked for (tests check that none leaves the document).
        """

        def __init__(self) -> None:
            super().__init__(allowed_protocols={"data"}, fail_on_errors=True, allow_redirects=False)
            self.requested: list[str] = []

        def fetch(self, url: str, headers: Any = None) -> Any:
            self.requested.append(url)
            if not url.startswith("data:"):
                raise OfflineFetchError(f"report tried to fetch {url!r}; reports must be self-contained")
            return super().fetch(url, headers)

    return OfflineURLFetcher


def __getattr__(name: str) -> Any:
    """``OfflineURLFetcher``: the offline fetcher class, WeasyPrint imported when it is first asked for."""
    if name == "OfflineURLFetcher":
        return _offline_url_fetcher()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def html_to_pdf(html: str, fetcher: Any = None) -> bytes:
    """The PDF of a self-contained HTML page (WeasyPrint, offline: only inline ``data:`` URLs are fetched)."""
    from weasyprint import HTML  # imported here: an HTML-only report never loads WeasyPrint

    svg_text.install()  # chart labels drawn as one run each, not letter by letter
    # base_url=None: relative links cannot resolve to local files either.
    document = HTML(string=html, base_url=None, url_fetcher=fetcher or _offline_url_fetcher()())
    return document.write_pdf(pdf_identifier=b"fairgate") or b""


def write_text_atomic(path: Path, text: str) -> Path:
    return write_atomic(path, text.encode("utf-8"))


def build_report_files(
    result_doc: Mapping[str, Any],
    *,
    out_dir: Path,
    formats: Iterable[str] = ("html", "pdf"),
    min_cell_size: int = 10,
    use_case: str | None = None,
    explorer: str | None = None,
    suppression: Suppression | None = None,
) -> dict[str, Path | None]:
    """Render the requested formats ("html", "pdf") into ``out_dir``; JSON is written by the audit flow.

    ``explorer``: the file name of the what-if explorer written beside the report (the HTML links to it);
    ``suppression``: the document's (:func:`report_suppression`) when the caller already has it."""
    wanted = set(formats)
    paths: dict[str, Path | None] = {"html": None, "pdf": None}
    if not wanted & {"html", "pdf"}:
        return paths
    view = build_view(result_doc, min_cell_size=min_cell_size, use_case=use_case, suppression=suppression)
    charts = render_charts(view)
    html = render_html(view, charts, explorer=explorer) if "html" in wanted else ""
    stem = output_stem(result_doc)
    # Render everything before writing anything: a failure leaves no partial report behind.
    pdf = html_to_pdf(render_html(view, charts, full_tables=False)) if "pdf" in wanted else None
    if "html" in wanted:
        paths["html"] = write_text_atomic(Path(out_dir) / f"{stem}.html", html)
    if pdf is not None:
        paths["pdf"] = write_atomic(Path(out_dir) / f"{stem}.pdf", pdf)
    log.info("report written: %s", ", ".join(str(p) for p in paths.values() if p))
    return paths


@task(name="render-report", cache_policy=NO_CACHE)
def render_report(
    result_doc: dict[str, Any],
    out_dir: Path,
    formats: Sequence[str],
    min_cell_size: int = 10,
    use_case: str | None = None,
    explorer: str | None = None,
    suppression: Suppression | None = None,
) -> dict[str, Path | None]:
    """Prefect task: render the HTML/PDF report files (no retries: rendering is deterministic)."""
    return build_report_files(
        result_doc,
        out_dir=out_dir,
        formats=formats,
        min_cell_size=min_cell_size,
        use_case=use_case,
        explorer=explorer,
        suppression=suppression,
    )


def report_suppression(result_doc: Mapping[str, Any], min_cell_size: int) -> Suppression:
    """The small-cell suppression of an audit document: computed once per audit and handed to every artefact
    built from it (the report, its e-mail, the what-if explorer), so each withholds the same groups."""
    return Suppression.of_document(as_document(result_doc), min_cell_size)


def email_body(
    result_doc: Mapping[str, Any],
    *,
    min_cell_size: int = 10,
    use_case: str | None = None,
    suppression: Suppression | None = None,
) -> str:
    """The plain-text email body: verdict and top failures (same suppression as the report)."""
    view = build_view(result_doc, min_cell_size=min_cell_size, use_case=use_case, suppression=suppression)
    return email_summary(view)
