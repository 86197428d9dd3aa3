"""Issue 10: hostile inputs and configurations -> exit 2, one clear message naming what and the fix, nothing
written; found before the audit's work where the arguments alone tell (cli/checks.py).

Each case edits a private copy of the COMPAS split (``inputs`` fixture) and returns the CLI arguments and the
fragments its message must contain. The further tests cover what a CLI run cannot show cheaply: no retry
after an SMTP 535, the outbox inside the run's folder, hidden characters in group names, exit 3 for a bug.
"""

from __future__ import annotations

import json
import os
import smtplib
import sqlite3
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from pipeline_helpers import COMPAS_CSV, POLICY_PASSING, Inputs, assert_refused, run_fairgate
from pipeline_helpers import rewrite_csv as _rewrite
from typer.testing import CliRunner

import fairgate
from cli import app, audit_cmd
from cli.exits import run_guarded
from fairgate.errors import FairgateError
from fairgate.policy.delivery import DeliveryConfig
from fairgate.report import build_view
from tasks.inputs.io import parse_source
from tasks.outbound.deliver import deliver_report

Case = Callable[[Inputs], tuple[list[str], list[str]]]
SMTP_POLICY = """\
  delivery:
    recipients: [risk@example.org]
    smtp: {{host: localhost, port: 2525, security: {security}, username_env: FG_TEST_USER, password_env: {password}}}
"""


def _replace_arg(args: list[str], option: str, value: str) -> list[str]:
    args = list(args)
    args[args.index(option) + 1] = value
    return args


# --- configuration: refused before any work ---------------------------------------------------------------


def out_is_a_file(i: Inputs) -> tuple[list[str], list[str]]:
    target = i.folder / "report.txt"
    target.write_text("not a folder")
    return _replace_arg(i.args(), "--out", str(target)), ["--out", "report.txt", "is a file, not a folder"]


def out_under_a_file(i: Inputs) -> tuple[list[str], list[str]]:
    return _replace_arg(i.args(), "--out", str(i.labels / "out")), ["--out", "cannot be created", i.labels.name]


def out_not_writable(i: Inputs) -> tuple[list[str], list[str]]:
    if os.geteuid() == 0:
        pytest.skip("root writes into a 0500 folder anyway (CI runs as root); out_under_a_file covers creation")
    locked = i.folder / "locked"
    locked.mkdir(mode=0o500)
    return _replace_arg(i.args(), "--out", str(locked / "out")), ["--out", "locked", "not writable"]


def out_in_a_folder_that_refuses_folders(i: Inputs) -> tuple[list[str], list[str]]:
    # /proc takes no new folders, even from root (for whom os.access says "writable").
    return _replace_arg(i.args(), "--out", "/proc/fairgate-test/out"), ["--out", "'/proc'", "not writable"]


def trail_is_a_folder(i: Inputs) -> tuple[list[str], list[str]]:
    folder = i.folder / "trail"
    folder.mkdir()
    return i.args("--trail", str(folder)), ["--trail", "is a folder", "audit_trail.duckdb"]


def trail_is_not_a_trail(i: Inputs) -> tuple[list[str], list[str]]:
    corrupt = i.folder / "trail.duckdb"
    corrupt.write_bytes(b"this is not a database" * 100)
    return i.args("--trail", str(corrupt)), ["--trail", "trail.duckdb", "not an audit trail"]


def file_name_too_long(i: Inputs) -> tuple[list[str], list[str]]:
    long_name = str(i.folder / ("x" * 300 + ".csv"))
    return _replace_arg(i.args(), "--labels", long_name), ["--labels", "too long", "shorter name"]


def out_name_too_long(i: Inputs) -> tuple[list[str], list[str]]:
    return _replace_arg(i.args(), "--out", str(i.folder / ("o" * 300))), ["--out", "too long", "shorter name"]


def double_colon_in_a_file_name(i: Inputs) -> tuple[list[str], list[str]]:
    # labels named a::b.csv is read as that file: the error is then the attributes' (checked after it).
    odd = i.folder / "a::b.csv"
    i.labels.rename(odd)
    _rewrite(i.attributes, "select id, race, age_cat from t")
    args = _replace_arg(i.args(), "--labels", str(odd))
    return args, [i.attributes.name, "'sex'", "is missing"]


def line_break_in_model(i: Inputs) -> tuple[list[str], list[str]]:
    args = _replace_arg(i.args(), "--model", "compas\r\nBcc: everyone@example.org")
    return args, ["--model", "control character", "one line"]


def line_break_in_model_version(i: Inputs) -> tuple[list[str], list[str]]:
    return _replace_arg(i.args(), "--model-version", "1\n"), ["--model-version", "control character"]


