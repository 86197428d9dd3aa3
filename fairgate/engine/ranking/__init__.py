"""The ranking engine: a cube of top-k counts, exposure and relevance sums per (groups x list bucket) cell.

Pure (numpy, Polars, scipy). Per group: share of the top k, top-k rate, mean exposure under a position discount
(Singh & Joachims 2018), exposure per unit of relevance; summaries across groups with simultaneous intervals from
a cluster bootstrap of lists. ``audit`` runs a ``task: ranking`` policy through it.
"""

from fairgate.engine.ranking.cube import RankingCube, build_ranking_cube
from fairgate.engine.ranking.discount import discount, discount_expr
from fairgate.engine.ranking.metrics import group_metrics, metric_names, top_rate, top_share
from fairgate.engine.ranking.slicing import SUMMARIES, RankingSlicing, ranking_slicing

__all__ = [
    "SUMMARIES",
    "RankingCube",
    "RankingSlicing",
    "build_ranking_cube",
    "discount",
    "discount_expr",
    "group_metrics",
    "metric_names",
    "ranking_slicing",
    "top_rate",
    "top_share",
]
