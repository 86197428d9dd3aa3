"""The audit document: typed models of the versioned JSON result, its generated schema, and AuditResult."""

from fairgate.document.document import SCHEMA_VERSION, AuditDocument, ModelRef
from fairgate.document.json_schema import SCHEMA_PATH, audit_json_schema
from fairgate.document.result import AuditResult

__all__ = ["SCHEMA_PATH", "SCHEMA_VERSION", "AuditDocument", "AuditResult", "ModelRef", "audit_json_schema"]
