"""``fairgate monitor run|show``: one monitoring night (the ``fairness-monitor`` flow), and its record as a table.

``run`` exit codes: 0 nothing to act on, 1 a new drift alert tonight or (``--exit-on any``, the default) a window
that fails the policy's gate (``--exit-on alerts``: new alerts only), 2 invalid input or configuration (message on
stderr, nothing recorded), 3 an internal error, 4 (``--exit-on any``, no new alert) no window could judge anything
and the policy's ``ci_cd_gate.insufficient`` is block (allow: 0), as an audit with that verdict exits. ``show``
reads the audit trail only (no Prefect): exit 0, or 2 when the trail cannot be read. Prefect and the engine are
imported only when ``run`` runs.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from cli import console, options
from cli.checks import check_audit_arguments
from cli.exits import debug_hint, fail, print_error, refusing, run_flow
from cli.invocation import command_line
from fairgate.engine.labels import slicing_label
from fairgate.engine.text import bracket_text, fmt
from fairgate.errors import FairgateError

if TYPE_CHECKING:
    import fairgate

monitor_app = typer.Typer(
    help="Monitor a model night by night: windowed fairness, change against a baseline, drift alerts.",
    no_args_is_help=True,
)
_out = console.stdout()


class ExitOn(StrEnum):
    """``--exit-on``: what makes ``monitor run`` exit 1."""

    any = "any"
    alerts = "alerts"


ExitOnOption = Annotated[
    ExitOn,
    typer.Option(
        "--exit-on",
        help="What exits 1: any (a window fails the policy, or a new drift alert) or alerts (new alerts only).",
    ),
]


@monitor_app.command("run")
def run(
    context: typer.Context,
    policy: options.Policy,
    predictions: options.Predictions,
    attributes: options.Attributes,
    labels: options.MonitorLabels = None,
    model_name: Annotated[str | None, typer.Option("--model-name", "--model", help="The monitored model.")] = None,
    model_version: options.ModelVersion = None,
    night: Annotated[
        str | None, typer.Option("--night", help="The night (YYYY-MM-DD); default: the latest in the timestamps.")
    ] = None,
    out: options.Out = None,
    trail: options.Trail = None,
    as_json: options.Json = False,
    quiet: options.Quiet = False,
    exit_on: ExitOnOption = ExitOn.any,
) -> None:
    """Monitor one night: cube its rows, judge the windows from stored cubes, watch for drift.

    Exit 1 when a window fails the policy or a new drift alert fires (--exit-on alerts: alerts only); exit 4 when
    no window could judge anything and ci_cd_gate.insufficient is block. The policy needs a monitoring: section;
    the labels may include late labels of earlier periods. Without --labels, the night's label-dependent metrics
    are estimated from the scores and shown apart (policy labels.estimated_results decides whether they count).
    """
    inputs = {"predictions": predictions, "labels": labels, "attributes": attributes}
    names = {"model-name": model_name, "model-version": model_version}
    with refusing():
        check_audit_arguments(policy, {k: v for k, v in inputs.items() if v is not None}, out, trail, names)
        parsed = _precheck(policy, predictions, night)
        cells = _precheck_baseline(parsed, out, trail, model_name)
        _warn_weak_rules(parsed, cells, quiet)
    parameters: dict[str, Any] = {
        "policy": str(policy),
        **inputs,
        "out_dir": str(out) if out else None,
        "model_name": model_name,
        "model_version": model_version,
        "trail": str(trail) if trail else None,
        "night": night,
        "exit_on": exit_on.value,
        "command_line": command_line(context),  # recorded in the document, printed in its reproduce block
    }
    from cli.signals import audit_guard
    from flows.monitor import fairness_monitor

    status = "running the fairness-monitor flow (new rows, windows, baseline, drift)"
    with audit_guard():  # Ctrl-C / SIGTERM: stop at once, no server left behind; logs delivered before it stops
        summary = run_flow(
            fairness_monitor,
            parameters,
            what="monitoring",
            status=None if quiet or as_json else status,
            hint=debug_hint(""),
        )
    document = json.loads(Path(summary["outputs"]["json"]).read_text(encoding="utf-8"))
    if as_json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    elif not quiet:
        _print_night(document, summary)
    raise typer.Exit(summary["exit_code"])


def _precheck(policy: Path, predictions: str, night: str | None) -> fairgate.Policy:
    """Refused before Prefect starts: an invalid policy, one without a monitoring section (binary kinds only, so a
    night without labels can always estimate), and (without --night) predictions with no timestamp column to give
    the rows their period."""
    import duckdb

    from tasks.audit import read_policy
    from tasks.inputs.io import parse_source, register_source
    from tasks.monitor import monitoring_of

    parsed, _ = read_policy.fn(policy)
    column = monitoring_of(parsed, str(policy)).timestamp
    source = parse_source("predictions", predictions)
    if night is None and source.kind != "sqlite":  # reading a header is cheap; a database table is checked later
        with duckdb.connect() as con:
            columns = register_source(con, source, "predictions_header")
        if column not in columns:
            raise FairgateError(
                f"{source.label} has no timestamp column {column!r} (monitoring.timestamp), so the rows' period is "
                f"unknown; pass --night DATE (all rows are that night's), or add the column; columns present: "
                f"{columns}"
            )
    return parsed


def _precheck_baseline(
    parsed: fairgate.Policy, out: Path | None, trail: Path | None, model_name: str | None
) -> list[dict[str, Any]] | None:
    """A deployment-audit baseline that is not in the trail is refused before Prefect starts (when the model is
    named; otherwise the flow checks it once the predictions name the model). Its recorded cells, when read."""
    from tasks.store import default_trail_path
    from tasks.store.monitor import baseline_audit_cells

    baseline = parsed.monitoring.baseline if parsed.monitoring else None
    if model_name is None or baseline is None or baseline.kind != "deployment_audit":
        return None
    trail_path = trail or default_trail_path(parsed, Path(out or parsed.reporting.output_dir))
    return baseline_audit_cells(trail_path, model_name, baseline.run_id)[1]


def warn_weak_rules_at_deploy(parsed: fairgate.Policy, trail: Path, model_name: str | None) -> None:
    """``fairgate deploy`` of a monitoring deployment: the rules too weak at the known volume, as warnings.

    The deployment audit may not be recorded yet (it is not an error here): the check then says what it lacks.
    """
    from tasks.store import TrailError

    try:
        cells = _precheck_baseline(parsed, None, trail, model_name)
    except TrailError:
        cells = None
    _warn_weak_rules(parsed, cells, False)


def _warn_weak_rules(parsed: fairgate.Policy, cells: list[dict[str, Any]] | None, quiet: bool) -> None:
    """At policy load: a ``warning:`` line per alert rule too weak for its min_change at the known volume."""
    from fairgate.monitoring.power import load_warnings
    from fairgate.monitoring.windows import cells_cube

    if quiet:
        return
    for line in load_warnings(parsed, None if cells is None else cells_cube(cells, parsed)):
        print_error(line, "warning:")


def _print_night(document: dict[str, Any], summary: dict[str, Any]) -> None:
    stored = ", ".join(f"{p['start']} v{p['version']}" for p in document["stored"]) or "none (unchanged)"
    _out.print(f"night {document['night']}: stored period cubes {stored}", highlight=False)
    base = document.get("baseline") or {}
    _out.print(f"baseline: {base.get('label', 'none')}", highlight=False)
    for window in document["windows"]:
        _out.print(_window_table(window))
    for window in document.get("estimated_windows") or []:
        _out.print(_window_table(window))
    _print_estimates(document)
    for alert in document["alerts"]:
        _out.print(f"[bold red]DRIFT[/] {escape(alert['detail'])}", highlight=False)
    for rule in document.get("underpowered") or []:
        _out.print(f"[bold yellow]WEAK RULE[/] {escape(rule['detail'])}", highlight=False)
    head = document["headline"]
    colour = "green" if head["badge"] == "PASS" else ("yellow" if head["badge"] == "NO EVIDENCE" else "bold red")
    _out.print(f"[{colour}]{escape(head['text'])}[/]", highlight=False)
    _out.print(f"exit code {document['exit_code']} (--exit-on {document['exit_on']})", highlight=False)
    _out.print(f"json: {summary['outputs']['json']}", highlight=False)


def _print_estimates(document: dict[str, Any]) -> None:
    """How the night's estimated results count, and the earlier estimates checked against their labels."""
    label_free = document.get("label_free")
    if label_free:
        counted = label_free["estimated_results"] == "judge"
        rule = "counted in the verdict" if counted else "shown apart, not counted"
        reference = label_free.get("reference_run_id") or label_free.get("reference_note")
        _out.print(
            f"[bold yellow](estimated)[/] {label_free['n_estimated']} result(s) estimated from the scores, {rule} "
            f"(labels.estimated_results: {label_free['estimated_results']}); reference: {escape(str(reference))}",
            highlight=False,
        )
    checks = document.get("estimate_checks")
    if not checks:
        return
    for check in checks["checks"]:
        _out.print(
            f"estimates of period {check['period_start']} checked against its labels: {check['n_covered']} of "
            f"{check['n_compared']} intervals held the measured value",
            highlight=False,
        )
    cover = checks["coverage"]
    if cover["n_compared"]:
        _out.print(
            f"running coverage of the estimates: {cover['n_covered']}/{cover['n_compared']} = {fmt(cover['rate'])} "
            f"{_band(cover)} over {checks['n_checks']} period(s)",
            highlight=False,
        )


