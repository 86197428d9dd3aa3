"""The audit document: fairgate's public contract, one typed model from which the JSON Schema is generated."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from fairgate.document.common import Part, Slicing, Verdict
from fairgate.document.diagnostics import Curves, Diagnostics, IndividualFairness
from fairgate.document.groups import AttributeInfo, Comparison, GroupEntry, Summary
from fairgate.document.labels import LabelBias, LabelFree, LabelFreeCheck
from fairgate.document.mitigation import MitigationBlock
from fairgate.document.multiclass import MulticlassBlock
from fairgate.document.ranking import RankingBlock
from fairgate.document.regression import RegressionBlock
from fairgate.document.results import PolicyResult, VerdictDetail
from fairgate.document.trend import Trend

# 1.1: gate statuses (inconclusive), reasons, error-controlled verdict, Kish sizes
# 1.2: small-cell suppression (the ``suppression`` block, ``suppressed`` markers, sizes null where suppressed);
#      outcome words (``outcomes``); the output folder used; the ``trend`` block
# 1.3: the ``mitigation`` block (a failing audit's proposed remedy, policy ``mitigation.auto``)
# 1.4: ``execution`` (streaming or in-memory path, AUC method); ``error_bound`` of a histogram AUC
# 1.5: task and per-kind blocks; individual fairness checks
# 1.6: individual_fairness.consistency.sampled (consistency estimated from a seeded sample of people)
# 1.7: task written for every kind (binary documents included)
# 1.8: verdict "insufficient" (nothing could be judged) with exit code 4, or 0 under ci_cd_gate.insufficient: allow;
#      verdict_detail.insufficient (that rule); results carry the interval the gate decided them on
#      (decision_ci_low, decision_ci_high, decision_level)
# 1.9: late and contested labels: results estimated without labels (``estimated``, the ``label_free`` block) and
#      the audit's labels against external labels (``label_bias``, result label_disagreement_difference); a labelled
#      audit of people estimated before checks the estimates (``label_free_check``)
# 1.10: ``command_line``: the command that ran the audit (the report's "How to reproduce" prints it); a multiclass
#       audit's base rates per class against the rest (diagnostics.base_rates[].outcome_class)
SCHEMA_VERSION = "1.10"
SCHEMA_ID = f"https://fairgate.dev/schema/audit_result/{SCHEMA_VERSION}.json"
DESCRIPTION = (
    "The public contract of a fairgate audit (schema_version 1.x). Undefined values are null; group values are "
    "strings as they appear in the data. Consumers must ignore keys they do not know: minor versions only add keys."
)


class ModelRef(Part):
    """The audited model."""

    name: str
    version: str


class SuppressionInfo(Part):
    """How this JSON file was published: every value (``full``) or with the report's small cells hidden."""

    content: Literal["full", "suppressed"] = Field(description="reporting.json of the policy.")
    min_cell_size: int = Field(ge=1)
    n_groups_suppressed: int = Field(ge=0, description="Groups the report (and a suppressed JSON) hides.")
    method: str


class OutcomeWords(Part):
    """The use case's words for the decision and the true outcome (policy ``outcomes``), with their labels.

    The engine counts ``favorable_label`` as positive for the decision and the truth alike, so e.g. the
    false negative rate is the share given the unfavourable decision among those whose truth is favourable.
    """

    favorable_label: Literal[0, 1] = Field(description="The label (of y_pred and y_true) that is favourable.")
    favorable_decision: str = Field(description="y_pred == favorable_label, read after 'share'.")
    unfavorable_decision: str = Field(description="y_pred != favorable_label, read after 'share'.")
    favorable_truth: str = Field(description="y_true == favorable_label, read after 'those who'.")
    unfavorable_truth: str = Field(description="y_true != favorable_label, read after 'those who'.")
    named: bool = Field(description="False when every phrase is fairgate's default (the policy named none).")


