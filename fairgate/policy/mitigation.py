"""Policy section ``mitigation:``: what a failing audit proposes as a remedy, inside the same run and report.

With ``auto: true`` an audit whose verdict is FAIL runs the mitigation subflow (``flows/mitigation.py``) before its
report is rendered; the report, the e-mail and the JSON document then carry a "Proposed mitigation" section
with the verdict before and after. The candidate is proposed, never deployed: the audit's verdict and exit code
stay the audited model's.

Everything a method needs is checked here, when the policy is loaded, so a misconfiguration is an exit 2 before
any computing (``retrain`` without ``retrain:``, a group attribute the policy does not declare).

>>> section = Mitigation.model_validate({"auto": True, "method": "thresholds"})
>>> section.auto, section.method, section.holdout, section.tolerance
(True, 'thresholds', 0.5, None)
>>> Mitigation.model_validate({"auto": True, "method": "retrain"})
Traceback (most recent call last):
...
pydantic_core._pydantic_core.ValidationError: 1 validation error for Mitigation
...
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from fairgate.policy.base import STRICT

Method = Literal["thresholds", "reweighing", "retrain"]
ObjectiveName = Literal["accuracy", "balanced_accuracy"]

RETRAIN_NEEDS = (
    "mitigation.method {method} needs the retrain section with training (the training data), estimator (a "
    "joblib/pickle scikit-learn classifier) and evaluation (held-out data to audit), e.g. retrain: {{training: "
    "train.parquet, estimator: model.joblib, evaluation: eval.parquet}}"
)


class RetrainInputs(BaseModel):
    """Where constrained retraining (and reweighing) finds its data and estimator: paths or ``DB::TABLE``."""

    model_config = STRICT

    training: str = Field(min_length=1)
    """The training rows (a path or `DB::TABLE`)."""
    estimator: str | None = Field(default=None, min_length=1)
    """A pickled/joblib scikit-learn classifier or Pipeline (unpickling runs code: only load files you trust)."""
    evaluation: str | None = Field(default=None, min_length=1)
    """The held-out rows both models are judged on."""
    features: list[str] | None = None
    """The feature columns; default: every column but the id, label, attributes and prediction columns."""
    max_iter: int = Field(default=50, ge=1, le=10_000)
    """ExponentiatedGradient's iterations."""


class Mitigation(BaseModel):
    """The ``mitigation:`` section: off unless ``auto`` is true."""

    model_config = STRICT

    auto: bool = False
    """True: a FAIL verdict runs the proposed-mitigation subflow before the report (the candidate is proposed, never
    deployed)."""
    method: Method = "thresholds"
    """`thresholds` (group thresholds on the scores), `reweighing` or `retrain` (constrained retraining)."""
    groups: list[str] | None = Field(default=None, min_length=1)
    """Group by these attributes (their intersection); default: the policy's first sensitive attribute."""
    metric: str | None = None
    """The metric to bound (thresholds) or constrain (retrain); default: the policy's first critical (else first) metric
    the method can bound."""
    tolerance: float | None = Field(default=None, ge=0.0, le=1.0)
    """Thresholds: the gap allowed; default 0 (exact equality), since the re-audit judges the gap by its interval."""
    objective: ObjectiveName = "accuracy"
    """What the thresholds maximise: `accuracy` or `balanced_accuracy`."""
    holdout: float = Field(default=0.5, gt=0.0, lt=1.0)
    """Thresholds: the share of people held out (seeded by `statistics.seed`) to judge on; the rules are fitted on the
    rest."""
    retrain: RetrainInputs | None = None
    """Where retraining (and reweighing) finds its data and estimator; required for `retrain`, `training` at least for
    `reweighing`."""

    @model_validator(mode="after")
    def _inputs_for_the_method(self) -> Mitigation:
        if self.method == "retrain" and (
            self.retrain is None or self.retrain.estimator is None or self.retrain.evaluation is None
        ):
            raise ValueError(RETRAIN_NEEDS.format(method="retrain"))
        if self.method == "reweighing" and self.retrain is None:
            raise ValueError(
                "mitigation.method reweighing needs retrain: {training: ...} (the training data to weigh); with "
                "estimator and evaluation too, the weighted model is trained and audited before and after"
            )
        return self
