"""A ``task: ranking`` audit, step by step: count -> slicings -> adjudicate (the pipeline's KINDS table).

The judged results are the policy's rules of ``fairgate.engine.ranking.catalogue``: each a summary across the
groups of a slicing (the top-k rates at the first of ``ranking.top_k``, mean exposure, exposure per relevance),
with the pairwise family of its simultaneous intervals. All results are judged together by
``fairgate.engine.adjudicate.judge_results`` (one Holm family per audit), so a ranking audit obeys the same
statistical rules as a binary one.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import polars as pl

from fairgate.document.result import AuditResult
from fairgate.engine.adjudicate import (
    ModelInfo,
    adjust_comparisons,
    document_header,
    group_entries,
    in_slicing_order,
    judge_results,
    kind_diagnostics,
    shared_comparison,
    verdict_of,
    with_context,
    without_binary_extras,
)
from fairgate.engine.groups import declared_for
from fairgate.engine.kinds import KindSteps
from fairgate.engine.planning import candidate_slicings, within_group_limit
from fairgate.engine.ranking.columns import WEIGHT, WEIGHT_SQ
from fairgate.engine.ranking.cube import RankingCube, build_ranking_cube
from fairgate.engine.ranking.metrics import metric_names, top_rate
from fairgate.engine.ranking.slicing import SUMMARIES, RankingSlicing, Slicing, ranking_slicing
from fairgate.engine.reference import attribute_entries, configured_reference
from fairgate.engine.text import policy_labels
from fairgate.policy.core import Policy
from fairgate.policy.ranking import RankingOptions

#: The per-group metrics whose range and ratio the shared ``summaries`` carry (top-k rates are added per k).
_SUMMARISED = ("mean_exposure", "exposure_per_relevance")


def options_of(policy: Policy) -> RankingOptions:
    """The policy's ``ranking:`` section (its defaults when the section is left out)."""
    return policy.ranking or RankingOptions()


def count_ranking(rows: Any, policy: Policy, *, source: str = "the aligned rows") -> RankingCube:
    """The ranking cube of the aligned rows (which carry the policy's column names)."""
    cols = policy.columns
    return build_ranking_cube(
        rows,
        attributes=policy.attribute_names,
        list_id=cols.list_id,
        rank=cols.rank,
        relevance=cols.y_true,
        weight=cols.weight,
        options=options_of(policy),
        source=source,
    )


def plan_ranking_slicings(cube: RankingCube, policy: Policy) -> list[Slicing]:
    """The population, each attribute, the pairs (configured, else all) and, if asked, comparable triples.

    As the binary plan: a triple is audited when at least two of its groups reach ``min_group_size``; a slicing
    with more groups than ``limits.max_groups_per_slicing`` is left out (``skipped``).
    """
    planned, _ = _planned_and_skipped(cube, policy)
    return planned


def skipped(cube: RankingCube, policy: Policy) -> list[dict[str, Any]]:
    """The slicings left out for having more groups than the policy allows."""
    _, left_out = _planned_and_skipped(cube, policy)
    return left_out


def _planned_and_skipped(cube: RankingCube, policy: Policy) -> tuple[list[Slicing], list[dict[str, Any]]]:
    candidates = candidate_slicings(cube.attributes, policy, lambda keys: _effective_sizes(cube, keys))
    return within_group_limit(candidates, policy, lambda slicing: _group_count(cube, slicing))


def _effective_sizes(cube: RankingCube, keys: list[str]) -> np.ndarray:
    sums = cube.cells.group_by(keys).agg(pl.col(WEIGHT, WEIGHT_SQ).sum())
    sizes: np.ndarray = (sums[WEIGHT] ** 2 / sums[WEIGHT_SQ]).to_numpy()
    return sizes


def _group_count(cube: RankingCube, slicing: Slicing) -> int:
    return int(cube.cells.select(list(slicing)).n_unique())


def compute_ranking_slicing(cube: RankingCube, slicing: Slicing, policy: Policy) -> RankingSlicing:
    """One slicing with the policy's statistics settings, reference group, declared values and min group size."""
    stats = policy.statistics
    declared = declared_for(policy, slicing)
    return ranking_slicing(
        cube,
        slicing,
        n_bootstrap=stats.n_bootstrap,
        seed=stats.seed,
        confidence_level=policy.reporting.confidence_level,
        reference=configured_reference(slicing, policy),
        min_group_size=policy.intersectional_analysis.min_group_size,
        declared=declared,
        labels=policy_labels(policy),
    )


def slicings_ranking(cube: RankingCube, policy: Policy) -> list[RankingSlicing]:
    """Every planned slicing of the cube (two threads: numpy releases the GIL)."""
    planned = plan_ranking_slicings(cube, policy)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda s: compute_ranking_slicing(cube, s, policy), planned))


