"""``fairgate audit`` without labels (estimated results) and with external labels (label-bias finding), end to end
on the real COMPAS data through the CLI and the Prefect flow."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from pipeline_helpers import InProcessRunner, Inputs, assert_refused, rewrite_csv

from cli import app
from fairgate.engine.label_checks import needs_labels


def _document(out: Path) -> dict:
    (path,) = out.glob("fairness_*.json")
    return json.loads(path.read_text())


def _without_labels(args: list[str], out: Path) -> list[str]:
    at = args.index("--labels")
    kept = args[:at] + args[at + 2 :]
    kept[kept.index("--out") + 1] = str(out)
    return kept


@pytest.mark.slow
def test_an_audit_without_labels_estimates_from_the_last_labelled_audit(
    inputs: Inputs, runner: InProcessRunner, prefect_server: str
) -> None:
    trail = inputs.folder / "trail.duckdb"
    labelled = runner.invoke(app, inputs.args("--quiet", "--trail", str(trail)))
    assert labelled.exit_code in (0, 1), labelled.output
    reference = _document(inputs.out)
    later = inputs.folder / "later"
    result = runner.invoke(app, [*_without_labels(inputs.args("--quiet", "--trail", str(trail)), later)])
    assert result.exit_code in (0, 1), result.output
    document = _document(later)
    assert document["schema_version"] == "1.10"
    assert document["label_free"]["reference_run_id"] == reference["run_id"]
    assert document["label_free"]["estimated_results"] == "report_only"
    assert document["inputs"]["labels"]["rows"] == 0
    estimated = [r for r in document["results"] if r.get("estimated")]
    assert {(r["metric"], tuple(r["slicing"])) for r in estimated} == {
        ("equal_opportunity_difference", (a,)) for a in ("race", "sex", "age_cat")
    }
    for r in estimated:
        assert r["reference_run_id"] == reference["run_id"]
        # Either an estimate with its interval, or each refused group with its reason (calibration, events).
        assert (r["value"] is not None and r["ci_low"] <= r["value"] <= r["ci_high"]) or r["estimate_reasons"]
    measured = [r for r in document["results"] if not r.get("estimated")]
    assert not any(needs_labels(r["metric"]) and r["status"] in ("pass", "fail") for r in measured)
    assert document["verdict_detail"]["n_results"] == len(measured)  # report_only: the verdict is the measured one
    assert all(set(g["metrics"]) == {"selection_rate"} for g in document["groups"])
    assert document["curves"]["calibration"] == []
    # JUnit: the estimates are skipped cases (not counted), the measured failures are failures.
    (junit,) = later.glob("*.junit.xml")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert int(suite.get("failures", "-1")) == sum(r["status"] == "fail" for r in measured)
    assert int(suite.get("skipped", "-1")) >= len(estimated)
    # Same people as the reference: where sex's EO difference is estimated, it is close to the measured one.
    sex = next(r for r in estimated if r["slicing"] == ["sex"])
    measured_sex = next(
        r for r in reference["results"] if r["metric"] == "equal_opportunity_difference" and r["slicing"] == ["sex"]
    )
    if sex["value"] is not None:
        assert abs(sex["value"] - measured_sex["value"]) < 0.1
    # The labels arrive: a labelled audit of the same predictions checks the estimates, recorded with its run.
    arrived = inputs.folder / "arrived"
    args = inputs.args("--quiet", "--trail", str(trail))
    args[args.index("--out") + 1] = str(arrived)
    assert runner.invoke(app, args).exit_code in (0, 1)
    check = _document(arrived)["label_free_check"]
    assert check["estimate_run_id"] == document["run_id"]
    compared = [r for r in estimated if r["ci_low"] is not None]
    assert check["n_compared"] == len(compared)
    for row in check["results"]:
        assert row["covered"] == (row["ci_low"] <= row["measured"] <= row["ci_high"])


@pytest.mark.slow
def test_external_labels_give_the_label_bias_finding(
    inputs: Inputs, runner: InProcessRunner, prefect_server: str
) -> None:
    external = inputs.folder / "external.csv"
    external.write_bytes(inputs.labels.read_bytes())
    # Every 10th person's label flipped: equally noisy in every group.
    rewrite_csv(
        external,
        "select * replace (case when id % 10 = 0 then 1 - two_year_recid else two_year_recid end "
        "as two_year_recid) from t",
    )
    result = runner.invoke(app, inputs.args("--quiet", "--external-labels", str(external)))
    assert result.exit_code in (0, 1), result.output
    document = _document(inputs.out)
    bias = document["label_bias"]
    assert bias["source"] == str(external)
    race = [g for g in bias["groups"] if g["slicing"] == ["race"]]
    assert {g["group"]["race"] for g in race} >= {"African-American", "Caucasian"}
    for g in race:
        assert g["ci_low"] <= g["rate"] <= g["ci_high"]
        assert g["disagreements"] == g["external_favourable_audit_not"] + g["audit_favourable_external_not"]
    findings = [r for r in document["results"] if r["metric"] == "label_disagreement_difference"]
    assert {tuple(r["slicing"]) for r in findings} == {("race",), ("sex",), ("age_cat",)}
    assert all(r["status"] != "fail" for r in findings)  # equal noise: no label-bias finding
    both = {(r["metric"], tuple(r["slicing"])) for r in bias["external_results"]}
    assert ("equal_opportunity_difference", ("race",)) in both


def test_external_labels_without_labels_are_refused(inputs: Inputs, runner: InProcessRunner) -> None:
    before = sorted(p.name for p in inputs.folder.iterdir())
    args = _without_labels(inputs.args(), inputs.out)
    result = runner.invoke(app, [*args, "--external-labels", str(inputs.labels)])
    assert_refused(result, ["--external-labels", "--labels"], inputs, before)


@pytest.mark.parametrize(
    ("document", "runner", "labels", "external", "fragment"),
    [
        ({"task": "regression"}, "local", None, None, "works on binary audits in this process only"),
        ({}, "dask", None, None, "set execution.runner: local"),
        ({}, "local", None, "ext.csv", "give the audit's own with --labels"),
    ],
)
def test_label_requests_are_checked_before_computing(
    document: dict, runner: str, labels: str | None, external: str | None, fragment: str
) -> None:
    import fairgate
    from fairgate.errors import FairgateError
    from tasks.labels import check_label_request

    base = {
        "sensitive_attributes": [{"name": "g"}],
        "metrics": [{"name": "demographic_parity_difference", "threshold": 0.1}],
    }
    if document.get("task") == "regression":
        base = {
            "task": "regression",
            "sensitive_attributes": [{"name": "g"}],
            "metrics": [{"name": "mean_prediction_difference", "threshold": 0.1}],
        }
    policy = fairgate.Policy.from_mapping({"fairness_checker": base}, source="test")
    with pytest.raises(FairgateError, match=fragment):
        check_label_request(policy, runner, labels, external)
    check_label_request(policy, "local", "labels.csv", None)  # an ordinary audit passes
