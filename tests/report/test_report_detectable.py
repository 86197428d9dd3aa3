"""Page 1's "What this audit could detect": each pass's detectable disparity, per slicing, in words whose meaning
follows the policy's decision rule (a point-estimate pass can hide a smaller violation; an interval pass rarely)."""

from __future__ import annotations

import copy
from typing import Any

from fairgate.report import build_view
from fairgate.report.format import fmt


def test_every_pass_with_a_figure_is_listed_once_under_its_slicing(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc, min_cell_size=10)
    listed = [(tuple(r.slicing), r.metric, r.detectable_text) for line in view.detectable for r in line.results]
    expected = [
        (tuple(r["slicing"]), r["metric"], f"{fmt(r['detectable_disparity'])} or {side}")
        for r in compas_doc["results"]
        if r["status"] == "pass" and r["detectable_disparity"] is not None
        for side in ["less" if r["direction"] == "higher_is_better" else "more"]
    ]
    assert expected, "the COMPAS demo has passes (on sex)"
    assert sorted(listed) == sorted(expected)
    assert [line.slicing_label for line in view.detectable] == ["sex"]


def test_the_words_follow_the_decision_rule(compas_doc: dict[str, Any]) -> None:
    interval = build_view(compas_doc, min_cell_size=10).detectable_note
    assert "inconclusive" in interval
    assert "pass unseen" not in interval
    point = copy.deepcopy(compas_doc)
    point["policy"]["ci_cd_gate"]["decision"] = "point_estimate"
    assert "a smaller violation could pass unseen" in build_view(point, min_cell_size=10).detectable_note


def test_a_document_without_figures_says_nothing(compas_doc: dict[str, Any]) -> None:
    bare = copy.deepcopy(compas_doc)
    for result in bare["results"]:
        result["detectable_disparity"] = None
    assert build_view(bare, min_cell_size=10).detectable == []
