"""Render the audit result as HTML (Jinja2) and PDF (WeasyPrint). Work in progress."""

from __future__ import annotations

import html as _html
import os
import re
import tempfile
from pathlib import Path
from typing import Any


def output_stem(doc: dict[str, Any]) -> str:
    model = doc.get("model") or {}
    parts = ["fairness", str(model.get("name", "model")), str(model.get("version", "")), str(doc.get("run_id", ""))]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "_".join(p for p in parts if p))


def render_html(doc: dict[str, Any]) -> str:
    model = doc.get("model") or {}
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>fairgate report</title></head><body>"
        f"<h1>Fairness audit: {_html.escape(str(model.get('name')))} {_html.escape(str(model.get('version')))}</h1>"
        f"<p>Verdict: {_html.escape(str(doc.get('verdict')).upper())}</p></body></html>"
    )


def write_text_atomic(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
    return path
