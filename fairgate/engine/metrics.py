"""Group metrics and the policy metrics judged from them.

A *group metric* (selection rate, TPR, ECE, ...) maps the sufficient statistics of one group to a number.
A *policy metric* (``demographic_parity_difference``, ``disparate_impact_ratio``, ...) summarises a group
metric across the groups of a slicing. Both are plain classes that register themselves on definition, so
adding a metric means adding one class: the cube, the bootstrap, the JSON and the reports pick it up.

Every computation is vectorised over leading axes: arrays shaped ``(..., groups)`` hold one value per group
for the point estimate (no leading axis) and for each bootstrap replicate (a leading replicate axis).
Fairlearn's names are used throughout; a rate whose denominator is zero is undefined (NaN, null in JSON).
"""

from __future__ import annotations

import functools
from typing import ClassVar, Literal

import numpy as np

# The group counts live in their own module; re-exported here, where the metrics computed from them are.
from fairgate.engine.counts import CONFUSION as _CONFUSION
from fairgate.engine.counts import GroupCounts as GroupCounts
from fairgate.engine.counts import effective_size as effective_size
from fairgate.engine.labels import spelled

Summary = Literal["difference", "ratio"]


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Numerator / denominator, NaN (undefined) where the denominator is zero."""
    quotient = np.full(np.broadcast_shapes(np.shape(numerator), np.shape(denominator)), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(numerator, denominator, out=quotient, where=np.asarray(denominator) > 0)
    return quotient


# ------------------------------------------------------------------------------------------ group metrics
class GroupMetric:
    """A per-group metric. Subclasses with a ``name`` register themselves in ``GroupMetric.registry``."""

    name: ClassVar[str]
    # The one definition of the worst-off group, for every kind, page and diagnostic: the group on the adverse
    # side of the metric in the policy's outcome words. True: a larger value means the group's people fare
    # better (more favourable decisions for their outcomes: selection, TPR, FPR, NPV, accuracy, AUC), so the
    # group with the smallest value is the worst off; False: a larger value means they fare worse (FNR, TNR,
    # PPV's higher bar, FOR, calibration error, inequality), so the largest is; None: neither (the base rate).
    # A group held to a harsher decision threshold is worst off on every rate (tests/engine/test_worst_off.py).
    higher_is_better: ClassVar[bool | None] = None
    needs_scores: ClassVar[bool] = False
    registry: ClassVar[dict[str, type[GroupMetric]]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            GroupMetric.registry[cls.name] = cls

    def compute(self, counts: GroupCounts) -> np.ndarray:
        """The metric per group, shaped like ``counts.tp`` (NaN where undefined)."""
        raise NotImplementedError

    def events(self, counts: GroupCounts) -> np.ndarray:
        """The number of people the metric rests on in each group (checked against ``statistics.min_events``).

        Kish effective sizes under weights, so the check does not depend on the weights' scale.
        """
        return counts.n_effective


class Rate(GroupMetric):
    """A proportion: the sum of some counts over the sum of others. Intervals are Wilson score intervals."""

    numerator: ClassVar[tuple[str, ...]]
    denominator: ClassVar[tuple[str, ...]]

    def fraction(self, counts: GroupCounts) -> tuple[np.ndarray, np.ndarray]:
        """(successes, trials) for intervals and tests: effective (Kish) counts where weights are given."""
        return counts.effective_fraction(self.numerator, self.denominator)

    def compute(self, counts: GroupCounts) -> np.ndarray:
        """The sum of the numerator cells over the sum of the denominator cells; NaN where the latter is 0."""
        return _divide(counts.total(self.numerator), counts.total(self.denominator))

    def value_and_fraction(
        self, counts: GroupCounts, totals: dict[tuple[str, ...], np.ndarray] | None = None
    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """:meth:`compute` and :meth:`fraction` at once: unweighted, both read the same sums, added once.

        ``totals``: the sums of ``counts`` already added (by the cells they add, shared by every rate of one
        ``counts``; filled here); the arrays returned may be shared with other rates', so are read-only by use.
        """
        if counts.weighted:
            return self.compute(counts), self.fraction(counts)
        known = {} if totals is None else totals
        for names in (self.numerator, self.denominator):
            if names not in known:
                known[names] = counts.total(names)
        successes, trials = known[self.numerator], known[self.denominator]
        return _divide(successes, trials), (successes, trials)

    def events(self, counts: GroupCounts) -> np.ndarray:
        """The rate's denominator (effective sizes under weights).

        Positives for TPR/FNR, negatives for FPR/TNR, predicted positives for PPV/FDR, predicted negatives for
        NPV/FOR, everyone for selection rate, base rate and accuracy.
        """
        return self.fraction(counts)[1]


class SelectionRate(Rate):
    """Share of the group given the favourable prediction: (tp + fp) / n."""

    name = "selection_rate"
    numerator, denominator = ("tp", "fp"), _CONFUSION
    higher_is_better = True


class BaseRate(Rate):
    """Share of the group with the favourable label: (tp + fn) / n."""

    name = "base_rate"
    numerator, denominator = ("tp", "fn"), _CONFUSION


class TruePositiveRate(Rate):
    """Share of the favourable labels predicted favourable: tp / (tp + fn)."""

    name = "true_positive_rate"
    numerator, denominator = ("tp",), ("tp", "fn")
    higher_is_better = True


class FalsePositiveRate(Rate):
    """Share of the unfavourable labels predicted favourable: fp / (fp + tn)."""

    name = "false_positive_rate"
    numerator, denominator = ("fp",), ("fp", "tn")
    higher_is_better = True


class FalseNegativeRate(Rate):
    """Share of the favourable labels predicted unfavourable: fn / (tp + fn)."""

    name = "false_negative_rate"
    numerator, denominator = ("fn",), ("tp", "fn")
    higher_is_better = False


class TrueNegativeRate(Rate):
    """Share of the unfavourable labels predicted unfavourable: tn / (fp + tn)."""

    name = "true_negative_rate"
    numerator, denominator = ("tn",), ("fp", "tn")
    higher_is_better = False


class PositivePredictiveValue(Rate):
    """Precision, the share of favourable predictions that are right: tp / (tp + fp)."""

    name = "positive_predictive_value"
    numerator, denominator = ("tp",), ("tp", "fp")
    higher_is_better = False


class NegativePredictiveValue(Rate):
    """Share of unfavourable predictions that are right: tn / (tn + fn)."""

    name = "negative_predictive_value"
    numerator, denominator = ("tn",), ("tn", "fn")
    higher_is_better = True


class FalseDiscoveryRate(Rate):
    """Share of favourable predictions that are wrong: fp / (tp + fp)."""

    name = "false_discovery_rate"
    numerator, denominator = ("fp",), ("tp", "fp")
    higher_is_better = True


class FalseOmissionRate(Rate):
    """Share of unfavourable predictions that are wrong: fn / (tn + fn)."""

    name = "false_omission_rate"
    numerator, denominator = ("fn",), ("tn", "fn")
    higher_is_better = False


class Accuracy(Rate):
    """Share of correct predictions: (tp + tn) / n."""

    name = "accuracy"
    numerator, denominator = ("tp", "tn"), _CONFUSION
    higher_is_better = True


class ExpectedCalibrationError(GroupMetric):
    """ECE over equal-width score bins: sum over bins of |sum of scores - favourable labels| / n."""

    name = "expected_calibration_error"
    higher_is_better = False
    needs_scores = True

    def compute(self, counts: GroupCounts) -> np.ndarray:
        """The ECE per group; NaN for an empty group."""
        gap = counts.bin_score - counts.bin_positive
        gap = np.abs(gap, out=gap).sum(axis=-1)
        return _divide(gap, counts.bin_total)


class ExpectedCalibrationErrorDebiased(GroupMetric):
    """Debiased calibration error (Kumar, Liang & Ma 2019, "Verified Uncertainty Calibration").

    The plug-in ECE is biased upward: a perfectly calibrated group scores about 0.1 at n = 100, because the
    label mean of each bin is noisy. Over the same equal-width bins, ``sum_b w_b (s_b - y_b) ** 2`` minus the
    unbiased estimate ``y_b (1 - y_b) / (n_b - 1)`` of each bin's sampling variance is an unbiased estimate of
    the squared (L2, root-mean-square) calibration error; the metric is the square root of its positive part
    (an estimate below 0 means "no detectable miscalibration" and reads 0), on the probability scale like ECE.

    Bootstrap replicates (a leading replicate axis on ``bin_n``) are centred on the estimate: the resampled
    world's true error is the plug-in error, not the debiased one, so replicate ``r`` reports
    ``S(r) - plugin(mean) + S(mean)`` with ``mean`` the replicates' mean counts (the point counts in
    expectation). Their percentile interval is then the bootstrap pivot interval (clipped at 0 with the
    estimate), so it starts at 0 for a calibrated group.
    """

    name = "expected_calibration_error_debiased"
    higher_is_better = False
    needs_scores = True

    def compute(self, counts: GroupCounts) -> np.ndarray:
        """The debiased calibration error per group (replicates re-centred, see the class docstring)."""
        counts = counts.in_effective_units()  # the bin variance needs counts of people, not sums of weights
        plugin, correction = _squared_error_terms(counts.bin_n, counts.bin_positive, counts.bin_score, counts.bin_total)
        squared = plugin - correction
        if counts.bin_n.ndim > 2 and counts.bin_n.shape[0] > 0:
            # Replicates: re-centre on the estimate (see the class docstring).
            mean = (a.mean(axis=0) for a in (counts.bin_n, counts.bin_positive, counts.bin_score))
            # S(r) - plugin(mean) + S(mean) = S(r) - correction(mean).
            _, world_correction = _squared_error_terms(*mean)
            squared = squared - world_correction
        error: np.ndarray = np.sqrt(np.clip(squared, 0.0, None))
        return error


def _squared_error_terms(
    bin_n: np.ndarray, positive: np.ndarray, score: np.ndarray, total: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The plug-in squared calibration error and its bias correction, over the bins (last axis).

    The first is sum_b (n_b / n) (mean score_b - mean label_b) ** 2, the second the sum of each bin's unbiased
    label-mean variance estimate y_b (1 - y_b) / (n_b - 1) with the same weights; NaN for an empty group. A bin
    of one row (or less weight) has no variance estimate. ``total``: ``bin_n`` summed over the bins, if known.
    """
    # n_b * gap_b ** 2 = (score sum - label sum) ** 2 / n_b; an empty bin has both sums 0. In place: this runs
    # on every bootstrap replicate of every slicing.
    term = score - positive
    np.square(term, out=term)
    np.divide(term, bin_n, out=term, where=bin_n > 0)
    plugin = term.sum(axis=-1)
    variance = np.subtract(bin_n, positive, out=term)  # the same buffer: a fresh one costs its page faults
    variance *= positive
    spread = bin_n - 1.0
    spread *= bin_n
    many = bin_n > 1
    np.divide(variance, spread, out=variance, where=many)
    np.copyto(variance, 0.0, where=~many)  # 0 where a bin has one row or less
    correction = variance.sum(axis=-1)
    total = bin_n.sum(axis=-1) if total is None else total
    return _divide(plugin, total), _divide(correction, total)