# ----------------------------------------------------------------------------------------------- adjudication
def adjudicate_ranking(
    cube: RankingCube,
    parts: list[RankingSlicing],
    policy: Policy,
    *,
    model: ModelInfo | None = None,
    run_id: str | None = None,
    context: dict[str, Any] | None = None,
) -> AuditResult:
    """Judge the ranking rules and assemble the ranking document."""
    model = model or ModelInfo()
    options = options_of(policy)
    parts = in_slicing_order(parts)
    comparisons = [_comparison(c, p) for p in parts for c in p.comparisons]
    adjust_comparisons(comparisons, policy.statistics.significance_level)
    results = judge_results(_entries(parts, policy), policy)
    verdict, detail = verdict_of(results, policy)
    document: dict[str, Any] = {
        **document_header(cube.n_rows, cube.weighted, policy, model, run_id, verdict),
        "attributes": _attributes(cube, parts, policy),
        "slicings": [list(p.slicing) for p in parts],
        "groups": group_entries(parts),
        "comparisons": comparisons,
        "summaries": [s for p in parts for s in _shared_summaries(p, options)],
        "results": results,
        "verdict_detail": detail,
        "diagnostics": kind_diagnostics(parts, policy, excluded_missing={}, skipped=skipped(cube, policy)),
        **without_binary_extras(),
        "ranking": {
            "top_k": list(options.top_k),
            "judged_k": options.judged_k,
            "discount": options.discount,
            "patience": options.patience,
            "n_lists": cube.n_lists,
            "bootstrap_buckets": options.bootstrap_buckets,
            "metrics": list(metric_names(options)),
            "summaries": [_block_summary(s, p) for p in parts for s in p.summaries],
            "curves": [{"slicing": list(p.slicing), **c} for p in parts for c in p.curves],
        },
    }
    return with_context(document, context)


def _entries(parts: list[RankingSlicing], policy: Policy) -> list[dict[str, Any]]:
    """One entry per (rule, slicing with attributes), as ``judge_results`` reads it."""
    judged_k = options_of(policy).judged_k
    entries = []
    for part in parts:
        if not part.slicing:
            continue  # the population has one group: nothing to compare
        for rule in policy.metrics:
            base = SUMMARIES[rule.name][0]
            summary = part.summary(rule.name, judged_k if base == "top_k_rate" else None)
            assert summary is not None  # every summary is computed for every slicing with attributes
            entry = {k: v for k, v in summary.items() if k not in ("summary", "k")}
            entry["slicing"] = list(part.slicing)
            if entry.get("reason") is None:
                entry.pop("reason", None)
            entries.append(entry)
    return entries


def _comparison(c: dict[str, Any], part: RankingSlicing) -> dict[str, Any]:
    method = "cluster bootstrap of lists (percentile interval; normal p-value from the bootstrap SE)"
    return shared_comparison(c, part.slicing, method, sufficient=part.sufficient[part.groups.index(c["group"])])


def _shared_summaries(part: RankingSlicing, options: RankingOptions) -> list[dict[str, Any]]:
    """The shared ``summaries``: per summarised metric, its difference and ratio across the slicing's groups."""
    if not part.slicing:
        return []
    out = []
    pairs: list[tuple[str, str, str, int | None]] = [
        (top_rate(k), "top_k_rate_difference", "top_k_rate_ratio", k) for k in options.top_k
    ]
    pairs += [
        (base, name, name.replace("_difference", "_ratio"), None)
        for name, (base, kind) in SUMMARIES.items()
        if kind == "difference" and base in _SUMMARISED
    ]
    for metric, difference_name, ratio_name, k in pairs:
        difference, ratio = part.summary(difference_name, k), part.summary(ratio_name, k)
        assert difference is not None
        assert ratio is not None
        out.append(
            {
                "metric": metric,
                "slicing": list(part.slicing),
                "difference": difference["value"],
                "difference_ci_low": difference["ci_low"],
                "difference_ci_high": difference["ci_high"],
                "ratio": ratio["value"],
                "ratio_ci_low": ratio["ci_low"],
                "ratio_ci_high": ratio["ci_high"],
                "max_group": difference["best_group"],
                "min_group": difference["worst_group"],
                "n_groups_judged": difference["n_groups_judged"],
                "interval_method": difference["interval_method"],
                "interval_reason": difference.get("reason"),
            }
        )
    return out


def _block_summary(summary: dict[str, Any], part: RankingSlicing) -> dict[str, Any]:
    return {
        "metric": summary["metric"],
        "slicing": list(part.slicing),
        "summary": summary["summary"],
        "k": summary.get("k"),
        "value": summary["value"],
        "ci_low": summary["ci_low"],
        "ci_high": summary["ci_high"],
        "worst_group": summary["worst_group"],
        "best_group": summary["best_group"],
        "n_groups_judged": summary["n_groups_judged"],
        "excluded_groups": summary["excluded_groups"],
        "interval_method": summary["interval_method"],
        "reason": summary.get("reason"),
    }


def _attributes(cube: RankingCube, parts: list[RankingSlicing], policy: Policy) -> list[dict[str, Any]]:
    return attribute_entries(cube.attributes, parts, {})


#: The kind registry's entry point (fairgate/engine/kinds.py).
STEPS = KindSteps(count=count_ranking, slicings=slicings_ranking, adjudicate=adjudicate_ranking)
