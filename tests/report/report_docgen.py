"""A synthetic audit result document with every part of the JSON contract, for report tests and the bench.

It is built through the typed document models (``fairgate.document``), so it is validated and shaped exactly
like ``fairgate.audit(...).to_dict()``; its numbers are random: tests that need real numbers use the engine on
COMPAS instead.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from fairgate.document import AuditDocument, AuditResult, ModelRef
from fairgate.document.common import Estimate, Group
from fairgate.document.diagnostics import (
    BaseRates,
    CalibrationBin,
    CalibrationCurve,
    Curves,
    Diagnostics,
    GroupBaseRate,
    IndividualFairness,
    InsufficientGroup,
    RocCurve,
)
from fairgate.document.document import SCHEMA_VERSION
from fairgate.document.groups import AttributeInfo, Comparison, GroupEntry, Summary
from fairgate.document.results import FailedResult, PolicyResult, VerdictDetail

RATES = (
    "selection_rate",
    "base_rate",
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "positive_predictive_value",
    "accuracy",
)
MIN_GROUP_SIZE = 30
IMPOSSIBILITY = (
    "Base rates differ across groups of {attribute}. A calibrated classifier cannot also equalise error rates "
    "when base rates differ (Kleinberg et al.)."
)


def _wilson(p: float, n: int) -> tuple[float, float]:
    z = 1.959964
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _slicings(names: list[str], pairs: bool, triples: bool) -> list[tuple[str, ...]]:
    slicings: list[tuple[str, ...]] = [(a,) for a in names]
    if pairs:
        slicings += list(itertools.combinations(names, 2))
    if triples:
        slicings += list(itertools.combinations(names, 3))
    return slicings


def _group_entry(rng: np.random.Generator, slicing: tuple[str, ...], group: Group, n: int) -> GroupEntry:
    metrics = {}
    for rate in RATES:
        p = float(rng.uniform(0.2, 0.8))
        lo, hi = _wilson(p, n)
        metrics[rate] = Estimate(value=p, ci_low=lo, ci_high=hi)
    metrics["roc_auc"] = Estimate(value=float(rng.uniform(0.6, 0.8)), ci_low=None, ci_high=None)
    metrics["expected_calibration_error"] = Estimate(value=float(rng.uniform(0, 0.1)), ci_low=0.0, ci_high=0.12)
    return GroupEntry(
        slicing=list(slicing), group=group, n=float(n), rows=n, sufficient=n >= MIN_GROUP_SIZE, metrics=metrics
    )


def _curves(rng: np.random.Generator, entry: GroupEntry) -> tuple[RocCurve, CalibrationCurve]:
    fpr = np.sort(rng.uniform(0, 1, 9))
    roc = RocCurve(
        slicing=entry.slicing, group=entry.group, fpr=[0.0, *fpr.tolist(), 1.0], tpr=[0.0, *np.sqrt(fpr).tolist(), 1.0]
    )
    bins = [
        CalibrationBin(
            lower=b / 10,
            upper=(b + 1) / 10,
            n=float(int(entry.n / 10)),
            mean_score=(b + 0.5) / 10,
            fraction_positive=float(np.clip((b + 0.5) / 10 + rng.normal(0, 0.05), 0, 1)),
        )
        for b in range(10)
    ]
    return roc, CalibrationCurve(slicing=entry.slicing, group=entry.group, bins=bins)


def _comparison(entry: GroupEntry, reference: Group) -> Comparison:
    return Comparison(
        metric="selection_rate",
        slicing=entry.slicing,
        group=entry.group,
        reference=reference,
        difference=0.01,
        difference_ci_low=-0.02,
        difference_ci_high=0.04,
        ratio=1.02,
        ratio_ci_low=0.95,
        ratio_ci_high=1.1,
        p_value=0.4,
        method="newcombe/katz/two-proportion",
        sufficient=True,
        p_value_adjusted=0.6,
        significant=False,
    )


def _results(
    rng: np.random.Generator, slicing: tuple[str, ...], rows: list[GroupEntry]
) -> tuple[Summary, list[PolicyResult]]:
    """The selection-rate summary and the two judged policy metrics of one slicing."""
    rates = {i: entry.metrics["selection_rate"].value or 0.0 for i, entry in enumerate(rows)}
    worst, best = rows[min(rates, key=rates.__getitem__)].group, rows[max(rates, key=rates.__getitem__)].group
    ratio = min(rates.values()) / max(rates.values())
    spread = max(rates.values()) - min(rates.values())
    summary = Summary(
        metric="selection_rate",
        slicing=list(slicing),
        difference=spread,
        difference_ci_low=max(0.0, spread - 0.05),
        difference_ci_high=spread + 0.05,
        ratio=ratio,
        ratio_ci_low=max(0.0, ratio - 0.05),
        ratio_ci_high=min(1.0, ratio + 0.05),
        max_group=best,
        min_group=worst,
    )
    diff = float(rng.uniform(0.0, 0.2))
    common: dict[str, Any] = {
        "slicing": list(slicing),
        "worst_group": worst,
        "best_group": best,
        "n_groups_judged": sum(r.sufficient for r in rows),
        "excluded_groups": [],
        "insufficient_groups": [r.group for r in rows if not r.sufficient],
        "override_reasons": [],
    }
    dir_ = PolicyResult(
        metric="disparate_impact_ratio",
        value=ratio,
        ci_low=ratio - 0.05,
        ci_high=min(1.0, ratio + 0.05),
        threshold=0.8,
        direction="higher_is_better",
        status="pass" if ratio >= 0.8 else "fail",
        uncertain=abs(ratio - 0.8) < 0.05,
        critical=False,
        **common,
    )
    eod = PolicyResult(
        metric="equal_opportunity_difference",
        value=diff,
        ci_low=max(0.0, diff - 0.04),
        ci_high=diff + 0.04,
        threshold=0.1,
        direction="lower_is_better",
        status="fail" if diff > 0.1 else "pass",
        uncertain=abs(diff - 0.1) < 0.04,
        critical=True,
        **common,
    )
    return summary, [dir_, eod]


def _base_rates(attribute: str, rows: list[GroupEntry]) -> BaseRates:
    rates = [0.3 + 0.05 * i for i in range(len(rows))]
    return BaseRates(
        slicing=[attribute],
        groups=[GroupBaseRate(group=r.group, base_rate=rate, n=r.n) for r, rate in zip(rows, rates, strict=True)],
        min=min(rates),
        max=max(rates),
        differ=True,
        impossibility=IMPOSSIBILITY.format(attribute=attribute),
    )


def _verdict_detail(results: list[PolicyResult]) -> VerdictDetail:
    failed = [r for r in results if r.status == "fail"]
    judged = [r for r in results if r.status in ("pass", "fail")]
    return VerdictDetail(
        fail_on="any",
        gate_enabled=True,
        critical_metrics=[],
        n_results=len(results),
        n_judged=len(judged),
        n_failed=len(failed),
        n_uncertain=sum(r.uncertain for r in results),
        n_insufficient=len(results) - len(judged),
        nothing_judged=not judged,
        failed=[
            FailedResult(metric=r.metric, slicing=r.slicing, value=r.value, threshold=r.threshold, critical=r.critical)
            for r in failed
        ],
    )


def synthetic_document(
    attributes: dict[str, list[str]],
    *,
    seed: int = 0,
    pairs: bool = True,
    triples: bool = False,
    n_rows: int = 20_000,
    tiny: tuple[str, ...] = (),
) -> AuditDocument:
    """The typed synthetic document: ``tiny`` values get 6 people in every slicing they appear in."""
    rng = np.random.default_rng(seed)
    names = list(attributes)
    slicings = _slicings(names, pairs, triples)
    groups: list[GroupEntry] = []
    by_slicing: dict[tuple[str, ...], list[GroupEntry]] = {}
    for slicing in slicings:
        combos = list(itertools.product(*(attributes[a] for a in slicing)))
        weights = rng.dirichlet(np.ones(len(combos)) * 2)
        for combo, w in zip(combos, weights, strict=True):
            n = 6 if any(v in tiny for v in combo) else max(1, int(w * n_rows))
            entry = _group_entry(rng, slicing, dict(zip(slicing, combo, strict=True)), n)
            groups.append(entry)
            by_slicing.setdefault(slicing, []).append(entry)
    curves = [_curves(rng, entry) for entry in groups]
    comparisons = [_comparison(e, by_slicing[tuple(e.slicing)][0].group) for e in groups]
    judged = [_results(rng, slicing, by_slicing[slicing]) for slicing in slicings]
    results = [r for _, pair in judged for r in pair]
    detail = _verdict_detail(results)
    verdict = "fail" if detail.failed else "pass"
    return AuditDocument(
        schema_version=SCHEMA_VERSION,
        run_id="run-0001-synthetic",
        created_at="2026-11-29T12:00:00Z",
        fairgate_version="0.1.0",
        verdict=verdict,
        exit_code=1 if verdict == "fail" else 0,
        model=ModelRef(name="credit-model", version="7"),
        n_rows=n_rows,
        weighted=False,
        favorable_label=1,
        confidence_level=0.95,
        n_bootstrap=200,
        seed=seed,
        use_case="lending",
        policy={
            "sensitive_attributes": [{"name": a, "values": v} for a, v in attributes.items()],
            "metrics": [
                {"name": "disparate_impact_ratio", "threshold": 0.8},
                {"name": "equal_opportunity_difference", "threshold": 0.1},
            ],
            "reporting": {"min_cell_size": 10},
        },
        policy_sha256="ab" * 32,
        attributes=[
            AttributeInfo(name=a, reference_group=values[0], values=values, excluded_missing=0)
            for a, values in attributes.items()
        ],
        slicings=[list(s) for s in slicings],
        groups=groups,
        comparisons=comparisons,
        summaries=[summary for summary, _ in judged],
        results=results,
        verdict_detail=detail,
        diagnostics=Diagnostics(
            base_rates=[_base_rates(names[0], by_slicing[(names[0],)])],
            worst_subgroups=[],
            simpson=[],
            insufficient_groups=[
                InsufficientGroup(slicing=g.slicing, group=g.group, n=g.n, min_group_size=MIN_GROUP_SIZE)
                for g in groups
                if not g.sufficient
            ],
            excluded_missing={},
        ),
        curves=Curves(roc=[roc for roc, _ in curves], calibration=[cal for _, cal in curves]),
        individual_fairness=IndividualFairness(theil_index=0.12, generalized_entropy_index=0.1),
        alignment={"predictions_rows": n_rows, "labels_rows": n_rows, "matched": n_rows, "unmatched": 0},
        validation={"success": True, "expectations": 12, "failed": 0},
        inputs={"predictions": {"path": "preds.parquet", "sha256": "cd" * 32}},
    )


def synthetic_doc(attributes: dict[str, list[str]], **options: Any) -> dict[str, Any]:
    """The synthetic document as the JSON dict a reader loads (see :func:`synthetic_document`)."""
    return AuditResult(synthetic_document(attributes, **options)).to_dict()
