"""The proposed-mitigation block's parts without a flow: the report view (order, suppression, the inconclusive
explanation), the policy section's checks and hash, and the trail's ``mitigations`` chain (tamper-evident)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import fairgate
from fairgate.errors import PolicyError
from fairgate.mitigation.proposal import completed_proposal, paired_results, slim_results
from fairgate.policy.outcomes import Outcomes
from fairgate.report.mitigation import mitigation_view
from tasks.store import list_mitigations, record_mitigation, verify

BASE_POLICY = """
fairness_checker:
  sensitive_attributes: [{name: race}, {name: sex}]
  metrics: [{name: equal_opportunity_difference, threshold: 0.1}]
"""


def _result(slicing: list[str], value: float, low: float, high: float, status: str) -> dict[str, Any]:
    return {
        "metric": "equal_opportunity_difference",
        "slicing": slicing,
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "status": status,
        "threshold": 0.1,
        "direction": "lower_is_better",
        "critical": True,
    }


def _block(**changes: Any) -> dict[str, Any]:
    before = {
        "verdict": "fail",
        "results": [_result(["sex"], 0.02, 0, 0.05, "pass"), _result(["race"], 0.3, 0.2, 0.4, "fail")],
    }
    after = {
        "verdict": "pass",
        "results": [_result(["sex"], 0.03, 0, 0.06, "pass"), _result(["race"], 0.03, 0, 0.15, "inconclusive")],
    }
    block = {
        "method": "thresholds",
        "run_id": "m1",
        "answers": "a1",
        "status": "proposed",
        "summary": "s",
        "deployed": False,
        "note": "never deployed",
        "fitted": {
            "kind": "group_thresholds",
            "metric": "equal_opportunity_difference",
            "constraint": "equal_opportunity",
            "tolerance": 0.0,
            "objective": "accuracy",
            "attributes": ["race"],
            "score_scale": "favourable score",
            "groups": {"A": {"threshold": 0.4}, "B": {"t_low": 0.3, "t_high": 0.6, "p_high": 0.25}},
            "unchanged_groups": [],
        },
        "measured": {
            "kind": "holdout",
            "share_measured": 0.5,
            "seed": 0,
            "rows_fitted": 500,
            "rows_measured": 505,
            "note": "n",
        },
        "focus": {"metric": "equal_opportunity_difference", "slicing": ["race"]},
        "verdict_before": "fail",
        "verdict_after": "pass",
        "results": paired_results(before, after),
        "accuracy": {
            "measure": "accuracy",
            "overall": {"n": 505, "before": 0.7, "after": 0.68, "change": -0.02},
            "groups": {
                "A": {"n": 498, "before": 0.7, "after": 0.69, "change": -0.01},
                "B": {"n": 7, "before": 0.5, "after": 0.4, "change": -0.1},
            },
        },
        "frontier": None,
        "files": {"thresholds": "out/t.json"},
        "sha256": {"thresholds": "ab" * 32},
    }
    block.update(changes)
    return block


def test_the_view_puts_the_targeted_result_first_and_explains_inconclusive() -> None:
    view = mitigation_view(_block(), Outcomes(), min_cell_size=10)
    assert view is not None
    assert [r.slicing_label for r in view.results] == ["race", "sex"]
    assert view.results[0].focus
    assert view.results[0].changed
    assert view.n_pdf_results == 1  # sex keeps its status: listed in the HTML only
    assert "0.300 [0.200–0.400] FAIL → 0.030 [0.000–0.150] INCONCLUSIVE" in view.headline
    assert "505 measured people" in view.headline
    assert view.fitted_rows == [
        ["A", "favourable above 0.4000"],
        ["B", "favourable above 0.6000 with probability 0.250, else above 0.3000"],
    ]


def test_groups_under_the_minimum_cell_size_are_suppressed() -> None:
    view = mitigation_view(_block(), Outcomes(), min_cell_size=10)
    assert view is not None
    rows = {g.label: g for g in view.groups}
    assert rows["A"].change_text == "\u22121.0 pts"  # the one rule: a true minus sign
    assert rows["B"].suppressed
    assert (rows["B"].n_text, rows["B"].before_text, rows["B"].after_text) == ("suppressed", "suppressed", "suppressed")


def test_groups_kept_as_audited_print_no_small_size() -> None:
    fitted = _block()["fitted"] | {
        "unchanged_groups": [{"group": {"race": "C"}, "n": 18}, {"group": {"race": "D"}, "n": 40}]
    }
    view = mitigation_view(_block(fitted=fitted), Outcomes(), min_cell_size=20)
    assert view is not None
    (kept,) = [f.value for f in view.fitted_facts if f.key.startswith("kept as audited")]
    assert "18" not in kept  # 1 to k-1 people: the one label, as in every table
    assert "C (n = suppressed)" in kept
    assert "D (n = 40)" in kept


def test_a_candidates_audit_completes_the_proposal() -> None:
    before = {"verdict": "fail", "results": [_result(["race"], 0.3, 0.2, 0.4, "fail")]}
    document = {"verdict": "pass", "results": [_result(["race"], 0.01, 0.0, 0.08, "pass")]}
    proposal = {k: v for k, v in _block().items() if k not in ("results", "verdict_before", "verdict_after")}
    block = completed_proposal(proposal | {"before": slim_results(before)}, document)
    assert (block["verdict_before"], block["verdict_after"]) == ("fail", "pass")
    assert block["results"][0]["after"]["value"] == 0.01
    assert block["summary"] == "Group thresholds turn the verdict on the audited people from FAIL to PASS."
    from fairgate.document.mitigation import MitigationBlock

    MitigationBlock.model_validate(block)


def test_the_policy_section_keeps_old_hashes_and_refuses_retrain_without_inputs() -> None:
    plain = fairgate.Policy.from_yaml(BASE_POLICY)
    assert plain.mitigation is None
    assert "mitigation" not in plain.canonical_json()  # a policy without the section keeps its hash
    auto = fairgate.Policy.from_yaml(BASE_POLICY + "  mitigation: {auto: true}\n")
    assert auto.sha256() != plain.sha256()
    with pytest.raises(PolicyError, match=r"fairness_checker\.mitigation: mitigation\.method retrain needs"):
        fairgate.Policy.from_yaml(BASE_POLICY + "  mitigation: {auto: true, method: retrain}\n")
    with pytest.raises(PolicyError, match=r"mitigation\.holdout"):
        fairgate.Policy.from_yaml(BASE_POLICY + "  mitigation: {auto: true, holdout: 1.5}\n")


def _record(trail: Path, mitigation_id: str) -> dict[str, Any]:
    return record_mitigation(
        trail,
        mitigation_id=mitigation_id,
        answers="run-1",
        method="thresholds",
        status="proposed",
        verdict_before="fail",
        verdict_after="pass",
        outputs={"thresholds": {"path": "out/t.json", "sha256": "ab" * 32}},
    )


def test_the_mitigations_chain_shows_an_edit_and_a_deletion(tmp_path: Path) -> None:
    trail = tmp_path / "trail.duckdb"
    assert _record(trail, "m1")["seq"] == 1
    assert _record(trail, "m2")["seq"] == 2
    assert [r["mitigation_id"] for r in list_mitigations(trail, answers="run-1")] == ["m1", "m2"]
    report = verify(trail)
    assert report["ok"], report["problems"]
    assert report["mitigations"] == 2
    con = duckdb.connect(str(trail))
    con.execute("update mitigations set verdict_after = 'fail' where seq = 1")
    con.close()
    problems = verify(trail)["problems"]
    assert problems == ["mitigations: mitigation 1 was altered after recording"]
    con = duckdb.connect(str(trail))
    con.execute("update mitigations set verdict_after = 'pass' where seq = 1")
    con.execute("delete from mitigations where seq = 1")
    con.close()
    assert verify(trail)["problems"] == [
        "mitigations: the chain breaks at mitigation 2: a mitigation was deleted or edited"
    ]
