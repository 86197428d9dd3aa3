"""A synthetic audit result document with every field of the JSON contract, for report tests and the bench.

It is shaped like ``fairgate.audit(...).to_dict()`` (common brief field list) but its numbers are random:
tests that need real numbers use the engine on COMPAS instead.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

RATES = (
    "selection_rate",
    "base_rate",
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "positive_predictive_value",
    "accuracy",
)


def _wilson(p: float, n: int) -> tuple[float, float]:
    z = 1.959964
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def synthetic_doc(
    attributes: dict[str, list[str]],
    *,
    seed: int = 0,
    pairs: bool = True,
    triples: bool = False,
    n_rows: int = 20_000,
    tiny: tuple[str, ...] = (),
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    names = list(attributes)
    slicings: list[tuple[str, ...]] = [(a,) for a in names]
    if pairs:
        slicings += list(itertools.combinations(names, 2))
    if triples:
        slicings += list(itertools.combinations(names, 3))
    groups: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    comparisons: list[dict[str, Any]] = []
    roc: list[dict[str, Any]] = []
    calibration: list[dict[str, Any]] = []
    for slicing in slicings:
        combos = list(itertools.product(*(attributes[a] for a in slicing)))
        weights = rng.dirichlet(np.ones(len(combos)) * 2)
        sel_values: dict[str, float] = {}
        for combo, w in zip(combos, weights, strict=True):
            group = dict(zip(slicing, combo, strict=True))
            n = max(1, int(w * n_rows))
            if any(v in tiny for v in combo):
                n = 6
            metrics = {}
            for rate in RATES:
                p = float(rng.uniform(0.2, 0.8))
                lo, hi = _wilson(p, n)
                metrics[rate] = {"value": p, "ci_low": lo, "ci_high": hi}
            metrics["roc_auc"] = {"value": float(rng.uniform(0.6, 0.8)), "ci_low": None, "ci_high": None}
            metrics["expected_calibration_error"] = {
                "value": float(rng.uniform(0, 0.1)),
                "ci_low": 0.0,
                "ci_high": 0.12,
            }
            label = " / ".join(combo)
            sel_values[label] = metrics["selection_rate"]["value"]
            groups.append({"slicing": list(slicing), "group": group, "n": n, "sufficient": n >= 30, "metrics": metrics})
            fpr = np.sort(rng.uniform(0, 1, 9))
            roc.append(
                {
                    "slicing": list(slicing),
                    "group": group,
                    "fpr": [0.0, *fpr.tolist(), 1.0],
                    "tpr": [0.0, *np.sqrt(fpr).tolist(), 1.0],
                }
            )
            bins = []
            for b in range(10):
                mean = (b + 0.5) / 10
                bins.append(
                    {
                        "lower": b / 10,
                        "upper": (b + 1) / 10,
                        "n": int(n / 10),
                        "mean_score": mean,
                        "fraction_positive": float(np.clip(mean + rng.normal(0, 0.05), 0, 1)),
                    }
                )
            calibration.append({"slicing": list(slicing), "group": group, "bins": bins})
            comparisons.append(
                {
                    "metric": "selection_rate",
                    "slicing": list(slicing),
                    "group": group,
                    "reference": dict(zip(slicing, combos[0], strict=True)),
                    "difference": {"value": 0.01, "ci_low": -0.02, "ci_high": 0.04},
                    "ratio": {"value": 1.02, "ci_low": 0.95, "ci_high": 1.1},
                    "p_value": 0.4,
                    "p_value_adjusted": 0.6,
                    "significant": False,
                }
            )
        worst = min(sel_values, key=sel_values.__getitem__)
        best = max(sel_values, key=sel_values.__getitem__)
        ratio = sel_values[worst] / sel_values[best]
        results.append(
            {
                "metric": "disparate_impact_ratio",
                "slicing": list(slicing),
                "value": ratio,
                "ci_low": ratio - 0.05,
                "ci_high": min(1.0, ratio + 0.05),
                "threshold": 0.8,
                "direction": "higher_is_better",
                "status": "pass" if ratio >= 0.8 else "fail",
                "uncertain": abs(ratio - 0.8) < 0.05,
                "critical": False,
                "worst_group": dict(zip(slicing, worst.split(" / "), strict=True)),
                "best_group": dict(zip(slicing, best.split(" / "), strict=True)),
                "excluded_groups": [],
                "override_reasons": [],
            }
        )
        diff = float(rng.uniform(0.0, 0.2))
        results.append(
            {
                "metric": "equal_opportunity_difference",
                "slicing": list(slicing),
                "value": diff,
                "ci_low": max(0.0, diff - 0.04),
                "ci_high": diff + 0.04,
                "threshold": 0.1,
                "direction": "lower_is_better",
                "status": "fail" if diff > 0.1 else "pass",
                "uncertain": abs(diff - 0.1) < 0.04,
                "critical": True,
                "worst_group": dict(zip(slicing, worst.split(" / "), strict=True)),
                "best_group": dict(zip(slicing, best.split(" / "), strict=True)),
                "excluded_groups": [],
                "override_reasons": [],
            }
        )
    failed = [{"metric": r["metric"], "slicing": r["slicing"]} for r in results if r["status"] == "fail"]
    return {
        "schema_version": "1.0",
        "run_id": "run-0001-synthetic",
        "verdict": "fail" if failed else "pass",
        "exit_code": 1 if failed else 0,
        "created_at": "2026-11-29T12:00:00Z",
        "fairgate_version": "0.1.0",
        "model": {"name": "credit-model", "version": "7"},
        "n_rows": n_rows,
        "favorable_label": 1,
        "confidence_level": 0.95,
        "use_case": "lending",
        "policy": {
            "sensitive_attributes": [{"name": a, "values": v} for a, v in attributes.items()],
            "metrics": [
                {"name": "disparate_impact_ratio", "threshold": 0.8},
                {"name": "equal_opportunity_difference", "threshold": 0.1},
            ],
            "reporting": {"min_cell_size": 10},
        },
        "policy_sha256": "ab" * 32,
        "attributes": names,
        "slicings": [list(s) for s in slicings],
        "groups": groups,
        "comparisons": comparisons,
        "results": results,
        "verdict_detail": {
            "fail_on": "any",
            "failed": failed,
            "n_failed": len(failed),
            "n_results": len(results),
        },
        "diagnostics": {
            "base_rates": [
                {"slicing": [names[0]], "group": {names[0]: v}, "base_rate": 0.3 + 0.05 * i}
                for i, v in enumerate(attributes[names[0]])
            ],
            "impossibility": [
                {
                    "slicing": [names[0]],
                    "message": "Base rates differ across groups, so a "
                    "calibrated classifier cannot also equalise error rates (Kleinberg et al.).",
                }
            ],
            "worst_subgroups": [],
            "simpson": [],
            "insufficient_groups": [
                {"slicing": list(g["slicing"]), "group": g["group"], "n": g["n"]} for g in groups if not g["sufficient"]
            ],
        },
        "curves": {"roc": roc, "calibration": calibration},
        "individual_fairness": {"theil_index": 0.12, "generalized_entropy_index": 0.1},
        "alignment": {"predictions_rows": n_rows, "labels_rows": n_rows, "matched": n_rows, "unmatched": 0},
        "validation": {"success": True, "expectations": 12, "failed": 0},
        "inputs": {"predictions": {"path": "preds.parquet", "sha256": "cd" * 32}},
    }
