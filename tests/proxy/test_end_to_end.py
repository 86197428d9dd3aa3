"""``fairgate audit`` with a proxy section, end to end through the CLI and the Prefect flow (fresh process).

COMPAS has names but no address: BIFSG (surname + first name) infers race; the declared race is in the
attributes file too, so the audit document shows where declared and inferred groups disagree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

pytestmark = pytest.mark.usefixtures("prefect_server")  # the session's Prefect server (tests/conftest.py)

COMPAS_CSV = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "compas" / "compas-scores-two-years.csv"

POLICY = """\
fairness_checker:
  favorable_label: 0
  sensitive_attributes:
    - {name: race, values: [African-American, Caucasian, Hispanic, Other, Asian, Native American],
       reference_group: Caucasian}
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
  intersectional_analysis: {min_group_size: 30}
  reporting: {format: [json]}
  columns: {y_true: two_year_recid, weight: proxy_weight}
  statistics: {n_bootstrap: 50}
  proxy:
    method: bifsg
    attribute: race
    mode: {mode}
    columns: {{surname: last, first_name: first}}
    labels: {{white: Caucasian, black: African-American, hispanic: Hispanic, api: Asian,
             native: Native American, multiple: Other}}
    proxy_features: {{columns: [last, age]}}
"""


def split(folder: Path) -> dict[str, Path]:
    con = duckdb.connect()
    con.read_csv(str(COMPAS_CSV), header=True, sep=",").create_view("compas")
    queries = {
        "predictions": "select id, decile_score / 10.0 as score, "
        "cast(score_text in ('Medium', 'High') as integer) as y_pred from compas",
        "labels": "select id, two_year_recid from compas",
        "attributes": "select id, race, first, last, age from compas",
    }
    paths = {}
    for role, query in queries.items():
        paths[role] = folder / f"{role}.csv"
        con.sql(query).to_csv(str(paths[role]))
    con.close()
    return paths


def audit_document(tmp_path: Path, files: dict[str, Path], policy: Path) -> dict:
    """Run ``fairgate audit`` in a fresh process, as a user would, and read the JSON document it wrote."""
    out = tmp_path / "out"
    args = ["audit", "--policy", str(policy), "--out", str(out), "--quiet"]
    for role in ("predictions", "labels", "attributes"):
        args += [f"--{role}", str(files[role])]
    done = subprocess.run(
        [str(Path(sys.executable).parent / "fairgate"), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "160"},
    )
    assert done.returncode in (0, 1), done.stderr
    (path,) = out.glob("fairness_*.json")
    return json.loads(path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["probabilistic", "most_likely"])
def test_audit_on_inferred_race(tmp_path: Path, mode: str) -> None:
    files = split(tmp_path)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.replace("{mode}", mode).replace("{{", "{").replace("}}", "}"))
    document = audit_document(tmp_path, files, policy)
    proxy = document["proxy"]
    assert proxy["method"] == "bifsg"
    assert proxy["mode"] == mode
    assert proxy["coverage"]["n_people"] == 7214
    assert "estimates" in proxy["caveats"]
    assert proxy["declared_vs_inferred"]["n_compared"] == 7214
    flagged = {(f["feature"], f["attribute"]) for f in proxy["proxy_features"] if f["flag"]}
    assert ("last", "race (inferred)") in flagged
    race = {g["group"]["race"]: g["n"] for g in document["groups"] if g["slicing"] == ["race"]}
    attenuation = proxy["attenuation"]
    assert attenuation["attenuated"] is True
    assert attenuation["mode"] == mode
    (entry,) = attenuation["metrics"]
    assert entry["metric"] == "disparate_impact_ratio"
    assert 0 <= entry["naive_value"] <= 1
    assert "attenuation_factor" in entry
    assert len(attenuation["mixing_matrix"]) == 6
    if mode == "probabilistic":
        # Expected group sizes: sums of membership probabilities, summing to the number of people. The
        # audited n is Kish's effective size, at most the rows (people) with weight in the group.
        assert sum(proxy["expected_group_sizes"].values()) == pytest.approx(7214)
        rows = {g["group"]["race"]: g["rows"] for g in document["groups"] if g["slicing"] == ["race"]}
        assert all(0 < race[g] <= rows[g] for g in race)
    else:
        assert sum(race.values()) == proxy["most_likely"]["assigned"] < 7214


@pytest.mark.slow
def test_probabilistic_mode_without_a_weight_column_gets_one(tmp_path: Path) -> None:
    """The flow names the weight column itself: the user need not know the cube sums weights."""
    files = split(tmp_path)
    policy = tmp_path / "policy.yaml"
    text = POLICY.replace("{mode}", "probabilistic").replace("{{", "{").replace("}}", "}")
    policy.write_text(text.replace(", weight: proxy_weight", ""))
    document = audit_document(tmp_path, files, policy)
    assert document["weighted"] is True
    assert document["policy"]["columns"]["weight"] == "proxy_weight"
    assert document["proxy"]["mode"] == "probabilistic"
