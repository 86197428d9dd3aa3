"""Fixtures for the monitoring tests: the simulated nights of bench/monitor_nights.py, a CLI runner, an SMTP
server (aiosmtpd on 127.0.0.1)."""

from __future__ import annotations

import email
import email.policy
import socket
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from typer.testing import CliRunner

# isort: off
import cli  # noqa: F401 (first: it sets the Prefect environment defaults Prefect reads when imported)
from prefect.logging.configuration import setup_logging
from bench_scripts import load_bench as load_bench_script

# isort: on

BENCH = Path(__file__).resolve().parents[2] / "bench" / "monitor_nights.py"


def load_bench() -> ModuleType:
    """bench/monitor_nights.py as a module: the tests simulate the nights the benchmark simulates."""
    return load_bench_script("monitor_nights")


@pytest.fixture(scope="session")
def nights() -> ModuleType:
    return load_bench()


class InProcessRunner(CliRunner):
    """CliRunner that re-binds Prefect's log handlers after each invocation (see tests/pipeline/pipeline_helpers)."""

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        setup_logging()
        try:
            return super().invoke(*args, **kwargs)
        finally:
            setup_logging()


@pytest.fixture(scope="session")
def runner() -> InProcessRunner:
    return InProcessRunner()


class Inbox:
    """aiosmtpd handler keeping every message it receives."""

    def __init__(self) -> None:
        self.messages: list[email.message.EmailMessage] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
        return "250 Message accepted for delivery"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def smtp_server() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=_free_port())
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()
