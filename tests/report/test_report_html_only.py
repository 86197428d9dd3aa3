"""An HTML-only report renders without WeasyPrint (imported only for a PDF: about 1 s of a run's start)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fresh_python import fresh_python, last_json

REPO = Path(__file__).resolve().parents[2]

_RENDER = """
import json, sys
from pathlib import Path
from tasks.render.report import build_report_files
document = json.loads(Path(sys.argv[1]).read_text())
paths = build_report_files(document, out_dir=Path(sys.argv[2]), formats=sys.argv[3].split(","), min_cell_size=10)
print(json.dumps({"weasyprint": "weasyprint" in sys.modules, "html": bool(paths["html"]), "pdf": bool(paths["pdf"])}))
"""


def _render(document: dict[str, Any], tmp_path: Path, formats: str) -> dict[str, bool]:
    source = tmp_path / "document.json"
    source.write_text(json.dumps(document), encoding="utf-8")
    out = tmp_path / formats.replace(",", "_")
    out.mkdir()
    return last_json(fresh_python(_RENDER, str(source), str(out), formats))


def test_html_only_report_imports_no_weasyprint(compas_doc: dict[str, Any], tmp_path: Path) -> None:
    assert _render(compas_doc, tmp_path, "html") == {"weasyprint": False, "html": True, "pdf": False}
    assert _render(compas_doc, tmp_path, "html,pdf") == {"weasyprint": True, "html": True, "pdf": True}
