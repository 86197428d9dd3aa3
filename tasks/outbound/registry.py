"""The MLflow Model Registry adapter: new model versions in, ``fairgate.model.registered`` events out, verdicts
written back as tags and an alias.

mlflow is an optional extra (``pip install 'fairgate[mlflow]'``), imported only when a registry is used, so
fairgate runs without it. What the registry and the events look like is fixed in one place here:

- a version names its audit inputs in tags ``fairgate.predictions`` (required), ``fairgate.labels``,
  ``fairgate.attributes``, ``fairgate.policy``; a tag missing on the version is read from the version's run;
- a version is *seen* once its registration event is confirmed by the Prefect API and the version carries
  ``fairgate.event_id``; the event id is derived from the version, so re-sending after a crash between the
  two steps is dropped by the Prefect server (it stores and triggers on an event id once);
- a version without its predictions gets ``fairgate.status = skipped: <reason>`` and no event; it is looked
  at again on every watch, so adding the missing tag is enough.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar
from urllib.parse import urlsplit, urlunsplit

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from fairgate.errors import FairgateError
from fairgate.verdicts import passed, verdict_word

P = ParamSpec("P")
R = TypeVar("R")

if TYPE_CHECKING:
    from collections.abc import Callable

    from mlflow import MlflowClient
    from mlflow.entities.model_registry import ModelVersion
    from prefect import Task

MLFLOW_MISSING = (
    "the MLflow registry needs the MLflow client, which is an optional extra: pip install 'fairgate[mlflow]'"
)
NO_TRACKING_URI = (
    "no MLflow tracking URI: pass it (the flow's tracking_uri parameter, the CLI's --tracking-uri; e.g. "
    "http://mlflow.internal:5000) or set MLFLOW_TRACKING_URI"
)
BAD_MODEL_NAME = "model name {name!r}: names with a single quote cannot be searched in MLflow; rename the model"
NOT_IN_REGISTRY = "{what} is not in the MLflow registry at {uri}: {detail}"
BAD_COMPLETED_PAYLOAD = (
    "the fairgate.audit.completed payload {problem}; the write-back needs verdict, run_id and "
    "registry {{kind: mlflow, tracking_uri, name, version}}"
)

REGISTERED_EVENT = "fairgate.model.registered"
TAG = "fairgate."
SOURCE_KEYS = ("predictions", "labels", "attributes", "policy")  # read from tags fairgate.<key>
EVENT_ID_TAG = "fairgate.event_id"
STATUS_TAG = "fairgate.status"
REGISTERED_STATUS = "registered"
AUDITED_STATUS = "audited"  # after the write-back: "audited: <verdict>"
SKIPPED_STATUS = "skipped: {reason}"
DEFAULT_ALIAS = "fairness-approved"
# MLflow refuses longer model-version tag values (its SQL store's column).
MAX_TAG_VALUE = 5000
# Fixed namespace: the same version of the same registry always gets the same event id.
_EVENT_NAMESPACE = uuid.UUID("6f0d2b43-5b0e-4f51-9c9c-2f1a8f6f3a51")


# MLflow's HTTP client retries a request 7 times with doubling back-off (about 4 minutes) and waits 120 s for each
# answer; with the tasks' own retries an unreachable registry held a watch for 12 minutes. fairgate's defaults
# (the user's environment wins): 2 retries, 1 s back-off factor, 15 s per request.
MLFLOW_HTTP_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "15",
}
REACH_TIMEOUT_SECONDS = 5.0


def mlflow_client(tracking_uri: str | None) -> MlflowClient:
    """A client for the registry at ``tracking_uri`` (else ``MLFLOW_TRACKING_URI``); refused without mlflow."""
    try:
        from mlflow import MlflowClient
    except ImportError as exc:
        raise FairgateError(MLFLOW_MISSING) from exc
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise FairgateError(NO_TRACKING_URI)
    check_local_store(uri)
    for variable, value in MLFLOW_HTTP_DEFAULTS.items():
        os.environ.setdefault(variable, value)
    return MlflowClient(tracking_uri=uri)


def check_local_store(uri: str) -> None:
    """A local registry (``sqlite:///FILE``, ``file:///FOLDER`` or a folder) must exist: MLflow would create an
    empty one, and a watch of it would report "0 registered" instead of the mistake.

    >>> check_local_store("sqlite:///no-such-registry.sqlite")
    Traceback (most recent call last):
    fairgate.errors.FairgateError: tracking URI 'sqlite:///no-such-registry.sqlite': no MLflow database at ...
    >>> check_local_store("http://127.0.0.1:5000")
    """
    parts = urlsplit(uri)
    if parts.scheme == "sqlite":
        path = Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None
        what = "no MLflow database"
    elif parts.scheme in {"", "file"}:
        path = Path(parts.path if parts.scheme else uri)
        what = "no MLflow file store"
    else:
        return
    if path is None or not path.exists():
        raise FairgateError(
            f"tracking URI {uri!r}: {what} at {str(path or uri)!r} (fairgate does not create one); give the URI "
            "of an existing registry, e.g. sqlite:///mlflow.db beside the MLflow server, or its http:// address"
        )


def check_reachable(uri: str, timeout: float = REACH_TIMEOUT_SECONDS) -> None:
    """An http(s) tracking server answers a TCP connection within ``timeout`` seconds, else a FairgateError
    naming it (other schemes, a local database or folder, are not probed)."""
    parts = urlsplit(uri)
    if parts.scheme not in {"http", "https"}:
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "", port), timeout=timeout).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise FairgateError(
            f"the MLflow tracking server at {public_uri(uri)} cannot be reached ({why}); start it, or pass the "
            "right --tracking-uri (or MLFLOW_TRACKING_URI)"
        ) from None


def public_uri(uri: str) -> str:
    """The tracking URI without a password: events are readable by everyone with access to Prefect, and MLflow
    takes credentials from MLFLOW_TRACKING_USERNAME/PASSWORD/TOKEN anyway.

    >>> public_uri("https://ci:s3cret@mlflow.example.com:5000/")
    'https://ci@mlflow.example.com:5000/'
    >>> public_uri("http://127.0.0.1:5000")
    'http://127.0.0.1:5000'
    """
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass(frozen=True)
class Registration:
    """One model version's ``fairgate.model.registered`` event, ready to emit."""

    name: str
    version: str
    event_id: str
    resource: dict[str, str]
    payload: dict[str, Any]
    created: datetime  # the version's creation: its event cannot be older


@dataclass(frozen=True)
class Skip:
    """A version that cannot be audited as tagged, and why (written to its ``fairgate.status`` tag)."""

    name: str
    version: str
    reason: str
    already_tagged: bool  # the same reason is on the version already: no new tag, no new warning


@dataclass
class Plan:
    """What one watch found: versions to register and versions to mark skipped."""

    registrations: list[Registration] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)


