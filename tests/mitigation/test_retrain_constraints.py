"""The constraint a policy asks for, and the retraining task under each constraint family, on seeded generated
data (fit on one half, measured on the other). The tasks run as plain functions (``.fn``): no Prefect here."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from sklearn.linear_model import LogisticRegression

import fairgate
from fairgate.errors import PolicyError
from fairgate.mitigation.retraining import choose_constraint
from tasks.mitigation.training import favourable_probability, fit_models, training_set


def _policy(*metrics: tuple[str, float], favourable: int = 1) -> fairgate.Policy:
    return fairgate.Policy.model_validate(
        {
            "favorable_label": favourable,
            "sensitive_attributes": [{"name": "group"}],
            "metrics": [{"name": name, "threshold": threshold} for name, threshold in metrics],
            "columns": {"y_true": "label"},
        }
    )


def test_first_constrainable_metric_in_policy_order() -> None:
    policy = _policy(("auc_difference", 0.1), ("equalized_odds_ratio", 0.8), ("demographic_parity_difference", 0.1))
    choice = choose_constraint(policy)
    assert (choice.family, choice.metric, choice.ratio_bound, choice.difference_bound) == (
        "equalized_odds",
        "equalized_odds_ratio",
        0.8,
        None,
    )
    chosen = choose_constraint(policy, "demographic_parity")
    assert (chosen.metric, chosen.difference_bound) == ("demographic_parity_difference", 0.1)
    with pytest.raises(PolicyError, match="no true_positive_rate_parity metric"):
        choose_constraint(policy, "true_positive_rate_parity")


def _data(seed: int, n: int) -> pl.DataFrame:
    """Group b merits the favourable label as often as group a, but its feature is shifted down: an unconstrained
    model gives b fewer favourable predictions at every level of merit."""
    rng = np.random.default_rng(seed)
    group = rng.choice(["a", "b"], size=n, p=[0.6, 0.4])
    label = (rng.random(n) < 0.5).astype(np.int64)
    x = rng.normal(size=n) + 1.2 * label - np.where(group == "b", 0.9, 0.0)
    return pl.DataFrame({"id": np.arange(n), "x": x, "x2": rng.normal(size=n), "group": group, "label": label})


def _rates(policy: fairgate.Policy, frame: pl.DataFrame, model: Any) -> dict[str, dict[str, float]]:
    """Favourable-prediction rate per group: overall, among the favourable truth (TPR), among the rest (FPR)."""
    data = training_set(frame, "evaluation", policy, ["group"], ["x", "x2"])
    p = favourable_probability(model, data.features)  # the expected rate of a randomised classifier
    out: dict[str, dict[str, float]] = {}
    for g in ("a", "b"):
        mask = data.groups == g
        merit = data.favourable == 1
        out[g] = {"sel": p[mask].mean(), "tpr": p[mask & merit].mean(), "fpr": p[mask & ~merit].mean()}
    return out


@pytest.mark.parametrize(
    ("metric", "measures"),
    [
        ("demographic_parity_difference", ["sel"]),
        ("equal_opportunity_difference", ["tpr"]),
        ("equalized_odds_difference", ["tpr", "fpr"]),
    ],
)
@pytest.mark.parametrize("favourable", [0, 1])
def test_constrained_model_closes_the_targeted_gap_on_held_out_data(
    metric: str, measures: list[str], favourable: int
) -> None:
    policy = _policy((metric, 0.02), favourable=favourable)
    frame = _data(7, 6000)
    if favourable == 0:  # the same people, the label coded the other way round: the same remedy must result
        frame = frame.with_columns((1 - pl.col("label")).alias("label"))
    train, held_out = frame.head(3000), frame.tail(3000)
    fitted = fit_models.fn(
        LogisticRegression(),
        training_set(train, "training", policy, ["group"], ["x", "x2"]),
        choose_constraint(policy),
        30,
    )
    before, after = _rates(policy, held_out, fitted.baseline), _rates(policy, held_out, fitted.mitigated)
    sizes = _sizes(held_out, favourable)
    for measure in measures:
        gap_before = abs(before["a"][measure] - before["b"][measure])
        gap_after = abs(after["a"][measure] - after["b"][measure])
        # Held-out sampling error of a difference of two rates (variance at most 1/4 per person), 2.5 SE.
        noise = 2.5 * np.sqrt(0.25 / sizes["a"][measure] + 0.25 / sizes["b"][measure])
        assert gap_before > 0.12, (measure, before)
        assert gap_after < min(0.02 + noise, gap_before / 2), (measure, after, noise)


def _sizes(frame: pl.DataFrame, favourable: int) -> dict[str, dict[str, int]]:
    """How many held-out people each rate is measured on."""
    merit = pl.col("label") == favourable
    out: dict[str, dict[str, int]] = {}
    for g in ("a", "b"):
        people = frame.filter(pl.col("group") == g)
        n_merit = people.filter(merit).height
        out[g] = {"sel": people.height, "tpr": n_merit, "fpr": people.height - n_merit}
    return out


def test_favourable_probability_is_fairlearns_mixture() -> None:
    """The score written for the retrained model is the randomised classifier's P(favourable) (Fairlearn's own
    ``_pmf_predict``, used here only as the oracle)."""
    policy = _policy(("demographic_parity_difference", 0.02))
    data = training_set(_data(3, 2000), "training", policy, ["group"], ["x", "x2"])
    fitted = fit_models.fn(LogisticRegression(), data, choose_constraint(policy), 20)
    ours = favourable_probability(fitted.mitigated, data.features)
    np.testing.assert_allclose(ours, fitted.mitigated._pmf_predict(data.features)[:, 1], rtol=0, atol=1e-12)
    assert len(fitted.mitigated.predictors_) > 1  # a real mixture, not one classifier
