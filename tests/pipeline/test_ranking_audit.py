"""``task: ranking`` through the real flow and CLI: the law-school demo's inputs as files, exit codes 0/1/2.

The session's Prefect server runs every audit (conftest); hostile inputs (a gap in a list's ranks, a tie, a rank
of 0, a negative or NaN relevance, no list id column) stop the audit with exit 2, a message naming the file,
the column, the first bad list and the fix, and nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_helpers import (
    InProcessRunner,
    Inputs,
    assert_junit_and_one_verified_run,
    assert_refused,
    audit_failing_demo_policy,
    copied_inputs,
    parquet_inputs_as_csv,
    rewrite_csv,
)

from cli import app
from tasks.inputs.demo_ranking import write_ranking_demo_inputs

REPO = Path(__file__).resolve().parents[2]
LAW_CSV = REPO / "fairgate" / "data" / "law" / "law_data.csv"
DEMO_POLICY = REPO / "fairgate" / "policies" / "law_ranking.yaml"

# Sex only: the model places the two sex codes in the top 10 and gives them exposure at similar rates.
POLICY_PASSING = """\
fairness_checker:
  task: ranking
  ranking: {top_k: [10]}
  sensitive_attributes:
    - {name: sex, values: ["1", "2"]}
  metrics:
    - {name: top_k_rate_ratio, threshold: 0.7}
    - {name: exposure_ratio, threshold: 0.7}
  reporting: {format: [json, junit]}
  columns: {y_true: relevance, list_id: cohort}
  statistics: {n_bootstrap: 200}
"""


@pytest.fixture(scope="module")
def law_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo's held-out half as CSV files (the user's view: plain files)."""
    folder = tmp_path_factory.mktemp("law_ranking")
    parquet = write_ranking_demo_inputs(LAW_CSV, folder)
    return parquet_inputs_as_csv(parquet)


def test_demo_policy_fails_with_exit_1_and_writes_every_output(
    tmp_path: Path, law_files: dict[str, Path], runner: InProcessRunner
) -> None:
    inputs, document = audit_failing_demo_policy(runner, tmp_path, law_files, DEMO_POLICY, "law-shortlist")
    assert document["task"] == "ranking"
    assert document["verdict"] == "fail"
    assert document["n_rows"] == 10_922
    assert document["ranking"]["n_lists"] == 278
    assert document["ranking"]["judged_k"] == 10
    failed = {(r["metric"], tuple(r["slicing"])) for r in document["results"] if r["status"] == "fail"}
    # LSAT and GPA put Black applicants in a cohort's top 10 far less often than White applicants.
    assert ("top_k_rate_ratio", ("race",)) in failed
    race = next(r for r in document["results"] if r["metric"] == "top_k_rate_ratio" and r["slicing"] == ["race"])
    assert race["worst_group"] == {"race": "Black"}
    groups = {g["group"]["race"]: g for g in document["groups"] if g["slicing"] == ["race"]}
    assert groups["Black"]["metrics"]["top_10_rate"]["value"] < 0.5 * groups["White"]["metrics"]["top_10_rate"]["value"]
    assert document["validation"]["success"] is True
    assert any(c["expectation"] == "expect_column_pair_values_to_be_equal" for c in document["validation"]["checks"])
    curves = [c for c in document["ranking"]["curves"] if c["slicing"] == ["race"]]
    assert len(curves) == 8
    assert len(curves[0]["positions"]) == 51
    assert_junit_and_one_verified_run(inputs)


def test_a_passing_policy_exits_0(tmp_path: Path, law_files: dict[str, Path], runner: InProcessRunner) -> None:
    inputs = copied_inputs(tmp_path, law_files, POLICY_PASSING)
    result = runner.invoke(app, inputs.args("--quiet", model="law-shortlist"))
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    (document_path,) = inputs.out.glob("*.json")
    document = json.loads(document_path.read_text())
    assert document["verdict"] == "pass"
    assert {r["status"] for r in document["results"]} == {"pass"}


def rank_gap(i: Inputs) -> list[str]:
    rewrite_csv(
        i.predictions, "select id, cohort, case when cohort = 'FW-3' and rank = 40 then 41 else rank end as rank from t"
    )
    return [i.predictions.name, "list 'FW-3'", "gaps", "'rank'", "renumber each list 1, 2, ..., n"]


def rank_tie(i: Inputs) -> list[str]:
    rewrite_csv(
        i.predictions, "select id, cohort, case when cohort = 'GL-7' and rank = 2 then 1 else rank end as rank from t"
    )
    return [i.predictions.name, "list 'GL-7'", "tied ranks", "break the ties"]


def rank_zero(i: Inputs) -> list[str]:
    rewrite_csv(i.predictions, "select id, cohort, rank - case when cohort = 'NE-1' then 1 else 0 end as rank from t")
    return [i.predictions.name, "list 'NE-1'", "does not start at rank 1", "lowest rank is 0"]


def negative_relevance(i: Inputs) -> list[str]:
    rewrite_csv(
        i.labels, "select id, case when id = (select min(id) from t) then -1.0 else relevance end as relevance from t"
    )
    return [i.labels.name, "'relevance'", "is negative in 1 row(s)", "finite relevance >= 0"]


def nan_relevance(i: Inputs) -> list[str]:
    rewrite_csv(
        i.labels,
        "select id, case when id = (select max(id) from t) then 'NaN'::double else relevance end as relevance from t",
    )
    return [i.labels.name, "'relevance'", "NaN or infinite", "fix or drop those rows"]


def no_list_column(i: Inputs) -> list[str]:
    rewrite_csv(i.predictions, "select id, cohort as query, rank from t")
    return [i.predictions.name, "'cohort'", "columns.list_id"]


def binary_metric(i: Inputs) -> list[str]:
    i.policy.write_text(POLICY_PASSING.replace("top_k_rate_ratio", "demographic_parity_difference"))
    return ["demographic_parity_difference", "ranking"]


@pytest.mark.parametrize(
    "hostile",
    [rank_gap, rank_tie, rank_zero, negative_relevance, nan_relevance, no_list_column, binary_metric],
)
def test_hostile_inputs_exit_2_and_write_nothing(
    hostile: object, tmp_path: Path, law_files: dict[str, Path], runner: InProcessRunner
) -> None:
    inputs = copied_inputs(tmp_path, law_files, POLICY_PASSING)
    expected = hostile(inputs)  # type: ignore[operator]
    before = sorted(p.name for p in inputs.folder.iterdir())
    assert_refused(runner.invoke(app, inputs.args("--quiet", model="law-shortlist")), expected, inputs, before)
