"""``fairgate``: the command line. Thin: parse options, run the ``fairness-audit`` flow, print, exit.

Exit codes: 0 pass, 1 fail, 2 invalid input or configuration (message on stderr, no traceback, nothing
written), 3 an internal error (a bug: please report it).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, cast

# Before Prefect is imported: its ephemeral server's telemetry heartbeat writes to the SQLite database while
# the flow run does, and logs "database is locked" tracebacks. Off unless the user turned it on.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
# Two audits started together each start an ephemeral server on the same SQLite database; on a busy machine
# start-up (with migrations) can take longer than Prefect's default 20 s.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import fairgate
from cli.checks import EXIT_INTERNAL, EXIT_INVALID, check_audit_arguments, run_guarded
from cli.signals import audit_guard, end_process, exit_on_signal
from fairgate.engine.labels import slicing_label
from fairgate.errors import FairgateError

if TYPE_CHECKING:
    from prefect.client.schemas.objects import (
        State,  # imported lazily: main() sets Prefect's log level before its import
    )

PACKAGE_DIR = Path(fairgate.__file__).resolve().parent
DEMO_POLICY = PACKAGE_DIR / "policies" / "compas_demo.yaml"
DEMO_DATA = PACKAGE_DIR / "data" / "compas" / "compas-scores-two-years.csv"

app = typer.Typer(
    name="fairgate",
    help="Fairness checker for ML models: audit predictions against a policy; the exit code gates deployment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_out = Console()
_err = Console(stderr=True)


def _fail(message: str, code: int = EXIT_INVALID) -> NoReturn:
    # escape: a message is text, not markup ("pip install 'fairgate[mlflow]'" keeps its brackets)
    _err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(code)


def _precheck(
    policy: Path, predictions: str, labels: str, attributes: str, where: tuple[str | None, str | None] = (None, None)
) -> None:
    """Fail fast (before Prefect starts) on a bad policy or a missing input file (on Dask: partition lists that
    do not line up)."""
    from tasks.audit import read_policy
    from tasks.io import parse_source

    try:
        parsed, _ = read_policy.fn(policy)
        if _on_dask(parsed, where):
            from flows.audit_dask import requested_execution
            from tasks.partitions import check_scheduler, plan_partitions

            plan_partitions(predictions, labels, attributes)
            if address := requested_execution(parsed.execution, *where).address:
                check_scheduler(address)
            return
        for role, text in (("predictions", predictions), ("labels", labels), ("attributes", attributes)):
            parse_source(role, text)
    except FairgateError as exc:
        _fail(exc.message)


def _on_dask(policy: fairgate.Policy, where: tuple[str | None, str | None]) -> bool:
    from flows.audit_dask import requested_execution

    return requested_execution(policy.execution, *where).runner == "dask"


def _run_audit(
    *,
    policy: Path,
    predictions: str,
    labels: str,
    attributes: str,
    out: Path | None,
    model: str | None,
    model_version: str | None,
    trail: Path | None,
    as_json: bool,
    quiet: bool,
    runner: str | None = None,
    dask_address: str | None = None,
) -> NoReturn:
    inputs = {"predictions": predictions, "labels": labels, "attributes": attributes}
    _trail_call(check_audit_arguments, policy, inputs, out, trail, {"model": model, "model-version": model_version})
    _precheck(policy, predictions, labels, attributes, (runner, dask_address))
    parameters: dict[str, Any] = {
        "policy": str(policy),
        "predictions": predictions,
        "labels": labels,
        "attributes": attributes,
        "out_dir": str(out) if out else None,
        "model_name": model,
        "model_version": model_version,
        "trail": str(trail) if trail else None,
        "runner": runner,
        "dask_address": dask_address,
    }
    with audit_guard():  # Ctrl-C / SIGTERM: stop at once, nothing recorded, no server left (cli/signals.py)
        summary = _summary(_run_flow(parameters, show_progress=not (quiet or as_json)))
    _warn_undelivered(summary)
    if as_json:
        sys.stdout.write(json.dumps(summary["document"], indent=2) + "\n")
    elif not quiet:
        _print_summary(summary)
    raise typer.Exit(summary["exit_code"])


def _run_flow(parameters: dict[str, Any], *, show_progress: bool) -> State:
    """The ``fairness-audit`` flow's final state; an error outside the flow's own handling exits 3."""
    from flows.audit import fairness_audit

    try:
        if not show_progress:
            return fairness_audit(**parameters, return_state=True)
        with _err.status("running the fairness-audit flow (align, validate, cube, metrics, verdict)"):
            return fairness_audit(**parameters, return_state=True)
    except Exception as exc:  # not bad input: Prefect unreachable, a bug; never exit 1 (= "fail") for it
        if os.environ.get("FAIRGATE_DEBUG"):
            raise
        _fail(f"the audit could not run: {type(exc).__name__}: {exc} (set FAIRGATE_DEBUG=1 for details)", EXIT_INTERNAL)


def _warn_undelivered(summary: dict[str, Any]) -> None:
    """A report e-mail that failed after its retries, on stderr (the exit code stays the gate's)."""
    delivery = (summary.get("report") or {}).get("delivery") or {}
    if delivery.get("status") == "failed":
        _err.print(
            f"[bold yellow]warning:[/] the report e-mail was not delivered ({escape(str(delivery.get('detail')))}); "
            "re-send it with `fairgate outbox send --policy POLICY --out OUT`",
            highlight=False,
            soft_wrap=True,
        )


def _summary(state: State) -> dict[str, Any]:
    """The run summary of a finished flow, with its document; a Failed state exits 2 (invalid input) or 3 (a
    crash), except PolicyFailed and DeliveryFailed, which carry a verdict (the exit code stays the gate's)."""
    from flows.audit import DELIVERY_FAILED, INVALID_INPUT, POLICY_FAILED

    if state.is_failed() and state.name not in {POLICY_FAILED, DELIVERY_FAILED}:  # those two hold a verdict
        if state.name == INVALID_INPUT:
            _fail(state.message or "invalid input")
        _fail(f"the audit crashed: {state.message}; this is a bug in fairgate, please report it", EXIT_INTERNAL)
    summary = cast(dict[str, Any], state.result(raise_on_failure=False))
    # The persisted result is the small summary; the document is the run's JSON output.
    summary["document"] = json.loads(Path(summary["outputs"]["json"]).read_text(encoding="utf-8"))
    return summary


# Short enough for 80 columns; the JSON keeps the full status names.
_STATUS_LABELS = {"insufficient_data": "no data"}
_STATUS_NOTES = {
    "inconclusive": "inconclusive: the interval straddles the limit",
    "insufficient_data": "no data: too few people to judge",
}


def _print_summary(summary: dict[str, Any]) -> None:
    document = summary["document"]
    # One section per slicing (its name on a row of its own) keeps the table readable in 80 columns.
    table = Table(title="fairness results", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("metric", overflow="fold")
    for column in ("value", "interval", "limit"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    shown: set[str] = set()
    for slicing, rows in itertools.groupby(document.get("results", []), key=lambda r: r.get("slicing") or []):
        table.add_section()
        table.add_row(f"[bold]{slicing_label(slicing)}[/]")
        for r in rows:
            value = "n/a" if r.get("value") is None else f"{r['value']:.3f}"
            ci = "" if r.get("ci_low") is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
            status = r.get("status", "")
            shown.add(status)
            colour = {"pass": "green", "fail": "red", "inconclusive": "magenta"}.get(status, "yellow")
            label = _STATUS_LABELS.get(status, status)
            table.add_row(f" {r.get('metric', '')}", value, ci, str(r.get("threshold")), f"[{colour}]{label}[/]")
    notes = [text for status, text in _STATUS_NOTES.items() if status in shown]
    if notes:
        table.caption = "; ".join(notes) + " (the JSON gives each result's reason)"
    _out.print(table)
    verdict = document["verdict"]
    _out.print(f"verdict: [bold {'green' if verdict == 'pass' else 'red'}]{verdict.upper()}[/]")
    for kind, path in summary["outputs"].items():
        _out.print(f"{kind}: {path}", highlight=False)
    report = summary.get("report") or {}
    for kind in ("html", "pdf"):
        if report.get(kind):
            _out.print(f"{kind}: {report[kind]}", highlight=False)
    _out.print(f"audit trail: {summary['trail']['trail']} (run {summary['trail']['seq']})", highlight=False)
    if proposed := summary.get("mitigation"):  # policy mitigation.auto: proposed, never deployed
        _out.print(f"proposed mitigation ({proposed['method']}): {proposed['summary']}", highlight=False)


@app.command()
def audit(
    policy: Annotated[Path, typer.Option("--policy", help="The fairness policy (YAML).")],
    predictions: Annotated[str, typer.Option(help="Predictions: CSV/Parquet file, or DB::TABLE.")],
    labels: Annotated[str, typer.Option(help="Ground-truth labels: CSV/Parquet file, or DB::TABLE.")],
    attributes: Annotated[str, typer.Option(help="Sensitive attributes: CSV/Parquet file, or DB::TABLE.")],
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (default: the policy's).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name for the record.")] = None,
    model_version: Annotated[str | None, typer.Option("--model-version", help="Model version.")] = None,
    trail: Annotated[Path | None, typer.Option("--trail", help="Audit trail file (default: in --out).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print only the audit document on stdout.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress or summary.")] = False,
    runner: Annotated[
        str | None, typer.Option("--runner", help="local or dask (default: the policy's execution.runner).")
    ] = None,
    dask_address: Annotated[
        str | None,
        typer.Option("--dask-address", help="Dask scheduler, e.g. tcp://host:8786 (implies --runner dask)."),
    ] = None,
) -> None:
    """Audit a model's predictions against a fairness policy. Exit 0 pass, 1 fail, 2 invalid input.

    On Dask, each input may be a directory or a glob of partition files (the k-th files hold the same people).
    """
    _run_audit(
        policy=policy,
        predictions=predictions,
        labels=labels,
        attributes=attributes,
        out=out,
        model=model,
        model_version=model_version,
        trail=trail,
        as_json=as_json,
        quiet=quiet,
        runner=runner,
        dask_address=dask_address,
    )


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("fairness_reports"),
    as_json: Annotated[bool, typer.Option("--json", help="Print only the audit document on stdout.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress or summary.")] = False,
) -> None:
    """Audit the bundled COMPAS risk scores (ProPublica data) with the bundled demo policy."""
    from tasks.io import write_demo_inputs

    workdir = Path(tempfile.mkdtemp(prefix="fairgate-demo-"))
    try:
        files = write_demo_inputs(DEMO_DATA, workdir)
        if not (quiet or as_json):
            _err.print(f"demo: COMPAS ({DEMO_DATA.name}) split into {', '.join(p.name for p in files.values())}")
        _run_audit(
            policy=DEMO_POLICY,
            predictions=str(files["predictions"]),
            labels=str(files["labels"]),
            attributes=str(files["attributes"]),
            out=out,
            model="compas",
            model_version="northpointe-2013",
            trail=None,
            as_json=as_json,
            quiet=quiet,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _trail_call(function: Any, *args: Any) -> Any:
    try:
        return function(*args)
    except FairgateError as exc:
        _fail(exc.message)


from cli.outbox_cmd import outbox_app  # noqa: E402 (after `app`, like the proxy command below)
from cli.trail_cmd import trail_app  # noqa: E402

app.add_typer(trail_app, name="trail")
app.add_typer(outbox_app, name="outbox")

from cli import deploy_cmd  # noqa: E402 (after `app`; Prefect is imported only when the command runs)

app.command("deploy")(deploy_cmd.deploy)
from cli import compare_cmd  # noqa: E402 (Prefect and the engine are imported only when the command runs)

app.command("compare")(compare_cmd.compare)

from cli.registry_cmd import registry_app  # noqa: E402

app.add_typer(registry_app, name="registry")
from cli.monitor_cmd import monitor_app  # noqa: E402 (Prefect and the flows are imported when `run` runs)

app.add_typer(monitor_app, name="monitor")

from cli import mitigate_cmd  # noqa: E402 (after `app`; Prefect and the flows are imported when it runs)

app.command("mitigate")(mitigate_cmd.mitigate)


if importlib.util.find_spec("cli.proxy_cmd") is not None:
    from cli import proxy_cmd

    app.command("proxy")(proxy_cmd.proxy)


def main() -> None:
    """Console entry point (``fairgate``)."""
    exit_on_signal()  # Ctrl-C / SIGTERM: exit 130 / 143 (cli/signals.py)
    if {"--quiet", "-q", "--json"} & set(sys.argv[1:]):
        # Machines: Prefect's INFO lines off (warnings and errors still shown on stderr). Read by Prefect at import.
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    try:
        run_guarded(app)
    except SystemExit as exc:
        if exc.code is not None and not isinstance(exc.code, int):
            raise  # a message: Python prints it and exits 1
        end_process(exc.code or 0)
    end_process(0)
