"""The nightly observations of drift detection: one unbiased contrast per night and stream (``drift`` replays them).

**Streams.** For each judged metric whose bases are rates (selection rate for demographic parity and disparate
impact, TPR for equal opportunity, TPR and FPR for equalized odds, PPV for predictive parity, ...), each slicing
the audit plans (attributes, pairs, triples) and each group other than the slicing's reference group, a stream
watches one component rate: the night's group-vs-reference gap minus the baseline's gap (a ratio minus the
baseline's ratio for ratio metrics). Why not the judged summary itself (max - min over groups)? On a small
nightly sample the noise widens the spread, so a night's range is biased upward against a large baseline's
range and a detector on it would alarm on data that did not change (``tests/monitoring/test_drift_unbiased``).
Each contrast is a difference of unbiased rate estimates, so it is centred at 0 when nothing changed.

**Standard errors.** Night and baseline are independent draws, so the contrast's variance is the sum of the
four rates' variances (group and reference, night and baseline). Each is binomial, p (1 - p) / n, in Kish
effective units under weights, with p the *baseline's* rate: it is the variance under "nothing changed", which
the large baseline pins down, whereas the night's own rate from a few dozen events would make the SE noisy
and correlated with the estimate (z heavy-tailed; infinite at a night rate of 0 or 1). It equals the standard
deviation of the engine's cube bootstrap replicates (``tests/monitoring/test_drift_observations``). A group
is skipped that night (and reported) unless the rates rest on at least ``statistics.min_events`` people and
at least 5 expected events of each kind at the baseline's rate (the normal approximation's usual rule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date

import numpy as np
import polars as pl

from fairgate.engine.cube import PRED, TRUE, WEIGHT, Cube
from fairgate.engine.labels import slicing_label, spelled
from fairgate.engine.metric_labels import metric_label
from fairgate.engine.metrics import GroupCounts, Rate, SummaryOf, count_metrics, policy_metric
from fairgate.engine.slicing import GROUP, plan_slicings, reference_group_index
from fairgate.engine.text import fmt
from fairgate.policy.core import Policy

_SQUARES = "__squares"
MIN_EXPECTED_EVENTS = 5  # expected events of each kind at the baseline rate for the normal approximation


#: A stream's id: metric · slicing · group vs reference · component rate (the key of its detector and episodes).
STREAM_SEPARATOR = " · "


def stream_label(stream: str) -> str:
    """A stream's id in words, for reports and sentences (the id itself stays the key).

    >>> stream_label("equal_opportunity_difference · race · Black vs White · true_positive_rate")
    'Equal opportunity difference · race · Black vs White · true positive rate'
    """
    parts = stream.split(STREAM_SEPARATOR)
    if len(parts) != 4:
        return stream
    metric, slicing, groups, rate = parts
    return STREAM_SEPARATOR.join([metric_label(metric), slicing, groups, spelled(rate)])


@dataclass(frozen=True)
class Observation:
    """One night's unbiased contrast against the baseline for one stream.

    ``estimate`` is the night's group-vs-reference gap (ratio for ratio metrics) of ``component`` minus the
    baseline's; ``standard_error`` its SE from the two independent cubes; ``baseline_share`` the part of its
    variance that comes from the baseline (shared by every night of the stream; store it with the rest).
    """

    stream: str
    metric: str
    slicing: str
    group: str
    night: date
    estimate: float
    standard_error: float
    component: str = ""
    reference: str = ""
    baseline_share: float = 0.0

    @property
    def z(self) -> float:
        """The standardized observation."""
        return self.estimate / self.standard_error


@dataclass(frozen=True)
class NightContrasts:
    """One night's observations and the streams left out that night, each with its reason."""

    observations: list[Observation]
    skipped: list[str]


def group_label(group: dict[str, str]) -> str:
    """A group's display label: its values in slicing order, joined with ", "."""
    return ", ".join(group.values())


def night_observations(
    night_cube: Cube, baseline_cube: Cube | BaselineRates, policy: Policy, night: date
) -> list[Observation]:
    """One night's observations: every stream of every judged rate metric (see the module docstring)."""
    return night_contrasts(night_cube, baseline_cube, policy, night).observations


@dataclass(frozen=True)
class BaselineSlicing:
    """The baseline's groups (value tuples, sorted), their counts and the reference group of one slicing."""

    slicing: tuple[str, ...]
    groups: list[tuple[str, ...]]
    counts: GroupCounts
    reference: int


