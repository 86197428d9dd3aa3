# %% [markdown]
# # fairgate in a notebook
#
# A percent-format notebook (open it in Jupyter with jupytext, or in VS Code, or run it as a script). It audits
# the COMPAS risk scores (ProPublica's data, bundled with fairgate) against the demo policy with the Python API,
# and shows the result: in a notebook the last expression of a cell is displayed as HTML (the verdict, the
# failing results with their intervals, what was not judged).

# %%
from pathlib import Path

import polars as pl

import fairgate

BUNDLED = Path(fairgate.__file__).parent  # the demo policy and the COMPAS file ship with the package
policy = fairgate.Policy.from_yaml((BUNDLED / "policies" / "compas_demo.yaml").read_text())
policy.columns

# %% [markdown]
# One row per person: the label, the model's decision (Medium or High risk = flagged) and its score, and the
# sensitive attributes the policy names.

# %%
compas = pl.read_csv(BUNDLED / "data" / "compas" / "compas-scores-two-years.csv").select(
    "two_year_recid",  # the label column the policy names (columns.y_true)
    pl.col("score_text").is_in(["Medium", "High"]).cast(pl.Int64).alias("y_pred"),
    (pl.col("decile_score") / 10).alias("score"),
    "race",
    "sex",
    "age_cat",
)
compas.head()

# %%
result = fairgate.audit(compas, policy, model=fairgate.ModelInfo(name="compas", version="1"))
result  # displayed as HTML in a notebook (AuditResult._repr_html_)

# %% [markdown]
# The same result as data: the judged results as a frame, and the groups of one slicing.

# %%
print(result)
print(result.results_frame().select("metric", "slicing", "value", "ci_low", "ci_high", "threshold", "status"))
result.by_group(["race"]).select("race", "n", "selection_rate", "selection_rate_ci_low", "selection_rate_ci_high")

# %% [markdown]
# The report files: ``fairgate audit`` (or a Prefect deployment) writes them; the HTML links them when the
# result knows where they are.

# %%
result.files = {"pdf": "fairness_reports/fairness_report.pdf"}
html = result._repr_html_()
print(f"verdict {result.verdict}, {len(html)} characters of HTML")
