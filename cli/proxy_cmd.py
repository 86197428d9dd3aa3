"""``fairgate proxy``: infer group-membership probabilities from names and places, one row per person.

Registered in the CLI's command table (cli/__init__.py). Thin: parse options, call the proxy
tasks' plain functions, write the file atomically. Bad input exits with code 2 and writes nothing.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli import console
from cli.exits import refusing
from cli.options import SOURCE, Json
from fairgate.errors import DataError

if TYPE_CHECKING:  # imported where used: `fairgate --help` must not load polars, DuckDB and the proxy engine
    from fairgate.policy.proxy import ProxyConfig

_err = console.stderr()
_FLAGS = {
    "first_name": "--first-name-col",
    "zip": "--zip-col",
    "pincode": "--pincode-col",
    "state": "--state-col",
}


class Method(StrEnum):
    bisg = "bisg"
    bifsg = "bifsg"
    india = "india"


def proxy(
    method: Annotated[
        Method, typer.Option(help="bisg (surname + ZIP), bifsg (+ first name), india (surname + PIN/state)")
    ],
    input: Annotated[str, typer.Option("--input", help=SOURCE)],
    id_col: Annotated[str, typer.Option("--id-col", help="column identifying each person")],
    surname_col: Annotated[str, typer.Option("--surname-col", help="surname column")],
    out: Annotated[Path, typer.Option("--out", help="output file (.csv or .parquet)")],
    first_name_col: Annotated[str | None, typer.Option("--first-name-col", help="first-name column (bifsg)")] = None,
    zip_col: Annotated[str | None, typer.Option("--zip-col", help="ZIP code column (bisg, bifsg)")] = None,
    pincode_col: Annotated[str | None, typer.Option("--pincode-col", help="PIN code column (india)")] = None,
    state_col: Annotated[str | None, typer.Option("--state-col", help="state column (india)")] = None,
    as_json: Json = False,
) -> None:
    """Write one row per person: the id, a probability column per group, and the fallback used."""
    with refusing():
        written = run_proxy(
            method=method.value,
            input=input,
            id_col=id_col,
            surname_col=surname_col,
            out=out,
            first_name_col=first_name_col,
            zip_col=zip_col,
            pincode_col=pincode_col,
            state_col=state_col,
        )
    if as_json:
        sys.stdout.write(json.dumps({"out": str(out), **written}, indent=2, default=str) + "\n")
        return
    _err.print(f"wrote {written['rows']} people to {out} ({_fallback_line(written['fallbacks'])})", highlight=False)


def run_proxy(
    *,
    method: str,
    input: str,
    id_col: str,
    surname_col: str,
    out: Path,
    first_name_col: str | None = None,
    zip_col: str | None = None,
    pincode_col: str | None = None,
    state_col: str | None = None,
) -> dict[str, object]:
    """The command without typer: returns the row count and fallback counts; raises FairgateError."""
    import duckdb
    import polars as pl

    from cli.checks import check_output_folder
    from fairgate import proxy as fp
    from tasks.inputs import proxy as proxy_tasks  # CLI layer may import tasks (pyproject per-file ignore)
    from tasks.inputs.io import parse_source, refuse_overwriting, register_source
    from tasks.outputs import atomic_outputs, write_frame

    config = _config(method, surname_col, first_name_col, zip_col, pincode_col, state_col)
    if out.suffix.lower() not in (".csv", ".parquet"):
        raise DataError(f"--out {str(out)!r}: write a .csv or .parquet file")
    if not out.parent.exists():
        raise DataError(f"--out {str(out)!r}: folder {str(out.parent)!r} does not exist; create it first")
    check_output_folder(out.parent, f"--out {str(out)!r}: its folder")  # a read-only file system: refused now
    source = parse_source("input", input)
    refuse_overwriting([source], out)
    con = duckdb.connect()
    try:
        columns = register_source(con, source, "proxy_input", id_column=id_col)
        if id_col not in columns:
            raise DataError(
                f"column {id_col!r} is missing from {source.label}; columns present: {columns}. "
                "Pass the id column's name with --id-col"
            )
        frame = pl.from_arrow(con.sql("select * from proxy_input").to_arrow_table())
    except duckdb.Error as exc:
        raise DataError(f"{source.label}: cannot read it: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    assert isinstance(frame, pl.DataFrame)
    if frame.height == 0:
        raise DataError(f"{source.label} has a header but no rows; nothing to infer")
    posterior, tables = proxy_tasks.infer_posterior(frame, config, source=source.label)
    wide = fp.wide_posterior(posterior, tables.groups)
    result = (
        frame.select(id_col).with_row_index("person").join(wide, on="person", how="left").sort("person").drop("person")
    )
    with atomic_outputs():  # an interrupt while it is written leaves nothing (cli/signals.py)
        write_frame(result, out)  # CSV cells neutralised against formula injection
    return {"rows": result.height, "fallbacks": fp.coverage(posterior)["fallbacks"]}


def _config(
    method: str,
    surname_col: str,
    first_name_col: str | None,
    zip_col: str | None,
    pincode_col: str | None,
    state_col: str | None,
) -> ProxyConfig:
    from pydantic import ValidationError

    from fairgate.policy.proxy import ProxyConfig

    columns = {
        "surname": surname_col,
        "first_name": first_name_col,
        "zip": zip_col,
        "pincode": pincode_col,
        "state": state_col,
    }
    try:
        return ProxyConfig(method=method, columns=columns)  # type: ignore[arg-type]
    except ValidationError as exc:
        message = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        for setting, flag in _FLAGS.items():
            message = message.replace(f"proxy.columns.{setting}", flag).replace(f"columns.{setting}", flag)
        raise DataError(f"--method {method}: {message}") from None


def _fallback_line(fallbacks: object) -> str:
    assert isinstance(fallbacks, dict)
    return ", ".join(f"{k}: {v}" for k, v in fallbacks.items() if v)
