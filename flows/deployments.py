"""fairgate's three Prefect deployments, registered from the installed package (``fairgate deploy``).

The entrypoints are module paths (``flows.audit.fairness_audit``): a worker started from the environment where
fairgate is installed imports the flows from there, so it needs no checkout, no pull step and no environment
variable naming a folder. Every path a deployment carries is made absolute when it is registered, because a
process worker runs each flow run in a temporary folder of its own.

- ``fairness-audit/nightly``: the policy's audit of a source refreshed each day, on a cron schedule (02:00 UTC).
- ``fairgate-registration/on-registration``: an event trigger on ``fairgate.model.registered``; the whole event
  goes to the ``fairgate-registration`` flow (flows/registration.py), which checks it against the contract.
- ``fairness-audit/on-demand``: every input passed per run (UI, ``prefect deployment run``, a CI job).
- ``fairness-monitor/nightly``: the monitoring night (flows/monitor.py) of the same nightly sources, on the same
  cron, registered when the policy has a ``monitoring:`` section and the nightly sources are given. Labels are
  optional for both nightlies (``labels`` None: labels that arrive late; the label-dependent results are then
  estimated from the scores, and a run given ``labels`` checks those estimates).

Registering again updates the deployments in place (their schedule and trigger are replaced, not added).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from uuid import UUID

from prefect import Flow
from prefect.deployments.runner import RunnerDeployment
from prefect.events import DeploymentEventTrigger
from prefect.schedules import Cron
from prefect.types.entrypoint import EntrypointType

from fairgate.errors import FairgateError
from flows.audit import fairness_audit
from flows.commands import equivalent_command
from flows.monitor import fairness_monitor
from flows.registration import fairgate_registration
from tasks.inputs.io import first_line
from tasks.outbound.registration import REGISTERED

POOL = "fairgate"
NIGHTLY_CRON = "0 2 * * *"
TAGS = ["fairness", "gate"]


@dataclass(frozen=True)
class DeploySettings:
    """What ``fairgate deploy`` was given, every path absolute (see :func:`absolute_source`)."""

    pool: str
    policy: str
    out_dir: str
    labels: str | None = None
    attributes: str | None = None
    predictions: str | None = None  # the nightly audit's source; without it there is no nightly deployment
    model_name: str | None = None
    model_version: str | None = None  # the nightly audit's; else the predictions' column, else "unversioned"
    trail: str | None = None
    cron: str = NIGHTLY_CRON
    timezone: str = "UTC"
    mlflow_tracking_uri: str | None = None  # also the MLflow registry watch and verdict write-back
    monitor: bool = False  # the policy has a monitoring: section: also the nightly fairness-monitor


def absolute_source(text: str) -> str:
    """``FILE`` or ``FILE::TABLE`` with the file's path made absolute (relative to the current folder).

    >>> absolute_source("/data/w.duckdb::labels")
    '/data/w.duckdb::labels'
    """
    path, sep, table = text.partition("::")
    return f"{Path(path).expanduser().resolve()}{sep}{table}"


def build_deployments(settings: DeploySettings) -> list[RunnerDeployment]:
    """The deployments to register, in order: nightly (when a predictions source is given), on-registration,
    on-demand."""
    common: dict[str, Any] = {"policy": settings.policy, "out_dir": settings.out_dir}
    if settings.trail:
        common["trail"] = settings.trail
    sources = {k: v for k, v in (("labels", settings.labels), ("attributes", settings.attributes)) if v}
    # The nightly sources: without labels (late ones), the nightly runs estimate their label-dependent results;
    # a run given ``labels`` (the late labels of earlier nights) measures them and checks the estimates.
    nightly_sources = {"labels": None, **sources, "predictions": settings.predictions}
    deployments = []
    if settings.predictions:
        nightly = {**common, **nightly_sources}
        nightly |= _model(settings)
        nightly["command_line"] = equivalent_command("audit", nightly)  # what reproduces a night's audit
        deployments.append(
            _deployment(
                fairness_audit,
                settings,
                name="nightly",
                description="Nightly fairness audit of the predictions source against the policy.",
                schedules=[Cron(settings.cron, timezone=settings.timezone)],
                parameters=nightly,
            )
        )
    if settings.predictions and settings.monitor:
        deployments.append(
            _deployment(
                fairness_monitor,
                settings,
                name="nightly",
                description="Nightly fairness monitoring: the night's rows cubed, windows, baseline, drift alerts.",
                schedules=[Cron(settings.cron, timezone=settings.timezone)],
                parameters=_monitored({**common, **nightly_sources} | _model(settings)),
            )
        )
    deployments.append(
        _deployment(
            fairgate_registration,
            settings,
            name="on-registration",
            description=f"Fairness gate for every model version announced by a {REGISTERED!r} event.",
            parameters={**common, **sources},
            triggers=[registration_trigger()],
        )
    )
    deployments.append(
        _deployment(
            fairness_audit,
            settings,
            name="on-demand",
            description="Ad-hoc fairness audit: pass predictions, labels and attributes (and a model name) per run.",
            parameters={**common, **sources},
        )
    )
    if settings.mlflow_tracking_uri:
        deployments += _mlflow_deployments(settings)
    return deployments


def _monitored(parameters: dict[str, Any]) -> dict[str, Any]:
    """The nightly monitor's parameters with the equivalent ``fairgate monitor run`` command."""
    return parameters | {"command_line": equivalent_command("monitor run", parameters)}


