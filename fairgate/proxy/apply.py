"""Auditing on inferred groups: from a posterior to the rows the audit counts and the document's ``proxy`` summary.

Pure: the caller (``tasks/inputs/proxy.py``) loads the tables, computes the posterior and hands both in.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl

from fairgate.engine.columns import PERSON_WEIGHT
from fairgate.errors import DataError, PolicyError
from fairgate.policy.core import Policy
from fairgate.policy.proxy import ProxyConfig
from fairgate.proxy.attenuation import proxy_attenuation
from fairgate.proxy.features import policy_proxy_features
from fairgate.proxy.posterior import GROUP, PROBABILITY, coverage, disagreement, long_posterior
from fairgate.proxy.stale import stale_attributes
from fairgate.proxy.tables import ProxyTables
from fairgate.proxy.weighting import assign_most_likely, expand_probabilistic, weight_column

CAVEATS = (
    "Groups are inferred, not declared: each person's membership is an estimate from name and place tables "
    "({tables}). Such proxies are less accurate for some groups (in the US, Black and multiracial people and "
    "people living in integrated areas; in India, surnames shared across caste categories), and the tables "
    "age. Read the results as estimates for the population, never as labels for individuals."
)


def check_proxy_policy(policy: Policy) -> ProxyConfig:
    """The policy's proxy section, once checked that the attribute it infers is a sensitive attribute."""
    config = policy.proxy
    if config is None:
        raise PolicyError("apply_proxy needs a proxy: section in the policy")
    attribute_name = config.attribute_name
    if attribute_name not in policy.attribute_names:
        raise PolicyError(
            f"proxy infers {attribute_name!r}, which is not among sensitive_attributes "
            f"{policy.attribute_names}; "
            f"add {{name: {attribute_name}}} there (or set proxy.attribute to the attribute it produces)"
        )
    return config