def smtp_variable_not_set(i: Inputs) -> tuple[list[str], list[str]]:
    os.environ.pop("FG_TEST_PASSWORD_UNSET", None)
    policy = SMTP_POLICY.format(security="starttls", password="FG_TEST_PASSWORD_UNSET")
    i.policy.write_text(i.policy.read_text() + policy)
    return i.args(), ["delivery.smtp", "FG_TEST_USER", "not set", "export"]


def credentials_in_clear(i: Inputs) -> tuple[list[str], list[str]]:
    i.policy.write_text(i.policy.read_text() + SMTP_POLICY.format(security="none", password="FG_TEST_PASSWORD"))
    return i.args(), [i.policy.name, "security", "clear text", "starttls"]


# --- data: refused in the first step, naming the file and column -------------------------------------------


def sqlite_mixed_types(i: Inputs) -> tuple[list[str], list[str]]:
    database = i.folder / "warehouse.sqlite"
    rows = duckdb.connect().read_csv(str(i.labels)).fetchall()
    rows[5] = (rows[5][0], "x")
    with sqlite3.connect(database) as db:
        db.execute("create table labels (id, two_year_recid)")
        db.executemany("insert into labels values (?, ?)", rows)
    db.close()
    args = _replace_arg(i.args(), "--labels", f"{database}::labels")
    return args, ["warehouse.sqlite::labels", "'two_year_recid'", "mixes value types", "CAST"]


def ids_text_and_integer(i: Inputs) -> tuple[list[str], list[str]]:
    _rewrite(i.labels, "select 'p' || id::varchar as id, two_year_recid from t")
    return i.args(), [i.labels.name, i.predictions.name, "different types", "same way"]


def score_stored_as_text(i: Inputs) -> tuple[list[str], list[str]]:
    _rewrite(i.predictions, "select id, case when id = 5 then 'high' else score::varchar end as score, y_pred from t")
    return i.args(), [i.predictions.name, "'score'", "must hold numbers", "'high'"]


def nan_only_scores(i: Inputs) -> tuple[list[str], list[str]]:
    _rewrite(i.predictions, "select id, 'nan'::double as score, y_pred from t")
    return i.args(), [i.predictions.name, "'score'", "NaN", "7214 row(s)"]


def utf16_csv(i: Inputs) -> tuple[list[str], list[str]]:
    i.labels.write_bytes(i.labels.read_text().encode("utf-16"))
    return i.args(), [i.labels.name, "UTF-16", "not UTF-8", "iconv"]


def ragged_row(i: Inputs) -> tuple[list[str], list[str]]:
    lines = i.attributes.read_text().splitlines()
    lines[1234] += ",extra"
    i.attributes.write_text("\n".join(lines) + "\n")
    return i.args(), [i.attributes.name, "line 1235 has 5 fields, the header has 4", "broken row"]


