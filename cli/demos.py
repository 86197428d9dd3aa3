"""The demos of ``fairgate demo --task <kind>``: one table, one entry per kind of model, each on real public data.

An entry names the policy (in ``fairgate/policies/``), a function writing the three inputs (predictions, labels,
attributes) into a folder, the data's name for the progress line, and the model's name and version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import fairgate

PACKAGE_DIR = Path(fairgate.__file__).resolve().parent
COMPAS = PACKAGE_DIR / "data" / "compas" / "compas-scores-two-years.csv"
LAW = PACKAGE_DIR / "data" / "law" / "law_data.csv"


def _law_ranking_inputs(workdir: Path) -> dict[str, Path]:
    from tasks.inputs.demo_ranking import write_ranking_demo_inputs  # imported when the demo runs (DuckDB)

    return write_ranking_demo_inputs(LAW, workdir)


def _compas_inputs(sql_prefix: str, workdir: Path) -> dict[str, Path]:
    from tasks.inputs.io import write_demo_inputs  # imported when a demo runs (DuckDB)

    return write_demo_inputs(COMPAS, workdir, sql_prefix)


def _law_inputs(workdir: Path) -> dict[str, Path]:
    from tasks.inputs.demo_law import write_law_inputs  # imported when the demo runs (DuckDB, numpy)

    return write_law_inputs(LAW, workdir)


@dataclass(frozen=True)
class Demo:
    """One kind's demo: policy, how its inputs are written, what data it is, and the model's name and version."""

    policy: Path
    write_inputs: Callable[[Path], dict[str, Path]]
    data: str
    model: str
    version: str


DEMOS: dict[str, Demo] = {
    "binary": Demo(
        policy=PACKAGE_DIR / "policies" / "compas_demo.yaml",
        write_inputs=partial(_compas_inputs, "demo"),
        data=f"COMPAS ({COMPAS.name})",
        model="compas",
        version="northpointe-2013",
    ),
    "multiclass": Demo(
        policy=PACKAGE_DIR / "policies" / "compas_multiclass.yaml",
        write_inputs=partial(_compas_inputs, "demo_multiclass"),
        data=f"COMPAS risk tiers ({COMPAS.name})",
        model="compas-tiers",
        version="northpointe-2013",
    ),
    "regression": Demo(
        policy=PACKAGE_DIR / "policies" / "law_regression.yaml",
        write_inputs=_law_inputs,
        data=f"law school first-year grades ({LAW.name}; OLS on LSAT and UGPA, fitted on a seeded half)",
        model="law-first-year-ols",
        version="lsat-ugpa-seed-20170315",
    ),
    "ranking": Demo(
        policy=PACKAGE_DIR / "policies" / "law_ranking.yaml",
        write_inputs=_law_ranking_inputs,
        data=f"law school applicants ranked in cohorts ({LAW.name})",
        model="law-shortlist",
        version="ols-lsat-ugpa",
    ),
}
