"""Internal column names of the regression cube (``__`` prefix: an attribute may be called anything)."""

from __future__ import annotations

from fairgate.engine.columns import ROWS as ROWS
from fairgate.engine.columns import WEIGHT as WEIGHT
from fairgate.engine.columns import WEIGHT_SQ as WEIGHT_SQ

BUCKET = "__bucket"  # the bootstrap sub-cell a row is hashed into
VALUE_BIN = "__value_bin"  # a histogram bin of the shared prediction/label grid
BIN_LOW, BIN_HIGH = "__bin_low", "__bin_high"  # the smallest and largest value (of positive weight) in a bin
# Weighted sums over a cell's rows; predictions p and labels y are shifted by the grid's centre first (see Grid).
PRED_SUM, LABEL_SUM = "__sum_pred", "__sum_label"
PRED_SQ, LABEL_SQ, PRED_LABEL = "__sum_pred_sq", "__sum_label_sq", "__sum_pred_label"
ABS_RESIDUAL, RESIDUAL_SQ = "__sum_abs_residual", "__sum_residual_sq"
SUMS = (WEIGHT, PRED_SUM, LABEL_SUM, PRED_SQ, LABEL_SQ, PRED_LABEL, ABS_RESIDUAL, RESIDUAL_SQ)
