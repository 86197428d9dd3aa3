"""The metrics a ``task: regression`` policy may judge (``fairgate.engine.tasks.metric_catalogue``).

Four families, each judged on a slicing's sufficient groups (``intersectional_analysis.min_group_size``):

- ``<metric>_difference``: the range (max - min over groups) of a group metric of
  ``fairgate.engine.regression.moments.GROUP_METRICS`` (mean prediction, mean label, mean residual, MAE, MSE,
  RMSE, R^2), with the simultaneous max-t interval of the binary engine's summaries, in the metric's units;
- ``<metric>_ratio``: min / max over groups of a metric that is never negative (mean prediction and label where
  every group's is positive, e.g. salaries or credit limits; the losses), judged like disparate impact;
- ``worst_group_<loss>``: the largest group loss, bounded group loss (Agarwal, Dudik & Wu 2019): the threshold
  is an absolute limit on every group's loss, in the loss's units;
- ``ks_distance`` / ``wasserstein_distance``: how far one group's distribution of predictions lies from that of
  everyone else (``_vs_reference``: from the reference group's), for the group where it is largest. Each comes
  from the cube's histograms with their exact error bound, widened by the Dvoretzky-Kiefer-Wolfowitz band for
  sampling (``fairgate.engine.regression.distance_family``).
"""

from __future__ import annotations

from fairgate.engine.regression.moments import GROUP_METRICS, LOSSES
from fairgate.engine.regression.slicing import RATIO_METRICS
from fairgate.engine.tasks import TaskMetric

_UNBOUNDED = (0.0, float("inf"))
#: Plain words for each group metric (sklearn's names; residual = prediction - label).
METRIC_WORDS = {
    "mean_prediction": "mean prediction",
    "mean_label": "mean label (outcome)",
    "mean_residual": "mean residual (prediction - label; positive means over-prediction)",
    "mean_absolute_error": "mean absolute error",
    "mean_squared_error": "mean squared error",
    "root_mean_squared_error": "root mean squared error",
    "r2_score": "R^2 (coefficient of determination)",
}
#: Example thresholds in the documentation, for predictions on a standardised scale (law school ZFYA).
_EXAMPLE_DIFFERENCE = {"r2_score": 0.1, "mean_squared_error": 0.1}
DISTANCES = ("ks_distance", "wasserstein_distance")
#: Against whom a group's predictions are compared, by metric-name suffix.
AGAINST = {"": "rest", "_vs_reference": "reference"}


#: The power of the outcome's unit each group metric is in (R² has none; a squared error the square).
UNIT_POWER = {"r2_score": 0, "mean_squared_error": 2}


def _difference(name: str) -> TaskMetric:
    words = METRIC_WORDS[name]
    text = f"the largest gap in {words} between groups, in its units (0 is parity)"
    example = _EXAMPLE_DIFFERENCE.get(name, 0.2)
    power = UNIT_POWER.get(name, 1)
    return TaskMetric(f"{name}_difference", "lower_is_better", _UNBOUNDED, example, "difference", text, power)


def _ratio(name: str) -> TaskMetric:
    text = f"the smallest over the largest {METRIC_WORDS[name]} across groups (1 is parity)"
    return TaskMetric(f"{name}_ratio", "higher_is_better", (0.0, 1.0), 0.8, "ratio", text)


def _worst_group(loss: str) -> TaskMetric:
    text = f"the largest {METRIC_WORDS[loss]} of any group: bounded group loss, the threshold an absolute limit"
    example = 1.0 if loss == "mean_squared_error" else 0.9
    power = UNIT_POWER.get(loss, 1)
    return TaskMetric(f"worst_group_{loss}", "lower_is_better", _UNBOUNDED, example, "difference", text, power)


def _distance(name: str, suffix: str) -> TaskMetric:
    other = "everyone else's" if AGAINST[suffix] == "rest" else "the reference group's"
    if name == "ks_distance":
        text = f"the largest Kolmogorov-Smirnov distance between a group's predictions and {other} (0 to 1)"
        return TaskMetric(name + suffix, "lower_is_better", (0.0, 1.0), 0.1, "difference", text)
    text = f"the largest Wasserstein-1 distance between a group's predictions and {other}, in prediction units"
    return TaskMetric(name + suffix, "lower_is_better", _UNBOUNDED, 0.2, "difference", text, 1)


CATALOGUE: dict[str, TaskMetric] = {
    **{m.name: m for m in map(_difference, GROUP_METRICS)},
    **{m.name: m for m in map(_ratio, RATIO_METRICS)},
    **{m.name: m for m in map(_worst_group, LOSSES)},
    **{m.name: m for name in DISTANCES for suffix in AGAINST for m in [_distance(name, suffix)]},
}


def distance_of(name: str) -> tuple[str, str] | None:
    """The distance and what it compares against for a distance metric's name; None for any other metric.

    >>> distance_of("ks_distance_vs_reference"), distance_of("ks_distance"), distance_of("r2_score_difference")
    (('ks_distance', 'reference'), ('ks_distance', 'rest'), None)
    """
    for distance in DISTANCES:
        for suffix, against in AGAINST.items():
            if name == distance + suffix:
                return distance, against
    return None
