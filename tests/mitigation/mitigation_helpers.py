"""Helpers for the mitigation tests: COMPAS as training data (features, label, sensitive attributes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from typer.testing import CliRunner

import cli  # noqa: F401 (first: it sets the Prefect environment defaults Prefect reads at import)

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


RACES = "[African-American, Caucasian, Hispanic, Other, Asian, Native American]"
POLICY = f"""\
fairness_checker:
  favorable_label: 0
  sensitive_attributes:
    - {{name: race, values: {RACES}, reference_group: Caucasian}}
    - {{name: sex, values: [Male, Female], reference_group: Male}}
  metrics:
    - {{name: demographic_parity_difference, threshold: 0.05}}
    - {{name: equal_opportunity_difference, threshold: 0.1}}
  intersectional_analysis: {{enabled: false}}
  reporting: {{format: [json]}}
  columns: {{y_true: two_year_recid}}
  statistics: {{n_bootstrap: 100}}
"""


def split_compas(folder: Path, seed: int = 0, train_share: float = 0.6) -> dict[str, Path]:
    """COMPAS as a training file and a held-out evaluation file (a seeded random split), plus the policy."""
    frame = compas_training().drop("age_cat")  # the files hold the policy's attributes and the features only
    train = np.random.default_rng(seed).random(frame.height) < train_share
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"training": folder / "train.csv", "evaluation": folder / "eval.csv", "policy": folder / "policy.yaml"}
    frame.filter(train).write_csv(paths["training"])
    frame.filter(~train).write_csv(paths["evaluation"])
    paths["policy"].write_text(POLICY)
    return paths


class InProcessRunner(CliRunner):
    """CliRunner that keeps Prefect's log handlers off the runner's temporary streams (as in tests/pipeline)."""

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        from prefect.logging.configuration import setup_logging

        setup_logging()
        try:
            return super().invoke(*args, **kwargs)
        finally:
            setup_logging()
