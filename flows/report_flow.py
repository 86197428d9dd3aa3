"""The report subflow: render the audit result as HTML/PDF and deliver it by email.

Reads only the audit result document (never rows), so its cost does not depend on the row count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fairgate
from tasks.report import render_html, write_text_atomic, output_stem


def publish_report(result_doc: dict[str, Any], policy: fairgate.Policy, out_dir: Path, trail_path: Path) -> dict:
    """Render the report in the policy's formats, deliver it, and return the paths and the delivery outcome."""
    html = render_html(result_doc)
    html_path = write_text_atomic(Path(out_dir) / f"{output_stem(result_doc)}.html", html)
    return {"html": html_path, "pdf": None, "delivery": {"status": "skipped", "detail": "not implemented yet"}}
