"""Internal column names of the cube's tables, shared by the cube and the AUC code.

They carry a ``__`` prefix so that a sensitive attribute may be called anything.
"""

from __future__ import annotations

TRUE, PRED, BIN = "__y_true", "__y_pred", "__score_bin"
ROWS, WEIGHT, SCORE_SUM, SCORE = "__rows", "__weight", "__score_sum", "__score"
WEIGHT_SQ = "__weight_sq"  # sum of squared row weights: Kish's effective sample size needs it
# Probabilistic membership puts one person in several rows (one per inferred group). Slicings without the
# inferred attribute hold all of a person's rows in one cell, so their Kish size needs the person's total
# weight s: PERSON_SQ sums w * s over rows, which is sum over people of s^2. The proxy stage writes s into
# the input column PERSON_WEIGHT; without it every row is its own person (PERSON_SQ = WEIGHT_SQ).
PERSON_SQ, PERSON_WEIGHT = "__person_sq", "__person_weight"
# The fine score histogram's bin (engine/auc_histogram.py): AUC at scale from counts instead of sorted rows.
HBIN = "__score_hbin"
