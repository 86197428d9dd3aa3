"""``fairgate proxy`` as a user runs it: one row per person; bad input exits 2 and writes nothing."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from cli import proxy_cmd


@pytest.fixture
def app() -> typer.Typer:
    # The real app registers the same function: app.command("proxy")(proxy_cmd.proxy).
    app = typer.Typer()
    app.command("proxy")(proxy_cmd.proxy)
    app.command("noop")(lambda: None)  # a second command keeps 'proxy' as a sub-command, as in the real CLI
    return app


def run(app: typer.Typer, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["proxy", *args])


def test_bisg_writes_one_row_per_person(app: typer.Typer, tmp_path: Path) -> None:
    source = tmp_path / "people.csv"
    source.write_text("pid,last,zip\nA7,Washington,60629\nB2,Zhang,02134\nC9,Qxzvbnm,\n")
    out = tmp_path / "proxy.csv"
    result = run(
        app,
        "--method",
        "bisg",
        "--input",
        str(source),
        "--id-col",
        "pid",
        "--surname-col",
        "last",
        "--zip-col",
        "zip",
        "--out",
        str(out),
    )
    assert result.exit_code == 0, result.output
    written = pl.read_csv(out, infer_schema=False)
    assert written.columns == ["pid", "white", "black", "api", "native", "multiple", "hispanic", "fallback"]
    assert written["pid"].to_list() == ["A7", "B2", "C9"]
    # 02134 arrived as the integer 2134 from the CSV reader and was still found as ZCTA 02134.
    assert written["fallback"].to_list() == ["surname_geography", "surname_geography", "prior"]
    assert float(written["api"][1]) > 0.99


def test_india_parquet_output(app: typer.Typer, tmp_path: Path) -> None:
    source = tmp_path / "people.parquet"
    pl.DataFrame(
        {
            "id": [1, 2],
            "surname": ["Paswan", "Meena"],
            "pin": [800001, 302001],
            "state": ["Bihar", "Rajasthan"],
        }
    ).write_parquet(source)
    out = tmp_path / "proxy.parquet"
    result = run(
        app,
        "--method",
        "india",
        "--input",
        str(source),
        "--id-col",
        "id",
        "--surname-col",
        "surname",
        "--pincode-col",
        "pin",
        "--state-col",
        "state",
        "--out",
        str(out),
    )
    assert result.exit_code == 0, result.output
    written = pl.read_parquet(out)
    assert written.columns == ["id", "sc", "st", "other", "fallback"]
    assert written["sc"][0] > 0.85
    assert written["st"][1] > 0.9


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--surname-col", "surname_missing", "--zip-col", "zip"], "surname_missing"),
        (["--surname-col", "last", "--zip-col", "zipcode"], "--zip-col"),
        (["--surname-col", "zip", "--zip-col", "zip"], "holds numbers"),
        (["--surname-col", "last", "--method", "bifsg"], "--first-name-col"),
        (["--surname-col", "last", "--method", "india", "--zip-col", "zip"], "pincode"),
        (["--surname-col", "last", "--id-col", "nope"], "--id-col"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(app: typer.Typer, tmp_path: Path, args: list[str], message: str) -> None:
    source = tmp_path / "people.csv"
    source.write_text("pid,last,zip\n1,Smith,10027\n")
    out = tmp_path / "proxy.csv"
    base = {"--method": "bisg", "--id-col": "pid"}
    for i in range(0, len(args), 2):
        base[args[i]] = args[i + 1]
    flat = [x for pair in base.items() for x in pair]
    result = run(app, "--input", str(source), "--out", str(out), *flat)
    assert result.exit_code == 2, result.output
    assert message in result.output.replace("\n", "")
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == [source]


def test_float_zip_codes_are_refused(app: typer.Typer, tmp_path: Path) -> None:
    source = tmp_path / "people.parquet"
    pl.DataFrame({"pid": [1], "last": ["Zhang"], "zip": [2134.0]}).write_parquet(source)
    out = tmp_path / "proxy.csv"
    result = run(
        app,
        "--method",
        "bisg",
        "--input",
        str(source),
        "--id-col",
        "pid",
        "--surname-col",
        "last",
        "--zip-col",
        "zip",
        "--out",
        str(out),
    )
    assert result.exit_code == 2
    assert "read as text" in result.output.replace("\n", "")
    assert not out.exists()


def test_missing_input_file(app: typer.Typer, tmp_path: Path) -> None:
    out = tmp_path / "proxy.csv"
    result = run(
        app,
        "--method",
        "bisg",
        "--input",
        str(tmp_path / "nope.csv"),
        "--id-col",
        "pid",
        "--surname-col",
        "last",
        "--out",
        str(out),
    )
    assert result.exit_code == 2
    assert "does not exist" in result.output.replace("\n", "")
    assert not out.exists()


def _bisg(app: typer.Typer, source: Path, out: Path):  # type: ignore[no-untyped-def]
    return run(app, "--method", "bisg", "--input", str(source), "--id-col", "pid", "--surname-col", "last",
               "--zip-col", "zip", "--out", str(out))  # fmt: skip


@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink"])
def test_the_output_may_not_be_the_input(app: typer.Typer, tmp_path: Path, spelling: str) -> None:
    source = tmp_path / "people.csv"
    content = "pid,last,zip\nA7,Washington,60629\n"
    source.write_text(content)
    (tmp_path / "x").mkdir()
    out = {"same": source, "dotted": tmp_path / "." / "x" / ".." / "people.csv", "symlink": tmp_path / "link.csv"}
    if spelling == "symlink":
        out["symlink"].symlink_to(source)
    result = _bisg(app, source, out[spelling])
    assert result.exit_code == 2, result.output
    assert "would replace that input" in " ".join(result.output.split())
    assert source.read_text() == content


def test_twenty_digit_ids_are_written_as_given(app: typer.Typer, tmp_path: Path) -> None:
    source = tmp_path / "people.csv"
    source.write_text("pid,last,zip\n10000000000000000001,Washington,60629\n10000000000000000003,Zhang,02134\n")
    out = tmp_path / "proxy.csv"
    result = _bisg(app, source, out)
    assert result.exit_code == 0, result.output
    assert pl.read_csv(out, infer_schema=False)["pid"].to_list() == ["10000000000000000001", "10000000000000000003"]


def test_csv_cells_that_start_like_a_formula_are_written_as_text(app: typer.Typer, tmp_path: Path) -> None:
    source = tmp_path / "people.csv"
    source.write_text("pid,last,zip\n\"=cmd|' /C calc'!A0\",Washington,60629\n+1,Zhang,02134\nok,Lee,\n")
    out = tmp_path / "proxy.csv"
    assert _bisg(app, source, out).exit_code == 0
    ids = pl.read_csv(out, infer_schema=False)["pid"].to_list()
    assert ids == ["'=cmd|' /C calc'!A0", "'+1", "ok"]
