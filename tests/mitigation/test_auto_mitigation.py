"""``mitigation: {auto: true}``: a failing audit proposes a remedy in its own report, e-mail, document and trail.

End to end through ``fairgate audit`` on the COMPAS demo inputs with a real SMTP server (aiosmtpd): group
thresholds fitted on one seeded half and judged on the other, the PDF's "Proposed mitigation" section checked
against the JSON document with pdftotext, the e-mail's text and attachment, the trail's ``mitigations`` row,
and the exit code that stays the audited model's. Refusals (retrain without its inputs: exit 2 before any
computing) and a passing audit (no proposal) are checked too.
"""

from __future__ import annotations

import email
import email.policy
import hashlib
import json
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

import joblib
import polars as pl
import pytest
import yaml
from aiosmtpd.controller import Controller
from mitigation_helpers import FEATURES, POLICY, InProcessRunner
from pdf_words import code_form_metric_names, document_numbers, page_count, page_text, unexplained_numbers
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cli import DEMO_DATA, app
from fairgate.report.format import fmt, fmt_signed, interval_text
from tasks.inputs.io import write_demo_inputs
from tasks.store import list_mitigations, show_run, verify

RACE = ["African-American", "Caucasian", "Hispanic", "Other", "Asian", "Native American"]


@pytest.fixture(autouse=True)
def _flows_use_the_session_server(prefect_server: str) -> None:
    """The audit flow and its mitigation subflow run on the one test server."""


class Inbox:
    """aiosmtpd handler keeping every message it receives."""

    def __init__(self) -> None:
        self.messages: list[email.message.EmailMessage] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
        return "250 Message accepted for delivery"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _policy(**changes: Any) -> dict[str, Any]:
    """COMPAS, race and sex, equal opportunity judged at 0.17 (the audited model's 0.30 fails it)."""
    policy: dict[str, Any] = {
        "favorable_label": 0,
        "sensitive_attributes": [
            {"name": "race", "values": RACE, "reference_group": "Caucasian"},
            {"name": "sex", "values": ["Male", "Female"], "reference_group": "Male"},
        ],
        "metrics": [{"name": "equal_opportunity_difference", "threshold": 0.17}],
        "intersectional_analysis": {"enabled": False, "min_group_size": 50},
        "reporting": {"format": ["json"]},
        "ci_cd_gate": {"critical_metrics": ["equal_opportunity_difference"]},
        "columns": {"y_true": "two_year_recid"},
        "statistics": {"n_bootstrap": 200, "seed": 0},
        "mitigation": {"auto": True, "method": "thresholds"},
    }
    policy.update(changes)
    return {"fairness_checker": policy}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_demo_inputs(DEMO_DATA, tmp_path_factory.mktemp("auto-inputs"))


def _audit(runner: InProcessRunner, inputs: dict[str, Path], policy: dict[str, Any], folder: Path) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    args = ["audit", "--policy", str(path), "--out", str(folder / "out"), "--quiet"]
    for role in ("predictions", "labels", "attributes"):
        args += [f"--{role}", str(inputs[role])]
    return runner.invoke(app, args)


