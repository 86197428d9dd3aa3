"""What a reviewer needs besides pass/fail.

Base rates and the impossibility theorem, worst-off subgroups, Simpson's-paradox reversals, and the groups
too small to judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from fairgate.engine.labels import spelled
from fairgate.engine.metric_labels import metric_words
from fairgate.engine.metrics import GroupCounts, GroupMetric, Rate
from fairgate.engine.slicing import SlicingResult
from fairgate.engine.stats import holm, newcombe_interval, z_value
from fairgate.engine.text import (
    ValueLabels,
    fmt,
    fmt_count,
    fmt_share,
    fmt_signed,
    group_name,
    interval_text,
    value_name,
)
from fairgate.policy.core import Policy

# Criteria that cannot all hold when base rates differ and the classifier is imperfect.
_SEPARATION = {
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "false_positive_rate_difference",
    "false_negative_rate_difference",
    "equal_opportunity_difference",
    "equal_opportunity_ratio",
}
_SUFFICIENCY = {
    "predictive_parity_difference",
    "calibration_difference",
    "positive_predictive_value_difference",
    "false_omission_rate_difference",
    "false_discovery_rate_difference",
}
_INDEPENDENCE = {
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "disparate_impact_ratio",
    "selection_rate_difference",
    "selection_rate_ratio",
}


def base_rates(parts: list[SlicingResult], comparisons: list[dict[str, Any]], policy: Policy) -> list[dict[str, Any]]:
    """Base rates per group of each single attribute, whether they differ significantly, and what that implies.

    Whether base rates differ is one chi-square test of homogeneity per attribute over its sufficient groups
    (positives and negatives per group, from the confusion counts), Holm-adjusted across the attributes at the
    policy's significance level. ``comparisons`` is not used: the pairwise comparisons' family is the gate's.
    """
    del comparisons
    configured = {m.name for m in policy.metrics}
    singles = [part for part in parts if len(part.slicing) == 1]
    p_values = [_homogeneity_p_value(part) for part in singles]
    adjusted = _holm(p_values)
    alpha = policy.statistics.significance_level
    out = []
    for part, p_value, p_adjusted in zip(singles, p_values, adjusted, strict=True):
        rates = part.metrics["base_rate"]
        groups = [
            {"group": g, "base_rate": r, "ci_low": low, "ci_high": high, "n": n}
            for g, r, low, high, n, ok in zip(
                part.groups, rates["value"], rates["ci_low"], rates["ci_high"], part.n, part.sufficient, strict=True
            )
            if ok
        ]
        defined: list[float] = [g["base_rate"] for g in groups if g["base_rate"] is not None]
        differ = p_adjusted is not None and p_adjusted < alpha
        out.append(
            {
                "slicing": list(part.slicing),
                "groups": groups,
                "min": min(defined) if defined else None,
                "max": max(defined) if defined else None,
                "test": "chi-square test of homogeneity over sufficient groups, Holm-adjusted across attributes",
                "p_value": p_value,
                "p_value_adjusted": p_adjusted,
                "differ": differ,
                "impossibility": _impossibility_note(part.slicing[0], defined, p_value, differ, configured),
            }
        )
    return out


def _effective_counts(part: SlicingResult) -> dict[str, np.ndarray]:
    """The slicing's confusion counts per group, rescaled to its (Kish effective) group sizes ``part.n``.

    Under weights the counts are sums of weights; tests that take counts need people, so each group's counts
    are scaled to its effective size (rates unchanged). Unweighted, ``n`` is the count and nothing changes.
    """
    counts = {k: np.asarray(v, dtype=float) for k, v in part.counts.items()}
    total = counts["tp"] + counts["fp"] + counts["tn"] + counts["fn"]
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(total > 0, np.asarray(part.n, dtype=float) / np.where(total > 0, total, 1.0), 1.0)
    return {k: v * scale for k, v in counts.items()}


def _holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment (``stats.holm``) of optional p-values: None stays None."""
    adjusted = holm(np.array([np.nan if p is None else p for p in p_values], dtype=float))
    return [None if np.isnan(a) else float(a) for a in adjusted]


