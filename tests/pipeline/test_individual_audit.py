"""Individual fairness end to end: ``fairgate audit --features --counterfactual`` through the real flow.

COMPAS split into the three inputs plus the people's numeric features (priors, age, juvenile counts); the
counterfactual decisions are COMPAS's with a known share of women's decisions changed. Bad fourth inputs are
refused with exit 2, a message naming the file and the fix, and nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import jsonschema
import numpy as np
import pytest
from aif360.sklearn.metrics import consistency_score as aif360_consistency_score
from pipeline_helpers import COMPAS_CSV, POLICY_PASSING, InProcessRunner, Inputs, assert_refused, rewrite_csv

from cli import app
from fairgate.document import SCHEMA_PATH

FEATURES = ["priors_count", "age", "juv_fel_count", "juv_misd_count", "juv_other_count"]
SECTION = """\
  individual_fairness:
    features: [priors_count, age, juv_fel_count, juv_misd_count, juv_other_count]
    k: 5
    min_consistency: 0.5
    max_flip_rate: 0.02
"""


def _write_fourth_inputs(folder: Path, flip_share: float) -> tuple[Path, Path]:
    """features.csv (id + the numeric features) and counterfactual.csv (women's decisions changed at random)."""
    con = duckdb.connect()
    con.read_csv(str(COMPAS_CSV), header=True, sep=",").create_view("compas")
    features = folder / "features.csv"
    con.sql(f"select id, {', '.join(FEATURES)} from compas").to_csv(str(features))
    rows = con.sql("select id, sex, cast(score_text in ('Medium', 'High') as integer) as y_pred from compas").df()
    con.close()
    rng = np.random.default_rng(7)
    flip = (rows["sex"] == "Female").to_numpy() & (rng.random(len(rows)) < flip_share)
    rows["y_pred"] = np.where(flip, 1 - rows["y_pred"], rows["y_pred"])
    counterfactual = folder / "counterfactual.csv"
    rows[["id", "y_pred"]].to_csv(counterfactual, index=False)
    return features, counterfactual


@pytest.fixture
def individual_inputs(inputs: Inputs) -> tuple[Inputs, Path, Path]:
    inputs.policy.write_text(POLICY_PASSING + SECTION)
    features, counterfactual = _write_fourth_inputs(inputs.folder, flip_share=0.06)
    return inputs, features, counterfactual


def _expected_consistency() -> float:
    con = duckdb.connect()
    frame = con.sql(f"select * from read_csv('{COMPAS_CSV}', header = true) order by id").df()
    con.close()
    x = frame[FEATURES].to_numpy(dtype=float)
    y = frame["score_text"].isin(["Medium", "High"]).to_numpy().astype(int)
    return float(aif360_consistency_score(x, y, n_neighbors=5))


def test_audit_with_features_and_counterfactual(
    individual_inputs: tuple[Inputs, Path, Path], runner: InProcessRunner
) -> None:
    inputs, features, counterfactual = individual_inputs
    args = inputs.args("--features", str(features), "--counterfactual", str(counterfactual), "--json")
    result = runner.invoke(app, args)
    # 6% of women's decisions change with the attribute (limit 2%): the gate fails on that, exit 1.
    assert result.exit_code == 1, result.stderr
    document = json.loads(result.stdout)
    block = document["individual_fairness"]
    # The people in id order, as AIF360 would get them from the same files.
    assert abs(block["consistency"]["value"] - _expected_consistency()) <= 1e-9
    assert block["consistency"]["features"] == FEATURES
    results = {(r["metric"], tuple(r["slicing"])): r for r in document["results"]}
    assert results[("consistency", ())]["status"] == "pass"
    assert results[("consistency", ("sex",))]["status"] == "pass"
    flips = results[("counterfactual_flip_rate", ("sex",))]
    assert flips["status"] == "fail"
    assert flips["worst_group"] == {"sex": "Female"}
    assert document["verdict_detail"]["n_tests"] == sum("p_value_violation" in r for r in document["results"])
    women = next(g for g in block["counterfactual"]["groups"] if g["group"] == {"sex": "Female"})
    assert 0.04 < women["flip_rate"] < 0.08
    assert women["to_favorable"]["n"] + women["to_unfavorable"]["n"] == women["flips"]
    # The fourth and fifth inputs are recorded with their hashes, and their checks with the validation.
    assert set(document["inputs"]) >= {"features", "counterfactual"}
    assert len(document["inputs"]["features"]["sha256"]) == 64
    checked = {c["input"] for c in document["validation"]["checks"]}
    assert str(features) in checked
    assert str(counterfactual) in checked


def _refused(runner: InProcessRunner, inputs: Inputs, extra: list[str], expected: list[str]) -> None:
    before = sorted(p.name for p in inputs.folder.iterdir())
    assert_refused(runner.invoke(app, inputs.args(*extra)), expected, inputs, before)


def test_features_missing_an_audited_id_are_refused(
    individual_inputs: tuple[Inputs, Path, Path], runner: InProcessRunner
) -> None:
    inputs, features, _ = individual_inputs
    rewrite_csv(features, "select * from t where id not in (5, 9)")
    _refused(runner, inputs, ["--features", str(features)], [features.name, "no row for 2 audited people", "Fix"])


def test_non_numeric_and_missing_features_are_refused(
    individual_inputs: tuple[Inputs, Path, Path], runner: InProcessRunner
) -> None:
    inputs, features, _ = individual_inputs
    rewrite_csv(features, "select * replace (case when id = 10 then 'unknown' else age::varchar end as age) from t")
    _refused(runner, inputs, ["--features", str(features)], [features.name, "'age'", "not numbers", "Fix"])
    _write_fourth_inputs(inputs.folder, flip_share=0.06)  # fresh features, then one age left empty
    rewrite_csv(features, "select * replace (case when id = 10 then null else age end as age) from t")
    _refused(runner, inputs, ["--features", str(features)], [features.name, "'age'", "1 missing", "Fix"])


def test_counterfactual_with_other_ids_is_refused(
    individual_inputs: tuple[Inputs, Path, Path], runner: InProcessRunner
) -> None:
    inputs, features, counterfactual = individual_inputs
    rewrite_csv(counterfactual, "select * from t union all select 99999999 as id, 1 as y_pred")
    extra = ["--features", str(features), "--counterfactual", str(counterfactual)]
    _refused(runner, inputs, extra, [counterfactual.name, "1 ids that are not audited people", "99999999"])


def test_inputs_and_policy_section_must_come_together(
    individual_inputs: tuple[Inputs, Path, Path], runner: InProcessRunner
) -> None:
    inputs, features, counterfactual = individual_inputs
    _refused(runner, inputs, [], ["individual_fairness section", "--features FILE"])
    _refused(runner, inputs, ["--counterfactual", str(counterfactual)], ["--counterfactual needs --features"])
    inputs.policy.write_text(POLICY_PASSING)
    _refused(runner, inputs, ["--features", str(features)], ["--features needs an individual_fairness section"])


@pytest.mark.parametrize(
    ("check", "threshold", "section", "needs"),
    [
        ("consistency", 0.7, "individual_fairness: {features: all numeric, k: 5, min_consistency: 0.7}", "--features"),
        (
            "counterfactual_flip_rate",
            0.05,
            "individual_fairness: {features: all numeric, k: 5, max_flip_rate: 0.05}",
            "--features FILE and --counterfactual FILE",
        ),
    ],
)
def test_a_check_written_as_a_metric_is_refused_with_where_it_goes(
    inputs: Inputs, runner: InProcessRunner, check: str, threshold: float, section: str, needs: str
) -> None:
    """consistency / counterfactual_flip_rate under metrics: exit 2 naming the entry, the section and its YAML."""
    rule = f"    - {{name: {check}, threshold: {threshold}}}\n"
    inputs.policy.write_text(POLICY_PASSING.replace("  reporting:", rule + "  reporting:"))
    expected = [
        str(inputs.policy),
        "fairness_checker.metrics.2",
        f"{check!r} is an individual-fairness check, not a group metric",
        "configured in the policy's individual_fairness: section, not under metrics:",
        f"Remove it from metrics and write '{section}'",
        needs,
    ]
    _refused(runner, inputs, [], expected)
    assert "unknown metric" not in runner.invoke(app, inputs.args()).stderr


def test_a_sampled_audit_says_it_is_an_estimate(
    individual_inputs: tuple[Inputs, Path, Path], runner: InProcessRunner
) -> None:
    """sample_people below COMPAS's 7,214 people: the value is estimated, recorded as such in the JSON and HTML."""
    inputs, features, _ = individual_inputs
    sampled = SECTION + "    sample_people: 3000\n    seed: 4\n"
    inputs.policy.write_text(POLICY_PASSING.replace("format: [json]", "format: [json, html]") + sampled)
    result = runner.invoke(app, inputs.args("--features", str(features), "--json"))
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["schema_version"] == "1.10"
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    block = document["individual_fairness"]["consistency"]
    assert block["sampled"] == {"people_sampled": 3000, "people": 7214, "seed": 4}
    assert block["n"] == 3000
    assert sum(g["n"] for g in block["groups"]) == 3000
    # The seeded estimate's interval holds AIF360's exact value over everyone.
    assert block["ci_low"] <= _expected_consistency() <= block["ci_high"]
    assert block["ci_high"] - block["ci_low"] < 0.05
    (html,) = [p for p in inputs.out.glob("*.html") if not p.name.endswith(".explorer.html")]  # the report
    text = " ".join(html.read_text().split())
    assert "estimated from a seeded random sample of 3,000 of 7,214 people (seed 4" in text


@pytest.mark.parametrize(
    ("value", "fragments"),
    [
        ("500", ["individual_fairness.sample_people", "a whole number of people, at least 1,000 (got 500)"]),
        ("2500.5", ["individual_fairness.sample_people", "(got 2500.5)", "leave the key out to query everyone"]),
        ("'many'", ["individual_fairness.sample_people", "(got 'many')", "sample_people: 100000"]),
    ],
)
def test_a_bad_sample_size_is_refused(
    individual_inputs: tuple[Inputs, Path, Path], runner: InProcessRunner, value: str, fragments: list[str]
) -> None:
    inputs, features, _ = individual_inputs
    inputs.policy.write_text(POLICY_PASSING + SECTION + f"    sample_people: {value}\n")
    _refused(runner, inputs, ["--features", str(features)], [str(inputs.policy), *fragments])
