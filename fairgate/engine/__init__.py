"""The fairness engine: cube, metrics, slicings, statistics and adjudication (pure; no I/O)."""
