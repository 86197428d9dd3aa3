"""Proxy inference: group membership inferred from names and places (BISG, BIFSG, India, user tables).

One module per job (all pure: Polars/NumPy over data handed in, plus the package's own shipped data):

- ``keys``: name, ZIP, PIN and state normalisation (Polars expressions);
- ``districts``: India Post district names reconciled with the 2011 census districts (renames as data);
- ``tables``: the long-format factor tables the posterior SQL multiplies, shaped from the loaded files;
- ``people``: each person's lookup keys for the posterior SQL;
- ``posterior``: the posterior's shapes, coverage, most likely group, declared-vs-inferred agreement;
- ``weighting``: weighted or most-likely rows, and the weight-column rule;
- ``features``: proxy-feature detection (Cramer's V, correlation ratio, mutual information, predictive check);
- ``stale``: the stale-attribute check;
- ``apply``: the audit step that turns a posterior into audited rows and the document's ``proxy`` summary.

The posterior itself is computed by DuckDB in ``tasks/inputs/proxy.py`` from the SQL files, as the project's layering
asks. The public names are re-exported here (``from fairgate import proxy as fp; fp.surname_key``).
"""

from fairgate.proxy.apply import CAVEATS, check_proxy_policy, proxy_audit_rows
from fairgate.proxy.districts import district_key, known_district_renames, reconcile_districts
from fairgate.proxy.features import (
    correlation_ratio,
    cramers_v,
    mutual_information,
    policy_proxy_features,
    predictive_check,
    proxy_feature_strength,
)
from fairgate.proxy.judged import judged_on_correction
from fairgate.proxy.keys import (
    NAME_SUFFIXES,
    exact_key,
    first_name_key,
    pincode6,
    state_key,
    state_key_expr,
    surname_alt_key,
    surname_key,
    zip5,
)
from fairgate.proxy.people import KEY_COLUMNS, people_keys
from fairgate.proxy.posterior import (
    FALLBACK,
    FALLBACKS,
    GROUP,
    PERSON,
    PROBABILITY,
    coverage,
    disagreement,
    long_posterior,
    most_likely,
    wide_posterior,
)
from fairgate.proxy.stale import stale_attributes
from fairgate.proxy.tables import (
    BISG_GROUPS,
    INDIA_GROUPS,
    INDIA_PRIOR_KEY,
    US_PRIOR_KEY,
    ProxyTables,
    bisg_factor_tables,
    custom_area_factor,
    custom_factor_tables,
    custom_name_factor,
    empty_factor,
    india_factor_tables,
    india_sql_inputs,
    long_factor,
    normalise_prior,
)
from fairgate.proxy.weighting import (
    PROXY_WEIGHT_COLUMN,
    assign_most_likely,
    expand_probabilistic,
    weight_column,
    with_weight_column,
)

__all__ = [
    "BISG_GROUPS",
    "CAVEATS",
    "FALLBACK",
    "FALLBACKS",
    "GROUP",
    "INDIA_GROUPS",
    "INDIA_PRIOR_KEY",
    "KEY_COLUMNS",
    "NAME_SUFFIXES",
    "PERSON",
    "PROBABILITY",
    "PROXY_WEIGHT_COLUMN",
    "US_PRIOR_KEY",
    "ProxyTables",
    "assign_most_likely",
    "bisg_factor_tables",
    "check_proxy_policy",
    "correlation_ratio",
    "coverage",
    "cramers_v",
    "custom_area_factor",
    "custom_factor_tables",
    "custom_name_factor",
    "disagreement",
    "district_key",
    "empty_factor",
    "exact_key",
    "expand_probabilistic",
    "first_name_key",
    "india_factor_tables",
    "india_sql_inputs",
    "judged_on_correction",
    "known_district_renames",
    "long_factor",
    "long_posterior",
    "most_likely",
    "mutual_information",
    "normalise_prior",
    "people_keys",
    "pincode6",
    "policy_proxy_features",
    "predictive_check",
    "proxy_audit_rows",
    "proxy_feature_strength",
    "reconcile_districts",
    "stale_attributes",
    "state_key",
    "state_key_expr",
    "surname_alt_key",
    "surname_key",
    "weight_column",
    "wide_posterior",
    "with_weight_column",
    "zip5",
]
