"""Reading the audit's inputs: CSV or Parquet files, or tables in a DuckDB or SQLite database.

A source is written ``PATH`` (``.csv``, ``.csv.gz``, ``.parquet``), a glob of Parquet files
(``data/predictions/*.parquet``: one input in many parts) or ``PATH::TABLE`` for a table in a database
file (``.duckdb``/``.ddb`` or ``.sqlite``/``.sqlite3``/``.db``). Each source becomes a DuckDB view in the
audit's connection; nothing is copied until the alignment query runs. Every failure is a ``DataError`` that
names the source and the fix.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import gzip
import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Collection, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from fairgate.errors import EMPTY_FILE, FILE_NOT_FOUND, MALFORMED_CSV, NO_SUCH_TABLE, DataError
from tasks.inputs.sql import quote_identifier, render_sql
from tasks.inputs.wide_csv import narrowed_copy

if TYPE_CHECKING:  # imported where used (SQLite inputs): `fairgate trail` imports this module and needs no Arrow
    import polars as pl
    import pyarrow as pa

_SQLITE_SUFFIXES = {".sqlite", ".sqlite3", ".db"}
_DUCKDB_SUFFIXES = {".duckdb", ".ddb"}
_HASH_CHUNK = 1 << 20
# HUGEINT before DOUBLE: 20-digit ids (beyond int64) stay exact integers.
_CSV_TYPES = ["BIGINT", "HUGEINT", "DOUBLE", "VARCHAR"]


@dataclass(frozen=True)
class Source:
    """One input: a file, or a table inside a database file."""

    role: str  # predictions | labels | attributes
    path: Path
    table: str | None = None

    @property
    def label(self) -> str:
        """How messages name this source: the path as given, plus the table."""
        return f"{self.path}::{self.table}" if self.table else str(self.path)

    @property
    def parts(self) -> list[Path]:
        """The files behind the source: the file, or a Parquet glob's matches in name order."""
        if _is_glob(str(self.path)):
            return sorted(Path(p) for p in glob.glob(str(self.path)))
        return [self.path]

    @property
    def kind(self) -> str:
        suffix = self.path.suffix.lower()
        if self.table is not None:
            return "sqlite" if suffix in _SQLITE_SUFFIXES else "duckdb"
        if suffix == ".parquet" or suffix == ".pq":
            return "parquet"
        return "csv"


def parse_source(role: str, text: str) -> Source:
    """Parse ``PATH`` or ``PATH::TABLE``; check the file exists and is a format fairgate reads.

    >>> parse_source("labels", "warehouse.sqlite::")
    Traceback (most recent call last):
    fairgate.errors.DataError: --labels 'warehouse.sqlite::': name the table after '::', e.g. warehouse.sqlite::labels
    >>> parse_source("labels", "no-such.sqlite::labels")
    Traceback (most recent call last):
    fairgate.errors.DataError: --labels: file 'no-such.sqlite' does not exist; check the path (relative to ...)
    """
    if _is_glob(text) and not _is_file(Path(text).expanduser()):
        return _parquet_glob(role, text)
    # A file whose own name contains '::' is that file, not a table in a database.
    path_text, sep, table = ("", "", "") if _is_file(Path(text).expanduser()) else text.partition("::")
    path = Path(path_text or text).expanduser()
    if sep and not table:
        raise DataError(f"--{role} {text!r}: name the table after '::', e.g. {path_text}::{role}")
    if not _is_file(path) and not _exists(path, role):
        raise DataError(FILE_NOT_FOUND.format(role=role, path=str(path), cwd=Path.cwd()))
    if not path.is_file():
        raise DataError(f"--{role}: {str(path)!r} is not a file; give a CSV or Parquet file or DB::TABLE")
    if path.stat().st_size == 0:
        raise DataError(EMPTY_FILE.format(role=role, path=str(path)))
    source = Source(role=role, path=path, table=table or None)
    suffixes = "".join(s.lower() for s in path.suffixes[-2:])
    known = source.kind in {"parquet", "sqlite", "duckdb"} or suffixes.endswith((".csv", ".csv.gz", ".tsv", ".txt"))
    if not known:
        raise DataError(
            f"--{role}: cannot tell the format of {str(path)!r}; use a .csv or .parquet file, "
            f"or DATABASE::TABLE for a table in a .duckdb or .sqlite file"
        )
    if source.table is None and path.suffix.lower() in _SQLITE_SUFFIXES | _DUCKDB_SUFFIXES:
        raise DataError(f"--{role}: {str(path)!r} is a database; name the table as {path}::TABLE")
    if source.kind == "csv":
        _check_text_encoding(source)
    return source