@dataclass(frozen=True)
class BaselineRates:
    """The baseline's side of every stream, counted once and reused for every night compared with it."""

    slicings: list[BaselineSlicing]


def baseline_rates(baseline_cube: Cube, policy: Policy) -> BaselineRates:
    """Count the baseline cube for every slicing the audit plans (the population has no groups to compare)."""
    out = []
    for slicing in plan_slicings(baseline_cube, policy):
        if not slicing:
            continue
        groups, counts = _slicing_counts(baseline_cube, slicing)
        ref = reference_group_index([_group(slicing, g) for g in groups], slicing, policy, counts.n)
        if ref is not None:
            out.append(BaselineSlicing(slicing, groups, counts, ref))
    return BaselineRates(out)


def _watched(policy: Policy) -> tuple[list[tuple[str, SummaryOf]], list[str]]:
    """The judged metrics summarising rates (watched), and why each other judged metric is not."""
    metrics = count_metrics()
    watched: list[tuple[str, SummaryOf]] = []
    unwatched: list[str] = []
    for rule in policy.metrics:
        pm = policy_metric(rule.name)
        if isinstance(pm, SummaryOf) and all(isinstance(metrics.get(base), Rate) for base in pm.bases):
            watched.append((rule.name, pm))
        else:
            unwatched.append(f"{rule.name}: not a difference or ratio of rates; its drift is not watched")
    return watched, unwatched


def night_contrasts(night_cube: Cube, baseline: Cube | BaselineRates, policy: Policy, night: date) -> NightContrasts:
    """One night's observations and the streams skipped that night (too few events), with reasons."""
    if isinstance(baseline, Cube):
        baseline = baseline_rates(baseline, policy)
    metrics = count_metrics()
    watched, skipped = _watched(policy)
    observations: list[Observation] = []
    min_size = policy.intersectional_analysis.min_group_size
    for base_slicing in baseline.slicings:
        slicing, base_groups, base_counts, ref = (
            base_slicing.slicing,
            base_slicing.groups,
            base_slicing.counts,
            base_slicing.reference,
        )
        night_groups, night_counts = _slicing_counts(night_cube, slicing)
        night_index = {g: i for i, g in enumerate(night_groups)}
        night_of = [night_index.get(g) for g in base_groups]
        labels = [group_label(_group(slicing, g)) for g in base_groups]
        sizes = base_counts.n_effective
        for name, pm in watched:
            for base in pm.bases:
                rate = metrics[base]
                assert isinstance(rate, Rate)
                contrasts = _contrasts(
                    rate, base_counts, night_counts, ref, night_of, pm.summary, policy.statistics.min_events
                )
                for g, result in enumerate(contrasts):
                    if g == ref or sizes[g] < min_size:
                        continue  # below min_group_size in the baseline: never audited, never watched
                    parts = (name, slicing_label(slicing), f"{labels[g]} vs {labels[ref]}", base)
                    stream = STREAM_SEPARATOR.join(parts)
                    if isinstance(result, str):
                        skipped.append(f"{stream}: {result}")
                        continue
                    estimate, se, share = result
                    observations.append(
                        Observation(
                            stream=stream,
                            metric=name,
                            slicing=slicing_label(slicing),
                            group=labels[g],
                            night=night,
                            estimate=estimate,
                            standard_error=se,
                            component=base,
                            reference=labels[ref],
                            baseline_share=share,
                        )
                    )
    return NightContrasts(observations, skipped)


def _group(slicing: tuple[str, ...], values: tuple[str, ...]) -> dict[str, str]:
    return dict(zip(slicing, values, strict=True))


