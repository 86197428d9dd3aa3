"""``fairgate explore`` without a browser: its refusals before starting, the guards on every request, a damaged or
missing trail as an error page (the server keeps answering), and a writer recording while the app serves."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from explore_server import record, serving

import fairgate
from fairgate.errors import FairgateError
from tasks.serve.explore_app import explore_app
from tasks.serve.guard import check_bind, served_file
from tests.engine.conftest import generate, make_policy

FAIRGATE = Path(sys.executable).with_name("fairgate")
TOKEN = "0123456789abcdef-token"


def get(url: str, host: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


def small_trail(folder: Path, runs: int = 1) -> Path:
    """A trail of ``runs`` audits of generated rows (seeded)."""
    trail = folder / "audit_trail.duckdb"
    policy = make_policy(["a"], n_bootstrap=20)
    for i in range(runs):
        result = fairgate.audit(generate(seed=i, n=1500), policy, model=fairgate.ModelInfo(name="m"), run_id=f"r{i}")
        record(trail, json.loads(result.to_json()))
    return trail


@pytest.mark.parametrize(
    ("host", "token", "words"),
    [
        ("0.0.0.0", None, "is not a loopback address"),
        ("192.168.1.5", None, "pass --token"),
        ("127.0.0.1", "short", "at least 16"),
    ],
)
def test_a_bind_that_needs_a_token_is_refused(host: str, token: str | None, words: str) -> None:
    with pytest.raises(FairgateError, match=words):
        check_bind(host, token)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.9.9.9", "::1", "localhost"])
def test_a_loopback_bind_needs_no_token(host: str) -> None:
    check_bind(host, None)
    check_bind("0.0.0.0", TOKEN)


def test_the_cli_refuses_a_bad_configuration_with_exit_2_and_one_line(tmp_path: Path) -> None:
    trail = small_trail(tmp_path)
    environment = {k: v for k, v in os.environ.items() if k != "FAIRGATE_EXPLORE_TOKEN"}
    cases = [
        (["--trail", str(trail), "--host", "0.0.0.0"], {}, "not a loopback address"),
        (["--trail", str(tmp_path)], {}, "it is a directory"),
        (["--trail", str(trail), "--reports", str(tmp_path / "none")], {}, "is not a folder"),
        (["--trail", str(trail)], {"FAIRGATE_EXPLORE_TOKEN": "short"}, "at least 16"),
    ]
    for args, extra, words in cases:
        done = subprocess.run(
            [str(FAIRGATE), "explore", *args], env=environment | extra, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("error: ")
        assert words in lines[0]


def test_without_a_token_only_a_loopback_host_is_answered(tmp_path: Path) -> None:
    trail = small_trail(tmp_path)
    with serving(explore_app(trail, tmp_path)) as base:
        assert get(base + "/")[0] == 200
        status, body = get(base + "/", host="attacker.example")  # a rebound domain name
        assert status == 403
        assert "r0" not in body


def test_report_files_only_from_the_folder(tmp_path: Path) -> None:
    folder, outside = tmp_path / "reports", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / "fairness_m.html").write_text("report")
    (folder / ".hidden.html").write_text("hidden")
    (folder / "notes.txt").write_text("text")
    (outside / "secret.html").write_text("secret")
    (folder / "out.html").symlink_to(outside / "secret.html")
    (folder / "inside.html").symlink_to(folder / "fairness_m.html")
    assert served_file(folder, "fairness_m.html") == (folder / "fairness_m.html").resolve()
    assert served_file(folder, "inside.html") == (folder / "fairness_m.html").resolve()
    refused = [".hidden.html", "notes.txt", "out.html", "../outside/secret.html", str(outside / "secret.html")]
    refused += ["", "./fairness_m.html", "a\\..\\fairness_m.html", "missing.html", "fairness_m.html\x00.txt"]
    for name in refused:
        assert served_file(folder, name) is None, name


def test_a_damaged_or_missing_trail_gives_an_error_page_and_the_server_keeps_answering(tmp_path: Path) -> None:
    trail = small_trail(tmp_path / "good")
    damaged = tmp_path / "damaged.duckdb"
    shutil.copy(trail, damaged)
    with damaged.open("r+b") as file:
        file.truncate(damaged.stat().st_size // 3)
    with serving(explore_app(damaged, tmp_path)) as base:
        for path in ("/", "/runs/r0", "/trend?model=m&metric=demographic_parity_difference"):
            status, body = get(base + path)
            assert status == 500, path
            assert "damaged" in body
            assert "Traceback" not in body
    with serving(explore_app(tmp_path / "none.duckdb", tmp_path)) as base:
        status, body = get(base + "/")
        assert status == 500
        assert "no audit trail at" in body
        assert get(base + "/runs/r0")[0] == 500  # still answering


def test_a_writer_records_while_the_app_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app holds no lock between requests: an audit recording a run is not blocked (nor waits)."""
    monkeypatch.setenv("FAIRGATE_TRAIL_WAIT_SECONDS", "2")
    trail = small_trail(tmp_path, runs=1)
    with serving(explore_app(trail, tmp_path)) as base:
        assert ">r0<" in get(base + "/")[1]
        policy = make_policy(["a"], n_bootstrap=20)
        document = fairgate.audit(generate(seed=9, n=1500), policy, model=fairgate.ModelInfo(name="m"), run_id="r9")
        record(trail, json.loads(document.to_json()))  # raises TrailBusy if the app held the trail
        status, body = get(base + "/")
        assert status == 200
        assert ">r9<" in body
