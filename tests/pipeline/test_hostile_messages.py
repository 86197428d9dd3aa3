"""Hostile round two, the refusals: invalid configuration is exit 2 at load (never a crash, exit 3, after the
work), and every refusal is one ``error:`` line, the last line on stderr, without a traceback.

In-process cases (CliRunner) check the exit code, the message and that nothing was written; the installed
command, in a fresh process, checks what a user sees: one error line, last, no echo of it by Prefect's logs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import date
from pathlib import Path

import duckdb
import pytest
from pipeline_helpers import Inputs, assert_refused, run_fairgate
from typer.testing import CliRunner

from cli import app
from fairgate.errors import DataError, FairgateError
from fairgate.monitoring.windows import check_nights
from flows.monitor import _night

Case = Callable[[Inputs], tuple[list[str], list[str]]]


def _add_to_policy(i: Inputs, text: str) -> None:
    i.policy.write_text(i.policy.read_text() + text)


def memory_limit_one_byte(i: Inputs) -> tuple[list[str], list[str]]:
    _add_to_policy(i, "  execution: {memory_limit: 1B, streaming: always}\n")
    return i.args(), ["execution.memory_limit", "'1B' is too small", "at least '64MB'"]


def memory_limit_zero(i: Inputs) -> tuple[list[str], list[str]]:
    _add_to_policy(i, "  execution: {memory_limit: 0GB}\n")
    return i.args(), ["execution.memory_limit", "'0GB' is too small"]


def infinite_delays(i: Inputs) -> tuple[list[str], list[str]]:
    _add_to_policy(
        i,
        "  delivery:\n    recipients: [a@example.org]\n    retry_delay_seconds: .inf\n"
        "    smtp: {host: localhost, security: none, timeout_seconds: .inf}\n",
    )
    return i.args(), ["delivery.smtp.timeout_seconds: must be a finite number", "delivery.retry_delay_seconds"]


def negative_seed(i: Inputs) -> tuple[list[str], list[str]]:
    i.policy.write_text(i.policy.read_text().replace("n_bootstrap: 100", "n_bootstrap: 100, seed: -1"))
    return i.args(), ["statistics.seed", "greater than or equal to 0"]


def score_is_a_list(i: Inputs) -> tuple[list[str], list[str]]:
    listed = i.folder / "predictions.parquet"
    con = duckdb.connect()
    con.read_csv(str(i.predictions)).create_view("t")
    con.sql("select id, [score]::double[] as score, y_pred from t").to_parquet(str(listed))
    con.close()
    i.predictions.unlink()
    args = i.args()
    args[args.index("--predictions") + 1] = str(listed)
    return args, ["'score'", "predictions.parquet", "must hold numbers", "read as double[]", "'[0."]


CASES: list[Case] = [memory_limit_one_byte, memory_limit_zero, infinite_delays, negative_seed, score_is_a_list]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_invalid_configuration_exits_2_in_one_line(case: Case, runner: CliRunner, inputs: Inputs) -> None:
    args, expected = case(inputs)
    before = sorted(p.name for p in inputs.folder.iterdir())
    result = runner.invoke(app, args)
    assert_refused(result, expected, inputs, before)
    assert result.stderr.count("error:") == 1


def test_a_malformed_prefect_api_url_is_refused_before_any_work(
    runner: CliRunner, inputs: Inputs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "::not a url::")
    before = sorted(p.name for p in inputs.folder.iterdir())
    result = runner.invoke(app, inputs.args())
    assert_refused(result, ["PREFECT_API_URL '::not a url::' is not an http(s) URL", "unset it"], inputs, before)


@pytest.mark.parametrize("night", [date(1, 1, 1), date(1899, 12, 31), date(9999, 12, 31)])
def test_nights_outside_the_calendar_a_monitor_can_date_are_refused(night: date) -> None:
    with pytest.raises(DataError, match="outside 1900-01-01 to 9998-12-31"):
        check_nights(night, date(2026, 12, 1), "column 'timestamp'")
    with pytest.raises(FairgateError, match="--night"):
        _night(night.isoformat())
    check_nights(date(1900, 1, 1), date(9998, 12, 31), "column 'timestamp'")


def test_the_error_is_the_last_line_and_said_once(inputs: Inputs) -> None:
    """The installed command without --quiet: Prefect's INFO lines come first, its clean-up's too, then the one
    error line; the task and flow log lines that only repeated it are gone from the terminal."""
    args, expected = score_is_a_list(inputs)
    completed = run_fairgate(args, cwd=inputs.folder)
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: column 'score'"), completed.stderr
    assert sum("must hold numbers" in line for line in lines) == 1, completed.stderr
    assert not inputs.out.exists()
    assert os.listdir(inputs.folder)  # the inputs are still there
    assert all(fragment in lines[-1] for fragment in expected)


# --- a very wide attributes file: its unused columns cost nothing --------------------------------------------


def _widen(path: Path, extra: int, rows: int | None = None) -> None:
    con = duckdb.connect()
    con.read_csv(str(path)).create_view("t")
    columns = ", ".join(f"(id * {k}) % 7 as x{k}" for k in range(extra))
    limit = f" limit {rows}" if rows else ""
    data = con.sql(f"select *, {columns} from t{limit}").to_arrow_table()
    con.close()
    out = duckdb.connect()
    out.from_arrow(data).to_csv(str(path))
    out.close()


def test_a_wide_attributes_file_is_read_only_where_needed(compas_split: dict[str, Path], tmp_path: Path) -> None:
    """300 extra columns: staging keeps the id and the attributes the policy names, the header is still known
    whole, and the staged attributes are those of the narrow file."""
    from pipeline_helpers import POLICY_PASSING

    import fairgate
    from tasks.inputs.align import stage

    wide = tmp_path / "attributes.csv"
    wide.write_bytes(compas_split["attributes"].read_bytes())
    _widen(wide, 300)
    policy = fairgate.Policy.from_yaml(POLICY_PASSING)
    inputs = (str(compas_split["predictions"]), str(compas_split["labels"]))
    staged = stage(policy, *inputs, str(wide))
    narrow = stage(policy, *inputs, str(compas_split["attributes"]))
    assert staged.con.sql("select * from src_attributes limit 0").columns == ["id", "sex"]
    query = "select * from stg_attributes order by id"
    assert staged.con.sql(query).fetchall() == narrow.con.sql(query).fetchall()
    assert staged.sha256["attributes"] != narrow.sha256["attributes"]  # the file as given is what is hashed


def test_a_wide_file_with_a_missing_attribute_names_it(compas_split: dict[str, Path], tmp_path: Path) -> None:
    from pipeline_helpers import POLICY_PASSING

    import fairgate
    from tasks.inputs.align import stage

    wide = tmp_path / "attributes.csv"
    wide.write_bytes(compas_split["attributes"].read_bytes())
    _widen(wide, 300, rows=50)
    policy = fairgate.Policy.from_yaml(POLICY_PASSING.replace("name: sex", "name: gender"))
    with pytest.raises(DataError, match="column 'gender' is missing from") as caught:
        stage(policy, str(compas_split["predictions"]), str(compas_split["labels"]), str(wide))
    assert "'x299'" in caught.value.message  # the columns present are the file's, not the narrowed copy's


def test_a_ragged_row_in_a_wide_file_is_still_named(compas_split: dict[str, Path], tmp_path: Path) -> None:
    from pipeline_helpers import POLICY_PASSING

    import fairgate
    from tasks.inputs.align import stage

    wide = tmp_path / "attributes.csv"
    wide.write_bytes(compas_split["attributes"].read_bytes())
    _widen(wide, 300, rows=50)
    lines = wide.read_text().splitlines()
    lines[20] += ",extra"
    wide.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="line 21 has 305 fields, the header has 304"):
        stage(
            fairgate.Policy.from_yaml(POLICY_PASSING),
            str(compas_split["predictions"]),
            str(compas_split["labels"]),
            str(wide),
        )