def _homogeneity_p_value(part: SlicingResult) -> float | None:
    """p-value of equal base rates across the sufficient groups of one attribute; None below two groups."""
    use = np.array(part.sufficient, dtype=bool)
    counts = {k: v[use] for k, v in _effective_counts(part).items()}
    table = np.stack([counts["tp"] + counts["fn"], counts["fp"] + counts["tn"]], axis=1)
    table = table[table.sum(axis=1) > 0]
    if table.shape[0] < 2:
        return None
    if (table.sum(axis=0) == 0).any():
        return 1.0  # every group has the same base rate (all 0 or all 1)
    return contingency_p_value(table)


def contingency_p_value(table: np.ndarray) -> float:
    """Pearson's chi-square test of independence of a table with two columns (Yates-corrected for 2 x 2).

    ``scipy.stats.chi2_contingency(table, correction=True).pvalue``, step by step as scipy computes it, so the
    same value to the last bit, without importing scipy.stats (a second of an audit's start-up). A table scipy
    would refuse (a negative count, an empty row or column) is handed to scipy for its error.

    >>> contingency_p_value(np.array([[10.0, 20.0], [20.0, 10.0]])) > 0.01
    True
    """
    observed = np.asarray(table, dtype=np.float64)
    expected = np.sum(observed, axis=1, keepdims=True) * np.sum(observed, axis=0, keepdims=True) / observed.sum()
    if observed.ndim != 2 or observed.shape[1] != 2 or (observed < 0).any() or not (expected > 0).all():
        from scipy.stats import chi2_contingency

        return float(chi2_contingency(observed, correction=True).pvalue)
    dof = observed.shape[0] - 1
    if dof == 1:  # Yates: each cell moved half a count towards its expected value (never past it)
        difference = expected - observed
        observed = observed + np.minimum(0.5, np.abs(difference)) * np.sign(difference)
    statistic = np.sum((observed - expected) ** 2 / expected)
    return float(special.chdtrc(float(dof), statistic))  # chi2.sf, as scipy computes it


def _impossibility_note(
    attribute: str, rates: list[float], p_value: float | None, differ: bool, configured: set[str]
) -> str:
    """What the base rates imply for the fairness criteria: a claim only where the data shows a difference."""
    if not rates or p_value is None:
        return f"Fewer than two groups of {attribute!r} are large enough to compare base rates: no conclusion."
    span = f"from {fmt_share(min(rates), 1)} to {fmt_share(max(rates), 1)}"
    if not differ:
        return (
            f"Base rates of {attribute!r} range {span}; the difference is not statistically significant. This is "
            "not evidence that they are equal, so no conclusion is drawn about whether calibration and equal "
            "error rates can hold together."
        )
    lines = [
        f"Base rates of {attribute!r} differ significantly ({span}). Unless the model is perfect, "
        "calibration / predictive parity and equal false positive and false negative rates cannot all hold "
        "exactly (Chouldechova 2017; Kleinberg, Mullainathan and Raghavan 2016). Equal selection rates "
        "(demographic parity) cannot hold exactly together with calibration, even for a score that carries no "
        "information about the outcome, nor together with equalized odds unless the predictions carry no "
        "information about the outcome (Barocas, Hardt and Narayanan 2023)."
    ]
    chosen = [
        (name, family)
        for family, names in (
            ("separation", _SEPARATION),
            ("sufficiency", _SUFFICIENCY),
            ("independence", _INDEPENDENCE),
        )
        for name in sorted(configured & names)
    ]
    families = {family for _, family in chosen}
    if len(families) >= 2:
        listed = ", ".join(f"{metric_words(name)} ({family})" for name, family in chosen)
        lines.append(
            f"This policy asks for criteria from {len(families)} families at once: {listed}. On this data they "
            "trade off against each other: decide which one the use case must prioritise."
        )
    return " ".join(lines)