def _window_table(window: dict[str, Any]) -> Table:
    same = f"; the same periods as {window['same_as']}" if window.get("same_as") else ""
    verdict = f"; {str(window['verdict']).upper()}" if window.get("verdict") else ""
    kind = " without labels yet (estimated)" if window.get("estimated") else ""
    title = f"window {window['window']}{kind} ({window['periods']} periods, {window['rows']} rows{same}{verdict})"
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("metric", "slicing", "value", "band", "decided on", "limit", "baseline", "change", "status"):
        justify: Literal["left", "right"] = "left" if column in ("metric", "slicing", "status") else "right"
        table.add_column(column, justify=justify, no_wrap=column not in ("metric", "slicing"))
    for r in window["results"]:
        mark = " [bold red]*[/]" if r.get("significant") else ""
        table.add_row(
            r["metric"],
            slicing_label(r["slicing"]),
            console.number(r.get("value")),
            _band(r),
            _band(r, "decision_"),
            console.number(r.get("threshold")),
            console.number(r.get("baseline_value")),
            (console.number(r.get("change"), signed=True) + mark) if r.get("change") is not None else "",
            _status(r),
        )
    table.caption = (
        "band: the reporting interval; decided on: the gate's interval the status rests on (Holm over the window's "
        "results); * change against the baseline significant (Holm over the window's changes)"
    )
    return table


