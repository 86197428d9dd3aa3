"""Hostile round two, the refusals: invalid configuration is exit 2 at load (never a crash, exit 3, after the
work), and every refusal is one ``error:`` line, the last line on stderr, without a traceback.

In-process cases (CliRunner) check the exit code, the message and that nothing was written; the installed
command, in a fresh process, checks what a user sees: one error line, last, no echo of it by Prefect's logs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import date

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