def outcome_levels(parts: Sequence[Any], metric: str, what: str) -> list[dict[str, Any]]:
    """Per single attribute, each sufficient group's outcome level in the base rates' shape (``base_rate``).

    For a kind whose outcome is not a 0/1 label: a regression's mean outcome, a ranking's mean relevance
    (``metric``, a group value with its interval; ``what`` names it). No test is made (``differ`` is null);
    the note says what follows where the outcome differs between groups.
    """
    out = []
    for part in parts:
        if len(part.slicing) != 1 or metric not in part.metrics:
            continue
        values = part.metrics[metric]
        rows = zip(
            part.groups, values["value"], values["ci_low"], values["ci_high"], part.n, part.sufficient, strict=True
        )
        groups = [
            {"group": g, "base_rate": v, "ci_low": low, "ci_high": high, "n": n}
            for g, v, low, high, n, ok in rows
            if ok
        ]
        defined: list[float] = [g["base_rate"] for g in groups if g["base_rate"] is not None]
        out.append(
            {
                "slicing": list(part.slicing),
                "groups": groups,
                "min": min(defined) if defined else None,
                "max": max(defined) if defined else None,
                "differ": None,
                "impossibility": _independence_sufficiency_note(part.slicing[0], defined, what),
            }
        )
    return out


def _independence_sufficiency_note(attribute: str, levels: list[float], what: str) -> str:
    """What a difference in the outcome between groups implies for a model whose outcome is not a 0/1 label."""
    if len(levels) < 2:
        return f"Fewer than two groups of {attribute!r} are large enough to compare their {what}: no conclusion."
    return (
        f"The {what} of {attribute!r} ranges from {fmt(min(levels))} to {fmt(max(levels))} across its groups (not "
        "tested here). Where the outcome is distributed differently in different groups, independence (the "
        "predictions distributed alike in every group, as the distance and parity metrics ask) and sufficiency "
        "(the outcome independent of the group given the prediction: calibration by group) cannot both hold, "
        "whatever the model (Barocas, Hardt and Narayanan 2023): a policy judging both trades one against the other."
    )


# ------------------------------------------------------------------------------------------ worst-off subgroup
def worst_subgroups(parts: list[SlicingResult], labels: ValueLabels | None = None) -> list[dict[str, Any]]:
    """Per metric with a direction, the worst-off sufficient intersectional subgroup, ranked by a confidence bound.

    The point estimate would pick the noisiest (smallest) subgroup (the winner's curse). The worst-off subgroup
    is the one whose bound in the favourable direction is the most adverse: for a metric where higher is
    better, the lowest upper bound ("even at best, its rate is at most ..."); for one where lower is better,
    the highest lower bound. It is reported with its estimate, interval and size; ``labels``: the policy's value
    labels, for its name.
    """
    population = next((p for p in parts if not p.slicing), None)
    intersections = [part for part in parts if len(part.slicing) >= 2]
    out = []
    for name, cls in GroupMetric.registry.items():
        if cls.higher_is_better is None:
            continue
        bound = "ci_high" if cls.higher_is_better else "ci_low"
        having = [part for part in intersections if name in part.metrics]
        # Every sufficient intersectional group with a bound (None is undefined), in order: the first most adverse.
        keys = np.array([b for part in having for b in part.metrics[name][bound]], dtype=float)
        keys *= 1.0 if cls.higher_is_better else -1.0
        candidate = np.array([ok for part in having for ok in part.sufficient], dtype=bool) & ~np.isnan(keys)
        if not candidate.any():
            continue
        at = int(np.flatnonzero(candidate)[np.argmin(keys[candidate])])
        for part in having:  # back to the part and its group
            if at < len(part.groups):
                break
            at -= len(part.groups)
        out.append(_worst_entry(name, cls.higher_is_better, part, at, int(candidate.sum()), population, labels))
    return out


