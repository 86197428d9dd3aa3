"""``fairgate compare``: may a candidate model replace the baseline? Runs the ``fairgate-compare`` flow.

Registered in the CLI's command table (cli/__init__.py). Thin: check the options (exit 2 with the fix, nothing
written), run the flow (flows/compare.py), print the changes, exit with the decision:
0 at least one candidate may be promoted (the chosen one is printed), 1 none may (the policy's ``comparison:``
rule), 2 invalid input, 3 an internal error.
Prefect and the engine are imported only when the command runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from cli import console, options
from cli.checks import check_path_name, check_writing
from cli.exits import refusing, run_flow
from cli.invocation import command_line
from fairgate.engine.labels import slicing_label
from fairgate.engine.text import bracket_text
from fairgate.errors import FairgateError

_out = console.stdout()
CompareTrail = Annotated[
    Path | None,
    typer.Option(
        "--trail",
        help="The audit trail run ids are looked up in and the comparison is recorded in (default: the "
        "policy's audit_trail.path, else audit_trail.duckdb in --out, else in the policy's output folder).",
    ),
]


def compare(
    context: typer.Context,
    policy: options.Policy,
    baseline: Annotated[
        str,
        typer.Option(
            "--baseline", help=f"The model in use: its predictions ({options.SOURCE}) or an audit run id/seq."
        ),
    ],
    candidate: Annotated[
        list[str],
        typer.Option(
            "--candidate", help="A proposed model on the same people (file or run id/seq); repeat for several."
        ),
    ],
    labels: Annotated[
        str | None, typer.Option(help=f"Ground-truth labels: {options.SOURCE}; default: the baseline run's.")
    ] = None,
    attributes: Annotated[
        str | None, typer.Option(help=f"Sensitive attributes: {options.SOURCE}; default: the baseline run's.")
    ] = None,
    trail: CompareTrail = None,
    plane_metric: Annotated[
        str | None,
        typer.Option("--plane-metric", help="The judged metric on the accuracy-fairness plane's x axis."),
    ] = None,
    out: options.Out = None,
    as_json: options.Json = False,
    quiet: options.Quiet = False,
) -> None:
    """Compare candidate models with the baseline on the same people. Exit 0: a candidate may be promoted (the
    chosen one is named), 1: none may, 2: invalid input.

    The policy's comparison: rule decides; run ids are looked up in the audit trail.
    """
    models = [("baseline", baseline)] + [("candidate", c) for c in candidate]
    _precheck(policy, {"labels": labels, "attributes": attributes}, models, out, trail, plane_metric)
    parameters: dict[str, Any] = {
        "policy": str(policy),
        "baseline": baseline,
        "candidates": list(candidate),
        "labels": labels,
        "attributes": attributes,
        "out_dir": str(out) if out else None,
        "trail": str(trail) if trail else None,
        "plane_metric": plane_metric,
    }
    parameters["command_line"] = command_line(context)  # the document records it for its reproduce block
    summary = _run_flow(parameters, show_progress=not (quiet or as_json))
    document = json.loads(Path(summary["json"]).read_text(encoding="utf-8"))
    if as_json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    elif not quiet:
        _print(document, summary)
    raise typer.Exit(summary["exit_code"])


def _run_flow(parameters: dict[str, Any], *, show_progress: bool) -> dict[str, Any]:
    from cli.signals import audit_guard
    from flows.compare import fairgate_compare

    status = "running the fairgate-compare flow (align both models, pair, paired bootstrap)" if show_progress else None
    with audit_guard():  # Ctrl-C / SIGTERM: stop at once, no server left behind (cli/signals.py)
        return run_flow(fairgate_compare, parameters, what="the comparison", status=status)


def _precheck(
    policy: Path,
    shared: dict[str, str | None],
    models: list[tuple[str, str]],
    out: Path | None,
    trail: Path | None,
    plane_metric: str | None = None,
) -> None:
    """Fail fast (before Prefect starts) on a bad policy, a missing input or an unwritable folder. A model that
    is not a file must be a run id: it is looked up in the flow, which names the run's inputs if they changed."""
    from tasks.audit import read_policy
    from tasks.inputs.io import parse_source

    with refusing():
        check_path_name("policy", str(policy))
        parsed, _ = read_policy.fn(policy)
        judged = [m.name for m in parsed.metrics]
        if plane_metric is not None and plane_metric not in judged:
            raise FairgateError(f"--plane-metric {plane_metric!r} is not a metric of the policy; its metrics: {judged}")
        for option, text in shared.items():
            if text is not None:
                parse_source(option, text)
        named = {f"{option} {i}": text for i, (option, text) in enumerate(models)}
        _, trail_path = check_writing(parsed, out, trail, shared | named)
        for option, text in models:
            try:
                parse_source(option, text)
            except FairgateError as exc:
                if not trail_path.exists():
                    raise FairgateError(
                        f"{exc.message}; nor is it an audit run: no trail at {trail_path} (pass --trail)"
                    ) from None
        if (shared["labels"] is None or shared["attributes"] is None) and not trail_path.exists():
            raise FairgateError("--labels and --attributes are needed when the baseline is a predictions file")


_COLOURS = {"worse": "red", "better": "green", "undefined": "yellow", "no_evidence_of_change": "default"}


def _print(document: dict[str, Any], summary: dict[str, Any]) -> None:
    for entry in document["candidates"]:
        _print_candidate(entry)
    for item in document["not_compared"]:
        _out.print(f"not compared: {item['metric']} ({item['reason']})", highlight=False)
    decision = document["decision"]
    colour = "green" if decision == "promote" else "red"
    chosen = f": {escape(document['chosen'])}" if document["chosen"] else ""
    warning = " [bold red](it still FAILS the policy)[/]" if document.get("chosen_fails_policy") else ""
    _out.print(f"decision: [bold {colour}]{decision.replace('_', ' ').upper()}[/]{chosen}{warning}")
    for reason in document["reasons"]:
        _out.print(f"  - {escape(reason)}", highlight=False)
    _out.print(f"multiplicity: {document['statistics']['multiplicity']}", highlight=False)
    _out.print(f"json: {summary['json']}", highlight=False)
    for kind, path in (summary.get("report") or {}).items():
        _out.print(f"{kind}: {path}", highlight=False)


def _print_candidate(entry: dict[str, Any]) -> None:
    table = Table(
        title=f"{escape(entry['name'])} - baseline (paired bootstrap): {entry['decision'].replace('_', ' ')}",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("metric", overflow="fold")
    table.add_column("slicing", overflow="fold")
    for column in ("baseline", "candidate", "change", "interval"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for row in [entry["accuracy"], *entry["changes"]]:
        status = row["status"]
        table.add_row(
            row["metric"],
            slicing_label(row["slicing"]),
            console.number(row["baseline"]),
            console.number(row["candidate"]),
            console.number(row["change"], signed=True),
            bracket_text(row["ci_low"], row["ci_high"], signed=True),
            f"[{_COLOURS.get(status, 'default')}]{status.replace('_', ' ')}[/]",
        )
    _out.print(table)
    audit = entry["audit"]
    verdict = "PASSES" if entry["passes_policy"] else f"does not pass (verdict {audit['verdict']})"
    _out.print(f"its own audit against the policy: {verdict}", highlight=False)
    for failed in audit["failed"]:
        _out.print(f"  fails: {escape(failed)}", highlight=False)
