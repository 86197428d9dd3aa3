"""Write the audit and comparison documents' JSON Schemas, generated from the models, to fairgate/document/schema/.

.venv/bin/python tools/write_document_schema.py          # rewrite the shipped schema
.venv/bin/python tools/write_document_schema.py --check  # exit 1 when the shipped schema is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairgate.document import SCHEMA_PATH, audit_json_schema
from fairgate.document.comparison import COMPARISON_SCHEMA_PATH, comparison_json_schema
from fairgate.document.monitoring import MONITORING_SCHEMA_PATH, monitoring_json_schema


def schema_text(schema: dict[str, object] | None = None) -> str:
    """The generated schema as the shipped file holds it (indented, sorted as generated, newline at the end)."""
    return json.dumps(audit_json_schema() if schema is None else schema, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when the file differs")
    args = parser.parse_args()
    stale = False
    schemas = (
        (SCHEMA_PATH, audit_json_schema()),
        (COMPARISON_SCHEMA_PATH, comparison_json_schema()),
        (MONITORING_SCHEMA_PATH, monitoring_json_schema()),
    )
    for path, schema in schemas:
        text = schema_text(schema)
        if args.check:
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if current != text:
                print(f"{path} is stale: run tools/write_document_schema.py", file=sys.stderr)
                stale = True
            continue
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
