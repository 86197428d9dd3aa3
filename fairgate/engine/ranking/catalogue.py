"""The metrics a ``task: ranking`` policy may judge: summaries across groups of ``slicing.SUMMARIES``.

Being placed high in a ranking is good for the person (shortlisted, shown), so for every summary the worst-off
group is the one with the smallest value and the best-off the one with the largest. A ``difference`` is
max - min over the groups (0 is parity), a ``ratio`` min / max (1 is parity), each judged with simultaneous
intervals as every task's summaries are.
"""

from __future__ import annotations

from fairgate.engine.tasks import TaskMetric

_TOP_K = "the share of each group's items ranked in the top k (k: the first of ranking.top_k)"
_EXPOSURE = "each group's mean exposure (position discount of ranking.discount, Singh & Joachims 2018)"
_MERIT = "each group's exposure per unit of relevance (Singh & Joachims' disparate treatment)"

CATALOGUE: dict[str, TaskMetric] = {
    "top_k_rate_difference": TaskMetric(
        "top_k_rate_difference", "lower_is_better", (0.0, 1.0), 0.1, "difference",
        f"the largest gap between groups in {_TOP_K}; 0 is parity",
    ),
    "top_k_rate_ratio": TaskMetric(
        "top_k_rate_ratio", "higher_is_better", (0.0, 1.0), 0.8, "ratio",
        f"the smallest over the largest of {_TOP_K}, the four-fifths rule for a shortlist; 1 is parity",
    ),
    "exposure_difference": TaskMetric(
        "exposure_difference", "lower_is_better", (0.0, 1.0), 0.05, "difference",
        f"the largest gap between groups in {_EXPOSURE}; 0 is parity",
    ),
    "exposure_ratio": TaskMetric(
        "exposure_ratio", "higher_is_better", (0.0, 1.0), 0.8, "ratio",
        f"the smallest over the largest of {_EXPOSURE}; 1 is parity",
    ),
    "exposure_relevance_difference": TaskMetric(
        "exposure_relevance_difference", "lower_is_better", (0.0, 1e6), 0.1, "difference",
        f"the largest gap between groups in {_MERIT}, in exposure per relevance unit; 0 is parity",
    ),
    "exposure_relevance_ratio": TaskMetric(
        "exposure_relevance_ratio", "higher_is_better", (0.0, 1.0), 0.8, "ratio",
        f"the smallest over the largest of {_MERIT}: exposure proportional to merit is 1",
    ),
}  # fmt: skip
