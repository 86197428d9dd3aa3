"""A CSV input far wider than what the audit reads from it, narrowed before DuckDB sees it.

DuckDB sniffs the type of every column of a CSV when it binds the file (and again for every relation over it):
an attributes file with 10,000 extra columns took 26 s of CPU to bind against 1 s to copy out the few columns the
audit reads. So a CSV with more than :data:`WIDE_CSV_COLUMNS` columns is copied, one streaming pass in Python, to
a temporary CSV holding only the columns asked for, and that copy is read instead; the values are the same text,
so DuckDB infers the same types. A row with a different number of fields than the header leaves the file as it
is (DuckDB then names the broken row), and so does anything that is not plain UTF-8 text.
"""

from __future__ import annotations

import csv
from collections.abc import Collection
from pathlib import Path

WIDE_CSV_COLUMNS = 256


def narrowed_copy(path: Path, delimiter: str, keep: Collection[str], folder: Path) -> tuple[list[str], Path] | None:
    """The header of ``path`` and a copy in ``folder`` with only the ``keep`` columns (in the file's order); None
    when the file is not wider than WIDE_CSV_COLUMNS or cannot be copied faithfully (read it as it is)."""
    if path.suffix.lower() not in {".csv", ".tsv"}:
        return None  # compressed: DuckDB decompresses it
    target = folder / f"narrow{path.suffix.lower()}"
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle, delimiter=delimiter)
            header = next(reader, None)
            if header is None or len(header) <= WIDE_CSV_COLUMNS:
                return None
            wanted = [i for i, name in enumerate(header) if name in keep]
            with target.open("w", newline="", encoding="utf-8") as out:
                writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
                writer.writerow([header[i] for i in wanted])
                for row in reader:
                    if len(row) != len(header):
                        return None
                    writer.writerow([row[i] for i in wanted])
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    return header, target
