"""``fairgate mitigate --help`` starts at once: registering the command loads no heavy library (the flows,
Prefect, Fairlearn and scikit-learn are imported only when it runs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = ["prefect", "scipy", "great_expectations", "weasyprint", "matplotlib", "pandas", "sklearn", "fairlearn"]
HEAVY += ["numpy", "polars", "duckdb"]

_RUN = """
import json, sys
import cli
try:
    cli.app(["mitigate", "--help"])
except SystemExit as exc:
    code = exc.code
heavy = sorted({{name.partition(".")[0] for name in sys.modules}} & set({heavy!r}))
sys.stderr.write(json.dumps({{"code": code, "heavy": heavy}}) + "\\n")
"""


def test_mitigate_help_imports_nothing_heavy() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _RUN.format(heavy=HEAVY)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "heavy": []}
    for option in ("--method", "--training", "--evaluation", "--estimator", "--constraint", "--attribute"):
        assert option in done.stdout
