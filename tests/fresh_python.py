"""Python code run by a fresh interpreter, for tests of what a process imports, forks or holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def fresh_python(
    code: str, *args: str, cwd: Path = REPO, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``code`` (with ``args`` as its ``sys.argv[1:]``) run by a fresh interpreter; ``env`` added to this one's."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
    )


def last_json(done: subprocess.CompletedProcess[str], stream: str = "stdout") -> dict[str, Any]:
    """The JSON object a fresh interpreter printed last on ``stream``, once it exited 0."""
    assert done.returncode == 0, done.stderr
    return dict(json.loads(getattr(done, stream).strip().splitlines()[-1]))
