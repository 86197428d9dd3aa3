"""Auditing on inferred groups: weighted rows, hard assignment, declared-vs-inferred, features, staleness."""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate import proxy as fp
from fairgate.errors import PolicyError
from tasks.inputs import proxy as tp

COMPAS_RACES = {
    "white": "Caucasian",
    "black": "African-American",
    "hispanic": "Hispanic",
    "api": "Asian",
    "native": "Native American",
    "multiple": "Other",
}


def policy_yaml(proxy: str = "", weight: str | None = None, missing: str = "exclude") -> fairgate.Policy:
    columns = f"columns: {{weight: {weight}}}" if weight else ""
    return fairgate.Policy.from_yaml(
        f"""
fairness_checker:
  sensitive_attributes:
    - {{name: race, missing: {missing}}}
  metrics:
    - {{name: demographic_parity_difference, threshold: 0.2}}
    - {{name: equal_opportunity_difference, threshold: 0.2}}
  intersectional_analysis: {{min_group_size: 1}}
  statistics: {{n_bootstrap: 0}}
  {columns}
  {proxy}
"""
    )


@pytest.fixture(scope="module")
def compas(data_dir) -> pl.DataFrame:  # type: ignore[no-untyped-def]
    frame = pl.read_csv(data_dir / "compas" / "compas-scores-two-years.csv", infer_schema_length=10000)
    return frame.select(
        pl.col("id").cast(pl.String),
        pl.col("two_year_recid").alias("y_true"),
        (pl.col("decile_score") >= 5).cast(pl.Int64).alias("y_pred"),
        "race",
        "first",
        "last",
    )


def metric_values(result: fairgate.AuditResult) -> dict[tuple[str, str], float | None]:
    doc = result.to_dict()
    out: dict[tuple[str, str], float | None] = {}
    for group in doc["groups"]:
        for name, metric in group["metrics"].items():
            out[(str(group["group"]), name)] = metric["value"]
    for r in doc["results"]:
        out[(str(r["slicing"]), r["metric"])] = r["value"]
    return out


def test_weighted_audit_equals_hard_assignment_when_weights_are_0_or_1() -> None:
    rng = np.random.default_rng(7)
    n = 600
    hard = pl.DataFrame(
        {
            "y_true": rng.integers(0, 2, n),
            "y_pred": rng.integers(0, 2, n),
            "race": rng.choice(["white", "black", "api"], n, p=[0.5, 0.3, 0.2]),
        }
    )
    # A one-hot posterior (every P in {0, 1}) expanded the probabilistic way.
    groups = ["white", "black", "api"]
    posterior = pl.DataFrame(
        {
            fp.PERSON: np.repeat(np.arange(n, dtype=np.uint32), 3),
            fp.GROUP: groups * n,
            fp.PROBABILITY: [float(g == r) for r in hard["race"] for g in groups],
            fp.FALLBACK: ["surname_geography"] * (3 * n),
        }
    )
    weighted = fp.expand_probabilistic(hard, posterior, attribute="race", weight_column="w")
    assert weighted.height == n
    assert set(weighted["w"].to_list()) == {1.0}
    # And explicit zero-weight rows in the wrong groups must change nothing either.
    wrong = weighted.head(100).with_columns(pl.lit("api").alias("race"), pl.lit(0.0).alias("w"))
    with_zeros = pl.concat([weighted, wrong])

    expected = metric_values(fairgate.audit(hard, policy_yaml()))
    assert metric_values(fairgate.audit(weighted, policy_yaml(weight="w"))) == pytest.approx(expected, abs=1e-12)
    assert metric_values(fairgate.audit(with_zeros, policy_yaml(weight="w"))) == pytest.approx(expected, abs=1e-12)


def test_probabilistic_weights_give_expected_rates() -> None:
    # Two people, half-and-half membership: the group's selection rate is the weighted mean.
    frame = pl.DataFrame({"y_true": [1, 0, 1], "y_pred": [1, 0, 0], "race": ["x", "x", "x"]})
    posterior = pl.DataFrame(
        {
            fp.PERSON: np.array([0, 0, 1, 1, 2, 2], dtype=np.uint32),
            fp.GROUP: ["a", "b"] * 3,
            fp.PROBABILITY: [0.75, 0.25, 0.5, 0.5, 0.0, 1.0],
            fp.FALLBACK: ["prior"] * 6,
        }
    )
    rows = fp.expand_probabilistic(frame, posterior, attribute="race", weight_column="w")
    by_group = fairgate.audit(rows, policy_yaml(weight="w")).by_group(("race",)).sort("race")
    # n is Kish's effective size (sum w)^2 / sum w^2, not the sum of weights (1.25 and 1.75).
    assert by_group["n"].to_list() == pytest.approx([1.25**2 / (0.75**2 + 0.5**2), 1.75**2 / (0.25**2 + 0.5**2 + 1.0)])
    assert by_group["selection_rate"].to_list() == pytest.approx([0.75 / 1.25, 0.25 / 1.75])
    assert by_group["true_positive_rate"].to_list() == pytest.approx([1.0, 0.25 / 1.25])


