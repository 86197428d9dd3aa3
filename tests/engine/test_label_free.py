"""Label-free estimation (fairgate/engine/label_free.py): a seeded, bounded version of ``bench/label_free.py``.

Calibrated scores, two groups with different score distributions, 20,000 people per audit: the estimated equal
opportunity difference's interval covers the value the labels give in at least 93% of runs (checked here as: no
more misses than Binomial(runs, 0.07) exceeds with probability 0.5%); with calibration broken in one group, that
group is refused with the calibration reason in every run, and no interval is given.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from bench_scripts import load_bench
from scipy import stats

from fairgate.engine.label_free import Recalibration, estimable, estimate_group, recalibration

BENCH = Path(__file__).resolve().parents[2] / "bench" / "label_free.py"


def _bench() -> ModuleType:
    return load_bench("label_free")


@pytest.mark.slow
def test_estimated_equal_opportunity_covers_the_truth() -> None:
    bench = _bench()
    outcomes = [bench.run(seed) for seed in range(60)]
    estimated = [o for o in outcomes if o["estimated"]]
    assert len(estimated) >= 55  # a calibrated group is refused at calibration_alpha (1%) only
    misses = sum(not o["covered"] for o in estimated)
    assert misses <= stats.binom.ppf(0.995, len(estimated), 0.07), misses
    assert all(o["entry"]["estimated"] and o["entry"]["reference_run_id"] == "reference" for o in outcomes)


@pytest.mark.slow
def test_broken_calibration_is_refused_with_the_reason() -> None:
    bench = _bench()
    for seed in range(10):
        outcome = bench.run(seed, broken=True)
        entry = outcome["entry"]
        assert outcome["refused_b"], entry["estimate_reasons"]
        assert entry["value"] is None
        assert entry["ci_low"] is None
        assert entry["insufficient_groups"] == [{"g": "b"}]
        assert "Hosmer-Lemeshow" in entry["estimate_reasons"]["b"]


def test_a_perfectly_calibrated_reference_needs_no_correction() -> None:
    """Bins whose observed share equals their mean score: offset and slope 0, the test passes."""
    bins = [{"n": 1000.0, "mean_score": m, "fraction_positive": m} for m in (0.15, 0.35, 0.55, 0.75)]
    fit = recalibration(bins, alpha=0.01, min_events=10, what="g=a")
    assert fit.reason is None
    assert abs(fit.offset) < 1e-12
    assert abs(fit.slope) < 1e-12
    assert fit.p_value == pytest.approx(1.0)


def test_expected_counts_are_the_sums_of_scores() -> None:
    """Without correction, TPR = (scores of the selected) / (all scores), PPV = that over the selected."""
    weight = np.array([[100.0, 0.0], [0.0, 50.0]])  # row 0: not selected, row 1: selected
    score = np.array([[20.0, 0.0], [0.0, 40.0]])
    calibrated = Recalibration(covariance=np.zeros((2, 2)))
    estimate = estimate_group(weight, score, calibrated)
    assert estimate.value.tolist() == pytest.approx([40 / 60, 10 / 90, 40 / 50])
    assert np.all(np.diag(estimate.covariance) > 0)  # the labels to come still vary


def test_only_rate_summaries_of_tpr_fpr_ppv_are_estimated() -> None:
    assert estimable("equalized_odds_difference")
    assert estimable("predictive_parity_difference")
    assert not estimable("disparate_impact_ratio")
    assert not estimable("calibration_difference")


@pytest.mark.parametrize(("rule", "counted"), [("report_only", False), ("judge", True)])
def test_estimated_results_count_in_the_verdict_only_when_judged(rule: str, counted: bool) -> None:
    """A large estimated EO gap fails; it fails the audit only under labels.estimated_results: judge."""
    import fairgate
    from fairgate.engine.adjudicate import adjudicate
    from fairgate.engine.audit import slicings_binary
    from fairgate.engine.cube import build_cube
    from fairgate.engine.label_checks import LabelEvidence
    from fairgate.engine.label_free import Reference, estimated_entries

    bench = _bench()
    policy = fairgate.Policy.from_mapping(
        {
            "fairness_checker": {
                "sensitive_attributes": [{"name": "g"}],
                "metrics": [
                    {"name": "demographic_parity_difference", "threshold": 0.9},
                    {"name": "equal_opportunity_difference", "threshold": 0.05},
                ],
                "statistics": {"n_bootstrap": 20},
                "labels": {"estimated_results": rule},
            }
        },
        source="test",
    )
    rng = np.random.default_rng(3)
    reference: Reference = bench.reference_of(bench.people(rng, 6000, False), policy)
    cube = build_cube(bench.people(rng, 6000, False), policy, exact_auc=False)
    evidence = LabelEvidence(labels_absent=True, estimated=estimated_entries(cube, reference, policy))
    document = adjudicate(cube, slicings_binary(cube, policy), policy, labels=evidence).to_dict()
    estimated = [r for r in document["results"] if r.get("estimated")]
    assert [r["status"] for r in estimated] == ["fail"]  # TPR gap ~0.3 against 0.05
    assert document["verdict"] == ("fail" if counted else "pass")
    assert document["label_free"]["estimated_results"] == rule
    assert all(set(g["metrics"]) == {"selection_rate"} for g in document["groups"])


def test_decisions_without_scores_are_not_estimated() -> None:
    """Expected counts need the scores: predictions with decisions only give every group the reason."""
    from fairgate.engine.cube import build_cube
    from fairgate.engine.label_free import estimated_entries

    bench = _bench()
    policy = bench.policy()
    rng = np.random.default_rng(4)
    reference = bench.reference_of(bench.people(rng, 4000, False), policy)
    cube = build_cube(bench.people(rng, 4000, False).drop("score"), policy, exact_auc=False)
    for entry in estimated_entries(cube, reference, policy):
        assert entry["value"] is None
        assert all("needs scores" in why for why in entry["estimate_reasons"].values())
