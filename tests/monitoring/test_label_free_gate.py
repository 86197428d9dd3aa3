"""``fairgate monitor run`` without labels under the policy's ``labels.estimated_results``, end to end.

The simulated deployment of bench/monitor_label_free.py (calibrated scores, group a Beta(2, 3), group b
Beta(3, 2); decision score >= 0.5): their true positive rates are far apart, so equal opportunity at 0.05 fails
whether it is measured or estimated, while demographic parity at 0.5 passes (selection rates 0.31 and 0.69).
A night of those people without labels exits 1 under ``judge`` (as the same night with its labels does: a
measured failure) and not under ``report_only`` (the estimate is shown apart, the measured parity passes).
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import polars as pl
import pytest
from bench_scripts import load_bench
from monitor_helpers import monitor_command, record_deployment_audit, run_night, write_night

NIGHT = date(2026, 11, 30)  # a Monday: the night's rows are one weekly period
POLICY = """\
fairness_checker:
  sensitive_attributes: [{name: g, reference_group: a}]
  metrics:
    - {name: demographic_parity_difference, threshold: 0.5}
    - {name: equal_opportunity_difference, threshold: 0.05}
  statistics: {n_bootstrap: 50, seed: 2}
  reporting: {format: [json]}
  labels: {estimated_results: %s}
  monitoring: {period: week, windows: [7]}
"""


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("monitor_label_free")


def _deployment(folder: Path, bench: ModuleType, rule: str) -> tuple[Path, Path]:
    """The policy and a trail holding the labelled deployment audit (its reliability bins: the reference)."""
    folder.mkdir(parents=True)
    (folder / "policy.yaml").write_text(POLICY % rule)
    trail = folder / "trail.duckdb"
    rows = bench.people(np.random.default_rng(11), 20_000, False)
    document = record_deployment_audit(rows, folder / "policy.yaml", trail, model="credit")
    assert document["curves"]["calibration"]
    return folder / "policy.yaml", trail


def _night(folder: Path, bench: ModuleType, labels: bool) -> list[str]:
    """One night of 4,000 people (seeded): predictions and attributes, and the labels when ``labels``."""
    rows = bench.people(np.random.default_rng(12), 4_000, False).with_row_index("id")
    start = datetime.combine(NIGHT, datetime.min.time())
    rows = rows.with_columns(pl.lit(start + timedelta(hours=12)).alias("timestamp"))
    return write_night(rows, folder, ["g"], labels)


def _monitor(runner: Any, folder: Path, bench: ModuleType, rule: str, labels: bool) -> tuple[Any, dict[str, Any]]:
    policy, trail = _deployment(folder, bench, rule)
    command = monitor_command(policy, folder / "out", trail, model="credit")
    result, path = run_night(runner, [*command, *_night(folder, bench, labels)], folder / "out")
    return result, json.loads(path.read_text())


def _eo(window: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in window["results"] if r["metric"] == "equal_opportunity_difference")


def test_an_estimated_failure_fails_the_night_under_judge_only(
    tmp_path: Path, runner: Any, bench: ModuleType, prefect_server: str
) -> None:
    measured, measured_doc = _monitor(runner, tmp_path / "measured", bench, "judge", labels=True)
    assert measured_doc["labels_given"] is True
    (labelled,) = measured_doc["windows"]
    assert _eo(labelled)["status"] == "fail"
    assert measured.exit_code == 1, measured.output  # a measured failure fails the night

    judged, judged_doc = _monitor(runner, tmp_path / "judge", bench, "judge", labels=False)
    (estimated,) = judged_doc["estimated_windows"]
    assert _eo(estimated)["estimated"] is True
    assert _eo(estimated)["status"] == "fail"
    assert estimated["verdict"] == "fail"
    assert judged_doc["headline"]["windows"] == "fail"
    assert judged.exit_code == measured.exit_code == judged_doc["exit_code"], judged.output
    assert "counted in the verdict" in " ".join(judged.output.split())

    shown, shown_doc = _monitor(runner, tmp_path / "report_only", bench, "report_only", labels=False)
    (apart,) = shown_doc["estimated_windows"]
    assert _eo(apart)["status"] == "fail"  # the same estimate, shown apart
    parity = next(r for r in apart["results"] if r["metric"] == "demographic_parity_difference")
    assert parity["estimated"] is False
    assert parity["status"] == "pass"
    assert apart["n_failed"] == 0
    assert shown_doc["headline"]["windows"] != "fail"
    assert shown.exit_code == shown_doc["exit_code"] == 0, shown.output
    assert "shown apart, not counted" in " ".join(shown.output.split())
