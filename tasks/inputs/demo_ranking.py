"""The inputs of ``fairgate demo --task ranking``: law-school applicants ranked in cohorts by a fitted model.

Data: the law school file bundled in ``fairgate/data/law/`` (Kusner et al. 2017, "Counterfactual Fairness";
from the LSAC National Longitudinal Bar Passage Study, Wightman 1998; see that folder's provenance note).
The model is ordinary least squares of the first-year average (ZFYA) on LSAT and undergraduate GPA, fitted on a
seeded half of the applicants (``sql/demo_ranking_applicants.sql``); the other half is split into cohorts of 40
applicants of one region (file order) and ranked in each cohort by the predicted first-year average. The audit
asks who the model puts at the top of each cohort's shortlist, against the actual first-year average as
relevance (its quartile, 0..3). Race and sex are as the file codes them (sex 1 / 2, coding not documented).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np

from tasks.inputs.sql import render_sql


def write_ranking_demo_inputs(law_csv: Path, workdir: Path) -> dict[str, Path]:
    """Write predictions (id, cohort, rank), labels (id, relevance) and attributes (id, race, sex) as Parquet."""
    con = duckdb.connect()
    try:
        con.read_csv(str(law_csv), header=True, sep=",").create_view("law_raw")
        applicants = con.sql(render_sql("demo_ranking_applicants")).to_df()
        fit = applicants[applicants["fit"]]
        design = np.column_stack([np.ones(len(fit)), fit["lsat"], fit["ugpa"]])
        coef, *_ = np.linalg.lstsq(design, fit["zfya"].to_numpy(), rcond=None)
        applicants["predicted_zfya"] = coef[0] + coef[1] * applicants["lsat"] + coef[2] * applicants["ugpa"]
        con.register("scored_applicants", applicants)
        files = {}
        for role in ("predictions", "labels", "attributes"):
            path = workdir / f"law_ranking_{role}.parquet"
            con.sql(render_sql(f"demo_ranking_{role}")).to_parquet(str(path))
            files[role] = path
    finally:
        con.close()
    return files
