"""Per-group ranking metrics as ratios of the cube's sums.

For group g of a slicing, with weighted sums over its items in all lists (w = weight, 1 unless weighted):

- ``population_share``: w_g / sum w, the group's share of all ranked items;
- ``top_<k>_share``: the group's share of the top-k positions, top_g / sum top (compare with the population share);
- ``top_<k>_rate``: the share of the group's items placed in the top k, top_g / w_g (a selection rate at k: its
  ratio across groups is the four-fifths rule for a shortlist);
- ``mean_exposure``: the group's mean position discount, exposure_g / w_g (Singh & Joachims 2018: the exposure of
  a group is the average exposure of its items; parity of exposure asks it to be equal across groups);
- ``exposure_share``: the group's share of all exposure;
- ``mean_relevance``: the group's mean relevance (y_true);
- ``exposure_per_relevance``: exposure_g / relevance_g, Singh & Joachims' disparate treatment constraint asks it
  to be equal across groups (exposure proportional to merit); undefined for a group without relevance.

Pooled over lists: an item of a long list counts as much as one of a short list (a mean over items, which is
what a sum-based cube gives and what Singh & Joachims average within a ranking).
"""

from __future__ import annotations

import numpy as np

from fairgate.policy.ranking import RankingOptions

#: Per-group metrics that do not depend on k, in report order.
BASE_METRICS = (
    "population_share",
    "mean_exposure",
    "exposure_share",
    "mean_relevance",
    "exposure_per_relevance",
)


def top_share(k: int) -> str:
    """The name of the share of the top-k positions held by a group."""
    return f"top_{k}_share"


def top_rate(k: int) -> str:
    """The name of the share of a group's items placed in the top k."""
    return f"top_{k}_rate"


def metric_names(options: RankingOptions) -> tuple[str, ...]:
    """Every per-group metric of an audit with these options, in report order."""
    per_k = [name for k in options.top_k for name in (top_share(k), top_rate(k))]
    return (*BASE_METRICS[:1], *per_k, *BASE_METRICS[1:])


def group_metrics(sums: np.ndarray, options: RankingOptions) -> dict[str, np.ndarray]:
    """Every per-group metric from sums ``(..., G, m)`` (the cube's ``sums`` columns in order); NaN where undefined.

    >>> s = np.array([[2.0, 1.0, 1.5, 3.0], [2.0, 1.0, 0.5, 0.0]])  # weight, top_10, exposure, relevance
    >>> m = group_metrics(s, RankingOptions())
    >>> m["top_10_rate"].tolist(), m["exposure_per_relevance"].tolist()[0]
    ([0.5, 0.5], 0.5)
    """
    weight = sums[..., 0]
    exposure, relevance = sums[..., -2], sums[..., -1]
    out: dict[str, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        out["population_share"] = _ratio(weight, weight.sum(axis=-1, keepdims=True))
        for i, k in enumerate(options.top_k, start=1):
            count = sums[..., i]
            out[top_share(k)] = _ratio(count, count.sum(axis=-1, keepdims=True))
            out[top_rate(k)] = _ratio(count, weight)
        out["mean_exposure"] = _ratio(exposure, weight)
        out["exposure_share"] = _ratio(exposure, exposure.sum(axis=-1, keepdims=True))
        out["mean_relevance"] = _ratio(relevance, weight)
        out["exposure_per_relevance"] = _ratio(exposure, relevance)
    return out


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    result: np.ndarray = np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), np.nan)
    return result