def _model(settings: DeploySettings) -> dict[str, str]:
    named = {"model_name": settings.model_name, "model_version": settings.model_version}
    return {key: value for key, value in named.items() if value}


def _mlflow_deployments(settings: DeploySettings) -> list[RunnerDeployment]:
    """The MLflow registry watch (every minute) and the write-back of each verdict to its model version."""
    from flows import registry_watch, registry_writeback  # the optional extra: imported only when asked

    watch = registry_watch.deployment_spec(tracking_uri=settings.mlflow_tracking_uri)
    writeback = registry_writeback.deployment_spec()
    writeback["parameters"] = {**writeback["parameters"], "tracking_uri": settings.mlflow_tracking_uri}
    return [
        _deployment(registry_watch.registry_watch, settings, **watch),
        _deployment(registry_writeback.registry_writeback, settings, **writeback),
    ]


def registration_trigger() -> DeploymentEventTrigger:
    """Every ``fairgate.model.registered`` event, whatever its resource, starts a registration run with the
    whole event (``{{ event }}`` renders to the event as JSON): a malformed event is then rejected visibly by
    the flow, never dropped by the trigger (a resource filter or a ``{{ event.payload.x }}`` template would)."""
    return DeploymentEventTrigger(
        name="fairgate-on-registration",
        description=f"Run fairgate-registration/on-registration for every {REGISTERED} event.",
        expect={REGISTERED},
        parameters={"event": "{{ event }}"},
    )


def _deployment(flow: Flow[..., Any], settings: DeploySettings, **options: Any) -> RunnerDeployment:
    """A deployment of ``flow`` on the pool, importing it by module path from the installed package."""
    options.setdefault("tags", TAGS)
    deployment = flow.to_deployment(work_pool_name=settings.pool, entrypoint_type=EntrypointType.MODULE_PATH, **options)
    return cast(RunnerDeployment, deployment)  # synchronous here: the object, not a coroutine


def apply_deployments(deployments: list[RunnerDeployment], pool: str) -> dict[str, str]:
    """Create or update each deployment on the Prefect API; the deployment ids by full name."""
    return {d.full_name: str(d.apply(work_pool_name=pool)) for d in deployments}


class DeployError(FairgateError):
    """``fairgate deploy`` cannot register the deployments: no Prefect API, or a work pool of the wrong kind."""

    exit_code = 2


NO_API = (
    "PREFECT_API_URL is not set, so there is no Prefect server to register the deployments with: start one with "
    "`prefect server start` (in another terminal) and `export PREFECT_API_URL=http://127.0.0.1:4200/api`, or "
    "set it to your server's or Prefect Cloud's API URL"
)


