"""The regression engine: a cube of moment sums and histograms, its slicings, bootstrap and distances.

Pure (numpy, Polars, scipy). Not yet wired into the audit pipeline: ``build_regression_cube`` and
``regression_slicing`` are the API the ``task: regression`` pipeline calls.
"""

from fairgate.engine.regression.cube import Grid, RegressionCube, build_regression_cube
from fairgate.engine.regression.distribution import Distance, Histogram, distances, ks_distance, wasserstein_distance
from fairgate.engine.regression.moments import GROUP_METRICS, LOSSES, Sums, group_metrics
from fairgate.engine.regression.options import RegressionOptions
from fairgate.engine.regression.slicing import RegressionSlicing, prediction_histograms, regression_slicing

__all__ = [
    "GROUP_METRICS",
    "LOSSES",
    "Distance",
    "Grid",
    "Histogram",
    "RegressionCube",
    "RegressionOptions",
    "RegressionSlicing",
    "Sums",
    "build_regression_cube",
    "distances",
    "group_metrics",
    "ks_distance",
    "prediction_histograms",
    "regression_slicing",
    "wasserstein_distance",
]
