"""The frame every report type shows (fairgate/report/frame.py), as an audit builds it: the same decision and
reasons as page 1, a "what to do" naming each first-page action, the model card, the command and the run."""

from __future__ import annotations

from typing import Any

from fairgate.report.build import build_view
from fairgate.report.frame import NOTHING_JUDGED, NOTHING_TO_DO, audit_frame
from fairgate.report.model import ReportFrame


def test_an_audit_builds_the_frame_every_report_type_shows(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc)
    frame = view.frame
    assert isinstance(frame, ReportFrame)
    assert (frame.decision, frame.why) == (view.verdict_text, [view.verdict_sentence])
    assert view.actions, "the COMPAS audit fails and proposes actions"
    assert len(view.actions) > 1
    assert frame.what_to_do == (
        f"What to do: {len(view.actions)} mitigations for the failed metrics, critical and prioritised ones first."
    )
    assert audit_frame(
        view.__dict__ | {"verdict": "fail"}, view.actions[:1], frame.model_card, ("", "r")
    ).what_to_do == ("What to do: 1 mitigation for the failed metric.")
    undecided = view.undecided
    assert undecided, "the COMPAS audit leaves results undecided"
    assert frame.not_judged.startswith(f"Not judged: {len(undecided)} result(s) are neither pass nor fail: ")
    for r in undecided[:6]:
        assert f"{r.metric_label} on {r.slicing_label} {r.mark}" in frame.not_judged
    # The frame's command is the one that ran; a rebuilt equivalent is the audit's own, shown as such.
    assert frame.command == (view.reproduce_command if view.reproduce_recorded else "")
    assert frame.run_id == view.run_id == compas_doc["run_id"]
    assert frame.model_card is not None
    assert len(frame.why) == 1


def test_without_actions_the_frame_says_what_the_page_says(compas_doc: dict[str, Any]) -> None:
    """No action: a pass keeps the monitoring schedule, an audit that judged nothing collects more people."""
    view = build_view(compas_doc)
    assert view.frame is not None
    card = view.frame.model_card
    assert card is not None
    passed = {"verdict": "pass", "verdict_text": "PASS", "verdict_sentence": "All passed.", "undecided": []}
    assert audit_frame(passed, [], card, ("", "r")).what_to_do == NOTHING_TO_DO
    nothing = {**passed, "verdict": "insufficient", "verdict_text": "INSUFFICIENT"}
    assert audit_frame(nothing, [], card, ("", "r")).what_to_do == NOTHING_JUDGED
    assert audit_frame(passed, [], card, ("", "r")).not_judged == "Every result was judged."
