"""MkDocs hooks (mkdocs.yml ``hooks:``): the audit document's fields rendered from its shipped JSON Schemas at build
time, so the page can never disagree with the schema (nothing generated is committed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "fairgate" / "document" / "schema"
MARKER = "<!-- document-fields: {} -->"
SCHEMAS = ("audit_result", "comparison", "monitoring")


def _type(node: dict[str, Any]) -> str:
    if "$ref" in node:
        return "object (" + str(node["$ref"]).rpartition("/")[2] + ")"
    if "anyOf" in node:
        return " or ".join(_type(option) for option in node["anyOf"])
    if "enum" in node:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    kind = node.get("type", "any")
    if kind == "array":
        return "list of " + _type(node.get("items", {}))
    return str(kind)


def fields_table(name: str) -> str:
    """A Markdown table of a shipped schema's top-level fields: name, type, required, description."""
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    required = set(schema.get("required", []))
    rows = ["| field | type | required | description |", "|---|---|---|---|"]
    for key, node in schema.get("properties", {}).items():
        text = " ".join((node.get("description") or node.get("title") or "").split()).replace("|", "\\|")
        rows.append(f"| `{key}` | {_type(node)} | {'yes' if key in required else 'no'} | {text} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace each ``<!-- document-fields: NAME -->`` marker with NAME's fields table."""
    for name in SCHEMAS:
        marker = MARKER.format(name)
        if marker in markdown:
            markdown = markdown.replace(marker, fields_table(name))
    return markdown