class AuditDocument(Part):
    """The whole audit result document (``AuditResult.to_dict()``); its JSON Schema is generated from here."""

    model_config = ConfigDict(
        title="fairgate audit result",
        json_schema_extra={
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": SCHEMA_ID,
            "description": DESCRIPTION,
        },
    )

    schema_version: str = Field(pattern=r"^1\.[0-9]+$")
    task: Literal["binary", "multiclass", "regression", "ranking"] = Field(
        default="binary",
        description="The kind of model audited (policy task:, schema 1.5; written for every kind since 1.7, absent "
        "in older binary documents). Each kind but binary adds its own block (multiclass, regression, ranking).",
    )
    run_id: str = Field(min_length=1)
    created_at: str = Field(json_schema_extra={"format": "date-time"})
    fairgate_version: str
    verdict: Verdict = Field(
        description="pass, fail, or insufficient (schema 1.8: nothing could be judged; neither a pass nor a fail)."
    )
    exit_code: Literal[0, 1, 4] = Field(
        description="0 pass (or the gate is off), 1 fail, 4 insufficient (0 when ci_cd_gate.insufficient: allow)."
    )
    model: ModelRef
    n_rows: int = Field(ge=0)
    weighted: bool = Field(default=False, description="True when rows carry weights (probabilistic group membership).")
    favorable_label: Literal[0, 1]
    favorable_label_note: str | None = None
    outcomes: OutcomeWords | None = Field(
        default=None, description="The outcome words every rate's text is derived from (schema 1.2; absent before)."
    )
    confidence_level: float = Field(gt=0, lt=1)
    n_bootstrap: int = Field(default=0, ge=0)
    seed: int | None = None
    use_case: str | None = None
    policy: dict[str, Any] = Field(description="The policy as applied (after defaults).")
    policy_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    attributes: list[AttributeInfo]
    slicings: list[Slicing]
    groups: list[GroupEntry]
    comparisons: list[Comparison]
    summaries: list[Summary]
    results: list[PolicyResult]
    verdict_detail: VerdictDetail
    diagnostics: Diagnostics
    curves: Curves
    individual_fairness: IndividualFairness
    recommendations: list[dict[str, Any]] = Field(
        default_factory=list, description="Mitigation advice (fairgate.mitigation.advice.recommend)."
    )
    multiclass: MulticlassBlock | None = Field(
        default=None, description="task: multiclass: confusion matrices and per-class rates per group (1.5)."
    )
    regression: RegressionBlock | None = Field(
        default=None,
        description="task: regression: histogram grid, residuals by prediction decile, prediction CDFs, worst "
        "group losses and distances between groups' prediction distributions (1.5).",
    )
    ranking: RankingBlock | None = Field(
        default=None, description="task: ranking: cut-offs, discount, summaries and exposure curves (1.5)."
    )
    label_free: LabelFree | None = Field(
        default=None, description="An audit without labels: how its estimated results were estimated (1.9)."
    )
    label_bias: LabelBias | None = Field(
        default=None, description="An audit with external labels: disagreement per group, metrics under both (1.9)."
    )
    label_free_check: LabelFreeCheck | None = Field(
        default=None,
        description="A labelled audit of the same predictions an earlier audit estimated without labels: each "
        "estimate against the measured value, and how many intervals held it (1.9).",
    )
    # Added by the pipeline through ``context``:
    inputs: dict[str, Any] | None = Field(default=None, description="Input files and their sha256.")
    alignment: dict[str, Any] | None = Field(default=None, description="Join report.")
    validation: dict[str, Any] | None = Field(default=None, description="Great Expectations results.")
    proxy: dict[str, Any] | None = Field(default=None, description="Proxy inference summary.")
    output_dir: str | None = Field(
        default=None,
        description="The folder the run wrote its outputs into (--out, else the policy's reporting.output_dir).",
    )
    execution: dict[str, Any] | None = Field(
        default=None,
        description="How the audit ran (schema 1.3): path (in_memory or streaming), auc_method (exact, histogram or "
        "null), auc_bins, memory_limit of DuckDB on the streaming path.",
    )
    command_line: str | None = Field(
        default=None,
        description="The command that ran this audit, shell-quoted, the program named fairgate (1.10); null when "
        "the audit was not started from the command line (a deployment, the registry, the Python API).",
    )
    predictions_provenance: list[dict[str, Any]] | None = Field(
        default=None, description="Model and time span of the predictions, per model version."
    )
    # Added when the document is written to a file (tasks/outputs.py):
    suppression: SuppressionInfo | None = Field(
        default=None, description="Whether the file holds every value or the report's suppressed tables."
    )
    trend: Trend | None = Field(
        default=None, description="The judged results over the model's recent runs in the audit trail (1.2)."
    )
    mitigation: MitigationBlock | None = Field(
        default=None,
        description="The remedy proposed for a failing audit (policy mitigation.auto), before and after (1.3).",
    )