def _is_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def _parquet_glob(role: str, text: str) -> Source:
    """A glob of Parquet files, read by DuckDB as one input (the parts of a large input)."""
    path = Path(text).expanduser()
    if path.suffix.lower() not in {".parquet", ".pq"}:
        raise DataError(f"--{role} {text!r}: a pattern must name Parquet files, e.g. {path.parent}/*.parquet")
    source = Source(role=role, path=path)
    parts = source.parts
    if not parts:
        raise DataError(f"--{role}: no file matches {text!r}; check the pattern (relative to {Path.cwd()})")
    empty = [p for p in parts if p.stat().st_size == 0]
    if empty:
        raise DataError(EMPTY_FILE.format(role=role, path=str(empty[0])))
    return source


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _exists(path: Path, role: str) -> bool:
    """Whether ``path`` exists; a name the system refuses (too long) is bad input, not a crash."""
    try:
        return path.exists()
    except OSError as exc:
        shown = str(path)[:80]
        raise DataError(f"--{role}: cannot use the path {shown!r}...: {exc.strerror}; give a shorter path") from None


# Byte-order marks and what they mean; UTF-8 (with or without its BOM) is what DuckDB reads.
_ENCODING_MARKS = {
    b"\xff\xfe\x00\x00": "UTF-32",
    b"\x00\x00\xfe\xff": "UTF-32",
    b"\xff\xfe": "UTF-16",
    b"\xfe\xff": "UTF-16",
}


def _check_text_encoding(source: Source) -> None:
    """A CSV must be UTF-8: name the encoding and how to convert, instead of a confusing parse error."""
    if source.path.name.lower().endswith(".gz"):
        return
    with source.path.open("rb") as handle:
        head = handle.read(4096)
    encoding = next((name for mark, name in _ENCODING_MARKS.items() if head.startswith(mark)), None)
    if encoding is None and b"\x00" in head:
        encoding = "UTF-16 (it holds NUL bytes)"
    if encoding is None:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(head) - 4:  # not just a character cut at the end of the sample
                encoding = "WINDOWS-1252 or another 8-bit code page"
    if encoding is not None:
        raise DataError(
            f"--{source.role}: {source.label} is encoded as {encoding}, not UTF-8; convert it, e.g. "
            f"`iconv -f {encoding.split()[0]} -t UTF-8 {source.path.name} > {source.path.stem}-utf8.csv` "
            "(or save it as 'CSV UTF-8' in a spreadsheet), then pass the converted file"
        )


def sha256_of(source: Source) -> str:
    """The sha256 of the file behind a source (for a table: of the whole database file, then the table name)."""
    digest = hashlib.sha256()
    parts = source.parts
    for part in parts:
        if len(parts) > 1:  # a glob: each part's name and bytes, in name order
            digest.update(part.name.encode() + b"\0")
        with part.open("rb") as handle:
            while chunk := handle.read(_HASH_CHUNK):
                digest.update(chunk)
    if source.table:
        digest.update(b"::" + source.table.encode())
    return digest.hexdigest()


def register_source(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    view: str,
    *,
    id_column: str | None = None,
    keep: Collection[str] | None = None,
) -> list[str]:
    """Make ``source`` queryable as the view ``view``; return its column names.

    ``id_column``: ids are compared exactly, never as floating-point numbers (20-digit ids read as DOUBLE
    would make different people equal): a CSV's id column that would be sniffed as DOUBLE is read as text;
    a typed file whose ids are stored as floating-point numbers is refused. Paths and table names reach
    DuckDB through its relation API (no SQL text is formatted with them). ``keep``: the columns the audit may
    read from this input; a very wide CSV is narrowed to them first (tasks/inputs/wide_csv.py), the view
    holding only those, the returned names still the file's whole header.
    """
    with tempfile.TemporaryDirectory(prefix="fairgate-narrow-") as folder:
        narrowed = None
        if keep is not None and source.kind == "csv":
            narrowed = narrowed_copy(source.path, _delimiter(source.path), keep, Path(folder))
        read = source if narrowed is None else replace(source, path=narrowed[1])
        try:
            relation = _relation(con, read)
            if id_column is not None and id_column in relation.columns and _floating(relation, id_column):
                relation = _exact_ids(con, read, id_column)
            if narrowed is not None:  # held in DuckDB: the copy goes with its folder
                table = f"{view}__narrowed"
                con.execute(f"drop table if exists {quote_identifier(table)}")
                relation.create(table)
                relation = con.table(table)
            relation.create_view(view, replace=True)
            columns = list(relation.columns)
        except duckdb.Error as exc:
            raise DataError(_explain_read_error(source, exc)) from None
    if not columns:
        raise DataError(f"{source.label} has no columns; it needs a header row naming id and the data columns")
    return columns if narrowed is None else narrowed[0]