def _worst_entry(
    name: str,
    higher_is_better: bool,
    part: SlicingResult,
    i: int,
    n_candidates: int,
    population: Any,
    labels: ValueLabels | None = None,
) -> dict[str, Any]:
    values = part.metrics[name]
    bound = "ci_high" if higher_is_better else "ci_low"
    overall = population.metrics[name]["value"][0] if population is not None and name in population.metrics else None
    label = group_name(part.groups[i], part.slicing, labels)
    side = "upper" if higher_is_better else "lower"
    extreme = "lowest" if higher_is_better else "highest"
    value, low, high = values["value"][i], values["ci_low"][i], values["ci_high"][i]
    note = (
        f"{label}: {spelled(name)} {fmt(value)} (interval {interval_text(low, high) or 'undefined'}, n = "
        f"{fmt_count(part.n[i])}), the {extreme} "
        f"{side} confidence bound among {n_candidates} intersectional subgroups"
        + (f"; the whole population has {fmt(overall)}" if overall is not None else "")
        + ". The interval is not adjusted for choosing this subgroup among the others."
    )
    return {
        "metric": name,
        "slicing": list(part.slicing),
        "group": part.groups[i],
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "n": part.n[i],
        "direction": "higher_is_better" if higher_is_better else "lower_is_better",
        "ranked_by": bound,
        "n_candidates": n_candidates,
        "population_value": overall,
        "note": note,
    }


# ------------------------------------------------------------------------------------------ Simpson's paradox
@dataclass(frozen=True)
class _Contrast:
    """Groups a and b of one attribute, one rate metric, stratified by another attribute."""

    metric: str
    attribute: str
    stratifier: str
    groups: tuple[str, str]
    strata: list[str]
    cells: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # x_a, n_a, x_b, n_b per stratum


