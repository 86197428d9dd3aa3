"""Internal column names of the ranking cube (``__`` prefix: an attribute may be called anything)."""

from __future__ import annotations

from fairgate.engine.columns import ROWS as ROWS
from fairgate.engine.columns import WEIGHT as WEIGHT
from fairgate.engine.columns import WEIGHT_SQ as WEIGHT_SQ

BUCKET = "__bucket"  # the bootstrap bucket a row's list is hashed into
POSITION = "__position"  # a rank position of the exposure curves (curve_positions + 1 pools the rest)
EXPOSURE = "__exposure"  # weighted sum of the position discount
RELEVANCE = "__relevance"  # weighted sum of the relevance (y_true)
LISTS = "__lists"  # lists per bucket


def top(k: int) -> str:
    """The column of the weighted count of rows at rank <= k."""
    return f"__top_{k}"
