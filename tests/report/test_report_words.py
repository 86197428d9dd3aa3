"""The report in the policy's words (issue 11): outcome words in the policy and the document, every rate's text
derived from them, the use-case priority naming the right error rate, and the wording fixes."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import compas_frame, demo_policy

import fairgate
from fairgate.document import AuditDocument
from fairgate.errors import PolicyError
from fairgate.mitigation.advice import priority_note
from fairgate.policy.outcomes import RATE_DEFINITIONS, Outcomes, rate_phrase, wrong_decision_rate
from fairgate.report import build_view
from fairgate.report.glossary import rate_formula
from fairgate.report.model import Cell, GroupRow
from fairgate.report.sections import LARGE_SHARE, furthest
from tasks.outputs import write_outputs

COMPAS_WORDS = Outcomes(
    favorable_decision="not flagged high-risk",
    unfavorable_decision="flagged high-risk",
    favorable_truth="did not reoffend",
    unfavorable_truth="reoffended",
)
WRONGLY_FLAGGED = "FNR (flagged high-risk among those who did not reoffend)"
POLICY = """
fairness_checker:
  sensitive_attributes: [{name: sex, values: [Male, Female], reference_group: Male}]
  metrics: [{name: disparate_impact_ratio, threshold: 0.8}]
"""


# ------------------------------------------------------------------------------------------- policy + document
def test_policy_outcomes_default_to_neutral_words_and_reject_unknown_keys() -> None:
    policy = fairgate.Policy.from_yaml(POLICY)
    assert policy.outcomes == Outcomes()
    assert not policy.outcomes.named
    assert rate_phrase("false_negative_rate", policy.outcomes) == (
        "given the unfavourable decision among those who had the favourable outcome"
    )
    # A policy without the section keeps the hash it had before the section existed (trails, trends).
    assert "outcomes" not in policy.canonical_json()
    named = fairgate.Policy.from_yaml(POLICY + "  outcomes: {favorable_decision: approved}\n")
    assert named.sha256() != policy.sha256()
    bad = POLICY + "  outcomes: {favourable_decision: approved}\n"  # British spelling of the key: unknown
    with pytest.raises(PolicyError, match=r"fairness_checker\.outcomes\.favourable_decision: unknown key"):
        fairgate.Policy.from_yaml(bad)


def test_the_demo_policy_names_its_outcomes_and_the_document_records_them(compas_doc: dict[str, Any]) -> None:
    assert demo_policy().outcomes == COMPAS_WORDS
    assert tuple(map(int, compas_doc["schema_version"].split("."))) >= (1, 2)  # outcomes since 1.2
    assert compas_doc["outcomes"] == {"favorable_label": 0, **COMPAS_WORDS.model_dump(), "named": True}
    assert compas_doc["policy"]["outcomes"] == COMPAS_WORDS.model_dump()
    # A 1.1 document (no outcomes block) still reads, and takes the words from its policy echo.
    old = {k: v for k, v in compas_doc.items() if k != "outcomes"}
    view = build_view(AuditDocument.model_validate(old))
    assert view.rate_phrases["false_negative_rate"] == "flagged high-risk among those who did not reoffend"


# ---------------------------------------------------------------------------------------------- derivation
def test_every_rate_phrase_follows_the_confusion_cells_it_counts() -> None:
    # The textbook definitions with favourable = positive; the phrases and formulas must agree with them.
    textbook = {
        "true_positive_rate": "TP / (TP + FN)",
        "false_positive_rate": "FP / (FP + TN)",
        "false_negative_rate": "FN / (TP + FN)",
        "true_negative_rate": "TN / (FP + TN)",
        "positive_predictive_value": "TP / (TP + FP)",
        "false_discovery_rate": "FP / (TP + FP)",
        "negative_predictive_value": "TN / (FN + TN)",
        "false_omission_rate": "FN / (FN + TN)",
        "selection_rate": "(TP + FP) / n",
        "base_rate": "(TP + FN) / n",
    }
    assert {m: rate_formula(m) for m in RATE_DEFINITIONS} == textbook
    assert rate_phrase("false_positive_rate", COMPAS_WORDS) == "not flagged high-risk among those who reoffended"
    assert rate_phrase("false_omission_rate", COMPAS_WORDS) == (
        "share who did not reoffend among those flagged high-risk"
    )


def test_the_wrongly_flagged_rate_is_derived_not_hard_coded() -> None:
    assert wrong_decision_rate(favourable=False) == "false_negative_rate"
    note = priority_note("pretrial_risk_assessment", COMPAS_WORDS)
    assert WRONGLY_FLAGGED in note["note"]
    assert "false positive" not in note["note"].lower()
    assert note["priority_metrics"][:2] == ["false_negative_rate_difference", "equal_opportunity_difference"]
    # Other words, same derivation: a lender's wrongly denied applicants.
    lender = Outcomes(
        favorable_decision="approved",
        unfavorable_decision="denied",
        favorable_truth="repaid",
        unfavorable_truth="defaulted",
    )
    fraud = priority_note("fraud", lender)["note"]
    assert "wrongly denied" in fraud
    assert "FNR (denied among those who repaid)" in fraud


def test_the_compas_view_names_every_error_rate_in_the_policys_words(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc)
    assert WRONGLY_FLAGGED in view.use_case_note
    assert view.priority_metrics[:2] == [f"FNR difference {WRONGLY_FLAGGED[4:]}", "Equal opportunity difference"]
    actions = {a.metric_label: a for a in view.actions}
    assert actions["Equal opportunity difference"].prioritised
    assert "flagged high-risk among those who did not reoffend" in actions["Equal opportunity difference"].summary
    curves = view.calibration[0]
    assert curves.x_label == "Predicted chance: did not reoffend (1 − model score)"
    assert curves.y_label == "Observed share who did not reoffend"
    assert view.roc[0].x_label == "FPR – not flagged high-risk among those who reoffended"


def test_every_error_rate_column_in_the_compas_report_has_its_words(compas_report: dict[str, Path]) -> None:
    html = compas_report["html"].read_text()
    pattern = r'(<table class="groups[^"]*">.*?</table>)\s*<p class="fineprint">.*?</p>\s*<p[^>]*>(.*?)</p>'
    tables = re.findall(pattern, html, re.S)
    assert len(tables) == html.count('<table class="groups')
    words = {"TPR": "true_positive_rate", "FPR": "false_positive_rate", "FNR": "false_negative_rate"}
    words |= {"PPV": "positive_predictive_value", "Selection rate": "selection_rate", "Base rate": "base_rate"}
    checked = 0
    for table, legend in tables:
        for column in re.findall(r'<th scope="col" class="num">([^<]+)</th>', table):
            if column in words:
                assert f"<strong>{column}</strong>: {rate_phrase(words[column], COMPAS_WORDS)}" in legend
                checked += 1
    assert checked > 2 * len(tables)


# -------------------------------------------------------------------------------------------------- wording
def test_worst_off_names_the_adverse_side_of_each_rate(compas_doc: dict[str, Any]) -> None:
    """The worst-off subgroup is on the side where its people get fewer favourable decisions for their outcomes
    (fairgate/engine/metrics.py, GroupMetric.higher_is_better): the highest miss rates (FNR, FOR) and the
    highest bar (TNR, PPV), the lowest benefit of the doubt (FPR, FDR)."""
    view = build_view(compas_doc)
    sides = {"FPR": "lowest", "FDR": "lowest", "FNR": "highest", "FOR": "highest", "ECE": "highest", "Theil": "highest"}
    seen = set()
    for note in view.worst_subgroups:
        for short, side in sides.items():
            if re.search(rf": \w+ {short}\b", note.text):
                assert re.search(rf": {side} {short}\b", note.text), note.text
                seen.add(short)
    assert {"FPR", "FNR", "FDR", "FOR"} <= seen


def test_most_severe_is_furthest_past_its_threshold_and_every_failing_metric_is_listed(
    compas_doc: dict[str, Any],
) -> None:
    view = build_view(compas_doc)
    worst = max(view.failures, key=lambda r: r.severity)
    assert f"{worst.metric_label} on {worst.slicing_label} = {worst.value_text}" in view.verdict_sentence
    assert "relative to the threshold" in view.verdict_sentence
    failing = {r["metric"] for r in compas_doc["results"] if r["status"] == "fail"}
    assert {r.metric for r in view.headline_failures} == failing
    severities = [r.severity for r in view.headline_failures]
    assert severities == sorted(severities, reverse=True)
    # The critical metric (listed first elsewhere) does not take the sentence: another failure is further past.
    assert not worst.critical
    assert view.failures[0].critical


def test_the_page_pointer_names_the_page_of_the_recommendations(compas_report: dict[str, Path]) -> None:
    if shutil.which("pdftotext") is None:
        pytest.skip("poppler-utils not installed")
    text = subprocess.run(["pdftotext", "-layout", str(compas_report["pdf"]), "-"], capture_output=True, text=True)
    pages = text.stdout.split("\f")
    pointer = re.search(r"more action\(s\) are listed under Recommendations \(page (\d+)\)", text.stdout)
    assert pointer, "no page pointer in the PDF"
    target = pages[int(pointer.group(1)) - 1]
    assert re.search(r"^\s*Recommendations\s*$", target, re.M)


def test_the_policy_shown_names_the_output_folder_used(compas_doc: dict[str, Any]) -> None:
    doc = {**compas_doc, "output_dir": "/tmp/elsewhere"}
    view = build_view(doc)
    assert "output_dir: /tmp/elsewhere" in view.policy_text
    assert "the policy file says ./fairness_reports/" in view.policy_text
    same = {**compas_doc, "output_dir": "./fairness_reports/"}
    assert "policy file says" not in build_view(same).policy_text


@pytest.mark.parametrize(("formats", "junit"), [(["json"], False), (["json", "junit"], True)])
def test_junit_is_written_only_when_the_policy_asks(
    compas_doc: dict[str, Any], tmp_path: Path, formats: list[str], junit: bool
) -> None:
    doc = copy.deepcopy(compas_doc)
    doc["policy"]["reporting"]["format"] = formats
    written = write_outputs.fn(doc, tmp_path)
    assert ("junit" in written) is junit
    assert bool(list(tmp_path.glob("*.junit.xml"))) is junit
    assert json.loads(Path(written["json"]).read_text())["run_id"] == doc["run_id"]


def _row(label: str, n: int, value: float) -> GroupRow:
    return GroupRow(label, {"g": label}, n, str(n), False, True, False, [Cell(f"{value:.3f}", "", value)])


def test_the_pdf_intersection_table_is_ordered_as_its_caption_says_and_keeps_large_groups() -> None:
    # 40 groups: 39 small ones spread around 0.5, one with 1,512 people at the median.
    rows = [_row(f"g{i}", 20, 0.5 + (i - 20) / 100) for i in range(39)] + [_row("big", 1512, 0.5)]
    shown = furthest(sorted(rows, key=lambda g: -(g.n or 0)), 30)
    distances = [abs((g.cells[0].value or 0) - 0.5) for g in shown[:30]]
    assert distances == sorted(distances, reverse=True)
    assert "big" in [g.label for g in shown]
    assert LARGE_SHARE * sum(g.n or 0 for g in rows) <= 1512
    few = rows[:5]
    assert furthest(few, 30) == few  # all fit: unchanged, in the given (size) order


# ---------------------------------------------------------------------------------------------- few events
@pytest.fixture(scope="module")
def small_groups_doc() -> dict[str, Any]:
    """COMPAS with min_group_size 3: intersections of a few people are judged by size, not by events."""
    policy = demo_policy()
    policy = policy.model_copy(
        update={"intersectional_analysis": policy.intersectional_analysis.model_copy(update={"min_group_size": 3})}
    )
    result = fairgate.audit(compas_frame(), policy, model=fairgate.ModelInfo(name="compas", version="small"))
    return json.loads(result.to_json())


def test_results_on_few_events_are_not_judged_and_say_so_without_naming_suppressed_groups(
    small_groups_doc: dict[str, Any],
) -> None:
    from tasks.render.report import render_html

    few = [r for r in small_groups_doc["results"] if r["status"] == "insufficient_data"]
    assert few, "the engine judged results resting on 1-3 events"
    view = build_view(small_groups_doc, min_cell_size=10)
    assert {(k.key) for k in view.few_events} == {
        f"{r.metric_label} on {r.slicing_label}" for r in view.undecided if r.status == "insufficient_data"
    }
    assert not any(r.status == "fail" for r in view.headline_failures if "rests on fewer" in r.reason)
    html = render_html(view, charts={})
    section = html.split('id="insufficient"')[1]
    assert "statistics.min_events" in section
    # Suppressed groups (fewer than 10 people): no event count of theirs anywhere in the report; a reason that
    # states one leaves the group unnamed.
    suppressed = [g for g in small_groups_doc["groups"] if g["n"] < 10 and len(g["slicing"]) > 1]
    assert suppressed
    for g in suppressed:
        label = ", ".join(f"{a}={g['group'][a]}" for a in g["slicing"])
        assert not re.search(re.escape(label) + r" \(\d", html), label
    assert "a group whose rates are withheld" in section


def test_a_judged_error_rate_difference_is_labelled_in_the_policys_words(compas_doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(compas_doc)
    for r in doc["results"]:
        if r["metric"] == "predictive_parity_difference":
            r["metric"] = "false_positive_rate_difference"
    view = build_view(doc)
    label = "FPR difference (not flagged high-risk among those who reoffended)"
    assert label in view.scorecard.metric_labels
    assert {r.metric_label for r in view.failures if r.metric == "false_positive_rate_difference"} == {label}
    assert label in {a.metric_label for a in view.actions}


@pytest.mark.parametrize(
    ("named", "guidance"),
    [
        ("credit_scoring", "In lending"),
        ("Credit Scoring", "In lending"),
        ("healthcare-triage", "In healthcare"),
        ("pretrial_risk", "In criminal justice"),
        ("resume screening", "In hiring"),
        ("insurance_pricing", "In insurance"),
    ],
)
def test_the_use_cases_users_name_get_their_guidance(named: str, guidance: str) -> None:
    note = priority_note(named)["note"]
    assert note.startswith(guidance), note
    assert "no built-in guidance" not in note


def test_lending_guidance_names_the_rbi_fair_practices_code() -> None:
    assert "Fair Practices Code" in priority_note("lending")["note"]
    assert "has no built-in guidance" in priority_note("astrology")["note"]
