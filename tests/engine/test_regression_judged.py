"""A ``task: regression`` audit (count -> slicings -> adjudicate) on the law-school demo data, against oracles.

- Every group metric of the document equals Fairlearn's ``MetricFrame`` with sklearn's regression metrics to
  1e-9, on the demo's held-out half (the predictions ``fairgate demo --task regression`` audits).
- Every distance of the document contains scipy's ``ks_2samp`` statistic / ``wasserstein_distance`` computed on
  the rows, within its stated error bound; every judged distance's interval contains them too.
- Identical groups rarely fail the gate (a seeded, bounded simulation at threshold 0, the hardest case), and a
  real disparity does fail it (so the simulation could fail).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from fairlearn.metrics import MetricFrame
from scipy import stats
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score, root_mean_squared_error

from fairgate.engine.regression.audit import adjudicate_regression, count_regression, slicings_regression
from fairgate.engine.regression.catalogue import CATALOGUE
from fairgate.engine.regression.distance_family import DistanceFamily
from fairgate.errors import DataError
from fairgate.policy.core import Policy
from tasks.inputs.demo_law import fit_and_predict, law_rows

PACKAGE = Path(__file__).resolve().parents[2] / "fairgate"
LAW_CSV = PACKAGE / "data" / "law" / "law_data.csv"
SHARED_LAW = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "law" / "law_data.csv"
DEMO_POLICY = PACKAGE / "policies" / "law_regression.yaml"
TOLERANCE = 1e-9


def _mean_prediction(y_true: Any, y_pred: Any) -> float:
    return float(np.mean(y_pred))


def _mean_label(y_true: Any, y_pred: Any) -> float:
    return float(np.mean(y_true))


def _mean_residual(y_true: Any, y_pred: Any) -> float:
    return float(np.mean(np.asarray(y_pred) - np.asarray(y_true)))


ORACLES = {
    "mean_prediction": _mean_prediction,
    "mean_label": _mean_label,
    "mean_residual": _mean_residual,
    "mean_absolute_error": mean_absolute_error,
    "mean_squared_error": mean_squared_error,
    "root_mean_squared_error": root_mean_squared_error,
    "r2_score": r2_score,
}


def _member(frame: Any, slicing: list[str], group: dict[str, str]) -> Any:
    """The rows of a pandas frame in one group of a slicing."""
    return np.logical_and.reduce([frame[a].to_numpy() == group[a] for a in slicing])


@pytest.fixture(scope="module")
def demo_rows() -> pl.DataFrame:
    audited, _ = fit_and_predict(law_rows(LAW_CSV))
    return audited.rename({"zfya": "y_true"}).select("id", "race", "sex", "y_true", "y_pred")


@pytest.fixture(scope="module")
def demo_document(demo_rows: pl.DataFrame) -> dict[str, Any]:
    policy = Policy.from_yaml(DEMO_POLICY.read_text(), source=str(DEMO_POLICY))
    counts = count_regression(demo_rows, policy)
    return adjudicate_regression(counts, slicings_regression(counts, policy), policy).to_dict()


def test_bundled_law_file_is_the_shared_one_with_its_provenance() -> None:
    import hashlib

    digest = hashlib.sha256(LAW_CSV.read_bytes()).hexdigest()
    assert digest == hashlib.sha256(SHARED_LAW.read_bytes()).hexdigest()
    assert digest in (LAW_CSV.parent / "PROVENANCE.md").read_text()


def test_demo_model_is_fitted_on_one_half_and_audited_on_the_other() -> None:
    rows = law_rows(LAW_CSV)
    audited, model = fit_and_predict(rows)
    assert model.n_train + model.n_audit == rows.height == 21_791
    assert audited.height == model.n_audit
    # Higher LSAT and GPA predict higher first-year grades; the fit is reproducible (seeded split).
    assert model.coefficients["lsat"] > 0
    assert model.coefficients["ugpa"] > 0
    again, model_again = fit_and_predict(rows)
    assert model_again == model
    assert again["id"].to_list() == audited["id"].to_list()


@pytest.mark.parametrize("slicing", [["race"], ["sex"], ["race", "sex"]])
def test_group_metrics_equal_fairlearn_metricframe(
    demo_rows: pl.DataFrame, demo_document: dict[str, Any], slicing: list[str]
) -> None:
    frame = demo_rows.to_pandas()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle = MetricFrame(
            metrics=ORACLES, y_true=frame["y_true"], y_pred=frame["y_pred"], sensitive_features=frame[slicing]
        ).by_group
    groups = [g for g in demo_document["groups"] if g["slicing"] == slicing]
    assert len(groups) == len(oracle)
    for entry in groups:
        key = tuple(entry["group"][a] for a in slicing)
        expected = oracle.loc[key if len(key) > 1 else key[0]]
        assert entry["rows"] == int(_member(frame, slicing, entry["group"]).sum())
        for name in ORACLES:
            value = entry["metrics"][name]["value"]
            assert value == pytest.approx(float(expected[name]), abs=TOLERANCE), (key, name)
            low, high = entry["metrics"][name]["ci_low"], entry["metrics"][name]["ci_high"]
            if low is not None:
                assert low <= value + 1e-12
                assert value - 1e-12 <= high


def test_distances_contain_scipy_on_the_rows_within_their_bound(
    demo_rows: pl.DataFrame, demo_document: dict[str, Any]
) -> None:
    frame = demo_rows.to_pandas()
    distances = demo_document["regression"]["distances"]
    assert distances
    for d in distances:
        slicing = d["slicing"]
        mine = _member(frame, slicing, d["group"])
        if d["against"] == "rest":
            other = ~mine
        else:
            reference = next(c["reference"] for c in demo_document["comparisons"] if c["slicing"] == slicing)
            other = _member(frame, slicing, reference)
        a, b = frame.loc[mine, "y_pred"].to_numpy(), frame.loc[other, "y_pred"].to_numpy()
        ks = stats.ks_2samp(a, b).statistic
        w1 = stats.wasserstein_distance(a, b)
        assert abs(ks - d["ks_distance"]) <= d["ks_error_bound"] + 1e-12, d
        assert abs(w1 - d["wasserstein_distance"]) <= d["wasserstein_error_bound"] + 1e-12, d


def test_judged_distances_contain_the_row_distance_of_their_worst_group(
    demo_rows: pl.DataFrame, demo_document: dict[str, Any]
) -> None:
    frame = demo_rows.to_pandas()
    judged = [r for r in demo_document["results"] if r["metric"] in ("ks_distance", "wasserstein_distance")]
    assert judged
    assert all(r["status"] != "insufficient_data" for r in judged)
    for result in judged:
        slicing, group = result["slicing"], result["worst_group"]
        mine = _member(frame, slicing, group)
        a, b = frame.loc[mine, "y_pred"], frame.loc[~mine, "y_pred"]
        row = stats.ks_2samp(a, b).statistic if result["metric"] == "ks_distance" else stats.wasserstein_distance(a, b)
        assert result["ci_low"] - 1e-12 <= row <= result["ci_high"] + 1e-12
        assert "Dvoretzky-Kiefer-Wolfowitz" in result["interval_method"]


def test_demo_audit_finds_the_known_overprediction_for_black_students(demo_document: dict[str, Any]) -> None:
    """LSAT and GPA over-predict Black students' first-year grades (a known finding on these data)."""
    race = next(
        r for r in demo_document["results"] if r["metric"] == "mean_residual_difference" and r["slicing"] == ["race"]
    )
    assert race["status"] == "fail"
    assert race["ci_low"] > 0.2
    black = next(g for g in demo_document["groups"] if g["slicing"] == ["race"] and g["group"] == {"race": "Black"})
    assert black["metrics"]["mean_residual"]["ci_low"] > 0
    assert demo_document["verdict"] == "fail"
    assert demo_document["task"] == "regression"
    sex = [r for r in demo_document["results"] if r["slicing"] == ["sex"]]
    assert {r["status"] for r in sex} == {"pass"}


