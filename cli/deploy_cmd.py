"""``fairgate deploy``: register fairgate's deployments on the Prefect server at ``PREFECT_API_URL``.

Registered in the CLI's command table (cli/__init__.py). Thin: check the options (exit 2 with the fix, nothing
registered or written), then flows/deployments.py creates the work pool if it is missing and
creates or updates the three deployments. Prefect is imported only when the command runs.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from cli import console, options
from cli.exits import refusing
from fairgate.errors import FairgateError

if TYPE_CHECKING:
    from flows.deployments import DeploySettings

_out = console.stdout()
ListOption = Annotated[
    bool, typer.Option("--list", help="List fairgate's deployments on the server and exit (registers nothing).")
]
LabelsOption = Annotated[
    str | None,
    typer.Option(
        "--labels",
        help=f"Ground-truth labels, the default of every deployment: {options.SOURCE}. Without them (labels that "
        "arrive late), the nightly runs estimate the label-dependent results from the scores.",
    ),
]
RemoveOption = Annotated[
    bool, typer.Option("--remove", help="Remove fairgate's deployments, their triggers and scheduled runs.")
]


def deploy(
    policy: Annotated[
        Path | None,
        typer.Option("--policy", help="The fairness policy (YAML) of every deployment (default with --demo: COMPAS)."),
    ] = None,
    labels: LabelsOption = None,
    attributes: Annotated[
        str | None, typer.Option(help=f"Sensitive attributes, the default of every deployment: {options.SOURCE}.")
    ] = None,
    predictions: Annotated[
        str | None,
        typer.Option(help=f"The predictions the nightly audit reads ({options.SOURCE}); without it, no nightly."),
    ] = None,
    model: options.Model = None,
    model_version: Annotated[
        str | None,
        typer.Option("--model-version", help="The nightly audit's model version (default: the predictions' column)."),
    ] = None,
    out: options.OutFolder = Path("fairness_reports"),
    trail: options.Trail = None,
    pool: Annotated[str, typer.Option("--pool", help="Process work pool (created if missing).")] = "fairgate",
    cron: Annotated[str, typer.Option("--cron", help="The nightly schedule.")] = "0 2 * * *",
    timezone: Annotated[str, typer.Option("--timezone", help="The nightly schedule's time zone.")] = "UTC",
    mlflow_tracking_uri: Annotated[
        str | None,
        typer.Option(
            "--mlflow-tracking-uri",
            help="Also deploy the MLflow registry watch (every minute) and the verdict write-back "
            "(needs fairgate[mlflow]).",
        ),
    ] = None,
    demo: Annotated[
        bool, typer.Option("--demo", help="Use the bundled COMPAS data and policy (split into --out/demo-inputs).")
    ] = False,
    list_: ListOption = False,
    remove: RemoveOption = False,
    as_json: options.Json = False,
) -> None:
    """Register the nightly, on-registration and on-demand deployments (idempotent: again = update).

    The worker writes the reports and the trail under --out; --model and --model-version name the nightly
    audit's model. Deployments an earlier deploy registered and this one does not are removed (and named).
    """
    from flows.deployments import check_api

    if list_ or remove:
        return _manage(remove=remove, as_json=as_json)

    with refusing():  # nothing registered or written yet: the message and exit 2, no traceback
        settings = _settings(policy, labels, attributes, predictions, model, out, trail, pool, cron, timezone, demo)
        settings = _with_version(settings, model_version)
        settings = _with_mlflow(settings, mlflow_tracking_uri)
        api_url = check_api()
    created, ids, settings = _register(settings, out, pool, demo)
    _report(api_url, pool, created, ids, settings, _remove_stale(ids), as_json=as_json)


def _print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _remove_stale(registered_now: dict[str, str]) -> list[str]:
    """Remove the fairgate deployments an earlier deploy registered and this one did not; their names (one of
    fairgate's flows deployed under another name, in code, is left alone)."""
    from flows.deployments import DEPLOYED_BY_FAIRGATE, registered_deployments, remove_deployments

    stale = [d for d in registered_deployments() if d.name in DEPLOYED_BY_FAIRGATE and d.name not in registered_now]
    return remove_deployments(stale)


def _register(settings: DeploySettings, out: Path, pool: str, demo: bool) -> tuple[str, dict[str, str], DeploySettings]:
    """Write the demo inputs (with --demo), make the work pool, apply the deployments: the demo inputs stay only
    if the deployments are registered (tasks/outputs.py ``atomic_outputs``)."""
    from flows.deployments import apply_deployments, build_deployments, ensure_work_pool
    from tasks.outputs import atomic_outputs

    with atomic_outputs():
        with refusing():
            if demo:
                settings = _with_demo_inputs(settings, out)
            created = ensure_work_pool(pool)
        ids = apply_deployments(build_deployments(settings), pool)
    return created, ids, settings


def _with_version(settings: DeploySettings, model_version: str | None) -> DeploySettings:
    """The nightly audit's model version; refused without a nightly (it would be silently unused)."""
    if model_version is None:
        return settings
    if not model_version.strip():
        raise FairgateError("--model-version: give the version of the model the nightly audit reads, e.g. 7")
    if not settings.predictions:
        raise FairgateError("--model-version names the nightly audit's model: give --predictions SRC with it")
    return dataclasses.replace(settings, model_version=model_version)


def _manage(*, remove: bool, as_json: bool = False) -> None:
    """``--list`` or ``--remove``: fairgate's deployments on the server, whatever pool or deploy made them."""
    from flows.deployments import check_api, registered_deployments, remove_deployments

    with refusing():
        api_url = check_api()
    registered = registered_deployments()
    lines = [f"Prefect API: {api_url}"]
    if as_json:
        if remove:
            return _print_json({"api_url": api_url, "removed": remove_deployments(registered)})
        return _print_json({"api_url": api_url, "deployments": [dataclasses.asdict(d) for d in registered]})
    if remove:
        removed = remove_deployments(registered)
        lines += [f"removed: {name}" for name in removed] or ["no fairgate deployment to remove"]
    else:
        lines += ["no fairgate deployment registered"] if not registered else []
        for d in registered:
            when = ", ".join(d.schedules) or "when triggered or asked"
            state = "paused" if d.paused else "active"
            lines.append(f"{d.name:<45} pool {d.pool or '-'}  {state}  {when}")
            lines += [f"    {key}: {value}" for key, value in sorted(d.parameters.items())]
    for line in lines:
        _out.print(escape(line), highlight=False, soft_wrap=True)


def _with_mlflow(settings: DeploySettings, tracking_uri: str | None) -> DeploySettings:
    """The settings with the MLflow registry named, once the optional extra is known to be installed."""
    if tracking_uri is None:
        return settings
    import importlib.util

    if importlib.util.find_spec("mlflow") is None:
        raise FairgateError(
            "--mlflow-tracking-uri needs the MLflow client: pip install 'fairgate[mlflow]' (then deploy again)"
        )
    if not tracking_uri.strip():
        raise FairgateError("--mlflow-tracking-uri: give the registry's tracking URI, e.g. http://127.0.0.1:5000")
    return dataclasses.replace(settings, mlflow_tracking_uri=tracking_uri)


def _settings(
    policy: Path | None,
    labels: str | None,
    attributes: str | None,
    predictions: str | None,
    model: str | None,
    out: Path,
    trail: Path | None,
    pool: str,
    cron: str,
    timezone: str,
    demo: bool,
) -> DeploySettings:
    """The options checked (exit 2 naming the option) and every path made absolute: the worker runs each flow
    run in a temporary folder of its own."""
    from cli import DEMO_POLICY
    from cli.checks import check_output_folder, check_path_name, check_trail_file
    from flows.deployments import DeploySettings, absolute_source
    from tasks.audit import read_policy
    from tasks.inputs.io import parse_source
    from tasks.store import default_trail_path

    if policy is None and not demo:
        raise FairgateError("give --policy POLICY.yaml (the policy of every deployment), or --demo to try COMPAS")
    policy = (policy or DEMO_POLICY).expanduser().resolve()
    sources = {"labels": labels, "attributes": attributes, "predictions": predictions}
    _check_nightly(sources, model, demo)
    for role, text in sources.items():
        if text is not None:
            check_path_name(role, text.partition("::")[0])
            parse_source(role, text)
    parsed, _ = read_policy.fn(policy)
    out = out.expanduser().resolve()
    check_output_folder(out, "--out")
    # One trail per deployment, absolute: a relative audit_trail.path would land in the worker's temporary folder.
    trail = (trail or default_trail_path(parsed, out)).expanduser().resolve()
    check_trail_file(trail)
    _check_schedule(cron, timezone)
    _check_pool_name(pool)
    if parsed.monitoring is not None:
        from cli.monitor_cmd import warn_weak_rules_at_deploy

        warn_weak_rules_at_deploy(parsed, trail, model)
    absolute = {role: absolute_source(text) if text else None for role, text in sources.items()}
    return DeploySettings(
        pool=pool,
        policy=str(policy),
        out_dir=str(out),
        model_name=model,
        trail=str(trail),
        cron=cron,
        timezone=timezone,
        monitor=parsed.monitoring is not None,
        **absolute,
    )


def _check_nightly(sources: dict[str, str | None], model: str | None, demo: bool) -> None:
    """The nightly audit (--predictions) needs the attributes it joins them with and a model name; the labels
    may come later (without them, the nightly runs estimate their label-dependent results from the scores)."""
    if sources["predictions"] is None:
        return
    if not demo and sources["attributes"] is None:
        raise FairgateError(
            "--predictions sets up the nightly audit, which also needs --attributes (the source it joins the "
            "predictions with; --labels too when the labels arrive with them); give it, or leave --predictions "
            "out for no nightly deployment"
        )
    if not model:
        raise FairgateError(
            "--predictions sets up the nightly audit: name its model with --model NAME (and its version with "
            "--model-version V), so that every night is recorded under that model, not under a default name"
        )


def _check_schedule(cron: str, timezone: str) -> None:
    """The cron expression and the time zone, as the server will check them (before anything is registered)."""
    import zoneinfo

    from prefect.schedules import Cron

    try:
        zoneinfo.ZoneInfo(timezone)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        raise FairgateError(
            f"--timezone {timezone!r} is not a time zone; give an IANA name, e.g. --timezone Europe/Paris or UTC"
        ) from None
    try:
        Cron(cron, timezone=timezone)
    except ValueError as exc:
        detail = str(exc).splitlines()[-1]
        raise FairgateError(f"--cron {cron!r} --timezone {timezone!r}: {detail}; e.g. --cron '0 2 * * *'") from None


# A work pool's name as fairgate accepts it: Prefect refuses / % & > <, and the name is printed in the
# `prefect worker start --pool NAME` line a user copies into a shell.
_POOL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def _check_pool_name(pool: str) -> None:
    """
    >>> _check_pool_name("a/b;rm -rf")
    Traceback (most recent call last):
    fairgate.errors.FairgateError: --pool 'a/b;rm -rf': a work pool's name is letters, digits, '.', '_' and '-' ...
    """
    if not _POOL_NAME.fullmatch(pool):
        raise FairgateError(
            f"--pool {pool!r}: a work pool's name is letters, digits, '.', '_' and '-' (at most 100, starting with a "
            "letter or digit); e.g. --pool fairgate"
        )


def _with_demo_inputs(settings: DeploySettings, out: Path) -> DeploySettings:
    """The bundled COMPAS file split into the three inputs under ``out/demo-inputs``, for every source not
    given; the nightly audit's model is then ``compas``."""
    from dataclasses import replace

    from cli import DEMO_DATA
    from tasks.inputs.io import write_demo_inputs
    from tasks.outputs import discard_staging, make_folder, promote_outputs, staging_dir

    folder = make_folder(out.expanduser().resolve() / "demo-inputs")
    staging = staging_dir(folder, uuid.uuid4().hex[:12])  # written whole, then moved into place
    try:
        written = write_demo_inputs(DEMO_DATA, make_folder(staging))
        moved = promote_outputs(staging, folder)
    finally:
        discard_staging(staging)
    files = {role: moved[str(path)] for role, path in written.items()}
    return replace(
        settings,
        labels=settings.labels or files["labels"],
        attributes=settings.attributes or files["attributes"],
        predictions=settings.predictions or files["predictions"],
        model_name=settings.model_name or "compas",
    )


def _report(
    api_url: str,
    pool: str,
    created: str,
    ids: dict[str, str],
    settings: DeploySettings,
    removed: list[str],
    *,
    as_json: bool,
) -> None:
    if as_json:
        registered = {"api_url": api_url, "pool": pool, "pool_status": created, "deployments": ids}
        return _print_json(registered | {"removed": removed, "settings": dataclasses.asdict(settings)})
    runs = {
        "fairness-audit/nightly": f"cron '{settings.cron}' ({settings.timezone})",
        "fairgate-registration/on-registration": "every fairgate.model.registered event",
        "fairness-audit/on-demand": "when asked (UI, prefect deployment run)",
        "fairness-monitor/nightly": f"cron '{settings.cron}' ({settings.timezone}): windows and drift alerts",
        "fairgate-registry-watch/registry-watch": "every minute: new MLflow model versions (a process each run)",
        "fairgate-registry-writeback/registry-writeback": "each audit of an MLflow version: its verdict written back",
    }
    lines = [f"Prefect API: {api_url}", f"work pool {pool!r} (process): {created}", "deployments (created or updated):"]
    lines += [f"  {name:<40} {runs.get(name, '')}" for name in ids]
    lines += [f"  {name:<40} removed (an earlier deploy registered it; this one does not)" for name in removed]
    if not settings.predictions:
        lines.append("  (no nightly deployment: give --predictions SRC to audit a source every night)")
    else:
        version = settings.model_version or "the predictions' model_version column, else 'unversioned'"
        lines.append(f"nightly model: {settings.model_name or '-'}, version {version}")
    no_labels = "- (nightly runs estimate the label-dependent results; give late labels to a run: labels=SRC)"
    lines += [
        f"defaults for what a run or an event does not give: policy {settings.policy}",
        f"  labels {settings.labels or (no_labels if settings.predictions else '-')}",
        f"  attributes {settings.attributes or '-'}",
        f"outputs: {settings.out_dir}",
        f"trail: {settings.trail}",
        f"next: start a worker in this environment: prefect worker start --pool {pool}",
    ]
    for line in lines:
        _out.print(escape(line), highlight=False, soft_wrap=True)