def _slicing_counts(cube: Cube, slicing: tuple[str, ...]) -> tuple[list[tuple[str, ...]], GroupCounts]:
    """The groups of a slicing (value tuples, sorted) and their confusion counts, one group-by of the cube.

    With weights, the squared-weight sums come along (per row or per person, as the engine picks them), so
    rates' trials are Kish effective sizes as in the audit. Calibration bins are not needed by rates.
    """
    keys = list(slicing)
    squares = cube.squares_column(slicing)
    cells = (
        cube.cells.group_by([*keys, TRUE, PRED])
        .agg(pl.col(WEIGHT).sum(), pl.col(squares).sum().alias(_SQUARES))
        .sort([*keys, TRUE, PRED])
    )
    groups = cells.select(keys).unique(maintain_order=True)
    index = cells.select(keys).join(groups.with_row_index(GROUP), on=keys, maintain_order="left")[GROUP].to_numpy()
    outcome = cells[TRUE].to_numpy().astype(np.int64) * 2 + cells[PRED].to_numpy().astype(np.int64)
    size = groups.height * 4
    flat = index.astype(np.int64) * 4 + outcome
    weight = np.bincount(flat, weights=cells[WEIGHT].to_numpy(), minlength=size).reshape(-1, 4)
    squared = np.bincount(flat, weights=cells[_SQUARES].to_numpy(), minlength=size).reshape(-1, 4)
    no_bins = np.zeros((groups.height, 1))
    confusion = {"tn": 0, "fp": 1, "fn": 2, "tp": 3}  # 2 * y_true + y_pred
    sq = {f"{name}_sq": squared[:, i] for name, i in confusion.items()} if cube.weighted else {}
    counts = GroupCounts(
        **{name: weight[:, i] for name, i in confusion.items()},
        bin_n=no_bins,
        bin_positive=no_bins,
        bin_score=no_bins,
        **sq,
    )
    return [tuple(str(v) for v in row) for row in groups.iter_rows()], counts


def _contrasts(
    rate: Rate,
    base: GroupCounts,
    night: GroupCounts,
    ref: int,
    night_of: list[int | None],
    summary: str,
    min_events: int,
) -> list[tuple[float, float, float] | str]:
    """Per baseline group: (estimate, SE, baseline variance share) of its contrast, or why it is skipped."""
    b_success, b_trials = (np.asarray(a, dtype=float) for a in rate.fraction(base))
    n_success, n_trials = (np.asarray(a, dtype=float) for a in rate.fraction(night))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_base = np.where(b_trials > 0, b_success / np.where(b_trials > 0, b_trials, 1.0), np.nan)
    out: list[tuple[float, float, float] | str] = []
    for g in range(len(night_of)):
        problem = _problem(g, ref, night_of, p_base, n_trials, rate, min_events)
        if problem is not None:
            out.append(problem)
            continue
        ng, nr = night_of[g], night_of[ref]
        assert ng is not None
        assert nr is not None
        p_night_g, p_night_r = n_success[ng] / n_trials[ng], n_success[nr] / n_trials[nr]
        var_g = p_base[g] * (1 - p_base[g])
        var_r = p_base[ref] * (1 - p_base[ref])
        if summary == "ratio":
            if p_night_r <= 0.0:
                out.append(f"the reference group's {rate.name} is 0 tonight: the ratio is undefined")
                continue
            # Delta method for p_g / p_ref around the baseline rates.
            ratio_b = p_base[g] / p_base[ref]
            estimate = p_night_g / p_night_r - ratio_b
            scale_g, scale_r = ratio_b**2 / p_base[g] ** 2, ratio_b**2 / p_base[ref] ** 2
        else:
            estimate = (p_night_g - p_night_r) - (p_base[g] - p_base[ref])
            scale_g = scale_r = 1.0
        night_var = scale_g * var_g / n_trials[ng] + scale_r * var_r / n_trials[nr]
        base_var = scale_g * var_g / b_trials[g] + scale_r * var_r / b_trials[ref]
        total = night_var + base_var
        out.append((float(estimate), math.sqrt(total), float(base_var / total)))
    return out


def _problem(
    g: int,
    ref: int,
    night_of: list[int | None],
    p_base: np.ndarray,
    n_trials: np.ndarray,
    rate: Rate,
    min_events: int,
) -> str | None:
    """Why group g's contrast cannot be computed tonight (None when it can)."""
    for who, i in (("the group", g), ("the reference group", ref)):
        p = p_base[i]
        if not np.isfinite(p) or p <= 0.0 or p >= 1.0:
            return f"{who}'s baseline {spelled(rate.name)} is {p:.3g}: no variation to compare against"
        j = night_of[i]
        trials = 0.0 if j is None else float(n_trials[j])
        needed = max(float(min_events), MIN_EXPECTED_EVENTS / min(p, 1 - p))
        if trials < needed:  # the count itself is not printed: the reports' small-count rule (1 to k-1) holds
            few = "no people" if trials == 0 else "too few people"
            return (
                f"{who} has {few} tonight for {spelled(rate.name)} (needs {math.ceil(needed)}: at least "
                f"{MIN_EXPECTED_EVENTS} expected events of each kind at the baseline rate {fmt(p)})"
            )
    return None