def test_document_block_has_the_grid_residual_deciles_and_cdfs(demo_document: dict[str, Any]) -> None:
    block = demo_document["regression"]
    assert block["grid"]["bins"] == 2048
    assert block["grid"]["range_from"] == "data"
    assert len(block["prediction_bins"]) == 11
    population = next(g for g in block["groups"] if g["slicing"] == [])
    assert sum(b["n"] for b in population["binned"]) == pytest.approx(demo_document["n_rows"])
    assert population["cdf"][0] == 0.0
    assert population["cdf"][-1] == pytest.approx(1.0)
    assert all(np.diff([v for v in population["cdf"] if v is not None]) >= 0)
    assert {w["metric"] for w in block["worst_group_losses"]} == {
        "worst_group_mean_absolute_error",
        "worst_group_mean_squared_error",
        "worst_group_root_mean_squared_error",
    }


def test_catalogue_directions_and_ranges() -> None:
    for name, metric in CATALOGUE.items():
        low, high = metric.threshold_range
        assert low <= metric.example_threshold <= high, name
        if name.endswith("_ratio"):
            assert metric.direction == "higher_is_better"
            assert metric.summary == "ratio"
        else:
            assert metric.direction == "lower_is_better"
            assert metric.summary == "difference"
    assert "worst_group_root_mean_squared_error" in CATALOGUE
    assert "ks_distance_vs_reference" in CATALOGUE
    assert "mean_residual_ratio" not in CATALOGUE  # a residual changes sign: its ratio means nothing


