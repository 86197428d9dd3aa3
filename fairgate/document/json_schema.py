"""The JSON Schema of the audit document, generated from :class:`AuditDocument` (never written by hand).

The shipped copy lives at ``SCHEMA_PATH``; ``tools/write_document_schema.py`` rewrites it and a test fails
when it and the models disagree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairgate.document.document import AuditDocument

SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "audit_result.schema.json"


def audit_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the audit document, as generated from the models."""
    return AuditDocument.model_json_schema()