def event_id_for(uri: str, name: str, version: str, created_ms: int) -> str:
    """The version's event id: the same on every watch (the creation time tells a re-created model apart).

    >>> event_id_for("http://r", "m", "1", 0) == event_id_for("http://r", "m", "1", 0)
    True
    >>> event_id_for("http://r", "m", "1", 0) == event_id_for("http://r", "m", "2", 0)
    False
    """
    return str(uuid.uuid5(_EVENT_NAMESPACE, f"{uri}|{name}|{version}|{created_ms}"))


def registration_resource(name: str, version: str) -> dict[str, str]:
    """The event resource of contract.md.

    >>> registration_resource("credit", "3")["prefect.resource.id"]
    'model.credit.3'
    """
    return {
        "prefect.resource.id": f"model.{name}.{version}",
        "prefect.resource.name": name,
        "fairgate.model.name": name,
        "fairgate.model.version": version,
    }


def sources_from_tags(version_tags: dict[str, str], run_tags: dict[str, str]) -> dict[str, str]:
    """The audit inputs a version names: its own ``fairgate.<key>`` tags first, then its run's.

    >>> sources_from_tags({"fairgate.predictions": "p.csv"}, {"fairgate.labels": "l.csv", "fairgate.x": "?"})
    {'predictions': 'p.csv', 'labels': 'l.csv'}
    """
    sources = {}
    for key in SOURCE_KEYS:
        value = (version_tags.get(TAG + key) or run_tags.get(TAG + key) or "").strip()
        if value:
            sources[key] = value
    return sources


