"""The options several commands share, declared once: ``name: Alias = default`` in a command's signature.

A command whose option means something else (``proxy --out`` is a file, ``deploy --policy`` has a default with
``--demo``, ``mitigate``'s inputs are for one method) declares its own, with :data:`SOURCE` for an input's forms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

SOURCE = "CSV/Parquet file, or DB::TABLE"  # what an input option accepts (tasks/inputs/io.py parse_source)
DEFAULT_TRAIL = Path("fairness_reports") / "audit_trail.duckdb"  # the commands that only read a trail

Policy = Annotated[Path, typer.Option("--policy", help="The fairness policy (YAML).")]
Predictions = Annotated[str, typer.Option("--predictions", help=f"Predictions: {SOURCE}.")]
Labels = Annotated[str, typer.Option("--labels", help=f"Ground-truth labels: {SOURCE}.")]
Attributes = Annotated[str, typer.Option("--attributes", help=f"Sensitive attributes: {SOURCE}.")]
# fairgate audit: labels may be late (label-dependent results estimated) or contested (external labels).
LabelsIfAny = Annotated[
    str | None,
    typer.Option(
        "--labels",
        help=f"Ground-truth labels: {SOURCE}. Without them, label-dependent results are estimated from the scores, "
        "calibrated on the model's last labelled audit in the trail.",
    ),
]
# fairgate monitor run: a night whose labels have not arrived estimates its label-dependent metrics.
MonitorLabels = Annotated[
    str | None,
    typer.Option(
        "--labels",
        help=f"Ground-truth labels: {SOURCE}; may hold late labels of earlier periods. Without them, the night's "
        "label-dependent metrics are estimated from the scores, calibrated on the deployment's labelled audit.",
    ),
]
ExternalLabels = Annotated[
    str | None,
    typer.Option(
        "--external-labels",
        help=f"Independent labels for the same people ({SOURCE}): compared with --labels per group.",
    ),
]

# Where a run writes: the policy's reporting.output_dir unless given; the trail in it unless given.
Out = Annotated[Path | None, typer.Option("--out", help="Output folder (default: the policy's).")]
OutFolder = Annotated[Path, typer.Option("--out", help="Output folder: the reports and the audit trail.")]
Trail = Annotated[
    Path | None,
    typer.Option("--trail", help="Audit trail file (default: the policy's audit_trail.path, else in --out)."),
]
# A trail that is read (trail list|show|verify, monitor show): default DEFAULT_TRAIL.
TrailFile = Annotated[Path, typer.Option("--trail", help="The audit trail file.")]

# The audited model, for the record (and the e-mail's subject).
Model = Annotated[str | None, typer.Option("--model", help="Model name for the record.")]
ModelVersion = Annotated[str | None, typer.Option("--model-version", help="Model version.")]

Json = Annotated[bool, typer.Option("--json", help="Print only the result, as JSON, on stdout.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or summary.")]
