"""Work a binary slicing leaves out changes none of its figures: a rate's replicates where no judged metric reads them,
a family's replicates where its critical value does not come from the bootstrap."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.engine import slicing as slicing_module
from fairgate.engine.metrics import Rate, count_metrics
from fairgate.engine.slicing import compute_slicing, plan_slicings
from fairgate.engine.stats import PAIR_BUDGET, pair_family
from fairgate.engine.summaries import MetricValues, judged_bases, summary_component, summary_pair_family


def _frame(n: int = 6000) -> pl.DataFrame:
    rng = np.random.default_rng(8)
    y = (rng.random(n) < 0.4).astype(int)
    score = 1.0 / (1.0 + np.exp(-(1.1 * y + rng.normal(-0.5, 1.0, n))))
    return pl.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n),
            "band": rng.choice(["a", "b", "c", "d"], n),
            "y_true": y,
            "score": score,
            "y_pred": (score >= 0.5).astype(int),
        }
    )


def _policy(metrics: list[str]) -> fairgate.Policy:
    return fairgate.Policy.model_validate(
        {
            "sensitive_attributes": [{"name": "sex"}, {"name": "band"}],
            "metrics": [{"name": m, "threshold": 0.8 if m.endswith("ratio") else 0.1} for m in metrics],
            "intersectional_analysis": {"min_group_size": 30},
            "statistics": {"n_bootstrap": 200, "seed": 4},
        }
    )


def _figures(part: fairgate.SlicingResult, rates: set[str]) -> list[object]:
    return [
        [part.metrics[r] for r in sorted(rates)],
        [c for c in part.comparisons if c["metric"] in rates],
        [s for s in part.summaries if s["metric"] in rates],
    ]


def test_a_rates_figures_do_not_depend_on_whether_the_policy_judges_it() -> None:
    frame = _frame()
    judging_one = _policy(["demographic_parity_difference"])
    judging_many = _policy(
        ["demographic_parity_difference", "equalized_odds_difference", "accuracy_difference", "base_rate_ratio"]
    )
    rates = {name for name, metric in count_metrics().items() if isinstance(metric, Rate)}
    for policy in (judging_one, judging_many):
        assert judged_bases(("sex", "band"), policy) <= rates
    assert judged_bases((), judging_many) == frozenset()  # summaries are not judged on the population
    cube = fairgate.build_cube(frame, judging_many, exact_auc=False)
    for slicing in plan_slicings(cube, judging_many):
        one, many = (compute_slicing(cube, slicing, p) for p in (judging_one, judging_many))
        assert _figures(one, rates) == _figures(many, rates)


def test_a_rate_no_judged_metric_reads_gets_no_replicates(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = _policy(["demographic_parity_difference"])
    cube = fairgate.build_cube(_frame(), policy, exact_auc=False)
    seen: dict[str, MetricValues] = {}
    computed = slicing_module._count_metric_values

    def keeping(*args: object) -> dict[str, MetricValues]:
        values = computed(*args)  # type: ignore[arg-type]
        seen.update(values)
        return values

    monkeypatch.setattr(slicing_module, "_count_metric_values", keeping)
    compute_slicing(cube, ("band",), policy)
    assert seen["selection_rate"].replicates.shape == (200, 4)  # judged: demographic parity reads it
    assert seen["true_positive_rate"].replicates.shape == (0, 4)
    assert seen["expected_calibration_error"].replicates.shape == (200, 4)  # its interval is a bootstrap one


def _rate_values(groups: int, replicates: int, seed: int) -> MetricValues:
    rng = np.random.default_rng(seed)
    trials = rng.integers(40, 400, groups).astype(float)
    successes = np.floor(trials * rng.uniform(0.2, 0.6, groups))
    rep_trials = np.broadcast_to(trials, (replicates, groups)).copy()
    rep_successes = rng.binomial(trials.astype(np.int64), successes / trials, (replicates, groups)).astype(float)
    value, reps = successes / trials, rep_successes / rep_trials
    return MetricValues(value, value, value, reps, trials, (successes, trials), (rep_successes, rep_trials))


@pytest.mark.parametrize("groups", [5, 16, 17, 40])
@pytest.mark.parametrize("summary", ["difference", "ratio"])
def test_a_family_built_without_the_replicates_it_does_not_read_is_the_same(groups: int, summary: str) -> None:
    components = [_rate_values(groups, 1000, seed) for seed in (1, 2)]
    use = np.ones(groups, dtype=bool)
    use[1] = False
    index = np.flatnonzero(use)
    # What the family was before: every component's replicates selected, the family deciding on the bootstrap.
    full = pair_family([summary_component(v, index, summary, bootstrap=True) for v in components], bootstrap=True)
    found = summary_pair_family(components, use, summary)
    assert full is not None
    assert found is not None
    bootstrapped = 2 * (index.size * (index.size - 1) // 2) * 1000 <= PAIR_BUDGET
    assert (full.null is not None) == bootstrapped
    for name in [f.name for f in dataclasses.fields(full)]:
        np.testing.assert_array_equal(getattr(found, name), getattr(full, name), strict=True)