def plan_version(version: ModelVersion, run_tags: dict[str, str] | None, uri: str) -> Registration | Skip:
    """The event for one version, or why it is skipped. ``run_tags`` is None when the run was not read."""
    name, number, tags = version.name, str(version.version), dict(version.tags or {})
    sources = sources_from_tags(tags, run_tags or {})
    if "predictions" not in sources:
        reason = (
            f"no {TAG}predictions tag on the version or its run; set it to the predictions' file or "
            f"file.duckdb::table (optionally {TAG}labels, {TAG}attributes, {TAG}policy too)"
        )
        status = SKIPPED_STATUS.format(reason=reason)[:MAX_TAG_VALUE]
        return Skip(name, number, reason, already_tagged=tags.get(STATUS_TAG) == status)
    registry = {"kind": "mlflow", "tracking_uri": uri, "name": name, "version": number}
    created = datetime.fromtimestamp((version.creation_timestamp or 0) / 1000, tz=UTC)
    return Registration(
        name=name,
        version=number,
        event_id=event_id_for(uri, name, number, int(version.creation_timestamp or 0)),
        resource=registration_resource(name, number),
        payload={**sources, "registry": registry},
        created=created,
    )


def _retry_if_transient(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect retry condition: retry a dropped connection or a server error, not bad input or a 4xx refusal
    from MLflow (an unknown version, a bad tag), which would fail the same way again."""
    try:
        state.result()
    except FairgateError:
        return False
    except Exception as exc:
        status = getattr(exc, "get_http_status_code", lambda: 500)()
        return not 400 <= int(status) < 500
    return True


def _registry_io(name: str) -> Callable[[Callable[P, R]], Task[P, R]]:
    """The decorator of a task that talks to the registry: retried on transient errors only (not on bad input or
    a 4xx refusal), never cached (tags, aliases and events are side effects, never served from a cache)."""
    return task(
        name=name, retries=2, retry_delay_seconds=5, retry_condition_fn=_retry_if_transient, cache_policy=NO_CACHE
    )


def _versions(client: MlflowClient, models: list[str] | None) -> list[ModelVersion]:
    """Every version of the given models (all registered models when None), page by page."""
    filters: list[str | None] = [None]
    if models:
        for name in models:
            if "'" in name:
                raise FairgateError(BAD_MODEL_NAME.format(name=name))
        filters = [f"name = '{name}'" for name in models]
    found: list[ModelVersion] = []
    for filter_string in filters:
        token = None
        while True:
            page = client.search_model_versions(filter_string=filter_string, max_results=1000, page_token=token)
            found.extend(page)
            token = page.token
            if not token:
                break
    return found


def _run_tags(client: MlflowClient, run_id: str | None) -> dict[str, str]:
    """The tags of a version's run; none when it has no run or the run is gone (deleted and purged)."""
    from mlflow.exceptions import MlflowException

    if not run_id:
        return {}
    try:
        return dict(client.get_run(run_id).data.tags)
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return {}
        raise


@_registry_io("find-new-model-versions")
def find_new_versions(tracking_uri: str | None, models: list[str] | None, since: datetime | None = None) -> Plan:
    """Versions not yet registered with fairgate (no ``fairgate.event_id``), ready in the registry, created at or
    after ``since`` (naive: UTC) when given."""
    client = mlflow_client(tracking_uri)
    uri = public_uri(client.tracking_uri)
    since_ms = None
    if since is not None:
        since_ms = round((since if since.tzinfo else since.replace(tzinfo=UTC)).timestamp() * 1000)
    plan = Plan()
    for version in _versions(client, models):
        tags = version.tags or {}
        if EVENT_ID_TAG in tags or str(version.status) != "READY":
            continue  # seen already, or its files are still being copied (a later watch takes it)
        if since_ms is not None and (version.creation_timestamp or 0) < since_ms:
            continue  # older than the watch: an existing registry is not tagged version by version
        # A skipped version is re-checked every watch from its own tags; its run's were read when it was skipped.
        skipped_before = str(tags.get(STATUS_TAG, "")).startswith(SKIPPED_STATUS.format(reason=""))
        run_tags = None if skipped_before else _run_tags(client, version.run_id)
        planned = plan_version(version, run_tags, uri)
        if isinstance(planned, Registration):
            plan.registrations.append(planned)
        else:
            plan.skips.append(planned)
    plan.registrations.sort(key=lambda r: r.created)
    return plan


@_registry_io("mark-skipped-versions")
def mark_skipped(tracking_uri: str | None, skips: list[Skip]) -> None:
    """Tag each skipped version with why (visible in the registry) and warn once per reason."""
    client = mlflow_client(tracking_uri)
    for skip in skips:
        if skip.already_tagged:
            continue
        value = SKIPPED_STATUS.format(reason=skip.reason)[:MAX_TAG_VALUE]
        client.set_model_version_tag(skip.name, skip.version, STATUS_TAG, value)
        get_run_logger().warning(f"model {skip.name} version {skip.version} skipped: {skip.reason}")


@task(name="emit-registration-events", cache_policy=NO_CACHE)
def emit_registrations(registrations: list[Registration], confirm_timeout_s: float = 60.0) -> list[Registration]:
    """Emit each registration event and return those the Prefect API has stored (read back by event id).

    An event the API already holds (sent by a watch that died before tagging the version) is not sent again:
    the server drops a repeated id from its store, but its triggers forget ids after 30 minutes."""
    from prefect.events import emit_event

    stored = {r.event_id for r in _confirmed(registrations, timeout_s=0)}
    for registration in registrations:
        if registration.event_id in stored:
            continue
        emitted = emit_event(
            event=REGISTERED_EVENT,
            resource=registration.resource,
            payload=registration.payload,
            id=uuid.UUID(registration.event_id),
        )
        if emitted is None:
            raise FairgateError(
                "Prefect events are switched off here (no PREFECT_API_URL or PREFECT_EVENTS_ENABLED unset): "
                "the registration events cannot be sent"
            )
    return _confirmed(registrations, confirm_timeout_s)


def _confirmed(registrations: list[Registration], timeout_s: float) -> list[Registration]:
    """The registrations whose event the Prefect API returns, polled until all are there or the time is up."""
    if not registrations:
        return []
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventIDFilter, EventOccurredFilter

    wanted = {uuid.UUID(r.event_id): r for r in registrations}
    found: set[uuid.UUID] = set()
    since = min(r.created for r in registrations) - timedelta(minutes=5)  # clock skew between the two servers
    occurred = {"since": since}  # validated into Prefect's own DateTime type
    deadline = time.monotonic() + timeout_s
    with get_client(sync_client=True) as client:
        while True:
            missing = [event_id for event_id in wanted if event_id not in found]
            page = client.read_events(
                filter=EventFilter(id=EventIDFilter(id=missing), occurred=EventOccurredFilter.model_validate(occurred)),
                limit=len(missing),
            )
            found |= {event.id for event in page.events}
            if len(found) == len(wanted) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    return [registration for event_id, registration in wanted.items() if event_id in found]


@_registry_io("mark-registered-versions")
def mark_registered(tracking_uri: str | None, registrations: list[Registration]) -> None:
    """Tag each version whose event was confirmed: it is seen and never registered again."""
    client = mlflow_client(tracking_uri)
    for registration in registrations:
        client.set_model_version_tag(registration.name, registration.version, EVENT_ID_TAG, registration.event_id)
        client.set_model_version_tag(registration.name, registration.version, STATUS_TAG, REGISTERED_STATUS)
        get_run_logger().info(
            f"model {registration.name} version {registration.version}: {REGISTERED_EVENT} {registration.event_id}"
        )


# --- write-back ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """The model version an audit was about, from the completed event's ``registry``."""

    tracking_uri: str
    name: str
    version: str


def mlflow_target(payload: dict[str, Any]) -> Target | None:
    """The MLflow version the completed audit names; None when it came from elsewhere (nothing to write).

    >>> mlflow_target({"registry": None}) is None
    True
    >>> mlflow_target({"registry": {"kind": "mlflow", "tracking_uri": "http://r", "name": "m", "version": 2}})
    Target(tracking_uri='http://r', name='m', version='2')
    """
    registry = payload.get("registry")
    if not isinstance(registry, dict) or registry.get("kind") != "mlflow":
        return None
    missing = [key for key in ("tracking_uri", "name", "version") if registry.get(key) in (None, "")]
    if missing:
        raise FairgateError(BAD_COMPLETED_PAYLOAD.format(problem=f"has registry without {', '.join(missing)}"))
    return Target(str(registry["tracking_uri"]), str(registry["name"]), str(registry["version"]))


def verdict_tags(payload: dict[str, Any]) -> dict[str, str]:
    """The tags written on the audited version.

    >>> tags = verdict_tags({"verdict": "fail", "run_id": "r1", "failed_metrics": ["dpd@race"],
    ...                      "outputs": {"json": "/o/a.json", "pdf": "/o/a.pdf", "html": None}})
    >>> tags["fairgate.verdict"], tags["fairgate.status"], tags["fairgate.failed_metrics"], tags["fairgate.report"]
    ('fail', 'audited: fail', '["dpd@race"]', '/o/a.pdf')
    """
    missing = [key for key in ("verdict", "run_id") if payload.get(key) in (None, "")]
    if missing:
        raise FairgateError(BAD_COMPLETED_PAYLOAD.format(problem=f"has no {', '.join(missing)}"))
    outputs = payload.get("outputs") or {}
    report = next((outputs[kind] for kind in ("pdf", "html", "json") if outputs.get(kind)), "")
    verdict = verdict_word(payload["verdict"])
    tags = {
        TAG + "verdict": verdict,
        STATUS_TAG: f"{AUDITED_STATUS}: {verdict}",
        TAG + "run_id": str(payload["run_id"]),
        TAG + "failed_metrics": _bounded_json_list([str(m) for m in payload.get("failed_metrics") or []]),
        TAG + "report": str(report) or "none written",
    }
    if payload.get("flow_run_id"):
        tags[TAG + "flow_run_id"] = str(payload["flow_run_id"])
    return tags


def _bounded_json_list(items: list[str]) -> str:
    """A JSON list that fits in a tag; when too long, the first items and a last one saying how many more.

    >>> len(_bounded_json_list([f"metric_{i}@race" for i in range(1000)])) <= MAX_TAG_VALUE
    True
    """
    text = json.dumps(items)
    kept = len(items)
    while len(text) > MAX_TAG_VALUE:
        kept -= max(1, kept // 10)
        text = json.dumps([*items[:kept], f"... {len(items) - kept} more in the report"])
    return text


# Where the model card goes: an artifact of the version's run (beside the model), else a tag on the version.
CARD_ARTIFACT = "fairgate/model_card.json"
CARD_TAG = TAG + "model_card"


def card_text(payload: dict[str, Any]) -> str | None:
    """The model card (Model Card Toolkit JSON) of the audit, built from the JSON document its outputs name;
    None when that file is not readable here (the write-back runs where the audit's outputs are)."""
    from tasks.outputs import model_card_json

    path = (payload.get("outputs") or {}).get("json")
    try:
        document = json.loads(Path(str(path)).read_text()) if path else None
    except (OSError, ValueError):
        document = None
    return None if not isinstance(document, dict) else model_card_json(document)


def log_model_card(client: MlflowClient, run_id: str | None, payload: dict[str, Any]) -> str:
    """Log the card as the artifact ``fairgate/model_card.json`` of the version's run; where it went, for the
    ``fairgate.model_card`` tag. Without a run (or an artifact store that refuses it) the card itself is the
    tag's value when it fits, else the tag says why it is absent."""
    from mlflow.exceptions import MlflowException

    text = card_text(payload)
    if text is None:
        return "not logged: the audit's JSON document is not readable where the write-back ran"
    if run_id:
        try:
            client.log_text(run_id, text, CARD_ARTIFACT)
            return f"runs:/{run_id}/{CARD_ARTIFACT}"
        except (MlflowException, OSError) as exc:
            get_run_logger().warning(f"model card not logged as an artifact of run {run_id}: {exc}")
    compact = json.dumps(json.loads(text), separators=(",", ":"))
    return compact if len(compact) <= MAX_TAG_VALUE else "not logged: no run to hold it and too long for a tag"


@dataclass(frozen=True)
class WriteBack:
    """What the write-back did to one version."""

    name: str
    version: str
    tags: dict[str, str]
    alias: str
    alias_action: str  # "set", "removed", "untouched"


@_registry_io("write-verdict-to-registry")
def write_verdict(target: Target, payload: dict[str, Any], alias: str, tracking_uri: str | None) -> WriteBack:
    """Tags on the version and the model card on its run; the alias on a pass; removed from it otherwise (an
    approval must be earned)."""
    client = mlflow_client(tracking_uri or target.tracking_uri)  # first: refuses a missing mlflow clearly
    from mlflow.exceptions import MlflowException

    tags = verdict_tags(payload)
    try:
        current = client.get_model_version(target.name, target.version)
    except MlflowException as exc:
        what = f"model {target.name!r} version {target.version}"
        raise FairgateError(NOT_IN_REGISTRY.format(what=what, uri=client.tracking_uri, detail=exc.message)) from exc
    tags[CARD_TAG] = log_model_card(client, current.run_id, payload)
    for key, value in tags.items():
        client.set_model_version_tag(target.name, target.version, key, value)
    action = "untouched"
    if passed(payload["verdict"]):  # insufficient (nothing judged) is never a pass: the alias is not set
        client.set_registered_model_alias(target.name, alias, target.version)
        action = "set"
    elif alias in (current.aliases or []):
        client.delete_registered_model_alias(target.name, alias)
        action = "removed"
    get_run_logger().info(
        f"model {target.name} version {target.version}: verdict {payload['verdict']} written, alias {alias} {action}"
    )
    return WriteBack(target.name, target.version, tags, alias, action)