class GeneralizedEntropyIndex(GroupMetric):
    """AIF360's generalized entropy index of the benefit b = 1 + y_pred - y_true (alpha = 2).

    b is 0 for a false negative, 1 for a correct decision and 2 for a false positive, so the index is a
    function of the confusion counts: GE = (1 / (n a (a - 1))) * sum((b / mean b) ** a - 1).
    """

    name = "generalized_entropy_index"
    alpha: ClassVar[float] = 2.0
    higher_is_better = False

    def compute(self, counts: GroupCounts) -> np.ndarray:
        """The index per group, from the confusion counts; NaN for an empty group."""
        n = counts.n
        mean_benefit = _divide(counts.tp + counts.tn + 2.0 * counts.fp, n)
        a = self.alpha
        with np.errstate(divide="ignore", invalid="ignore"):
            total = (
                counts.fn * -1.0
                + (counts.tp + counts.tn) * ((1.0 / mean_benefit) ** a - 1.0)
                + counts.fp * ((2.0 / mean_benefit) ** a - 1.0)
            )
        return _divide(total, n * a * (a - 1.0))


class TheilIndex(GroupMetric):
    """AIF360's Theil index: the generalized entropy index with alpha = 1, mean of (b/mu) ln(b/mu)."""

    name = "theil_index"
    higher_is_better = False

    def compute(self, counts: GroupCounts) -> np.ndarray:
        """The index per group, from the confusion counts; NaN for an empty group."""
        n = counts.n
        mu = _divide(counts.tp + counts.tn + 2.0 * counts.fp, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            ones = (counts.tp + counts.tn) * (1.0 / mu) * np.log(1.0 / mu)
            twos = np.where(counts.fp > 0, counts.fp * (2.0 / mu) * np.log(2.0 / mu), 0.0)
        return _divide(ones + twos, n)


class RocAuc(GroupMetric):
    """Exact ROC AUC (ties count 1/2), equal to sklearn's roc_auc_score. Needs the score table, not counts."""

    name = "roc_auc"
    higher_is_better = True
    needs_scores = True

    def compute(self, counts: GroupCounts) -> np.ndarray:  # pragma: no cover - computed from score tables
        """Not available from counts: always raises ``TypeError`` (see ``fairgate.engine.auc``)."""
        raise TypeError("roc_auc is computed from the score table by fairgate.engine.auc, not from counts")

    def events(self, counts: GroupCounts) -> np.ndarray:
        """AUC rests on the smaller of the positives and the negatives (effective sizes under weights)."""
        smaller: np.ndarray = np.minimum(*counts.effective_class_sizes(counts.tp + counts.fn, counts.fp + counts.tn))
        return smaller


def count_metrics() -> dict[str, GroupMetric]:
    """One instance of every registered group metric computed from the cube's counts (all but the AUC)."""
    return {name: cls() for name, cls in GroupMetric.registry.items() if cls is not RocAuc}


# ----------------------------------------------------------------------------------------- policy metrics
class PolicyMetric:
    """A metric a policy can judge. Subclasses with a ``name`` register in ``PolicyMetric.registry``."""

    name: ClassVar[str]
    # Per instance: a summary's direction and range follow from whether it is a difference or a ratio.
    direction: Literal["lower_is_better", "higher_is_better"]
    threshold_range: tuple[float, float]
    example_threshold: float
    bases: ClassVar[tuple[str, ...]]
    # Judged on the whole population (one slicing, no attributes) rather than per attribute slicing.
    population_level: ClassVar[bool] = False
    registry: ClassVar[dict[str, type[PolicyMetric]]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            PolicyMetric.registry[cls.name] = cls

    def describe(self) -> str:
        """A short plain-language description of the metric, for reports."""
        raise NotImplementedError

    def evaluate(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """The metric from per-group values of its bases, each shaped (..., G); NaN groups are ignored."""
        raise NotImplementedError


def difference(values: np.ndarray) -> np.ndarray:
    """max_g - min_g over defined groups (Fairlearn's ``between_groups``); NaN with fewer than 2 groups.

    >>> float(difference(np.array([0.2, np.nan, 0.5])))
    0.3
    """
    enough, high, low = _defined_extremes(values)
    return np.where(enough, high - low, np.nan)


def _defined_extremes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Whether at least 2 values are defined (finite), and the largest and smallest defined value, over the last axis.

    Every value defined (the usual case, and every bootstrap replicate of it): the plain maximum and minimum,
    which are the same numbers.
    """
    defined = np.isfinite(values)
    if defined.all():
        count = values.shape[-1] if np.ndim(values) else 1
        return np.full(np.shape(values)[:-1], count >= 2), values.max(axis=-1), values.min(axis=-1)
    enough = defined.sum(axis=-1) >= 2
    return enough, np.where(defined, values, -np.inf).max(axis=-1), np.where(defined, values, np.inf).min(axis=-1)


def ratio(values: np.ndarray) -> np.ndarray:
    """min_g / max_g over defined groups (Fairlearn's ``ratio``); NaN when max is 0 or < 2 groups.

    >>> float(ratio(np.array([0.2, 0.5])))
    0.4
    """
    enough, high, low = _defined_extremes(values)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(enough & (high > 0), low / np.where(high > 0, high, 1.0), np.nan)


class SummaryOf(PolicyMetric):
    """The difference or ratio of one group metric across groups."""

    summary: ClassVar[Summary]

    def __init__(self) -> None:
        if self.summary == "difference":
            self.direction, self.threshold_range, self.example_threshold = "lower_is_better", (0.0, 1.0), 0.1
        else:
            self.direction, self.threshold_range, self.example_threshold = "higher_is_better", (0.0, 1.0), 0.8

    def describe(self) -> str:
        """What the summary measures and where parity lies."""
        if self.summary == "difference":
            return f"the largest gap in {spelled(self.bases[0])} between groups (0 is parity)"
        return f"the smallest over largest {spelled(self.bases[0])} across groups (1 is parity)"

    def evaluate(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """The difference or ratio of the base metric across groups; NaN with fewer than 2 defined groups."""
        summarise = difference if self.summary == "difference" else ratio
        return summarise(values[self.bases[0]])


class WorstCaseOf(SummaryOf):
    """Fairlearn's ``worst_case``: the largest difference (or smallest ratio) over several group metrics."""

    def describe(self) -> str:
        """Which summary is taken and over which group metrics."""
        joined = " and ".join(spelled(b) for b in self.bases)
        return f"the worst {self.summary} between groups over {joined}"

    def evaluate(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """The worst component; undefined (NaN) when any component is undefined.

        Never the other component alone: a group without negatives has no FPR, and equalized odds cannot be
        judged from TPR only.
        """
        summarise = difference if self.summary == "difference" else ratio
        each = np.stack([summarise(values[base]) for base in self.bases])
        reduce = np.maximum.reduce if self.summary == "difference" else np.minimum.reduce
        worst: np.ndarray = reduce(each, axis=0)
        return worst


class PopulationIndex(PolicyMetric):
    """An inequality index over the whole population (AIF360's individual fairness indices)."""

    direction = "lower_is_better"
    threshold_range = (0.0, 10.0)
    example_threshold = 0.1
    population_level = True

    def describe(self) -> str:
        """The index named and what 0 means."""
        return f"AIF360's {self.bases[0]} over the whole population (0 is perfect equality of benefit)"

    def evaluate(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """The index of the single population group (the first along the last axis)."""
        return values[self.bases[0]][..., 0]


class DemographicParityDifference(SummaryOf):
    """Largest gap in selection rate between groups (Fairlearn's name)."""

    name, bases, summary = "demographic_parity_difference", ("selection_rate",), "difference"


class DemographicParityRatio(SummaryOf):
    """Smallest over largest selection rate across groups (Fairlearn's name)."""

    name, bases, summary = "demographic_parity_ratio", ("selection_rate",), "ratio"


class DisparateImpactRatio(SummaryOf):
    """Selection rate ratio; the EEOC four-fifths rule judges it against 0.8."""

    name, bases, summary = "disparate_impact_ratio", ("selection_rate",), "ratio"


class EqualOpportunityDifference(SummaryOf):
    """Largest gap in true positive rate between groups."""

    name, bases, summary = "equal_opportunity_difference", ("true_positive_rate",), "difference"


class EqualOpportunityRatio(SummaryOf):
    """Smallest over largest true positive rate across groups."""

    name, bases, summary = "equal_opportunity_ratio", ("true_positive_rate",), "ratio"


class EqualizedOddsDifference(WorstCaseOf):
    """The larger of the TPR and FPR differences (Fairlearn's ``equalized_odds_difference``)."""

    name, bases, summary = (
        "equalized_odds_difference",
        ("true_positive_rate", "false_positive_rate"),
        "difference",
    )


class EqualizedOddsRatio(WorstCaseOf):
    """The smaller of the TPR and FPR ratios (Fairlearn's ``equalized_odds_ratio``)."""

    name, bases, summary = "equalized_odds_ratio", ("true_positive_rate", "false_positive_rate"), "ratio"


class PredictiveParityDifference(SummaryOf):
    """Largest gap in positive predictive value (precision) between groups."""

    name, bases, summary = "predictive_parity_difference", ("positive_predictive_value",), "difference"


class CalibrationDifference(SummaryOf):
    """Difference of the debiased calibration error across groups.

    The plug-in ECE is biased upward, more so in small groups, so its difference would grow with the imbalance
    of group sizes.
    """

    name, bases, summary = "calibration_difference", ("expected_calibration_error_debiased",), "difference"


class AucDifference(SummaryOf):
    """Largest gap in ROC AUC between groups."""

    name, bases, summary = "auc_difference", ("roc_auc",), "difference"


class TheilIndexPolicy(PopulationIndex):
    """AIF360's Theil index of the benefit over the whole population."""

    name, bases = "theil_index", ("theil_index",)


class GeneralizedEntropyIndexPolicy(PopulationIndex):
    """AIF360's generalized entropy index (alpha = 2) over the whole population."""

    name, bases = "generalized_entropy_index", ("generalized_entropy_index",)


@functools.cache  # called per rule and result on every slicing; metrics are stateless
def policy_metric(name: str) -> PolicyMetric:
    """The policy metric called ``name``: a registered class, or ``<group metric>_difference|_ratio``.

    >>> policy_metric("false_positive_rate_difference").bases
    ('false_positive_rate',)
    """
    if name in PolicyMetric.registry:
        return PolicyMetric.registry[name]()
    for summary in ("difference", "ratio"):
        base = name.removesuffix(f"_{summary}")
        if base != name and base in GroupMetric.registry:
            # Built without a ``name`` in its body so that it does not join the registry.
            generic: type[SummaryOf] = type(name, (SummaryOf,), {"bases": (base,), "summary": summary})
            generic.name = name
            return generic()
    raise ValueError(f"unknown metric {name!r}; use one of: {', '.join(known_policy_metrics())}")


def known_policy_metrics() -> list[str]:
    """Every name ``policy_metric`` accepts, sorted: the registered ones and each group metric's summaries."""
    generic = [f"{base}_{s}" for base in GroupMetric.registry for s in ("difference", "ratio")]
    return sorted(set(PolicyMetric.registry) | set(generic))
