"""The report's view model: built from the typed audit document; formatting, suppression and e-mail text.

No Jinja here: ``tasks/render/report.py`` renders the view. Modules: ``model`` (the view dataclasses), ``format``
(numbers and labels), ``suppress`` (small-cell suppression), ``results``/``sections``/``summary``/``notes``/
``figures``/``provenance`` (the view's parts), ``build`` (``build_view``) and ``email`` (the e-mail text).
"""

from fairgate.report.build import build_view
from fairgate.report.email import email_summary
from fairgate.report.format import METRIC_LABELS, TABLE_METRICS, flatten, fmt, metric_label
from fairgate.report.model import (
    PDF_ROW_LIMIT,
    SUPPRESSED,
    Action,
    Breakdown,
    Cell,
    CheckRow,
    Curve,
    CurveSet,
    GroupRow,
    Heatmap,
    KeyValue,
    NoteRow,
    Recommendation,
    ReportView,
    ResultRow,
    ScoreCard,
    ScoreCell,
    ScoreRow,
    SlicingSection,
    WorstRow,
)

__all__ = [
    "METRIC_LABELS",
    "PDF_ROW_LIMIT",
    "SUPPRESSED",
    "TABLE_METRICS",
    "Action",
    "Breakdown",
    "Cell",
    "CheckRow",
    "Curve",
    "CurveSet",
    "GroupRow",
    "Heatmap",
    "KeyValue",
    "NoteRow",
    "Recommendation",
    "ReportView",
    "ResultRow",
    "ScoreCard",
    "ScoreCell",
    "ScoreRow",
    "SlicingSection",
    "WorstRow",
    "build_view",
    "email_summary",
    "flatten",
    "fmt",
    "metric_label",
]