def _relation(con: duckdb.DuckDBPyConnection, source: Source) -> duckdb.DuckDBPyRelation:
    if source.kind == "parquet":
        return con.read_parquet(str(source.path))
    if source.kind == "csv":
        # An explicit delimiter and header make a row with a wrong number of fields an error, not a re-sniff.
        # No BOOLEAN/date candidates: "yes"/"no" must stay text, so validation rejects a label of "yes".
        return con.read_csv(str(source.path), header=True, sep=_delimiter(source.path), auto_type_candidates=_CSV_TYPES)
    if source.kind == "duckdb":
        return _duckdb_table(con, source)
    return con.from_arrow(_sqlite_table(source))


def refuse_overwriting(sources: list[Source], out: Path, option: str = "--out") -> None:
    """An output is never one of the inputs: writing it would replace what the user gave (issue 29).

    Compared after resolving symlinks and ``..``, and by inode when both exist (hard links, bind mounts).
    """
    target = out.resolve()
    for source in sources:
        given = source.path.resolve()
        same = given == target or (target.exists() and given.exists() and os.path.samefile(given, target))
        if same:
            raise DataError(
                f"{option} {str(out)!r} is the input {source.label}: writing it would replace that input; "
                f"write the output to another file"
            )


def _floating(relation: duckdb.DuckDBPyRelation, column: str) -> bool:
    return str(relation.types[relation.columns.index(column)]).upper() in {"DOUBLE", "FLOAT", "REAL"}


def _exact_ids(con: duckdb.DuckDBPyConnection, source: Source, id_column: str) -> duckdb.DuckDBPyRelation:
    """The source with its id column as exact text (CSV), or a refusal: floating-point ids lost digits already."""
    if source.kind != "csv":
        raise DataError(
            f"the id column {id_column!r} of {source.label} holds floating-point numbers, which cannot identify "
            "people exactly (ids beyond 2^53 round to the same value); store the ids as whole numbers "
            "(BIGINT, HUGEINT, DECIMAL) or as text"
        )
    return con.read_csv(
        str(source.path),
        header=True,
        sep=_delimiter(source.path),
        auto_type_candidates=_CSV_TYPES,
        dtype={id_column: "VARCHAR"},
    )


def _delimiter(path: Path) -> str:
    return "\t" if path.suffix.lower() == ".tsv" else ","


def _duckdb_table(con: duckdb.DuckDBPyConnection, source: Source) -> duckdb.DuckDBPyRelation:
    # Read through a separate read-only connection and hand over Arrow: attaching would need the path in SQL.
    try:
        other = duckdb.connect(str(source.path), read_only=True)
    except duckdb.Error as exc:
        raise DataError(f"{source.label}: cannot open the DuckDB database: {first_line(exc)}") from None
    try:
        tables = {row[0] for row in other.execute("select table_name from information_schema.tables").fetchall()}
        if source.table not in tables:
            raise DataError(_no_such_table(source, tables))
        arrow = other.table(quote_identifier(source.table or "")).to_arrow_table()
    finally:
        other.close()
    return con.from_arrow(arrow)


def _sqlite_table(source: Source) -> pa.Table:
    """Load a SQLite table into Arrow with Python's sqlite3 (DuckDB's sqlite extension needs a download)."""
    uri = f"{source.path.resolve().as_uri()}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise DataError(f"{source.label}: cannot open the SQLite database: {exc}") from None
    try:
        tables = {r[0] for r in db.execute("select name from sqlite_master where type in ('table','view')")}
        if source.table not in tables:
            raise DataError(_no_such_table(source, tables))
        # The table name is checked against the catalogue above, and quoted.
        cursor = db.execute(f"select * from {quote_identifier(source.table or '')}")
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
    except sqlite3.Error as exc:
        raise DataError(f"{source.label}: cannot read the table: {exc}") from None
    finally:
        db.close()
    columns: list[Any] = list(zip(*rows, strict=True)) if rows else [[] for _ in names]
    import pyarrow as pa

    return pa.table({name: _sqlite_column(source, name, values) for name, values in zip(names, columns, strict=True)})


