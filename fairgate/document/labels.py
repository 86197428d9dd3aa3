"""Late and contested labels in the audit document (schema 1.9).

The ``label_free`` block (results estimated before the labels arrive) and the ``label_bias`` block (the audit's
labels against an external label).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fairgate.document.common import Group, Part, Slicing


class LabelFree(Part):
    """How the label-dependent results of an audit without labels were estimated from the scores."""

    method: str = Field(description="cbpe_recalibrated: expected confusion counts from recalibrated scores.")
    method_text: str
    reference_run_id: str | None = Field(
        description="The labelled audit of the same model whose per-group reliability bins calibrate the scores."
    )
    reference_note: str | None = Field(default=None, description="Why there is no reference, if there is none.")
    estimated_results: Literal["judge", "report_only"] = Field(
        description="Policy labels.estimated_results: whether the estimated results count in the verdict."
    )
    n_estimated: int = Field(ge=0)


class DisagreementGroup(Part):
    """How often one group's audit labels and external labels disagree, each direction apart."""

    slicing: Slicing
    group: Group
    n: float = Field(ge=0)
    n_effective: float = Field(ge=0)
    disagreements: float = Field(ge=0)
    external_favourable_audit_not: float = Field(
        ge=0, description="The external label is favourable, the audit's is not (favourable outcomes unrecorded)."
    )
    audit_favourable_external_not: float = Field(ge=0)
    rate: float | None
    ci_low: float | None = Field(description="Wilson interval at the reporting confidence level.")
    ci_high: float | None
    sufficient: bool


class ExternalResult(Part):
    """A policy metric measured against the external labels (beside the judged one; not judged itself)."""

    metric: str
    slicing: Slicing
    value: float | None
    ci_low: float | None
    ci_high: float | None


class LabelBias(Part):
    """The audit's labels against an external label: disagreement per group and the metrics under both labels."""

    source: str | None = Field(description="The external labels' input.")
    meaning: str
    groups: list[DisagreementGroup]
    external_results: list[ExternalResult] = Field(default_factory=list)


class EstimateCheck(Part):
    """One estimated result of an earlier audit without labels against the value the labels now show."""

    metric: str
    slicing: Slicing
    value: float = Field(description="The estimate.")
    ci_low: float
    ci_high: float
    measured: float = Field(description="The value this labelled audit measured for the same people.")
    covered: bool = Field(description="The estimate's interval holds the measured value.")


class LabelFreeCheck(Part):
    """A labelled audit of people an earlier audit estimated without labels: how the estimates fared."""

    estimate_run_id: str = Field(description="The audit without labels (same model, same predictions).")
    results: list[EstimateCheck]
    n_compared: int = Field(ge=0)
    n_covered: int = Field(ge=0, description="Estimates whose interval holds the measured value.")
