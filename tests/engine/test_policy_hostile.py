"""Hostile policies (issue 10): duplicate keys, alias bombs, oversized files and lists, high-cardinality data."""

from __future__ import annotations

import resource
import time

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.errors import DataError, PolicyError
from fairgate.policy.loader import MAX_POLICY_BYTES, MAX_POLICY_NODES, load_policy_yaml

BASE = """\
fairness_checker:
  sensitive_attributes:
    - {name: sex, values: [Male, Female], reference_group: Male}
  metrics:
    - {name: disparate_impact_ratio, threshold: 0.8}
"""

# 9 levels of 10 aliases each: ~1.2 billion nodes once expanded, from well under 1 kB of text.
BILLION_LAUGHS = """\
fairness_checker:
  sensitive_attributes:
    - name: sex
      values: &a [x, x, x, x, x, x, x, x, x, x]
    - {name: b, values: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]}
    - {name: c, values: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]}
    - {name: d, values: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]}
    - {name: e, values: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]}
    - {name: f, values: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]}
    - {name: g, values: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]}
    - {name: h, values: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]}
    - {name: i, values: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]}
  metrics: [{name: disparate_impact_ratio, threshold: 0.8}]
"""


def _refused(text: str) -> str:
    with pytest.raises(PolicyError) as caught:
        fairgate.Policy.from_yaml(text, source="p.yaml")
    return " ".join(caught.value.message.split())


def test_a_gate_switched_off_by_a_repeated_key_is_refused_naming_the_key_and_both_lines() -> None:
    text = BASE + "  ci_cd_gate:\n    enabled: true\n    fail_on: any\n    enabled: false\n"
    message = _refused(text)
    assert "'enabled' is written twice" in message
    assert "lines 7 and 9" in message


def test_a_repeated_metrics_list_is_refused() -> None:
    message = _refused(BASE + "  metrics:\n    - {name: equal_opportunity_difference, threshold: 0.1}\n")
    assert "'metrics' is written twice (lines 4 and 6)" in message.replace(" in the same mapping", "")


def test_a_key_repeated_inside_a_flow_mapping_is_refused() -> None:
    message = _refused(BASE + "  ci_cd_gate: {enabled: true, enabled: false}\n")
    assert "'enabled' is written twice in the same mapping (lines 6 and 6)" in message


def test_anchors_aliases_and_merge_keys_still_work() -> None:
    text = BASE.replace("[Male, Female]", "&sexes [Male, Female]") + (
        "  intersectional_analysis: &ia {enabled: true, min_group_size: 5}\n"
        "  overrides:\n"
        "    - &o {reason: documented exception, metric: disparate_impact_ratio, threshold: 0.7}\n"
        "    - {<<: *o, threshold: 0.75}\n"
    )
    policy = fairgate.Policy.from_yaml(text)
    assert [o.threshold for o in policy.overrides] == [0.7, 0.75]


def test_an_alias_bomb_is_refused_fast_and_small() -> None:
    assert len(BILLION_LAUGHS.encode()) < 1000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    message = _refused(BILLION_LAUGHS)
    elapsed = time.perf_counter() - start
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert elapsed < 2.0
    assert grown_kb < 50_000  # peak RSS grew by less than 50 MB
    assert f"at most {MAX_POLICY_NODES:,}" in message
    assert "MAX_POLICY_NODES" in message


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(PolicyError, match="recursive"):
        load_policy_yaml("a: &x [1, *x]\n")


def test_a_policy_over_the_size_limit_is_refused_before_parsing() -> None:
    text = BASE + "# " + "x" * MAX_POLICY_BYTES + "\n"
    message = _refused(text)
    assert f"at most {MAX_POLICY_BYTES:,} bytes" in message


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(PolicyError, match="nested too deeply"):
        load_policy_yaml("a: " + "[" * 20_000 + "]" * 20_000 + "\n")


@pytest.mark.parametrize(
    ("section", "where"),
    [
        ("  overrides:\n" + "    - {reason: again and again, threshold: 0.7}\n" * 11, "overrides has 11 entries"),
        (
            "  intersectional_analysis:\n    attribute_pairs:\n" + "      - [sex, age]\n" * 11,
            "intersectional_analysis.attribute_pairs has 11 entries",
        ),
    ],
)
def test_lists_longer_than_the_limit_are_refused_naming_the_limit(section: str, where: str) -> None:
    text = (
        BASE.replace("reference_group: Male}", "reference_group: Male}\n    - {name: age}")
        + section
        + "  limits: {max_list_length: 10}\n"
    )
    message = _refused(text)
    assert where in message
    assert "raise limits.max_list_length" in message