def _sqlite_column(source: Source, name: str, values: Any) -> pa.Array:
    """One SQLite column as Arrow; SQLite lets a column mix types, which has no single Arrow type."""
    import pyarrow as pa

    try:
        return pa.array(list(values))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        kinds = sorted({type(v).__name__ for v in values if v is not None})
        raise DataError(
            f"{source.label}: column {name!r} of table {source.table!r} mixes value types ({', '.join(kinds)}); "
            f"give it one type, e.g. UPDATE {source.table} SET {name} = CAST({name} AS INTEGER) (or AS TEXT) in "
            "SQLite, or select it with a CAST into a new table"
        ) from None


def _no_such_table(source: Source, tables: set[str]) -> str:
    return NO_SUCH_TABLE.format(source=source.label, table=source.table, path=source.path, tables=sorted(tables))


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none): errors quote only this."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _explain_read_error(source: Source, exc: duckdb.Error) -> str:
    text = str(exc)
    if "sniff" in text or "Expected Number of Columns" in text or "CSV Error" in text or "Conversion" in text:
        detail = _ragged_line(source) or "; ".join(line.strip() for line in text.splitlines()[:3] if line.strip())
        return MALFORMED_CSV.format(source=source.label, detail=detail)
    return f"{source.label}: cannot read it as {source.kind}: {first_line(exc)}"


def _ragged_line(source: Source) -> str | None:
    """Where a CSV first has a row with a different number of fields than its header (DuckDB does not say)."""
    if source.kind != "csv":
        return None
    opener: Any = gzip.open if source.path.name.lower().endswith(".gz") else open
    with opener(source.path, "rt", encoding="utf-8", errors="replace", newline="") as handle:
        reader = csv.reader(handle, delimiter=_delimiter(source.path))
        header = next(reader, [])
        for row in reader:
            if row and len(row) != len(header):
                return f"line {reader.line_num} has {len(row)} fields, the header has {len(header)}"
    return None


def explain_scan_error(sources: list[Source], exc: duckdb.Error) -> DataError:
    """A DuckDB error raised while scanning (a broken CSV row far into a file), named after its source."""
    text = str(exc)
    culprit = next((s for s in sources if str(s.path) in text or s.path.name in text), None)
    if culprit is not None:
        return DataError(_explain_read_error(culprit, exc))
    names = ", ".join(s.label for s in sources)
    return DataError(f"reading the inputs ({names}) failed: {first_line(exc)}")


def write_demo_inputs(compas_csv: Path, workdir: Path, sql_prefix: str = "demo") -> dict[str, Path]:
    """Split the bundled COMPAS file into predictions, labels and attributes Parquet files
    (``sql/<sql_prefix>_<role>.sql``: ``demo_*`` for the binary demo, ``demo_multiclass_*`` for the tiers)."""
    files = {role: workdir / f"compas_{role}.parquet" for role in DEMO_ROLES}
    with _demo_views(compas_csv, sql_prefix) as con:
        for role, path in files.items():
            con.sql(f"select * from {role}").to_parquet(str(path))
    return files


def demo_rows(compas_csv: Path, sql_prefix: str = "demo") -> pl.DataFrame:
    """The demo's three inputs joined on id, as one frame (what the engine audits; for tests and benches)."""
    with _demo_views(compas_csv, sql_prefix) as con:
        rows: pl.DataFrame = con.sql("select * from predictions join labels using (id) join attributes using (id)").pl()
        return rows


DEMO_ROLES = ("predictions", "labels", "attributes")


@contextlib.contextmanager
def _demo_views(compas_csv: Path, sql_prefix: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection with the COMPAS file as ``compas_raw`` and each demo role's SQL as a view of its name."""
    con = duckdb.connect()
    try:
        con.read_csv(str(compas_csv), header=True, sep=",").create_view("compas_raw")
        for role in DEMO_ROLES:
            con.sql(render_sql(f"{sql_prefix}_{role}")).create_view(role)
        yield con
    finally:
        con.close()
