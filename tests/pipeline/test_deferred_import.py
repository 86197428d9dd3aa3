"""Great Expectations is loaded without running Altair (tasks/validation/deferred.py), and Altair, once used, is
the real, whole package.

Each check runs in a fresh interpreter: whether a module's code ran is a property of the process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_GE_THEN_CHART = """
import json, sys
from tasks.validation.gx_suite import load_great_expectations
load_great_expectations()
before = {"altair_ran": "altair.vegalite" in sys.modules, "narwhals": "narwhals" in sys.modules}
from great_expectations.expectations.core import expect_column_kl_divergence_to_be_less_than as kl
chart = kl.alt.Chart  # the expectation's own use of Altair: loads it then
print(json.dumps(before | {"chart": f"{chart.__module__}.{chart.__qualname__}",
                           "after": "altair.vegalite" in sys.modules}))
"""

_BLOCK = """
import importlib, json, sys
from tasks.validation.deferred import deferred
import json as already
with deferred("json", "altair", "no_such_package_here"):
    import altair
    kept = sys.modules["json"] is already
    try:
        import no_such_package_here
        missing = "imported"
    except ModuleNotFoundError:
        missing = "ModuleNotFoundError"
ran_inside = "altair.vegalite" in sys.modules
finder_gone = not any(type(f).__name__ == "_DeferringFinder" for f in sys.meta_path)
version = altair.__version__
print(json.dumps({"kept": kept, "missing": missing, "ran_inside": ran_inside, "ran_after_use": "altair.vegalite"
                  in sys.modules, "same": version == importlib.import_module("altair").__version__,
                  "finder_gone": finder_gone}))
"""


def _run(code: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_great_expectations_loads_without_running_altair_and_altair_works_when_used() -> None:
    seen = _run(_GE_THEN_CHART)
    assert seen["altair_ran"] is False
    assert seen["narwhals"] is False
    assert seen["chart"] == "altair.vegalite.v6.api.Chart"
    assert seen["after"] is True


def test_deferred_leaves_imported_and_missing_packages_alone_and_removes_its_finder() -> None:
    seen = _run(_BLOCK)
    assert seen == {
        "kept": True,
        "missing": "ModuleNotFoundError",
        "ran_inside": False,
        "ran_after_use": True,
        "same": True,
        "finder_gone": True,
    }


_SCIPY_STATS_AND_MISTUNE = """
import json, sys, threading
from tasks.validation.gx_suite import load_great_expectations
load_great_expectations()
before = {"stats_ran": "scipy.stats._stats_py" in sys.modules, "mistune_ran": "mistune.markdown" in sys.modules}
from great_expectations.expectations.core import expect_column_kl_divergence_to_be_less_than as kl
from great_expectations.render.view import view
start = threading.Barrier(8)
seen = []
def first_use():
    start.wait()  # eight threads use scipy.stats at once: each waits for the whole module, none sees it half run
    from scipy.stats import fisher_exact
    seen.append(float(fisher_exact([[8, 2], [1, 5]]).pvalue))
threads = [threading.Thread(target=first_use) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
import scipy.stats
print(json.dumps(before | {"entropy": float(kl.stats.entropy([0.5, 0.5], [0.9, 0.1])), "threads": seen,
                           "same": kl.stats is scipy.stats and type(scipy.stats).__name__ == "module",
                           "markdown": view.mistune.markdown("*a*").strip()}))
"""


def test_scipy_stats_and_mistune_run_on_first_use_once_even_from_many_threads() -> None:
    seen = _run(_SCIPY_STATS_AND_MISTUNE)
    assert seen["stats_ran"] is False
    assert seen["mistune_ran"] is False
    assert abs(float(seen["entropy"]) - 0.5108256237659906) < 1e-12  # type: ignore[arg-type]
    assert seen["threads"] == [0.034965034965034975] * 8
    assert seen["same"] is True
    assert seen["markdown"] == "<p><em>a</em></p>"
