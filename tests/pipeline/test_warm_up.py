"""Great Expectations' import runs in a background thread started with the flow (tasks/validate.py ``warm_up``):
one thread however often it is asked for, one ephemeral context whichever thread asks first, and nothing imported
before it is asked for. In a fresh interpreter, so that GE is not already loaded by another test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_WARM_UP = """
import json, sys, threading
from tasks import validate
before = "great_expectations" in sys.modules
thread = validate.warm_up()
again = validate.warm_up() is thread
context = validate._context()  # asked for while the thread imports: waits for it, does not build a second one
thread.join(timeout=300)
print(json.dumps({
    "imported_before": before,
    "same_thread": again,
    "daemon": thread.daemon,
    "finished": not thread.is_alive(),
    "one_context": validate._context() is context,
    "contexts_built": validate._ephemeral_context.cache_info().misses,
    "imported_after": "great_expectations" in sys.modules,
    "threads_left": [t.name for t in threading.enumerate() if t.name.startswith("fairgate-warm-up")],
}))
"""


def test_warm_up_imports_great_expectations_once_in_one_background_thread() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WARM_UP], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {
        "imported_before": False,
        "same_thread": True,
        "daemon": True,
        "finished": True,
        "one_context": True,
        "contexts_built": 1,
        "imported_after": True,
        "threads_left": [],
    }
