# %% [markdown]
# # fairgate in a notebook
#
# A percent-format notebook (open it in Jupyter with jupytext, or in VS Code, or run it as a script). It audits
# the COMPAS risk scores (ProPublica's data, bundled with fairgate) against the demo policy with the Python API,
# and shows the result: in a notebook the last expression of a cell is displayed as HTML (the verdict, the
# failing results with their intervals, what was not judged, and the report files when the run wrote them).

# %%
from pathlib import Path

import polars as pl

import fairgate
from flows.audit_api import run_audit  # the audit flow from Python: writes the reports, returns the result

BUNDLED = Path(fairgate.__file__).parent  # the demo policy and the COMPAS file ship with the package
policy = fairgate.Policy.from_yaml((BUNDLED / "policies" / "compas_demo.yaml").read_text())
policy.columns

# %% [markdown]
# One row per person: the label, the model's decision (Medium or High risk = flagged) and its score, and the
# sensitive attributes the policy names.

# %%
compas = pl.read_csv(BUNDLED / "data" / "compas" / "compas-scores-two-years.csv").select(
    "id",  # one id per person: the audit flow joins its three input files on it (columns.id)
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
# The report files. `fairgate.audit` is the engine alone: it writes nothing, so its result links no files.
# `run_audit` runs the same audit as the `fairgate audit` command (a Prefect flow run, on the server
# `PREFECT_API_URL` names, else a temporary local one) on input files: it writes the reports the policy asks for
# (here JSON, JUnit, HTML, PDF and the model card) and returns the result with them in `result.files`; displayed,
# the result links each one.

# %%
inputs = Path("notebook_inputs")
inputs.mkdir(exist_ok=True)
compas.select("id", "y_pred", "score").write_parquet(inputs / "predictions.parquet")
compas.select("id", "two_year_recid").write_parquet(inputs / "labels.parquet")
compas.select("id", "race", "sex", "age_cat").write_parquet(inputs / "attributes.parquet")
written = run_audit(
    BUNDLED / "policies" / "compas_demo.yaml",
    inputs / "predictions.parquet",
    inputs / "labels.parquet",
    inputs / "attributes.parquet",
    out_dir="fairness_reports",
    model_name="compas",
    model_version="1",
)
for kind, path in written.files.items():
    print(f"{kind}: {path}")
written  # displayed as HTML in a notebook, the report files linked

# %%
html = written._repr_html_()
print(f"verdict {written.verdict}, {len(written.files)} files written, {html.count('<a href=')} linked")
