"""The weight-column rule (one place, ``fairgate.proxy.weight_column``) that the flow and the proxy task share."""

from __future__ import annotations

import pytest

import fairgate
from fairgate import proxy as fp


def policy(proxy: str = "", weight: str | None = None) -> fairgate.Policy:
    columns = f"columns: {{weight: {weight}}}" if weight else ""
    return fairgate.Policy.from_yaml(
        f"""
fairness_checker:
  sensitive_attributes: [{{name: race}}]
  metrics: [{{name: demographic_parity_difference, threshold: 0.2}}]
  {columns}
  {proxy}
"""
    )


PROBABILISTIC = "proxy: {method: bisg, mode: probabilistic, columns: {surname: last, zip: zip5}}"
MOST_LIKELY = "proxy: {method: bisg, mode: most_likely, columns: {surname: last, zip: zip5}}"


@pytest.mark.parametrize(
    ("proxy", "weight", "expected"),
    [
        (PROBABILISTIC, None, fp.PROXY_WEIGHT_COLUMN),
        (PROBABILISTIC, "w", "w"),
        (MOST_LIKELY, None, None),
        (MOST_LIKELY, "w", "w"),
        ("", None, None),
        ("", "w", "w"),
    ],
)
def test_weight_column_is_the_policy_s_else_proxy_weight_for_probabilistic_membership(
    proxy: str, weight: str | None, expected: str | None
) -> None:
    given = policy(proxy, weight)
    assert fp.weight_column(given) == expected
    updated = fp.with_weight_column(given)
    assert updated.columns.weight == expected
    # Unchanged policies are returned as they are (the policy hash and everything else stay put).
    assert (updated is given) == (given.columns.weight == expected)
    assert updated.model_dump(exclude={"columns"}) == given.model_dump(exclude={"columns"})
