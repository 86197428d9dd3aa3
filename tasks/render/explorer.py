"""Render and write the what-if threshold explorer (``<report stem>.explorer.html``) beside the HTML report.

The data comes from the binary cube (``fairgate/report/explorer.py``: per slicing and group, the score histogram
by label, suppressed groups left out); the page is ``reports/explorer.html.j2`` with ``reports/explorer.js``
inlined, so it is one self-contained file that loads nothing from the network.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

import fairgate
from fairgate.engine.labels import slicing_label
from fairgate.report.explorer import explorer_data
from fairgate.report.suppress import Suppression
from tasks.outputs import output_stem, write_atomic
from tasks.render.report import TEMPLATE_DIR, report_suppression, template_environment

EXPLORER_SUFFIX = ".explorer.html"
log = logging.getLogger(__name__)


def explorer_json(data: Mapping[str, Any]) -> str:
    """The page data as JSON safe inside a ``<script>`` element (no ``</script>`` can close it early)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_explorer(data: Mapping[str, Any], title: str) -> str:
    """The explorer page: the template with its data and script inlined."""
    template = template_environment().get_template("explorer.html.j2")
    script = (TEMPLATE_DIR / "explorer.js").read_text(encoding="utf-8")
    return template.render(data=data, data_json=explorer_json(data), script=script, title=title)


def page_title(document: Mapping[str, Any]) -> str:
    """The model, its version and the run, as the page's title."""
    model = document.get("model") or {}
    name = " ".join(str(v) for v in (model.get("name"), model.get("version")) if v)
    return f"{name or 'model'}, audit run {document.get('run_id', '')}".strip()


def build_explorer_file(
    document: Mapping[str, Any],
    cube: Any,
    policy: fairgate.Policy,
    out_dir: Path,
    min_cell_size: int,
    suppression: Suppression | None = None,
) -> Path | None:
    """Write ``<stem>.explorer.html`` into ``out_dir`` for a binary audit with scores; None otherwise.

    ``suppression``: the report's (:func:`~tasks.render.report.report_suppression`), computed here when not given.
    """
    if not isinstance(cube, fairgate.Cube) or not cube.has_scores:  # the binary cube only: other kinds have none
        return None
    if document.get("label_free"):  # an audit without labels: its cube's labels are placeholders
        return None
    if suppression is None:
        suppression = report_suppression(document, min_cell_size)
    data = explorer_data(cube, document["groups"], policy, min_cell_size, suppression)
    if not data["slicings"]:
        return None
    path = write_atomic(
        Path(out_dir) / f"{output_stem(document)}{EXPLORER_SUFFIX}",
        render_explorer(data, page_title(document)).encode("utf-8"),
    )
    log.info("explorer written: %s (%s)", path, ", ".join(slicing_label(s["attributes"]) for s in data["slicings"]))
    return path


# The Prefect task: the what-if explorer beside the HTML report (deterministic, no retries).
write_explorer = task(name="write-explorer", cache_policy=NO_CACHE)(build_explorer_file)
