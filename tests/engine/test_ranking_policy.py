"""The ``ranking:`` policy section: its checks, its tie to ``task: ranking``, the ranking catalogue, and binary
policies' hashes unchanged by the new ``columns.list_id`` / ``columns.rank`` keys."""

from __future__ import annotations

import pytest

import fairgate
from fairgate.engine.ranking.slicing import SUMMARIES
from fairgate.engine.tasks import metric_catalogue
from fairgate.errors import PolicyError

RANKING = """
fairness_checker:
  task: ranking
  ranking: {top_k: [10, 50], discount: rbp, patience: 0.8}
  sensitive_attributes: [{name: sex}]
  metrics:
    - {name: top_k_rate_ratio, threshold: 0.8}
    - {name: exposure_relevance_ratio, threshold: 0.8}
  columns: {list_id: query, rank: position}
"""


def test_a_ranking_policy_reads_its_section_and_columns() -> None:
    policy = fairgate.Policy.from_yaml(RANKING)
    assert policy.task == "ranking"
    assert policy.ranking is not None
    assert (policy.ranking.judged_k, policy.ranking.patience) == (10, 0.8)
    assert (policy.columns.list_id, policy.columns.rank) == ("query", "position")
    assert '"list_id":"query"' in policy.canonical_json()


def test_the_catalogue_is_the_engine_summaries() -> None:
    assert set(metric_catalogue("ranking")) == set(SUMMARIES)
    for name, (_, kind) in SUMMARIES.items():
        assert metric_catalogue("ranking")[name].summary == kind


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("task: ranking", "task: binary"), "ranking: section is only read with task: ranking"),
        (("discount: rbp, patience: 0.8", "discount: rbp"), "needs ranking.patience"),
        (("discount: rbp, patience: 0.8", "patience: 0.8"), "only read with discount: rbp"),
        (("top_k: [10, 50]", "top_k: [10, 10]"), "distinct positive cut-offs"),
        (("top_k: [10, 50]", "top_k: [0]"), "distinct positive cut-offs"),
        (("top_k_rate_ratio", "demographic_parity_difference"), "a ranking policy may judge"),
        (("  columns:", "  proxy: {}\n  columns:"), "proxy: section works on binary audits only"),
    ],
)
def test_bad_ranking_policies_are_refused_naming_the_fix(change: tuple[str, str], message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        fairgate.Policy.from_yaml(RANKING.replace(*change))


def test_binary_policies_do_not_carry_the_ranking_columns() -> None:
    policy = fairgate.Policy.from_yaml(RANKING.split("  task: ranking")[0] + BINARY_TAIL)
    canonical = policy.canonical_json()
    assert '"list_id"' not in canonical
    assert '"rank"' not in canonical
    assert '"ranking"' not in canonical


BINARY_TAIL = """  sensitive_attributes: [{name: sex}]
  metrics: [{name: disparate_impact_ratio, threshold: 0.8}]
"""