def proxy_audit_rows(
    frame: pl.DataFrame, per_person: pl.DataFrame, tables: ProxyTables, policy: Policy, *, as_of: dt.date
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The rows to audit with the inferred attribute, and the summary for the JSON document's ``proxy`` key.

    ``frame``: the aligned input (row i is person i); ``per_person``: the posterior SQL's rows for it;
    ``as_of``: the date the stale-attribute check measures ages at.
    """
    config = check_proxy_policy(policy)
    attribute_name = config.attribute_name
    posterior = long_posterior(per_person, tables.groups)
    labels = {g: config.labels.get(g, g) for g in tables.groups}
    _check_labels(policy.attribute(attribute_name).values, labels, attribute_name)
    _check_weight_column(policy)
    summary = _summary(config, tables, per_person, posterior, labels)
    if attribute_name in frame.columns:
        declared_column = f"{attribute_name}__declared"
        summary["declared_vs_inferred"] = {
            "declared_column": declared_column,
            **disagreement(frame[attribute_name], posterior, labels=labels),
        }
        frame = frame.with_columns(pl.col(attribute_name).alias(declared_column))
    if config.mode == "probabilistic":
        rows = _probabilistic_rows(frame, posterior, policy, labels, summary)
    else:
        rows = _most_likely_rows(frame, posterior, policy, labels, summary)
    # Proxy-weighted gaps shrink toward zero: say so, and correct them through the mixing matrix.
    probabilities = per_person["probabilities"].list.to_array(len(tables.groups)).to_numpy()
    summary["attenuation"] = proxy_attenuation(frame, probabilities, [labels[g] for g in tables.groups], policy)
    summary.update(_attribute_checks(frame, posterior, policy, labels, as_of))
    return rows, summary


def _check_labels(values: list[str] | None, labels: dict[str, str], attribute: str) -> None:
    if values is None:
        return
    stray = sorted(set(labels.values()) - set(values))
    if stray:
        raise PolicyError(
            f"the proxy produces {attribute} groups {stray} that are not in the attribute's values {values}; "
            f"map them with proxy.labels (e.g. {{{next(iter(labels))}: {values[0]}}}) or add them to values"
        )


def _check_weight_column(policy: Policy) -> None:
    assert policy.proxy is not None
    if policy.proxy.mode == "probabilistic" and policy.columns.weight is None:
        # Without a weight column the engine would count every person fully in every group.
        raise PolicyError(
            "proxy.mode probabilistic gives each person a weight per inferred group, and the audit must sum "
            "those weights: set columns: {weight: proxy_weight} in the policy (any column name not already "
            "in the data), or use proxy.mode: most_likely"
        )


def _summary(
    config: ProxyConfig,
    tables: ProxyTables,
    per_person: pl.DataFrame,
    posterior: pl.DataFrame,
    labels: dict[str, str],
) -> dict[str, Any]:
    """What was inferred, from which tables, how well the keys were found, and the expected group sizes."""
    summary: dict[str, Any] = {
        "method": config.method,
        "attribute": config.attribute_name,
        "mode": config.mode,
        "groups": [labels[g] for g in tables.groups],
        "tables": tables.description,
        "coverage": coverage(per_person),
        "caveats": CAVEATS.format(tables=tables.description),
    }
    if "district_reconciliation" in tables.notes:
        summary["district_reconciliation"] = {
            k: v for k, v in tables.notes["district_reconciliation"].items() if k != "unmatched_district_names"
        }
    # Expected group sizes: the sum of membership probabilities (what the weighted cube counts).
    expected = posterior.group_by(GROUP).agg(pl.col(PROBABILITY).sum()).sort(GROUP)
    summary["expected_group_sizes"] = {labels[g]: float(p) for g, p in expected.iter_rows()}
    return summary


def _probabilistic_rows(
    frame: pl.DataFrame, posterior: pl.DataFrame, policy: Policy, labels: dict[str, str], summary: dict[str, Any]
) -> pl.DataFrame:
    """One row per (person, group) weighted by P(group | ...); records the weight column and the statement."""
    assert policy.proxy is not None
    attribute_name = policy.proxy.attribute_name
    column = weight_column(policy)
    assert column is not None  # _check_weight_column made sure the policy names one
    # Each person's total weight, so that slicings without the inferred attribute count a person once (Kish).
    person = pl.col(column).cast(pl.Float64) if column in frame.columns else pl.lit(1.0)
    frame = frame.with_columns(person.alias(PERSON_WEIGHT))
    rows = expand_probabilistic(frame, posterior, attribute=attribute_name, weight_column=column, labels=labels)
    summary["weight_column"] = column
    summary["statement"] = (
        f"Each person counts in every {attribute_name} group with weight P(group | name, place): "
        "group sizes and rates are expected values, not counts of identified people."
    )
    return rows


def _most_likely_rows(
    frame: pl.DataFrame, posterior: pl.DataFrame, policy: Policy, labels: dict[str, str], summary: dict[str, Any]
) -> pl.DataFrame:
    """One row per person in the most likely group (or unknown / left out below the confidence cut)."""
    config = policy.proxy
    assert config is not None
    attribute = policy.attribute(config.attribute_name)
    unknown = attribute.unknown_label if attribute.missing == "unknown" else None
    rows, counts = assign_most_likely(
        frame,
        posterior,
        attribute=config.attribute_name,
        confidence_cut=config.confidence_cut,
        unknown_label=unknown,
        labels=labels,
    )
    column = weight_column(policy)
    if column is not None and column not in rows.columns:
        rows = rows.with_columns(pl.lit(1.0).alias(column))  # hard assignment: weight 1
    summary["confidence_cut"] = config.confidence_cut
    summary["most_likely"] = counts
    summary["statement"] = (
        f"Each person is assigned the most likely {config.attribute_name} group when its probability is at "
        f"least {config.confidence_cut}; below that they are "
        + (f"audited as {unknown!r}." if unknown else "left out of the audit.")
    )
    return rows


def _attribute_checks(
    frame: pl.DataFrame, posterior: pl.DataFrame, policy: Policy, labels: dict[str, str], as_of: dt.date
) -> dict[str, Any]:
    """The optional checks the policy asks for: proxy features, stale declared attributes."""
    config = policy.proxy
    assert config is not None
    out: dict[str, Any] = {}
    if config.proxy_features is not None and config.proxy_features.enabled:
        out["proxy_features"] = policy_proxy_features(frame, posterior, policy, labels)
    if config.collected_at_column is not None:
        if config.collected_at_column not in frame.columns:
            raise DataError(
                f"column {config.collected_at_column!r} (proxy.collected_at_column) is missing from the "
                f"aligned input; columns present: {frame.columns}"
            )
        out["stale_attributes"] = stale_attributes(
            frame[config.collected_at_column], as_of=as_of, max_age_days=policy.attribute_max_age_days
        )
    return out
