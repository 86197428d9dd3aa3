"""The one loader for the DuckDB SQL in ``sql/`` (one relation per file), and the identifier quoting its
placeholders need.

Files are read once per process. Placeholders (``{{ name }}``) are filled only with quoted, schema-checked
identifiers and fixed SQL built by the tasks; values always travel as bound parameters (``$name``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


@lru_cache(maxsize=64)
def load_sql(name: str) -> str:
    """The text of ``sql/<name>.sql`` (read once, then cached); ``name`` may name a subfolder (``store/runs``).

    >>> load_sql("stg_labels").startswith("-- stg_labels")
    True
    >>> load_sql("store/runs").startswith("-- runs")
    True
    """
    return (SQL_DIR / f"{name}.sql").read_text()


def quote_identifier(name: str) -> str:
    """Quote a column name for DuckDB: ``a"b`` -> ``"a""b"``.

    >>> quote_identifier('x"; drop table runs; --')
    '"x""; drop table runs; --"'
    """
    return '"' + name.replace('"', '""') + '"'


def render_sql(name: str, **fragments: str) -> str:
    """``sql/<name>.sql`` with its ``{{ placeholders }}`` filled with identifier lists built by the caller.

    Fragments are made only of quoted, schema-checked identifiers and fixed SQL; values never go in.

    >>> render_sql("id_duplicates", relation="stg_labels").count("stg_labels") >= 1
    True
    """
    text = load_sql(name)
    missing = set(_PLACEHOLDER.findall(text)) - set(fragments)
    if missing:
        raise KeyError(f"sql/{name}.sql needs fragments {sorted(missing)}")
    return _PLACEHOLDER.sub(lambda m: fragments[m.group(1)], text)