PROXY_BIFSG = """proxy:
    method: bifsg
    attribute: race
    columns: {surname: last, first_name: first}
    labels: {white: Caucasian, black: African-American, hispanic: Hispanic, api: Asian,
             native: Native American, multiple: Other}"""


def test_apply_proxy_probabilistic_on_compas(compas: pl.DataFrame) -> None:
    policy = policy_yaml(PROXY_BIFSG, weight="w")
    rows, summary = tp.proxy_rows(compas.to_arrow(), policy)
    frame = pl.from_arrow(rows)
    assert isinstance(frame, pl.DataFrame)
    # Every person's weights sum to 1; the declared race is kept beside the inferred one.
    per_person = frame.group_by("id").agg(pl.col("w").sum())
    assert per_person.height == compas.height
    assert per_person["w"].to_numpy() == pytest.approx(np.ones(compas.height), abs=1e-9)
    assert summary["coverage"]["n_people"] == compas.height
    assert sum(summary["coverage"]["fallbacks"].values()) == compas.height
    assert summary["mode"] == "probabilistic"
    assert "estimates" in summary["caveats"]
    assert sum(summary["expected_group_sizes"].values()) == pytest.approx(compas.height)
    # Declared vs inferred on real people (names only, no geography in COMPAS): Hispanic surnames are found
    # well, while most Black defendants get a White most-likely group: the known bias the summary exposes.
    dis = summary["declared_vs_inferred"]
    assert dis["declared_column"] == "race__declared"
    assert dis["n_compared"] == compas.height
    assert 0.4 < dis["most_likely_agreement"] < 0.9
    table = {(r["declared"], r["most_likely"]): r["n"] for r in dis["table"]}
    assert sum(table.values()) == compas.height

    def recall(race: str) -> float:
        return table.get((race, race), 0) / sum(n for (d, _), n in table.items() if d == race)

    assert recall("Hispanic") > 0.8
    assert recall("African-American") < recall("Caucasian")
    # The weighted rows audit.
    result = fairgate.audit(frame, policy, context={"proxy": summary})
    assert result.verdict in ("pass", "fail")
    assert result.to_dict()["proxy"]["method"] == "bifsg"


def test_apply_proxy_most_likely(compas: pl.DataFrame) -> None:
    proxy = PROXY_BIFSG + "\n    mode: most_likely\n    confidence_cut: 0.9"
    rows, summary = tp.proxy_rows(compas.to_arrow(), policy_yaml(proxy))
    counts = summary["most_likely"]
    assert counts["assigned"] + counts["below_cut"] == compas.height
    assert counts["excluded"] == counts["below_cut"] > 0
    assert rows.num_rows == counts["assigned"]
    # with missing: unknown the uncertain people are audited as 'unknown'
    rows, summary = tp.proxy_rows(compas.to_arrow(), policy_yaml(proxy, missing="unknown"))
    assert rows.num_rows == compas.height
    assert pl.from_arrow(rows)["race"].to_list().count("unknown") == summary["most_likely"]["below_cut"]


def test_proxy_groups_must_fit_declared_values(compas: pl.DataFrame) -> None:
    policy = fairgate.Policy.from_yaml(
        """
fairness_checker:
  sensitive_attributes: [{name: race, values: [Caucasian, African-American]}]
  metrics: [{name: demographic_parity_difference, threshold: 0.2}]
  proxy: {method: bisg, columns: {surname: last}}
"""
    )
    with pytest.raises(PolicyError, match=re.escape("proxy.labels")):
        tp.proxy_rows(compas.to_arrow(), policy)


def test_proxy_attribute_must_be_declared(compas: pl.DataFrame) -> None:
    policy = fairgate.Policy.from_yaml(
        """
fairness_checker:
  sensitive_attributes: [{name: sex}]
  metrics: [{name: demographic_parity_difference, threshold: 0.2}]
  proxy: {method: bisg, columns: {surname: last}}
"""
    )
    with pytest.raises(PolicyError, match="not among sensitive_attributes"):
        tp.proxy_rows(compas.to_arrow(), policy)


def test_proxy_features_and_stale_attributes_in_summary(compas: pl.DataFrame) -> None:
    proxy = PROXY_BIFSG + "\n    proxy_features: {columns: [last, y_pred]}\n    collected_at_column: collected"
    aligned = compas.with_columns(pl.lit(dt.date(2013, 1, 1)).alias("collected")).to_arrow()
    _, summary = tp.proxy_rows(aligned, policy_yaml(proxy, weight="w"), today=dt.date(2016, 5, 20))
    features = {(f["feature"], f["attribute"]): f for f in summary["proxy_features"]}
    assert features[("last", "race (inferred)")]["flag"]  # the surname is what the proxy is made of
    assert summary["stale_attributes"]["stale"] is True
    assert summary["stale_attributes"]["median_age_days"] == (dt.date(2016, 5, 20) - dt.date(2013, 1, 1)).days


def test_probabilistic_mode_needs_a_weight_column(compas: pl.DataFrame) -> None:
    with pytest.raises(PolicyError, match=re.escape("columns: {weight: proxy_weight}")):
        tp.proxy_rows(compas.head(10).to_arrow(), policy_yaml(PROXY_BIFSG))
