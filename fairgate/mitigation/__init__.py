"""Mitigation: advice, reweighing and the pure part of constrained retraining.

advice.py recommends a remedy; reweighing.py computes training weights; retraining.py picks the constraint and
prices it in accuracy (the training itself runs in tasks/mitigation/training.py: Fairlearn is an optional extra).
"""