@monitor_app.command("show")
def show(
    model: Annotated[str, typer.Option("--model", help="The monitored model's name.")],
    trail: options.TrailFile = options.DEFAULT_TRAIL,
    metric: Annotated[str | None, typer.Option("--metric", help="Only this metric.")] = None,
    window: Annotated[
        str, typer.Option("--window", help="The window shown per night (days or since_deployment).")
    ] = "30",
    nights: Annotated[int, typer.Option("--nights", min=1, help="The last N monitored nights.")] = 14,
    as_json: options.Json = False,
) -> None:
    """Per metric and slicing: the window's value and band per night, the limit, the change, alerts marked."""
    from tasks.store import TrailError
    from tasks.store.monitor import monitoring_history

    try:
        history = monitoring_history(trail, model)
    except TrailError as exc:
        fail(exc.message, exc.exit_code)
    if not history["nights"]:
        fail(f"no monitored night of model {model!r} in {trail}; run `fairgate monitor run` first")
    shown = history["nights"][-nights:]
    alerts = defaultdict(list)
    for alert in history["alerts"]:
        alerts[(alert["night"], alert["metric"], alert["slicing"])].append(alert)
    series = _series(shown, window, metric)
    if not series:
        known = sorted({w["window"] for n in shown for w in n["windows"] if w.get("results")})
        fail(f"no results for window {window!r}{f' and metric {metric!r}' if metric else ''}; windows: {known}")
    listed = [a for a in history["alerts"] if metric is None or a["metric"] == metric]
    if as_json:
        sys.stdout.write(json.dumps(_series_json(model, window, series, listed), indent=2, default=str) + "\n")
        return
    for (name, slicing), points in series.items():
        _out.print(_series_table(name, slicing, window, points, alerts))
    for alert in listed:
        _out.print(f"[bold red]ALERT[/] {alert['night']}: {escape(str(alert['detail']))}", highlight=False)
    if not listed:
        _out.print("[green]no drift alert recorded[/]")


