"""Mitigation: reweighing, retraining, group thresholds, the GridSearch frontier, a failing audit's proposal."""