def test_distance_family_test_inverts_its_interval() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        low = rng.uniform(0, 0.5, size=3)
        family = DistanceFamily.of(low, low + 0.01, rng.uniform(50, 5000, 3), rng.uniform(50, 5000, 3))
        threshold = float(rng.uniform(0, 0.4))
        for alpha in (0.01, 0.05, 0.2):
            lower, _ = family.bounds(family.critical(1 - alpha))
            assert (family.p_beyond(threshold) <= alpha) == (lower > threshold)


# ----------------------------------------------------------------------------------------------- simulation
def _policy(shifted: bool = False) -> Policy:
    metrics = [
        {"name": "mean_residual_difference", "threshold": 0.0},
        {"name": "mean_prediction_difference", "threshold": 0.0},
        {"name": "root_mean_squared_error_difference", "threshold": 0.0},
        {"name": "ks_distance", "threshold": 0.0},
        {"name": "wasserstein_distance_vs_reference", "threshold": 0.0},
        {"name": "worst_group_mean_absolute_error", "threshold": 0.8 * np.sqrt(2 / np.pi) * 1.0},
    ]
    return Policy.model_validate(
        {
            "task": "regression",
            "sensitive_attributes": [{"name": "g"}],
            "metrics": metrics,
            "intersectional_analysis": {"enabled": False, "min_group_size": 30},
            "statistics": {"n_bootstrap": 200, "seed": 1},
        }
    )


def _sample(rng: np.random.Generator, shift: float = 0.0) -> pl.DataFrame:
    sizes = {"a": 600, "b": 250, "c": 120}
    g = np.concatenate([[k] * n for k, n in sizes.items()])
    y = rng.normal(size=g.size)
    # Residuals N(0, 0.8^2): every group's MAE is 0.8 sqrt(2/pi), the worst-group limit above (the boundary).
    p = y + rng.normal(scale=0.8, size=g.size) + shift * (g == "c")
    return pl.DataFrame({"id": np.arange(g.size), "g": g, "y_true": y, "y_pred": p})


def _fails(frame: pl.DataFrame, policy: Policy) -> bool:
    counts = count_regression(frame, policy)
    return adjudicate_regression(counts, slicings_regression(counts, policy), policy).verdict == "fail"


@pytest.mark.slow
def test_identical_groups_rarely_fail_and_a_disparity_does() -> None:
    """At alpha = 0.05 over the audit and thresholds at the null (the hardest case), 40 audits of identical
    groups may fail at most 6 times (P(X > 6) < 0.004 for X ~ Binomial(40, 0.05)); a shift of 0.5 in one group's
    predictions fails."""
    rng = np.random.default_rng(20190217)
    policy = _policy()
    failures = sum(_fails(_sample(rng), policy) for _ in range(40))
    assert failures <= 6
    assert _fails(_sample(rng, shift=0.5), policy)


def test_hostile_values_are_refused_by_the_cube() -> None:
    policy = _policy()
    frame = _sample(np.random.default_rng(0))
    with pytest.raises(DataError, match="finite"):
        count_regression(frame.with_columns(y_true=pl.when(pl.col("id") == 3).then(np.nan).otherwise("y_true")), policy)
    text = frame.with_columns(pl.col("y_pred").cast(pl.String).replace({frame["y_pred"].cast(pl.String)[5]: "abc"}))
    with pytest.raises(DataError, match="y_pred"):
        count_regression(text, policy)
    undeclared = Policy.model_validate(
        {**policy.model_dump(exclude_none=True), "sensitive_attributes": [{"name": "g", "values": ["a", "b"]}]}
    )
    with pytest.raises(DataError, match="'c'"):
        count_regression(frame, undeclared)


def test_missing_attribute_values_are_excluded_and_counted() -> None:
    policy = _policy()
    frame = _sample(np.random.default_rng(0)).with_columns(
        g=pl.when(pl.col("id") < 7).then(None).otherwise(pl.col("g"))
    )
    counts = count_regression(frame, policy)
    assert counts.n_rows == frame.height - 7
    assert counts.excluded_missing == {"g": 7}
    document = adjudicate_regression(counts, slicings_regression(counts, policy), policy).to_dict()
    assert document["attributes"][0]["excluded_missing"] == 7
