"""The plain-text e-mail body, from the same view (and so the same suppression) as the report."""

from __future__ import annotations

from fairgate.report.model import ReportView


def email_summary(view: ReportView, *, top: int = 5) -> str:
    """The plain-text email body: verdict, the top failures, results not judged, then the first recommendation."""
    lines = [
        f"fairgate verdict: {view.verdict_text} for {view.model_name} {view.model_version} (run {view.run_id})",
        "",
        view.verdict_sentence,
        "",
    ]
    if view.failures:
        lines.append("Top failures:")
        for r in view.failures[:top]:
            flag = " [critical]" if r.critical else ""
            unsure = " (uncertain)" if r.uncertain else ""
            lines.append(
                f"  - {r.metric_label} on {r.slicing_label}: {r.value_text} "
                f"(threshold {r.threshold_text}; {r.gap_text}){flag}{unsure}"
            )
        if len(view.failures) > top:
            lines.append(f"  ... and {len(view.failures) - top} more in the attached report.")
        lines.append("")
    if view.undecided:
        lines.append("Not judged pass or fail:")
        lines += [f"  - {r.metric_label} on {r.slicing_label}: {r.mark} ({r.reason})" for r in view.undecided[:top]]
        if len(view.undecided) > top:
            lines.append(f"  ... and {len(view.undecided) - top} more in the attached report.")
        lines.append("")
    if view.recommendations:
        first = view.recommendations[0]
        lines += [
            f"Recommended first step: {first.title} ({first.metric_label} on {first.slicing_label}).",
            "",
        ]
    lines += _mitigation_lines(view, top)
    lines.append(f"The full report is attached. {view.suppression_note}".rstrip())
    return "\n".join(lines) + "\n"


def _mitigation_lines(view: ReportView, top: int) -> list[str]:
    """The proposed remedy (policy mitigation.auto): what, the verdict and price before and after, the caveat."""
    m = view.mitigation
    if m is None:
        return []
    lines = [f"Proposed mitigation: {m.method_title}.", f"  {m.summary}"]
    if m.overall is not None:
        lines.append(
            f"  {m.measure_label.capitalize()}: {m.overall.before_text} -> {m.overall.after_text} "
            f"({m.overall.change_text}) on {m.overall.n_text} measured people."
        )
    shown = sorted(m.results, key=lambda r: (not r.critical, not (r.fixed or r.broken)))[:top]
    lines += [
        f"  - {r.metric_label} on {r.slicing_label}: {r.before_text} {r.before_ci} {r.before_mark} -> "
        f"{r.after_text} {r.after_ci} {r.after_mark}"
        for r in shown
    ]
    if len(m.results) > top:
        lines.append(f"  ... and {len(m.results) - top} more in the report's Proposed mitigation section.")
    lines += [f"  {m.not_deployed}", ""]
    return lines
