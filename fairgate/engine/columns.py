"""Internal column names of the cube's tables, shared by the cube and the AUC code.

They carry a ``__`` prefix so that a sensitive attribute may be called anything.
"""

from __future__ import annotations

TRUE, PRED, BIN = "__y_true", "__y_pred", "__score_bin"
ROWS, WEIGHT, SCORE_SUM, SCORE = "__rows", "__weight", "__score_sum", "__score"
