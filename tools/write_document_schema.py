"""Write the audit document's JSON Schema, generated from the models, to fairgate/document/schema/.

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


def schema_text() -> str:
    """The generated schema as the shipped file holds it (indented, sorted as generated, newline at the end)."""
    return json.dumps(audit_json_schema(), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when the file differs")
    args = parser.parse_args()
    text = schema_text()
    if args.check:
        current = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else ""
        if current != text:
            print(f"{SCHEMA_PATH} is stale: run tools/write_document_schema.py", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
