"""Windowed cubes in the trail: a window summed from stored period cubes equals the cube of its re-read rows
(real COMPAS data, by screening week); a rebuilt period supersedes the stored one and the chain still verifies;
edits to either show; the monitoring policy section's checks."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import duckdb
import polars as pl
import pytest

import fairgate
from fairgate.engine.columns import PERSON_SQ, SCORE_SUM, WEIGHT, WEIGHT_SQ
from fairgate.monitoring.windows import PeriodCube, period_end, sum_cubes, window_periods
from tasks.store import verify
from tasks.store.monitor import MonitoringRecord, current_period_cubes, record_monitoring

SHARED_DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
COMPAS_CSV = SHARED_DATA / "compas" / "compas-scores-two-years.csv"
POLICY = """\
fairness_checker:
  favorable_label: 0
  sensitive_attributes:
    - {name: race, values: [African-American, Caucasian, Hispanic, Other, Asian, Native American],
       reference_group: Caucasian}
    - {name: sex, values: [Male, Female], reference_group: Male}
    - {name: age_cat, values: [Less than 25, 25 - 45, Greater than 45]}
  metrics:
    - {name: equal_opportunity_difference, threshold: 0.1}
  monitoring: {period: week}
"""
FLOATS = [WEIGHT, WEIGHT_SQ, PERSON_SQ, SCORE_SUM]


@pytest.fixture(scope="module")
def compas_weeks() -> pl.DataFrame:
    """COMPAS rows with the week of their screening date (the data's own timestamps, 2013-2014)."""
    con = duckdb.connect()
    frame = pl.from_arrow(
        con.sql(
            "select two_year_recid as y_true, decile_score / 10.0 as score, "
            "cast(score_text in ('Medium', 'High') as integer) as y_pred, race, sex, age_cat, "
            "cast(date_trunc('week', cast(compas_screening_date as date)) as date) as week "
            f" from read_csv('{COMPAS_CSV}')"
        ).to_arrow_table()
    )
    assert isinstance(frame, pl.DataFrame)
    return frame


def _store(trail: Path, policy: fairgate.Policy, rows: pl.DataFrame, run_id: str = "r1") -> None:
    periods = []
    for (week,), part in rows.sort("week").group_by(["week"], maintain_order=True):
        cube = fairgate.build_cube(part.drop("week"), policy, exact_auc=False)
        periods.append(PeriodCube(week, period_end(week, "week"), cube, part.height, part.height))
    record_monitoring(trail, MonitoringRecord(run_id, "compas", {"predictions": "x"}, periods))


def test_a_window_of_stored_cubes_equals_the_cube_of_its_rows(compas_weeks: pl.DataFrame, tmp_path: Path) -> None:
    policy = fairgate.Policy.from_yaml(POLICY.replace("{period: week}", "{period: week, windows: [28, 91]}"))
    trail = tmp_path / "trail.duckdb"
    _store(trail, policy, compas_weeks)
    stored = current_period_cubes(trail, "compas")
    assert len(stored) == compas_weeks["week"].n_unique() > 50
    night = date(2013, 6, 5)
    for window in (28, 91):
        inside = window_periods(stored, window, night, policy)
        assert len(inside) == window // 7
        summed = sum_cubes(p.cube for p in inside)
        assert summed is not None
        weeks = [p.start for p in inside]
        reread = compas_weeks.filter(pl.col("week").is_in(weeks)).drop("week")
        direct = fairgate.build_cube(reread, policy, exact_auc=False)
        assert summed.cells.schema == direct.cells.schema
        counts = [c for c in direct.cells.columns if c not in FLOATS]
        assert summed.cells.select(counts).equals(direct.cells.select(counts))  # exact: same cells, same counts
        for column in FLOATS:  # float sums: equal up to the order of addition
            assert (summed.cells[column] - direct.cells[column]).abs().max() < 1e-9
        assert summed.n_rows == reread.height
        # And so are the judged metrics computed from it.
        a = fairgate.compute_slicing(summed, ("race",), policy).results[0]
        b = fairgate.compute_slicing(direct, ("race",), policy).results[0]
        assert a["value"] == pytest.approx(b["value"], abs=1e-12)


def test_a_rebuilt_period_supersedes_the_stored_one_and_the_chain_verifies(
    compas_weeks: pl.DataFrame, tmp_path: Path
) -> None:
    policy = fairgate.Policy.from_yaml(POLICY)
    trail = tmp_path / "trail.duckdb"
    early = compas_weeks.filter(pl.col("week") < date(2013, 2, 1))
    _store(trail, policy, early)
    first = current_period_cubes(trail, "compas")
    week = first[1].start
    # Late labels: the week's rows again, now with every label (before: half of them were missing).
    rows = early.filter(pl.col("week") == week)
    half = rows.head(rows.height // 2).drop("week")
    _store(trail, policy, rows.head(rows.height // 2), run_id="early")  # a second version first ...
    cube = fairgate.build_cube(rows.drop("week"), policy, exact_auc=False)
    record_monitoring(
        trail,
        MonitoringRecord("late", "compas", {"labels": "y"}, [PeriodCube(week, week, cube, rows.height, rows.height)]),
    )
    current = {p.start: p for p in current_period_cubes(trail, "compas")}
    assert current[week].version == 3
    assert current[week].cube.n_rows == rows.height != half.height
    assert len(current) == len(first)
    report = verify(trail)
    assert report["ok"], report["problems"]
    assert report["period_cubes"] == len(first) + 2
    con = duckdb.connect(str(trail))
    versions = con.execute(
        "select version, supersedes, status, superseded_by, seq from period_cubes where period_start = ? order by seq",
        [week.isoformat()],
    ).fetchall()
    assert [(v[0], v[1], v[2]) for v in versions] == [(1, None, "superseded"), (2, 1, "superseded"), (3, 2, "current")]
    assert versions[0][3] == versions[1][4]
    assert versions[1][3] == versions[2][4]
    # Marking an old version current again (to resurrect its numbers) shows ...
    con.execute("update period_cubes set status = 'current', superseded_by = null where seq = ?", [versions[0][4]])
    con.close()
    assert any("marked current" in p for p in verify(trail)["problems"])
    # ... and so does an edited cube (the status put back first).
    con = duckdb.connect(str(trail))
    con.execute(
        "update period_cubes set status = 'superseded', superseded_by = ? where seq = ?",
        [versions[1][4], versions[0][4]],
    )
    con.close()
    assert verify(trail)["ok"]
    con = duckdb.connect(str(trail))
    con.execute("update period_cubes set cube = replace(cube, '\"__rows\":[', '\"__rows\":[1') where seq = 1")
    con.close()
    assert "period_cubes: row 1 was altered after recording" in verify(trail)["problems"]


def test_the_monitoring_section_is_checked_against_the_policy() -> None:
    base = POLICY.replace("  monitoring: {period: week}\n", "")
    without = fairgate.Policy.from_yaml(base)
    assert "monitoring" not in without.canonical_json()  # a policy without the section keeps its hash
    bad = {
        "{alerts: [{metric: demographic_parity_difference, min_change: 0.05}]}": "not in metrics",
        "{alerts: [{metric: equal_opportunity_difference, slicing: [age], min_change: 0.05}]}": "not a sensitive",
        "{period: week, windows: [30]}": "not a whole number of weeks",
        "{baseline: {kind: reference_window, start: 2026-01-01}}": "needs start and end",
        "{windows: [7, 7]}": "lists a window twice",
        "{alerts: [{metric: equal_opportunity_difference, min_change: 0}]}": "min_change",
    }
    for section, expected in bad.items():
        with pytest.raises(fairgate.PolicyError) as caught:
            fairgate.Policy.from_yaml(base + f"  monitoring: {section}\n")
        assert expected in caught.value.message, caught.value.message
    weekly = fairgate.Policy.from_yaml(base + "  monitoring: {period: week}\n").monitoring
    assert weekly is not None
    assert weekly.windows == [7, 28, 91, "since_deployment"]


def test_rows_get_their_period_from_the_timestamp_or_the_night() -> None:
    from tasks.inputs.monitor_inputs import _row_periods

    policy = fairgate.Policy.from_yaml(POLICY)
    con = duckdb.connect()
    con.execute(
        "create view src_predictions as select * from (values (1, timestamp '2026-12-02 23:10:00'), "
        "(2, timestamp '2026-12-03 01:00:00'), (3, timestamp '2026-12-08 09:00:00')) t(id, timestamp)"
    )
    periods = _row_periods(con, "preds.csv", policy, None)
    assert periods.counts == {date(2026, 11, 30): 2, date(2026, 12, 7): 1}  # ISO weeks from Monday
    con.execute("create or replace view src_predictions as select 1 as id, cast(null as timestamp) as timestamp")
    with pytest.raises(fairgate.DataError, match="1 row\\(s\\) have a missing or unreadable 'timestamp'"):
        _row_periods(con, "preds.csv", policy, None)
    con.execute("create or replace view src_predictions as select 1 as id")
    with pytest.raises(fairgate.DataError, match="pass --night DATE"):
        _row_periods(con, "preds.csv", policy, None)
    assert _row_periods(con, "preds.csv", policy, date(2026, 12, 3)).counts == {date(2026, 11, 30): 1}


def test_the_shipped_monitoring_schema_is_generated_from_the_models() -> None:
    """Rerun tools/write_document_schema.py after changing fairgate/document/monitoring.py."""
    import json

    import jsonschema

    from fairgate.document.monitoring import MONITORING_SCHEMA_PATH, monitoring_json_schema

    shipped = json.loads(MONITORING_SCHEMA_PATH.read_text())
    assert shipped == monitoring_json_schema(), "stale schema: run .venv/bin/python tools/write_document_schema.py"
    jsonschema.validators.validator_for(shipped).check_schema(shipped)


def test_two_runs_of_one_night_recorded_in_a_race_store_it_once(compas_weeks: pl.DataFrame, tmp_path: Path) -> None:
    """Both runs computed against the empty trail (they ran at once); the second to take the lock stores
    nothing new, as when they run one after the other (issue 29)."""
    policy = fairgate.Policy.from_yaml(POLICY)
    trail = tmp_path / "trail.duckdb"
    week = compas_weeks.filter(pl.col("week") == compas_weeks["week"].min())
    cube = fairgate.build_cube(week.drop("week"), policy, exact_auc=False)
    start = week["week"][0]
    night = {"night": start.isoformat(), "windows": [{"window": 7, "rows": week.height}], "observations": []}
    alert = {"night": start.isoformat(), "stream": "s", "metric": "m", "slicing": "race", "group": "g",
             "statistic": 5.0, "threshold": 4.0, "change": 0.2, "detail": "d"}  # fmt: skip
    records = [
        MonitoringRecord(
            run,
            "compas",
            {"predictions": "x"},
            [PeriodCube(start, period_end(start, "week"), cube, week.height, week.height)],
            [night],
            [alert],
        )
        for run in ("first", "second")
    ]
    first = record_monitoring(trail, records[0])
    second = record_monitoring(trail, records[1])
    assert [len(first["periods"]), len(second["periods"])] == [1, 0]
    report = verify(trail)
    assert report["ok"], report["problems"]
    assert (report["period_cubes"], report["monitor_nights"], report["drift_alerts"]) == (1, 1, 1)
