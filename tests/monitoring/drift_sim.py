"""The drift tests' simulation: ``bench/drift_null.py`` loaded as a module, and its monitors cached per run.

The stable monitors are shared by the false-alarm and the unbiasedness tests (one simulation, two questions).
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType

from bench_scripts import load_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "drift_null.py"


def _bench() -> ModuleType:
    return load_bench("drift_null")


SIM = _bench()
NIGHT = 3000  # people a night (Poisson mean)
BASELINE_NIGHTS = 100  # the baseline holds 100 nights' worth: its shared error is about 1% of a night's variance
MIN_CHANGE = 0.05
SEED = 20261201


@functools.cache
def stable_monitors(count: int) -> tuple[object, ...]:
    """``count`` independent monitors of 90 nights on data that does not change."""
    return tuple(SIM.simulate(SEED + i, night=NIGHT, baseline_nights=BASELINE_NIGHTS) for i in range(count))


@functools.cache
def changed_monitors(count: int) -> tuple[object, ...]:
    """``count`` monitors whose race r2 TPR falls by MIN_CHANGE from night 46 on."""
    return tuple(
        SIM.simulate(SEED + 10**6 + i, night=NIGHT, baseline_nights=BASELINE_NIGHTS, change=MIN_CHANGE)
        for i in range(count)
    )