@dataclass(frozen=True)
class _Block:
    """One rate of one attribute's sufficient levels against each other within a stratifier's values.

    ``overall``: (numerator, denominator) per level over the whole population; ``table``: the same per level
    (rows) and stratum (columns), zeros where a cell has no rows.
    """

    metric: str
    attribute: str
    stratifier: str
    levels: list[str]
    strata: list[str]
    overall: np.ndarray  # (2, levels)
    table: np.ndarray  # (2, levels, strata)

    def counts(self, a: np.ndarray, b: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Contrasts of levels ``a`` against ``b``: x_a, n_a, x_b, n_b overall (4, pairs) and per stratum.

        Per stratum as (4, pairs, ``width``), zeros past the block's strata as where a cell has no rows.
        """
        x, n = self.table
        cells = np.zeros((4, len(a), width))
        cells[:, :, : len(self.strata)] = (x[a], n[a], x[b], n[b])
        return np.vstack([self.overall[:, a], self.overall[:, b]]), cells

    def contrast(self, a: int, b: int) -> _Contrast:
        x, n = self.table
        cells = (x[a], n[a], x[b], n[b])
        return _Contrast(
            self.metric, self.attribute, self.stratifier, (self.levels[a], self.levels[b]), self.strata, cells
        )


def simpson_reversals(
    parts: list[SlicingResult],
    metrics: tuple[str, ...] = ("selection_rate", "true_positive_rate"),
    alpha: float = 0.05,
    labels: ValueLabels | None = None,
) -> list[dict[str, Any]]:
    """Disparities whose direction reverses once another attribute is held fixed, with evidence both ways.

    For sufficient groups a and b of attribute A and each other attribute B, the crude difference
    m(a) - m(b) (Newcombe interval) is compared with the Mantel-Haenszel risk difference stratified by B
    (every stratum where both groups have rows, however small; Sato's variance, valid for sparse strata).
    A reversal is flagged only when both intervals exclude 0 with opposite signs. Both intervals are at the
    Bonferroni level 1 - alpha / k over the k contrasts examined, so an audit without any within-stratum
    disparity flags one with probability at most about alpha / 2. Every contrast is computed at once, as arrays.
    """
    blocks = _blocks(parts, metrics)
    pairs = [(block, *np.triu_indices(len(block.levels), 1)) for block in blocks]  # a < b, a's row by row
    if not any(len(a) for _, a, _ in pairs):
        return []
    width = max(len(block.strata) for block in blocks)
    crude_counts, cells = (
        np.concatenate(arrays, axis=1)
        for arrays in zip(*(block.counts(a, b, width) for block, a, b in pairs), strict=True)
    )
    defined = (crude_counts[1] > 0) & (crude_counts[3] > 0) & np.any((cells[1] > 0) & (cells[3] > 0), axis=1)
    if not defined.any():
        return []
    x_a, n_a, x_b, n_b = crude_counts[:, defined]
    level = 1.0 - alpha / int(defined.sum())
    z = z_value(level)
    crude = x_a / n_a - x_b / n_b
    crude_low, crude_high = newcombe_interval(x_a, n_a, x_b, n_b, z)
    stratified, se = mantel_haenszel_differences(*cells[:, defined])
    low, high = stratified - z * se, stratified + z * se
    flagged = ((crude_low > 0) & (high < 0)) | ((crude_high < 0) & (low > 0))
    every = [(block, a, b) for block, first, second in pairs for a, b in zip(first, second, strict=True)]
    kept = [contrast for contrast, ok in zip(every, defined, strict=True) if ok]
    return [
        _simpson_entry(
            kept[i][0].contrast(int(kept[i][1]), int(kept[i][2])),
            float(crude[i]),
            (float(crude_low[i]), float(crude_high[i])),
            float(stratified[i]),
            (float(low[i]), float(high[i])),
            level,
            labels,
        )
        for i in np.flatnonzero(flagged)
    ]


def mantel_haenszel_difference(
    x_a: np.ndarray, n_a: np.ndarray, x_b: np.ndarray, n_b: np.ndarray
) -> tuple[float, float]:
    """Mantel-Haenszel risk difference of a vs b over strata, and its standard error (Sato 1989).

    Strata where either group is empty carry no weight. Returns NaNs when no stratum has both groups.

    >>> rd, se = mantel_haenszel_difference(np.array([8.0, 1.0]), np.array([10.0, 10.0]),
    ...                                     np.array([9.0, 2.0]), np.array([10.0, 10.0]))
    >>> round(rd, 3)
    -0.1
    """
    difference, se = mantel_haenszel_differences(*(np.asarray(v, dtype=float)[None, :] for v in (x_a, n_a, x_b, n_b)))
    return float(difference[0]), float(se[0])


def mantel_haenszel_differences(
    x_a: np.ndarray, n_a: np.ndarray, x_b: np.ndarray, n_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mantel_haenszel_difference` of each row (a contrast; columns are its strata), as arrays.

    Each row's sums run over its strata with both groups, in order, as a row of their own: the same value to the
    last bit as the contrast computed alone.
    """
    keep = (n_a > 0) & (n_b > 0)
    used = keep.sum(axis=1)
    difference, se = np.full(len(used), np.nan), np.full(len(used), np.nan)
    for k in np.unique(used[used > 0]):
        rows = np.flatnonzero(used == k)
        mask = keep[rows]
        d, s = _mantel_haenszel_rows(*(v[rows][mask].reshape(len(rows), k) for v in (x_a, n_a, x_b, n_b)))
        difference[rows], se[rows] = d, s
    return difference, se


def _mantel_haenszel_rows(
    x_a: np.ndarray, n_a: np.ndarray, x_b: np.ndarray, n_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sato's risk difference and standard error per row, every column a stratum with both groups."""
    total = n_a + n_b
    weight = (n_a * n_b / total).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        difference = ((x_a * n_b - x_b * n_a) / total).sum(axis=1) / weight
        p_term = ((n_a**2 * x_b - n_b**2 * x_a + n_a * n_b * (n_b - n_a) / 2.0) / total**2).sum(axis=1)
        q_term = ((x_a * (n_b - x_b) + x_b * (n_a - x_a)) / (2.0 * total)).sum(axis=1)
        se = np.sqrt(np.maximum(difference * p_term + q_term, 0.0)) / weight
    undefined = ~(weight > 0)
    difference[undefined], se[undefined] = np.nan, np.nan
    return difference, se


def _blocks(parts: list[SlicingResult], metrics: tuple[str, ...]) -> list[_Block]:
    """Every (attribute, stratifier, rate) of the pairs: the sufficient levels' counts overall and per stratum."""
    singles = {part.slicing[0]: part for part in parts if len(part.slicing) == 1}
    rates = {name: cls() for name, cls in GroupMetric.registry.items() if name in metrics and issubclass(cls, Rate)}
    fractions: dict[tuple[int, str], np.ndarray] = {}

    def fraction(part: SlicingResult, name: str) -> np.ndarray:
        key = (id(part), name)
        if key not in fractions:
            fractions[key] = _fractions(part, rates[name])
        return fractions[key]

    blocks = []
    for pair in (p for p in parts if len(p.slicing) == 2):
        for position in (0, 1):
            attribute, stratifier = pair.slicing[position], pair.slicing[1 - position]
            single = singles.get(attribute)
            if single is None:
                continue
            strata = sorted({g[stratifier] for g in pair.groups})
            chosen = [i for i, ok in enumerate(single.sufficient) if ok]
            levels = [single.groups[i][attribute] for i in chosen]
            row = {level: r for r, level in enumerate(levels)}
            column = {stratum: c for c, stratum in enumerate(strata)}
            for name in rates:
                within = fraction(pair, name)
                table = np.zeros((2, len(levels), len(strata)))
                for g, group in enumerate(pair.groups):
                    if group[attribute] in row:
                        table[:, row[group[attribute]], column[group[stratifier]]] = within[:, g]
                blocks.append(
                    _Block(name, attribute, stratifier, levels, strata, fraction(single, name)[:, chosen], table)
                )
    return blocks


def _fractions(part: SlicingResult, rate: Rate) -> np.ndarray:
    """(numerator, denominator) of a rate per group of a slicing, as rows of one array."""
    counts = _effective_counts(part)
    empty = np.zeros((len(part.groups), 1))
    numerator, denominator = rate.fraction(GroupCounts(**counts, bin_n=empty, bin_positive=empty, bin_score=empty))
    return np.array([numerator, denominator], dtype=float)


def _simpson_entry(
    contrast: _Contrast,
    crude: float,
    crude_interval: tuple[float, float],
    stratified: float,
    interval: tuple[float, float],
    level: float,
    labels: ValueLabels | None = None,
) -> dict[str, Any]:
    x_a, n_a, x_b, n_b = contrast.cells
    present = (n_a > 0) & (n_b > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = np.where(present, x_a / np.where(n_a > 0, n_a, 1) - x_b / np.where(n_b > 0, n_b, 1), np.nan)
    stratum_differences = [float(d) if np.isfinite(d) else None for d in inside]
    opposite = int(np.sum(np.isfinite(inside) & (np.sign(inside) == -np.sign(crude)) & (inside != 0)))
    a, b = contrast.groups
    attribute, stratifier, metric = contrast.attribute, contrast.stratifier, contrast.metric
    note = (
        f"{spelled(metric)} of {value_name(attribute, a, labels)} minus {value_name(attribute, b, labels)} "
        f"({attribute}) is {fmt_signed(crude)} overall ({fmt_share(level, 2)} interval "
        f"{interval_text(*crude_interval)}) but {fmt_signed(stratified)} ({interval_text(*interval)}) when "
        f"{stratifier} is held fixed (Mantel-Haenszel over "
        f"{int(present.sum())} strata with both groups; the within-stratum difference has the opposite sign in "
        f"{opposite} of them). The overall disparity reflects how {stratifier} is distributed across the groups."
    )
    return {
        "metric": metric,
        "attribute": attribute,
        "stratified_by": stratifier,
        "groups": [a, b],
        "overall_difference": crude,
        "overall_ci_low": crude_interval[0],
        "overall_ci_high": crude_interval[1],
        "stratified_difference": stratified,
        "stratified_ci_low": interval[0],
        "stratified_ci_high": interval[1],
        "confidence_level": level,
        "method": "Mantel-Haenszel risk difference (Sato variance) vs crude Newcombe, Bonferroni over contrasts",
        "strata": contrast.strata,
        "stratum_differences": stratum_differences,
        "n_strata_opposite": opposite,
        "note": note,
    }


def insufficient_groups(parts: list[SlicingResult], policy: Policy) -> list[dict[str, Any]]:
    """The groups under ``min_group_size``, left out of every judgement."""
    minimum = policy.intersectional_analysis.min_group_size
    return [
        {"slicing": list(part.slicing), "group": group, "n": n, "min_group_size": minimum}
        for part in parts
        for group, n, ok in zip(part.groups, part.n, part.sufficient, strict=True)
        if not ok
    ]
