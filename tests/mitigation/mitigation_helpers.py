"""Helpers for the mitigation tests: COMPAS as training data (features, label, sensitive attributes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[2]
COMPAS_CSV = REPO / ".." / "shared" / "data" / "compas" / "compas-scores-two-years.csv"
FEATURES = ["priors_count", "age", "juv_fel_count", "juv_misd_count", "juv_other_count"]


def compas_training() -> pl.DataFrame:
    """The real COMPAS file: id, numeric features, the label two_year_recid, race, sex, age_cat."""
    raw = pl.read_csv(COMPAS_CSV)
    frame = raw.select("id", *FEATURES, "two_year_recid", "race", "sex", "age_cat")
    assert frame.height == 7214  # shared/data/README.md
    return frame


def generated(seed: int, n: int = 3000) -> pl.DataFrame:
    """Seeded training data with a skewed three-valued group, a two-valued one and group-dependent base rates."""
    rng = np.random.default_rng(seed)
    group = rng.choice(["g0", "g1", "g2"], size=n, p=[0.6, 0.3, 0.1])
    sex = rng.choice(["F", "M"], size=n, p=[0.4, 0.6])
    rate = np.select([group == "g0", group == "g1"], [0.55, 0.35], 0.2) + np.where(sex == "F", -0.1, 0.05)
    label = (rng.random(n) < rate).astype(np.int64)
    return pl.DataFrame(
        {
            "id": np.arange(n),
            "x": rng.normal(size=n) + label,
            "group": group,
            "sex": sex,
            "label": label,
            "w": rng.gamma(2.0, 1.0, size=n),
        }
    )
