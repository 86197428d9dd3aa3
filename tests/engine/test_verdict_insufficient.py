"""An audit in which nothing could be judged has its own verdict, ``insufficient``: not a pass, not a fail.

- Every kind's engine gives it (binary and regression here: the same ``verdict_of``), with exit code 4 by default
  and 0 under ``ci_cd_gate.insufficient: allow``; an audit with something judged is untouched.
- The policy key keeps older policies' hashes at its default.
- One definition of "passed" (``fairgate.verdicts``): ``insufficient`` is never read as a pass.
- Page 1 (the report view), the e-mail body and subject, and JUnit say it, and say whether it blocks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.report.build import build_view
from fairgate.report.email import email_summary
from fairgate.verdicts import EXIT_INSUFFICIENT, exit_code_for, passed
from tasks.outputs import junit_xml


def _binary(rows: int = 400, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "g": rng.choice(["a", "b", "c"], size=rows),
            "y_true": rng.integers(0, 2, size=rows),
            "y_pred": rng.integers(0, 2, size=rows),
        }
    )


def _policy(min_group_size: int, **gate: Any) -> fairgate.Policy:
    document: dict[str, Any] = {
        "sensitive_attributes": [{"name": "g"}],
        "metrics": [{"name": "demographic_parity_difference", "threshold": 0.2}],
        "intersectional_analysis": {"min_group_size": min_group_size},
        "statistics": {"n_bootstrap": 50},
    }
    if gate:
        document["ci_cd_gate"] = gate
    return fairgate.Policy.from_mapping({"fairness_checker": document}, source="test")


@pytest.mark.parametrize(("rule", "code"), [({}, 4), ({"insufficient": "block"}, 4), ({"insufficient": "allow"}, 0)])
def test_nothing_judged_is_insufficient_with_its_exit_code(rule: dict[str, str], code: int) -> None:
    document = fairgate.audit(_binary(), _policy(10_000, **rule)).to_dict()
    assert document["verdict"] == "insufficient"
    assert document["exit_code"] == code
    assert document["verdict_detail"]["nothing_judged"] is True
    assert document["verdict_detail"]["insufficient"] == rule.get("insufficient", "block")
    assert not passed(document["verdict"])


def test_an_audit_with_results_judged_is_pass_or_fail() -> None:
    document = fairgate.audit(_binary(4000), _policy(30)).to_dict()
    assert document["verdict"] in ("pass", "fail")
    assert document["verdict_detail"]["nothing_judged"] is False


def test_regression_nothing_judged_is_insufficient() -> None:
    rng = np.random.default_rng(1)
    frame = pl.DataFrame(
        {"g": rng.choice(["a", "b"], 100), "y_true": rng.normal(size=100), "y_pred": rng.normal(size=100)}
    )
    policy = fairgate.Policy.from_mapping(
        {
            "fairness_checker": {
                "task": "regression",
                "sensitive_attributes": [{"name": "g"}],
                "metrics": [{"name": "mean_residual_difference", "threshold": 0.2}],
                "intersectional_analysis": {"min_group_size": 1000},
                "statistics": {"n_bootstrap": 50},
            }
        },
        source="test",
    )
    document = fairgate.audit(frame, policy).to_dict()
    assert (document["verdict"], document["exit_code"]) == ("insufficient", EXIT_INSUFFICIENT)


def test_the_default_rule_keeps_policy_hashes_and_allow_changes_them() -> None:
    assert _policy(30).sha256() == _policy(30, insufficient="block").sha256()
    assert _policy(30).sha256() != _policy(30, insufficient="allow").sha256()
    assert "insufficient" not in _policy(30).canonical_json()


def test_passed_and_exit_codes_are_defined_once() -> None:
    assert [passed(v) for v in ("pass", "PASS", "fail", "insufficient", "INSUFFICIENT")] == [True, True] + [False] * 3
    assert exit_code_for("insufficient", gate_enabled=False) == 0
    assert exit_code_for("fail", insufficient="allow") == 1


def test_page_one_email_and_junit_say_nothing_was_judged_and_whether_it_blocks() -> None:
    for rule, words, junit_tag in (("block", "exit code 4", "<failure"), ("allow", "exit code 0", "<skipped")):
        document = fairgate.audit(_binary(), _policy(10_000, insufficient=rule)).to_dict()
        view = build_view(document)
        assert view.verdict_text == "INSUFFICIENT"
        assert "Nothing could be judged" in view.verdict_sentence
        assert words in view.verdict_sentence
        assert f"ci_cd_gate.insufficient: {rule}" in view.verdict_sentence
        body = email_summary(view)
        assert "fairgate verdict: INSUFFICIENT" in body
        assert "Nothing could be judged" in body
        xml = junit_xml(document)
        case = xml[xml.index('name="verdict"') :]
        assert junit_tag in case.split("</testcase>")[0]
