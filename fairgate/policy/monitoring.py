"""Policy section ``monitoring:``: the periods cubes are kept per, the windows, the baseline and the drift alerts.

>>> m = Monitoring.model_validate({"alerts": [{"metric": "equal_opportunity_difference", "min_change": 0.05}]})
>>> (m.period, m.windows, m.baseline.kind, m.alerts[0].false_alarm_rate)
('day', [7, 30, 90, 'since_deployment'], 'deployment_audit', 0.01)
>>> m.window_periods(30)
30
>>> Monitoring.model_validate({"period": "week", "windows": [28]}).window_periods(28)
4
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from fairgate.policy.base import STRICT

Period = Literal["day", "week"]
SINCE_DEPLOYMENT = "since_deployment"
Window = int | Literal["since_deployment"]
PERIOD_DAYS: dict[str, int] = {"day": 1, "week": 7}


class _Strict(BaseModel):
    model_config = STRICT


class Baseline(_Strict):
    """What each window is compared with: the deployment audit's cube, or a fixed window of stored periods.

    ``deployment_audit``: the cube the trail recorded with audit run ``run_id`` (default: the model's first
    recorded audit). ``reference_window``: the sum of the model's stored period cubes from ``start`` to ``end``
    (dates, inclusive).
    """

    kind: Literal["deployment_audit", "reference_window"] = "deployment_audit"
    """`deployment_audit` (an audit's cube) or `reference_window` (stored periods from `start` to `end`, summed)."""
    run_id: str | None = None
    """`deployment_audit`: the audit run; default the model's first recorded audit."""
    start: date | None = None
    """`reference_window`: the first day."""
    end: date | None = None
    """`reference_window`: the last day."""

    @model_validator(mode="after")
    def _consistent(self) -> Baseline:
        if self.kind == "reference_window":
            if self.start is None or self.end is None:
                raise ValueError(
                    "baseline kind reference_window needs start and end (dates, e.g. start: 2026-01-01, "
                    "end: 2026-03-31): the stored periods summed into the baseline"
                )
            if self.start > self.end:
                raise ValueError(f"baseline start {self.start} is after its end {self.end}; swap them")
            if self.run_id is not None:
                raise ValueError("baseline run_id belongs to kind deployment_audit; remove it or change the kind")
        elif self.start is not None or self.end is not None:
            raise ValueError(
                "baseline start/end belong to kind reference_window; remove them or write kind: reference_window"
            )
        return self


class AlertRule(_Strict):
    """One drift alert: which metric (and slicing) is watched, the change worth an alert, and its error rate.

    ``false_alarm_rate``: the chance of any false alert over ``horizon_nights`` nights across all the rule's
    streams (groups x slicings) when nothing changed; the detector sets its threshold from it.
    """

    metric: str
    """The watched metric (one of `metrics:`)."""
    slicing: list[str] | None = None
    """The watched slicing, e.g. `[race]`; absent: every slicing the audit judges for the metric."""
    min_change: float = Field(gt=0.0, le=1.0)
    """The change worth an alert, in the metric's units (a rate difference)."""
    false_alarm_rate: float = Field(default=0.01, gt=0.0, lt=0.5)
    """P(any false alert within `horizon_nights`) over the rule's streams."""
    horizon_nights: int = Field(default=365, ge=1, le=10_000)
    """The horizon the false-alarm rate is stated over, in nights."""


class Monitoring(_Strict):
    """The ``monitoring:`` section (docs/guides/monitoring.md)."""

    period: Period = "day"
    """`day` or `week` (ISO weeks from Monday): cubes are stored per period."""
    timestamp: str = Field(default="timestamp", min_length=1)
    """The predictions' column giving when each prediction was made; the rows are cubed per period of it."""
    windows: list[Window] = Field(default=[7, 30, 90, "since_deployment"], min_length=1, max_length=20)
    """Window lengths in days (multiples of 7 with `period: week`), or `since_deployment` (every stored period)."""
    baseline: Baseline = Baseline()
    """What each window is compared with: the deployment audit (default) or a reference window of stored periods."""
    alerts: list[AlertRule] = Field(default=[], max_length=100)
    """The drift alert rules, one per watched metric."""
    recipients: list[str] | None = None
    """Who gets the drift alert e-mails; absent: `delivery.recipients`."""
    expected_rows_per_period: int | None = Field(default=None, ge=1)
    """The labelled rows a period is expected to bring. At policy load, an alert rule that cannot catch its
    `min_change` within its horizon at this volume is named in a warning; absent: the deployment audit's row
    count is used."""

    @model_validator(mode="before")
    @classmethod
    def _weekly_default_windows(cls, data: Any) -> Any:
        # The default windows in whole weeks: 7, 28 and 91 days.
        if isinstance(data, dict) and data.get("period") == "week" and "windows" not in data:
            return {**data, "windows": [7, 28, 91, SINCE_DEPLOYMENT]}
        return data

    @field_validator("windows")
    @classmethod
    def _distinct_windows(cls, windows: list[Window]) -> list[Window]:
        if len(set(windows)) != len(windows):
            raise ValueError(f"windows lists a window twice: {windows}")
        for window in windows:
            if isinstance(window, int) and not 1 <= window <= 3660:
                raise ValueError(f"window {window} must be a number of days from 1 to 3660, or since_deployment")
        return windows

    @field_validator("recipients")
    @classmethod
    def _addresses(cls, recipients: list[str] | None) -> list[str] | None:
        for address in recipients or []:
            if "@" not in address or any(c.isspace() for c in address.strip()):
                raise ValueError(f"recipient {address!r} is not an email address; write it as name@example.org")
        return None if recipients is None else [a.strip() for a in recipients]

    @model_validator(mode="after")
    def _windows_fit_period(self) -> Monitoring:
        days = PERIOD_DAYS[self.period]
        for window in self.windows:
            if isinstance(window, int) and window % days:
                raise ValueError(
                    f"window {window} is not a whole number of {self.period}s ({days} days each); "
                    f"write a multiple of {days}, e.g. {max(days, window - window % days)}"
                )
        return self

    @property
    def period_days(self) -> int:
        """The length of one period in days."""
        return PERIOD_DAYS[self.period]

    def window_periods(self, window: Window) -> int | None:
        """How many periods a window spans (None: since deployment, every stored period)."""
        return None if window == SINCE_DEPLOYMENT else int(window) // self.period_days


def check_monitoring(monitoring: Monitoring | None, metrics: list[str], attributes: list[str]) -> None:
    """Cross-references of the section against the policy's metrics and sensitive attributes.

    Called by the policy's validation; raises ValueError naming the entry and what to write instead.
    """
    if monitoring is None:
        return
    for index, rule in enumerate(monitoring.alerts):
        where = f"monitoring.alerts[{index}]"
        if rule.metric not in metrics:
            raise ValueError(
                f"{where} watches metric {rule.metric!r}, which is not in metrics; metrics configured: {metrics}"
            )
        for name in rule.slicing or []:
            if name not in attributes:
                raise ValueError(
                    f"{where}.slicing names {name!r}, which is not a sensitive attribute; declared: {attributes}"
                )
        if rule.slicing is not None and len(set(rule.slicing)) != len(rule.slicing):
            raise ValueError(f"{where}.slicing names an attribute twice: {rule.slicing}")
