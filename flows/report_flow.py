"""The report step: render the audit result as HTML/PDF, then deliver it by email (or to the outbox).

Reads only the audit result document (never rows), so its cost does not depend on the row count. Called from
inside the ``fairness-audit`` flow; its steps are Prefect tasks of that flow run.

Why a function and not a subflow: Prefect stores a flow run's parameters in its API and refuses more than
512 KB, and an audit document with curves and intersections is larger than that (COMPAS: about 770 KB). Task
inputs are not sent to the API, so the document travels through tasks only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from prefect.utilities.annotations import quote

import fairgate
from fairgate.report.suppress import Suppression
from tasks.outbound.deliver import deliver
from tasks.render.report import email_body, render_report, report_suppression


def publish_report(
    result_doc: dict[str, Any],
    policy: fairgate.Policy,
    out_dir: Path,
    trail_path: Path,
    final_dir: Path | None = None,
    *,
    explorer: str | None = None,
    suppression: Suppression | None = None,
) -> dict[str, Any]:
    """Render the report in the policy's formats and deliver it; return the paths and the delivery outcome.

    ``explorer``: the file name of the what-if explorer already written beside the report (the HTML links to it).
    ``final_dir``: where ``out_dir`` (a staging folder) is moved once the run is recorded (tasks/outbound/deliver.py).
    ``suppression``: the document's small-cell suppression when the audit already has it (the explorer's); the
    report and its e-mail use the one computed here otherwise.
    """
    reporting, delivery = policy.reporting, policy.delivery
    # The email attaches the PDF even when the policy's formats leave it out: render what delivery needs too.
    formats = sorted(set(reporting.format) | set(delivery.attach if delivery and delivery.enabled else []))
    # Handed over as is: Prefect would otherwise walk the whole document (~1 MB of nested dicts) for futures, twice
    # per task (about 1 s of the demo on a busy machine); it holds none.
    as_is = cast(dict[str, Any], quote(result_doc))
    if suppression is None:
        suppression = report_suppression(result_doc, reporting.min_cell_size)
    withheld = cast(Suppression, quote(suppression))
    paths = render_report(as_is, Path(out_dir), formats, reporting.min_cell_size, policy.use_case, explorer, withheld)
    outcome: dict[str, Any] = {"status": "skipped", "detail": "no delivery section in the policy"}
    if delivery is not None and delivery.enabled:
        body = email_body(
            result_doc, min_cell_size=reporting.min_cell_size, use_case=policy.use_case, suppression=suppression
        )
        outcome = deliver(as_is, delivery, paths, body, Path(trail_path), Path(out_dir), final_dir)
    return {"html": paths["html"], "pdf": paths["pdf"], "delivery": outcome}