@pytest.fixture(scope="module")
def auto_run(runner: InProcessRunner, inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One failing audit with auto thresholds, a PDF report and delivery to a real SMTP server."""
    folder = tmp_path_factory.mktemp("auto-run")
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=_free_port())
    controller.start()
    try:
        delivery = {
            "recipients": ["reviewers@example.org"],
            "smtp": {"host": "127.0.0.1", "port": controller.port, "security": "none"},
            "retries": 0,
        }
        result = _audit(runner, inputs, _policy(reporting={"format": ["json", "pdf"]}, delivery=delivery), folder)
    finally:
        controller.stop()
    out = folder / "out"
    (document_path,) = out.glob("fairness_*.json")
    return {"result": result, "out": out, "document": json.loads(document_path.read_text()), "inbox": inbox}


def test_the_verdict_and_exit_code_stay_the_audited_models(auto_run: dict) -> None:
    result, document = auto_run["result"], auto_run["document"]
    assert result.exit_code == 1, result.stderr
    assert document["verdict"] == "fail"
    assert document["exit_code"] == 1
    (race,) = [r for r in document["results"] if r["slicing"] == ["race"]]
    assert race["status"] == "fail"
    assert race["value"] > 0.25
    block = document["mitigation"]
    # The candidate passes where the audited model fails, and still the audit exits 1: proposed, never deployed.
    assert (block["verdict_before"], block["verdict_after"]) == ("fail", "pass")
    assert block["status"] == "proposed"
    assert block["deployed"] is False
    assert block["answers"] == document["run_id"]
    assert tuple(map(int, document["schema_version"].split("."))) >= (1, 3)  # the mitigation block since 1.3


def test_thresholds_are_fitted_on_one_half_and_judged_on_the_other(auto_run: dict) -> None:
    document = auto_run["document"]
    block = document["mitigation"]
    measured = block["measured"]
    assert measured["kind"] == "holdout"
    assert measured["share_measured"] == 0.5
    fitted = block["fitted"]
    # Every audited person is fitted on or measured, but for the small groups' people outside the measured
    # half (kept as audited, not fitted on); the measured half is about half of them.
    small = sum(g["n"] for g in fitted["unchanged_groups"])
    assert 0 <= document["n_rows"] - measured["rows_fitted"] - measured["rows_measured"] <= small
    assert abs(measured["rows_measured"] - document["n_rows"] / 2) < 150
    predictions = pl.read_parquet(block["files"]["predictions"])
    assert predictions.height == predictions["id"].n_unique() == document["n_rows"]
    assert fitted["metric"] == "equal_opportunity_difference"
    assert fitted["tolerance"] == 0.0
    assert set(fitted["groups"]) == {"African-American", "Caucasian", "Hispanic", "Other"}
    assert [g["group"] for g in fitted["unchanged_groups"]] == [{"race": "Asian"}, {"race": "Native American"}]
    assert block["focus"] == {"metric": "equal_opportunity_difference", "slicing": ["race"]}
    (race,) = [r for r in block["results"] if r["slicing"] == ["race"]]
    assert race["before"]["status"] == "fail"
    # Judged, not inconclusive: the default tolerance (0) leaves the interval room under the threshold.
    assert race["after"]["status"] == "pass"
    assert race["after"]["value"] < 0.06
    assert race["after"]["ci_high"] < 0.17
    # The measured documents are the engine's audits of the held-out rows: the block copies their results.
    after = json.loads(Path(block["files"]["audit_after"]).read_text())
    (judged,) = [r for r in after["results"] if r["slicing"] == ["race"]]
    assert judged["value"] == race["after"]["value"]
    assert after["n_rows"] == measured["rows_measured"]
    # The price on the measured people, overall and per fitted group.
    accuracy = block["accuracy"]
    assert accuracy["overall"]["change"] == pytest.approx(accuracy["overall"]["after"] - accuracy["overall"]["before"])
    assert -0.03 < accuracy["overall"]["change"] < 0.01
    assert set(accuracy["groups"]) == set(fitted["groups"])


def test_the_files_are_in_place_and_the_trail_points_to_the_audit(auto_run: dict) -> None:
    out, document = auto_run["out"], auto_run["document"]
    block = document["mitigation"]
    assert set(block["files"]) == {"thresholds", "predictions", "frontier", "audit_before", "audit_after"}
    for kind, path in block["files"].items():
        assert Path(path).parent == out
        assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == block["sha256"][kind]
    assert not list(out.glob(".partial-*"))  # moved out of the staging folder with the audit's outputs
    trail = out / "audit_trail.duckdb"
    (row,) = list_mitigations(trail)
    assert row["answers"] == document["run_id"]
    assert row["mitigation_id"] == block["run_id"]
    assert (row["method"], row["status"]) == ("thresholds", "proposed")
    assert (row["verdict_before"], row["verdict_after"]) == ("fail", "pass")
    assert row["outputs"] == {k: {"path": p, "sha256": block["sha256"][k]} for k, p in block["files"].items()}
    assert [m["mitigation_id"] for m in show_run(trail, document["run_id"])["mitigations"]] == [block["run_id"]]
    report = verify(trail)
    assert report["ok"], report["problems"]
    assert (report["runs"], report["mitigations"]) == (1, 1)


def _pdf_text(path: Path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True, text=True).stdout


def test_one_pdf_carries_the_section_with_the_documents_numbers(auto_run: dict) -> None:
    out, block = auto_run["out"], auto_run["document"]["mitigation"]
    (pdf,) = out.glob("*.pdf")  # one report: the proposal is in the audit's own, not a second one
    text = " ".join(_pdf_text(pdf).split())
    assert "Proposed mitigation: Group thresholds" in text
    assert code_form_metric_names(_pdf_text(pdf)) == []  # the fitted facts and the frontier chart name it in words
    assert not re.search(r"[a-z]\.[A-Z]", text.replace("e.g.", "")), "two sentences run together"
    assert "never deployed" in text
    assert "from FAIL to PASS" in text
    (race,) = [r for r in block["results"] if r["slicing"] == ["race"]]
    for stage in ("before", "after"):
        estimate = race[stage]
        assert f"{estimate['value']:.3f}" in text
        assert f"[{interval_text(estimate['ci_low'], estimate['ci_high'])}]" in text  # the reports' one formatter
    overall = block["accuracy"]["overall"]
    assert f"{overall['before']:.3f}" in text
    assert f"{overall['after']:.3f}" in text
    assert f"{fmt_signed(100 * overall['change'], 1)} pts" in text  # the one rule: a true minus sign
    for group, change in block["accuracy"]["groups"].items():
        assert f"{group} {change['n']:,} {change['before']:.3f} {change['after']:.3f}" in text
    assert "Fairness-accuracy frontier" in text
    assert Path(block["files"]["thresholds"]).name in text


def test_page_one_names_the_proposal_and_the_caveat_stands_beside_the_group_rules(auto_run: dict) -> None:
    """Page 1 of a mitigation.auto audit names the remedy and its held-out effect; the rules that name a race
    carry the lawfulness caveat on their own page, right after their table."""
    out, block = auto_run["out"], auto_run["document"]["mitigation"]
    (pdf,) = out.glob("*.pdf")
    page_one = " ".join(subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(pdf), "-"], check=True,
                                       capture_output=True, text=True).stdout.split())  # fmt: skip
    (race,) = [r for r in block["results"] if r["slicing"] == ["race"]]
    assert "Proposed, not deployed:" in page_one
    assert "On the held-out rows:" in page_one
    for stage in ("before", "after"):
        assert f"{race[stage]['value']:.3f}" in page_one
    assert "lawful" in page_one
    text = " ".join(_pdf_text(pdf).split())
    rules = text.index("RULE ON THE FAVOURABLE SCORE")
    caveat = text.index("check that this is lawful", rules)
    assert "Verdict before and after" in text[caveat:], "the caveat comes before the results, next to the rules"
    assert "Verdict before and after" not in text[rules:caveat]


def test_every_number_on_page_one_of_the_proposal_comes_from_the_json(auto_run: dict) -> None:
    """Page 1 of a mitigation.auto audit (the verdict, the proposal and its held-out effect): every number is the
    document's, rounded by the one formatter; the check fails when the proposal's held-out result is altered."""
    (pdf,) = auto_run["out"].glob("*.pdf")
    document = auto_run["document"]
    text = page_text(pdf)
    pages = page_count(pdf)
    assert f"Page 1 of {pages}" in text
    text = text.replace(f"Page 1 of {pages}", "")
    assert unexplained_numbers(text, document) == []
    caught = []
    for stage in ("before", "after"):
        altered = json.loads(json.dumps(document))
        (race,) = [r for r in altered["mitigation"]["results"] if r["slicing"] == ["race"]]
        printed = fmt(race[stage]["value"])
        race[stage]["value"] += 0.0707
        assert printed in text
        if printed not in document_numbers(altered):  # not printed from another of the document's numbers too
            assert printed in unexplained_numbers(text, altered), stage
            caught.append(stage)
    assert caught, "no alteration of the proposal's held-out result could be told from the page"


def test_the_email_carries_the_proposal_and_the_same_pdf(auto_run: dict) -> None:
    (message,) = auto_run["inbox"].messages
    block = auto_run["document"]["mitigation"]
    body = message.get_body(preferencelist=("plain",)).get_content()
    assert "Proposed mitigation: Group thresholds" in body
    assert block["summary"] in body
    (race,) = [r for r in block["results"] if r["slicing"] == ["race"]]
    assert f"{race['before']['value']:.3f}" in body
    assert f"{race['after']['value']:.3f}" in body
    assert "never deployed" in body
    (pdf,) = auto_run["out"].glob("*.pdf")
    attachment = next(p for p in message.iter_attachments() if p.get_content_type() == "application/pdf")
    assert attachment.get_content() == pdf.read_bytes()


def test_retrain_without_its_inputs_is_refused_before_computing(
    runner: InProcessRunner, inputs: dict[str, Path], tmp_path: Path
) -> None:
    result = _audit(runner, inputs, _policy(mitigation={"auto": True, "method": "retrain"}), tmp_path)
    assert result.exit_code == 2
    assert "mitigation.method retrain needs the retrain section" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "out").exists()  # nothing written, not even the trail


def test_thresholds_for_a_metric_it_cannot_bound_is_refused_before_computing(
    runner: InProcessRunner, inputs: dict[str, Path], tmp_path: Path
) -> None:
    policy = _policy(metrics=[{"name": "demographic_parity_difference", "threshold": 0.1}], ci_cd_gate={})
    result = _audit(runner, inputs, policy, tmp_path)
    assert result.exit_code == 2
    assert "group thresholds bound one of" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_passing_audit_proposes_nothing(runner: InProcessRunner, inputs: dict[str, Path], tmp_path: Path) -> None:
    # Equal opportunity by sex only: 0.003 on COMPAS, a pass at 0.10.
    policy = _policy(
        sensitive_attributes=[{"name": "sex", "values": ["Male", "Female"], "reference_group": "Male"}],
        metrics=[{"name": "equal_opportunity_difference", "threshold": 0.10}],
    )
    result = _audit(runner, inputs, policy, tmp_path)
    assert result.exit_code == 0, result.stderr
    out = tmp_path / "out"
    (document_path,) = out.glob("fairness_*.json")
    assert json.loads(document_path.read_text())["mitigation"] is None
    assert not list(out.glob("thresholds_*"))
    assert list_mitigations(out / "audit_trail.duckdb") == []


def test_auto_retrain_judges_both_models_on_the_evaluation_set(
    runner: InProcessRunner, inputs: dict[str, Path], compas_files: dict[str, Path], tmp_path: Path
) -> None:
    """Retraining proposed by a failing audit: ExponentiatedGradient under the policy's demographic-parity bound,
    the estimator refitted as is beside it, both judged on the evaluation set (mitigation_helpers.POLICY)."""
    estimator = tmp_path / "model.joblib"
    joblib.dump(make_pipeline(StandardScaler(), LogisticRegression()), estimator)
    policy = yaml.safe_load(POLICY)
    retrain = {"training": str(compas_files["training"]), "estimator": str(estimator)}
    retrain["evaluation"] = str(compas_files["evaluation"])
    policy["fairness_checker"]["mitigation"] = {
        "auto": True,
        "method": "retrain",
        "groups": ["race"],
        "retrain": retrain,
    }
    result = _audit(runner, inputs, policy, tmp_path)
    assert result.exit_code == 1, result.stderr
    out = tmp_path / "out"
    (document_path,) = out.glob("fairness_*.json")
    document = json.loads(document_path.read_text())
    block = document["mitigation"]
    assert (block["method"], block["status"], block["answers"]) == ("retrain", "proposed", document["run_id"])
    fitted = block["fitted"]
    assert fitted["kind"] == "exponentiated_gradient"
    assert fitted["constraint"]["family"] == "demographic_parity"
    assert fitted["features"] == FEATURES
    assert block["measured"]["kind"] == "evaluation_set"
    assert block["measured"]["rows_measured"] == pl.read_csv(compas_files["evaluation"]).height
    assert block["focus"] == {"metric": "demographic_parity_difference", "slicing": ["race"]}
    (race,) = [
        r for r in block["results"] if r["metric"] == "demographic_parity_difference" and r["slicing"] == ["race"]
    ]
    assert race["before"]["status"] == "fail"
    assert race["after"]["value"] < race["before"]["value"] / 2
    assert block["accuracy"]["overall"]["change"] < 0  # the price is shown
    assert type(joblib.load(block["files"]["model"])).__name__ == "ExponentiatedGradient"
    (row,) = list_mitigations(out / "audit_trail.duckdb")
    assert (row["answers"], row["method"]) == (document["run_id"], "retrain")