def check_api() -> str:
    """The Prefect API URL, once it answers its health check; a ``DeployError`` saying how to fix it otherwise
    (never an ephemeral server: deployments on one would vanish with it)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if not url:
        raise DeployError(NO_API)
    with get_client(sync_client=True) as client:
        error = client.api_healthcheck()
    if error is not None:
        raise DeployError(
            f"the Prefect API at PREFECT_API_URL={url} does not answer ({first_line(error) or type(error).__name__}): "
            "start the server with `prefect server start`, or set PREFECT_API_URL to the URL of a running one"
        )
    return str(url)


def ensure_work_pool(name: str) -> str:
    """Create the ``process`` work pool ``name`` if it does not exist; ``created`` or ``exists``."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound
    from prefect.workers.process import ProcessWorker

    with get_client(sync_client=True) as client:
        try:
            pool = client.read_work_pool(name)
        except ObjectNotFound:
            template = ProcessWorker.get_default_base_job_template()
            with contextlib.suppress(ObjectAlreadyExists):  # another deploy created it meanwhile
                client.create_work_pool(WorkPoolCreate(name=name, type="process", base_job_template=template))
            return "created"
    if pool.type != "process":
        raise DeployError(
            f"work pool {name!r} is of type {pool.type!r}; fairgate's deployments run from the installed package "
            "on a process worker: give another --pool (it is created as a process pool) or delete this one"
        )
    return "exists"


#: The deployments ``fairgate deploy`` registers, by full name. A re-deploy removes those of them it does not
#: register again; a deployment of fairgate's flows under another name (made in code, as in
#: examples/prefect_deployment.py) is not a deploy's to remove (``fairgate deploy --remove`` removes every one).
DEPLOYED_BY_FAIRGATE = frozenset(
    {
        "fairness-audit/nightly",
        "fairness-monitor/nightly",
        "fairgate-registration/on-registration",
        "fairness-audit/on-demand",
        "fairgate-registry-watch/registry-watch",
        "fairgate-registry-writeback/registry-writeback",
    }
)

#: The flows fairgate registers deployments of. A deployment of one of them that a ``fairgate deploy`` does not
#: register (again) is left over from an earlier deploy: the nightly of a deploy that had ``--predictions``, the
#: monitor of a policy that had ``monitoring:``, the MLflow watch of a deploy with ``--mlflow-tracking-uri``.
FAIRGATE_FLOWS = (
    "fairness-audit",
    "fairness-monitor",
    "fairgate-registration",
    "fairgate-registry-watch",
    "fairgate-registry-writeback",
)


@dataclass(frozen=True)
class Registered:
    """A fairgate deployment as the server holds it."""

    name: str  # flow/deployment
    id: str
    pool: str | None
    paused: bool
    schedules: tuple[str, ...]  # each schedule's cron and time zone
    parameters: dict[str, Any]


def registered_deployments() -> list[Registered]:
    """fairgate's deployments on the server (every pool: a deployment's name is unique per flow), by name."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    with get_client(sync_client=True) as client:
        flows = client.read_flows(flow_filter=FlowFilter(name=FlowFilterName(any_=list(FAIRGATE_FLOWS))))
        names = {flow.id: flow.name for flow in flows}
        deployments = client.read_deployments(flow_filter=FlowFilter(name=FlowFilterName(any_=list(FAIRGATE_FLOWS))))
    out = [
        Registered(
            name=f"{names.get(d.flow_id, '?')}/{d.name}",
            id=str(d.id),
            pool=d.work_pool_name,
            paused=bool(d.paused),
            schedules=tuple(
                f"cron '{getattr(s.schedule, 'cron', '?')}' ({getattr(s.schedule, 'timezone', None) or 'UTC'})"
                for s in d.schedules
            ),
            parameters=dict(d.parameters or {}),
        )
        for d in deployments
    ]
    return sorted(out, key=lambda r: r.name)


def remove_deployments(deployments: list[Registered]) -> list[str]:
    """Delete each deployment with the automations it owns (its event trigger) and its scheduled runs; their
    names. Finished runs stay in the server's history."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    removed = []
    with get_client(sync_client=True) as client:
        for deployment in deployments:
            client.delete_resource_owned_automations(f"prefect.deployment.{deployment.id}")
            with contextlib.suppress(ObjectNotFound):  # another deploy removed it meanwhile
                client.delete_deployment(UUID(deployment.id))
            removed.append(deployment.name)
    return removed
