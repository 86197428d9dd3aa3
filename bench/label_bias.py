"""Audit against an external label: how often the label-bias finding fires, with and without a biased label.

Not a timed test. Each run draws 20,000 people: group a (60%, favourable truth rate 0.4) and group b (40%, 0.3).
The external label is the truth; the audit's label is the truth with 5% of labels flipped at random in every
group (equally noisy), and, in the biased setting, 30% of group b's favourable truths recorded as unfavourable
besides. The finding ``label_disagreement_difference`` (threshold 0.05, the policy default) is judged by the
audit's gate (evidence of violation, alpha 0.05) in a family of its own (inside an audit it shares the audit's
Holm family, which only makes it more conservative).

Printed: how often the finding fails the gate (biased: target >= 90%; equally noisy: target <= 5%), with Wilson
95% intervals. Run ``i`` draws with seed ``i``.

    .venv/bin/python bench/label_bias.py                # 200 runs per setting
    .venv/bin/python bench/label_bias.py --runs 50
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import polars as pl

import fairgate
from fairgate.engine.adjudicate import judge_results
from fairgate.engine.cube import build_cube
from fairgate.engine.label_bias import disagreement_policy, label_bias
from fairgate.engine.stats import wilson_interval

ROWS = 20_000
NOISE = 0.05
UNDER_RECORDED = 0.30


def policy() -> fairgate.Policy:
    """One attribute, the default label-disagreement threshold."""
    document = {
        "sensitive_attributes": [{"name": "g"}],
        "metrics": [{"name": "equal_opportunity_difference", "threshold": 0.1}],
    }
    return fairgate.Policy.from_mapping({"fairness_checker": document}, source="label_bias bench")


def labels(rng: np.random.Generator, rows: int, biased: bool) -> pl.DataFrame:
    """Group, the audit's label (noisy, under-recording group b's favourable truths when biased), the external one."""
    group = np.where(rng.random(rows) < 0.6, "a", "b")
    truth = (rng.random(rows) < np.where(group == "a", 0.4, 0.3)).astype(np.int8)
    audit = np.where(rng.random(rows) < NOISE, 1 - truth, truth)
    if biased:
        missed = (group == "b") & (truth == 1) & (rng.random(rows) < UNDER_RECORDED)
        audit = np.where(missed, 0, audit)
    return pl.DataFrame({"g": group, "__audit_label": audit.astype(np.int8), "__external_label": truth})


def run(seed: int, biased: bool, rows: int = ROWS) -> dict[str, Any]:
    """One run: the judged finding."""
    chosen = policy()
    rng = np.random.default_rng(seed)
    cube = build_cube(labels(rng, rows, biased), disagreement_policy(chosen), exact_auc=False)
    _, entries = label_bias(cube, chosen)
    return judge_results(entries, chosen)[0]


def _rate(hits: int, runs: int) -> str:
    low, high = wilson_interval(np.array([hits]), np.array([runs]), 1.959964)
    return f"{hits}/{runs} = {hits / runs:.3f} [{float(low[0]):.3f}, {float(high[0]):.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    for biased in (True, False):
        started = time.perf_counter()
        results = [run(seed, biased) for seed in range(args.runs)]
        fired = sum(r["status"] == "fail" for r in results)
        name = "group b's favourable truths 30% under-recorded" if biased else "equally noisy labels"
        values = np.array([r["value"] for r in results])
        print(f"{name} ({args.runs} runs, {ROWS:,} people, {time.perf_counter() - started:.0f} s)")
        print(f"  finding fires (status fail): {_rate(fired, args.runs)}; mean gap {values.mean():.4f}")


if __name__ == "__main__":
    main()
