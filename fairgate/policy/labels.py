"""The policy's ``labels:`` section: labels that are late (label-free estimation) or contested (external labels).

``estimated_results``: whether results estimated from the scores before the labels arrive may fail the gate
(``judge``) or are reported beside the measured verdict only (``report_only``, the default).
``calibration_alpha``: the level of the per-group calibration test in the reference audit; a group whose scores
fail it gets no estimates. ``label_disagreement_difference``: the threshold of the label-bias finding, the
largest gap between groups in how often the audit's labels and the external labels disagree.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from fairgate.policy.base import STRICT

#: The label-bias finding's metric name (judged like a policy metric, threshold in ``labels:``).
LABEL_DISAGREEMENT = "label_disagreement_difference"
EstimatedResults = Literal["judge", "report_only"]


class LabelRules(BaseModel):
    """How estimated results count and how label disagreement is judged."""

    model_config = STRICT

    estimated_results: EstimatedResults = "report_only"
    """Whether results estimated from the scores (an audit without labels) may fail the gate (`judge`) or are shown
    beside the measured verdict only (`report_only`)."""
    calibration_alpha: float = Field(default=0.01, gt=0.0, lt=0.5)
    """The level of each group's calibration test in the reference audit; a group that fails it gets no estimates."""
    label_disagreement_difference: float = Field(default=0.05, ge=0.0, le=1.0)
    """The label-bias finding's threshold: the largest allowed gap between groups in how often the audit's labels and
    the external labels disagree."""

    def rules(self) -> dict[str, tuple[float, Literal["lower_is_better", "higher_is_better"]]]:
        """The judged label checks: name -> (threshold, direction)."""
        return {LABEL_DISAGREEMENT: (self.label_disagreement_difference, "lower_is_better")}


DEFAULT_LABEL_RULES = LabelRules()