def test_declared_values_longer_than_the_limit_are_refused() -> None:
    values = ", ".join(f"v{i}" for i in range(1001))
    message = _refused(BASE.replace("[Male, Female], reference_group: Male", f"[{values}]"))
    assert "the values of attribute 'sex' has 1,001 entries; the limit is 1,000" in message


def test_the_default_limits() -> None:
    limits = fairgate.Policy.from_yaml(BASE).limits
    assert (limits.max_values_per_attribute, limits.max_groups_per_slicing, limits.max_list_length) == (
        100,
        5_000,
        1_000,
    )


# ------------------------------------------------------------------------------------------ cardinality
def _id_like_rows(n: int = 20_000, distinct: int = 10_000) -> pl.DataFrame:
    rng = np.random.default_rng(3)
    return pl.DataFrame(
        {
            "y_true": rng.integers(0, 2, n),
            "y_pred": rng.integers(0, 2, n),
            "sex": rng.choice(["Male", "Female"], n),
            "customer": [f"c{i % distinct}" for i in range(n)],
        }
    )


def _policy(extra: str = "", customer: str = "{name: customer}") -> fairgate.Policy:
    text = BASE.replace("reference_group: Male}", f"reference_group: Male}}\n    - {customer}")
    return fairgate.Policy.from_yaml(text + extra + "  statistics: {n_bootstrap: 20}\n")


def test_an_undeclared_attribute_with_10000_values_is_refused_fast_before_any_slicing() -> None:
    rows = _id_like_rows()
    start = time.perf_counter()
    with pytest.raises(DataError) as caught:
        fairgate.audit(rows, _policy())
    elapsed = time.perf_counter() - start
    message = caught.value.message
    assert elapsed < 2.0
    assert "attribute 'customer' has 10,000 distinct values in the audited data" in message
    assert "at most 100 values per attribute (limits.max_values_per_attribute)" in message
    assert "list its values under values:" in message


def test_the_value_limit_is_a_policy_setting() -> None:
    rows = _id_like_rows(2_000, 150)
    cube = fairgate.build_cube(rows, _policy("  limits: {max_values_per_attribute: 150}\n"))
    assert len(cube.levels("customer")) == 150
    with pytest.raises(DataError, match="has 150 distinct values"):
        fairgate.build_cube(rows, _policy("  limits: {max_values_per_attribute: 149}\n"))


def test_declared_values_are_not_held_to_the_value_limit() -> None:
    rows = _id_like_rows(2_000, 150)
    declared = "{name: customer, values: [" + ", ".join(f"c{i}" for i in range(150)) + "]}"
    cube = fairgate.build_cube(rows, _policy(customer=declared))
    assert len(cube.levels("customer")) == 150


def test_a_slicing_over_the_group_limit_is_skipped_and_recorded() -> None:
    rows = _id_like_rows(4_000, 80)  # customer: 80 groups; sex x customer: 160 groups
    result = fairgate.audit(rows, _policy("  limits: {max_groups_per_slicing: 100}\n"))
    document = result.to_dict()
    assert ["sex", "customer"] not in document["slicings"]
    assert ["customer"] in document["slicings"]
    skipped = document["diagnostics"]["skipped_slicings"]
    assert [(s["slicing"], s["groups"], s["max_groups_per_slicing"]) for s in skipped] == [
        (["sex", "customer"], 160, 100)
    ]
    assert "raise the limit" in skipped[0]["reason"].lower()


def test_no_slicing_is_skipped_under_the_default_limits() -> None:
    document = fairgate.audit(_id_like_rows(4_000, 80), _policy()).to_dict()
    assert document["diagnostics"]["skipped_slicings"] == []
    assert ["sex", "customer"] in document["slicings"]


def test_value_labels_are_strings_for_declared_values_and_leave_the_hash_alone() -> None:
    """labels: per attribute (how reports print coded values): codes read as strings; an undeclared one is refused."""

    base = """
fairness_checker:
  sensitive_attributes:
    - name: sex
      values: ["1", "2"]
{extra}  metrics:
    - {{name: demographic_parity_difference, threshold: 0.1}}
"""
    plain = fairgate.Policy.from_yaml(base.format(extra=""))
    labelled = fairgate.Policy.from_yaml(base.format(extra="      labels: {1: Female (1), 2: Male (2)}\n"))
    assert labelled.sensitive_attributes[0].labels == {"1": "Female (1)", "2": "Male (2)"}
    assert "labels" not in plain.canonical_json()  # a policy without labels keeps the hash it had
    assert plain.sha256() != labelled.sha256()  # the labels are part of what was signed off
    with pytest.raises(PolicyError, match=r"labels of attribute 'sex' name value\(s\) \['3'\]"):
        fairgate.Policy.from_yaml(base.format(extra="      labels: {3: Other}\n"))
