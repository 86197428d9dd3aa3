"""mlflow is an optional extra: fairgate imports and audits without it, and asking for the registry without it
is refused with the install command."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from fairgate.errors import FairgateError
from flows.registry_watch import registry_watch
from flows.registry_writeback import registry_writeback
from tasks.outbound.registry import MLFLOW_MISSING, mlflow_client

INSTALL = "pip install 'fairgate[mlflow]'"
_WITHOUT_MLFLOW = """\
import importlib.abc, sys

class _NoMlflow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "mlflow" or name.startswith("mlflow."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, _NoMlflow())
"""


def test_fairgate_imports_without_mlflow() -> None:
    code = _WITHOUT_MLFLOW + textwrap.dedent(
        """
        import cli, flows.audit, flows.registry_watch, flows.registry_writeback, tasks.outbound.registry
        from fairgate.errors import FairgateError
        try:
            tasks.outbound.registry.mlflow_client("http://127.0.0.1:5000")
        except FairgateError as exc:
            print(exc.message)
        assert not any(name.split(".")[0] == "mlflow" for name in sys.modules)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert INSTALL in done.stdout


def test_the_message_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow now raises ImportError
    with pytest.raises(FairgateError, match="pip install 'fairgate\\[mlflow\\]'"):
        mlflow_client("http://127.0.0.1:5000")
    assert INSTALL in MLFLOW_MISSING


def test_the_flows_fail_with_the_install_command(prefect_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)
    registry = {"kind": "mlflow", "tracking_uri": "http://127.0.0.1:5000", "name": "m", "version": "1"}
    states = [
        registry_watch(tracking_uri="http://127.0.0.1:5000", return_state=True),
        registry_writeback({"verdict": "pass", "run_id": "r", "registry": registry}, return_state=True),
    ]
    for state in states:
        assert state.is_failed()
        assert state.name == "InvalidInput"
        assert INSTALL in str(state.message)