CASES: list[Case] = [
    out_is_a_file,
    out_under_a_file,
    out_not_writable,
    out_in_a_folder_that_refuses_folders,
    trail_is_a_folder,
    trail_is_not_a_trail,
    file_name_too_long,
    out_name_too_long,
    double_colon_in_a_file_name,
    line_break_in_model,
    line_break_in_model_version,
    smtp_variable_not_set,
    credentials_in_clear,
    sqlite_mixed_types,
    ids_text_and_integer,
    score_stored_as_text,
    nan_only_scores,
    utf16_csv,
    ragged_row,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_hostile_input_exits_2_with_the_fix_and_writes_nothing(
    case: Case, runner: CliRunner, inputs: Inputs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FG_TEST_PASSWORD", "s3cret")
    monkeypatch.delenv("FG_TEST_USER", raising=False)
    monkeypatch.chdir(inputs.folder)  # a stray relative output (an outbox, a default trail) would show here
    args, expected = case(inputs)
    before = sorted(p.name for p in inputs.folder.iterdir())
    result = runner.invoke(app, args)
    message = assert_refused(result, expected, inputs, before)
    assert "s3cret" not in message


def test_configuration_is_refused_before_the_flow_starts(
    runner: CliRunner, inputs: Inputs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The up-front checks answer before any flow run starts (no Prefect, no data read)."""
    started: list[dict[str, Any]] = []

    def flow_started(parameters: dict[str, Any], **_: Any) -> None:
        started.append(parameters)
        raise AssertionError("the flow started although the configuration is invalid")

    monkeypatch.setattr(audit_cmd, "_run_flow", flow_started)
    args, expected = out_is_a_file(inputs)
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert started == []
    assert all(fragment in " ".join(result.stderr.split()) for fragment in expected)


def test_a_file_name_with_double_colons_is_that_file(tmp_path: Path) -> None:
    odd = tmp_path / "a::b.csv"
    odd.write_text("id,y\n1,0\n")
    assert parse_source("labels", str(odd)).path == odd
    assert parse_source("labels", str(odd)).table is None


def test_quiet_run_prints_no_info_line(inputs: Inputs) -> None:
    """--quiet through the installed command: a run that reaches validation prints its error and no INFO."""
    args, _ = nan_only_scores(inputs)
    completed = run_fairgate([*args, "--quiet"], cwd=inputs.folder)
    assert completed.returncode == 2, completed.stderr
    assert "INFO" not in completed.stderr
    assert "Traceback" not in completed.stderr


# --- delivery ---------------------------------------------------------------------------------------------


def _delivery(tmp_path: Path, **smtp: Any) -> DeliveryConfig:
    config: dict[str, Any] = {"recipients": ["risk@example.org"], "retries": 3, "retry_delay_seconds": 0}
    if smtp:
        config["smtp"] = {"host": "localhost", **smtp}
    return DeliveryConfig.model_validate(config)


DOC = {"run_id": "r1", "verdict": "fail", "model": {"name": "m", "version": "1"}}


def _failing_sender(error: Exception, calls: list[int]) -> Callable[[EmailMessage, Any, Any], None]:
    def sender(message: EmailMessage, smtp: Any, credentials: Any) -> None:
        calls.append(1)
        raise error

    return sender


def test_a_rejected_login_is_not_retried(tmp_path: Path) -> None:
    calls: list[int] = []
    sender = _failing_sender(smtplib.SMTPAuthenticationError(535, b"5.7.8 credentials invalid"), calls)
    delivery = _delivery(tmp_path, username_env="U", password_env="P")
    env = {"U": "user", "P": "pw"}
    outcome = deliver_report(DOC, delivery, {}, "body", None, sender=sender, environ=env, out_dir=tmp_path)
    assert outcome["status"] == "failed"
    assert len(calls) == 1
    assert "SMTPAuthenticationError" in outcome["detail"]


def test_a_dropped_connection_is_retried(tmp_path: Path) -> None:
    calls: list[int] = []
    sender = _failing_sender(smtplib.SMTPServerDisconnected("gone"), calls)
    outcome = deliver_report(DOC, _delivery(tmp_path, port=2525), {}, "body", None, sender=sender, out_dir=tmp_path)
    assert outcome["status"] == "failed"
    assert len(calls) == 4  # the first attempt and 3 retries


def test_the_outbox_is_inside_the_run_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_folder = tmp_path / "out" / ".partial-r1"
    outcome = deliver_report(DOC, _delivery(tmp_path), {}, "body", None, out_dir=run_folder)
    assert Path(outcome["eml"]).parent == run_folder / "outbox"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_security_none_without_credentials_is_allowed(tmp_path: Path) -> None:
    assert _delivery(tmp_path, security="none").smtp is not None


# --- hidden characters in group names; exit codes -------------------------------------------------------


def test_hidden_characters_in_group_names_are_shown_escaped_in_the_view() -> None:
    hostile = "Fem\u202eelam\x00"
    frame = pl.read_csv(COMPAS_CSV).select(
        pl.when(pl.col("sex") == "Female").then(pl.lit(hostile)).otherwise(pl.col("sex")).alias("sex"),
        pl.col("two_year_recid").cast(pl.Int64),
        (pl.col("decile_score") / 10).alias("score"),
        pl.col("score_text").is_in(["Medium", "High"]).cast(pl.Int64).alias("y_pred"),
    )
    policy_text = POLICY_PASSING.replace("[Male, Female]", json.dumps(["Male", hostile]))
    policy = fairgate.Policy.from_yaml(policy_text, source="policy.yaml")
    document = json.loads(fairgate.audit(frame, policy, run_id="r1").to_json())
    view = build_view(document)
    labels = [g.label for s in view.sections for g in s.groups]
    assert "Fem\\u202eelam\\x00" in labels
    assert not any("\u202e" in label or "\x00" in label for label in labels)


def test_unexpected_errors_exit_3_and_bad_input_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    def crash() -> None:
        raise RuntimeError("boom")

    def bad() -> None:
        raise FairgateError("the policy says no")

    with pytest.raises(SystemExit) as crashed:
        run_guarded(crash)
    assert crashed.value.code == 3
    assert "this is a bug" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        run_guarded(bad)
    assert refused.value.code == 2
    refusal = capsys.readouterr().err
    assert "the policy says no" in refusal
    assert "this is a bug" not in refusal