def _series(
    nights: list[dict[str, Any]], window: str, metric: str | None
) -> dict[tuple[str, str], list[tuple[str, dict[str, Any]]]]:
    """(metric, slicing) -> [(night, result of the window)], in night order; a night's window over rows without
    labels yet (estimated) follows its measured one, each of its results marked ``estimated_window``."""
    out: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for night in nights:
        for summary in sorted(night["windows"], key=lambda w: bool(w.get("estimated"))):
            if summary["window"] != window:
                continue
            for r in summary["results"]:
                if metric is None or r["metric"] == metric:
                    key = (r["metric"], slicing_label(r["slicing"]))
                    point = r | {"estimated_window": bool(summary.get("estimated"))}
                    out.setdefault(key, []).append((night["night"], point))
    return out


def _series_json(
    model: str, window: str, series: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]], alerts: list[Any]
) -> dict[str, Any]:
    """What the tables show, as data: per (metric, slicing) the window's result per night; the alerts listed."""
    return {
        "model": model,
        "window": window,
        "series": [
            {"metric": name, "slicing": slicing, "nights": [{"night": night, **result} for night, result in points]}
            for (name, slicing), points in series.items()
        ],
        "alerts": alerts,
    }


def _series_table(
    metric: str,
    slicing: str,
    window: str,
    points: list[tuple[str, dict[str, Any]]],
    alerts: dict[tuple[str, str, str], list[dict[str, Any]]],
) -> Table:
    table = Table(title=f"{metric} on {slicing}, window {window}", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("night", "value", "band", "decided on", "limit", "baseline", "change", "status", "alert"):
        justify: Literal["left", "right"] = "left" if column in ("night", "status", "alert") else "right"
        table.add_column(column, justify=justify, no_wrap=column != "alert")
    for night, r in points:
        raised = alerts.get((night, metric, slicing), [])
        alert = ", ".join(f"[bold red]ALERT[/] {escape(str(a['group']))}" for a in raised)
        mark = " [bold red]*[/]" if r.get("significant") else ""
        table.add_row(
            f"{night} [yellow]no labels yet[/]" if r["estimated_window"] else night,
            console.number(r.get("value")),
            _band(r),
            _band(r, "decision_"),
            console.number(r.get("threshold")),
            console.number(r.get("baseline_value")),
            (console.number(r.get("change"), signed=True) + mark) if r.get("change") is not None else "",
            _status(r),
            alert,
        )
    table.caption = (
        "band: the audit's reporting interval; decided on: the gate's interval the status rests on; * change "
        "against the baseline significant (Holm); no labels yet: the window over the rows whose labels have not "
        "arrived, its label-dependent results estimated from the scores (estimated)"
    )
    return table


def _status(result: dict[str, Any]) -> str:
    """A window result's status; an estimated one is marked so it is never read as measured."""
    status = str(result.get("status") or "")
    return f"{status} (estimated)" if result.get("estimated") else status


def _band(result: dict[str, Any], prefix: str = "") -> str:
    return bracket_text(result.get(f"{prefix}ci_low"), result.get(f"{prefix}ci_high"))
