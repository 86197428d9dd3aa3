"""Writing outputs atomically: every file a command writes, and the audit's JSON document and JUnit XML.

Atomic = written to a temporary file in the same folder, flushed to disk, then renamed over the target, so a
reader (or a run killed mid-way) never sees half a file. JUnit XML makes CI systems show each failed metric as
a failed test.

One rule for every command that writes (:func:`atomic_outputs`): the files and folders a command creates are
noted while it runs and removed again unless it finishes, so a refusal, a crash or an interrupt leaves nothing
in ``--out``, not even an empty folder the command created. The audit's files are written into a hidden
``.partial-RUN`` folder (:func:`staging_dir`) and moved into place once the run is recorded.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import shutil
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from fairgate.engine.labels import slicing_label
from fairgate.errors import FairgateError
from fairgate.report.published import json_content, published_document
from fairgate.verdicts import insufficient_sentence

if TYPE_CHECKING:  # polars is imported where a CSV is written: `fairgate trail` needs none of it
    import polars as pl

    from fairgate.document.document import AuditDocument
    from fairgate.document.result import AuditResult


def output_stem(document: Mapping[str, Any]) -> str:
    """File name stem carrying model, version and run id (same rule as the report's file names).

    >>> output_stem({"model": {"name": "credit risk/v2", "version": "3.1"}, "run_id": "r-9"})
    'fairness_credit_risk_v2_3.1_r-9'
    """
    model = document.get("model") or {}
    parts = [
        "fairness",
        str(model.get("name") or "model"),
        str(model.get("version") or "unversioned"),
        str(document.get("run_id") or "norun"),
    ]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "_".join(parts)).strip("._")[:180]


# Cells a spreadsheet would read as a formula (OWASP, "CSV Injection"): a CSV fairgate writes prefixes them with
# a single quote, so a value such as =cmd|' /C calc'!A0 shows as text. Numbers are written as numbers.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralised(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every text cell that starts like a formula prefixed with ``'`` (for CSV outputs).

    >>> import polars as pl
    >>> neutralised(pl.DataFrame({"id": ["=1+2", "a-b", "-3"], "w": [1.5, -2.0, 0.0]})).rows()
    [("'=1+2", 1.5), ('a-b', -2.0), ("'-3", 0.0)]
    """
    import polars as pl

    pattern = "^[" + "".join("\\" + c if c in "-+" else c for c in FORMULA_STARTS) + "]"
    text = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    return frame.with_columns(
        pl.when(pl.col(name).str.contains(pattern)).then("'" + pl.col(name)).otherwise(pl.col(name)).alias(name)
        for name in text
    )


def write_atomic(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary sibling and an atomic rename; the open output transactions
    note what it creates. A full disk or a read-only folder is bad configuration (exit 2), not a crash."""
    make_folder(path.parent)
    existed = path.exists()
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise unwritable(path, exc) from None
    _note(Path(temporary))  # removed by a roll-back if the process is ended while it is written
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644 & ~_umask())  # mkstemp makes 0600; outputs are ordinary files
        os.replace(temporary, path)
    except BaseException as exc:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise unwritable(path, exc) from None
        raise
    if not existed:
        _note(path)
    return path


def write_frame(frame: pl.DataFrame, path: Path) -> Path:
    """A table as Parquet (``.parquet``) or CSV (otherwise; its text cells neutralised), written atomically."""
    buffer = io.BytesIO()
    if path.suffix.lower() == ".parquet":
        frame.write_parquet(buffer)
    else:
        neutralised(frame).write_csv(buffer)  # no cell a spreadsheet would run as a formula
    return write_atomic(path, buffer.getvalue())


# Why a write failed, for the one-line message: the system's words are not a fix.
_UNWRITABLE = {
    errno.ENOSPC: "no space left on {where}; free some space or write to another folder",
    errno.EDQUOT: "the disk quota is exhausted on {where}; free some space or write to another folder",
    errno.EROFS: "{where} is on a read-only file system; write to another folder",
    errno.EACCES: "{where} is not writable (permissions); make it writable or write to another folder",
    errno.EPERM: "{where} is not writable (permissions); make it writable or write to another folder",
}


def unwritable(path: Path, exc: OSError) -> Exception:
    """The error to raise for an output that could not be written: a FairgateError (exit 2) naming the folder
    when the environment refused it (full disk, read-only, permissions), else ``exc`` itself (a crash).

    >>> print(unwritable(Path("/mnt/full/report.json"), OSError(errno.ENOSPC, "No space left on device")))
    cannot write /mnt/full/report.json: no space left on /mnt/full; free some space or write to another folder
    """
    reason = _UNWRITABLE.get(exc.errno or 0)
    if reason is None:
        return exc
    shown = Path(*(part for part in path.parts if not part.startswith(".partial-")))  # the user's folder
    return FairgateError(f"cannot write {shown}: {reason.format(where=shown.parent)}")


class OutputTransaction:
    """The files and folders one command has created so far; removed again unless the command finishes."""

    def __init__(self) -> None:
        self.created: list[Path] = []

    def roll_back(self) -> None:
        """Remove what was created, newest first; a folder only when empty (another writer's files stay)."""
        for path in reversed(self.created):
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()
                else:
                    path.unlink(missing_ok=True)
        self.created.clear()


# The transactions of the commands running in this process (tasks write from worker threads: one lock).
_OPEN_TRANSACTIONS: list[OutputTransaction] = []
_TRANSACTIONS_LOCK = threading.Lock()


def _note(path: Path) -> None:
    with _TRANSACTIONS_LOCK:
        for transaction in _OPEN_TRANSACTIONS:
            transaction.created.append(path)


def make_folder(folder: Path) -> Path:
    """``mkdir -p`` whose new folders the open output transactions note (an unwritable place: exit 2)."""
    missing = [p for p in (folder, *folder.absolute().parents) if not os.path.lexists(p)]
    for new in reversed(missing):
        try:
            new.mkdir()
        except FileExistsError:
            continue  # made meanwhile by another writer: not ours to remove
        except OSError as exc:
            raise unwritable(new, exc) from None
        _note(new)
    return folder


@contextlib.contextmanager
def atomic_outputs() -> Iterator[OutputTransaction]:
    """Around a command that writes: what it creates stays only if the block ends normally.

    An exception (a refusal, a crash, ``typer.Exit`` from a failed run, an interrupt) rolls the files and the
    folders it created back; a signal that ends the process at once does the same through
    :func:`roll_back_open_outputs` (cli/signals.py). Nested blocks note the same files: the outermost decides.
    """
    transaction = OutputTransaction()
    with _TRANSACTIONS_LOCK:
        _OPEN_TRANSACTIONS.append(transaction)
    try:
        yield transaction
    except BaseException:
        transaction.roll_back()
        raise
    finally:
        with _TRANSACTIONS_LOCK, contextlib.suppress(ValueError):
            _OPEN_TRANSACTIONS.remove(transaction)


def roll_back_open_outputs() -> None:
    """Remove the staging folders and what the open output transactions created (the process is being ended)."""
    discard_open_staging()
    with _TRANSACTIONS_LOCK:
        transactions = list(_OPEN_TRANSACTIONS)
        _OPEN_TRANSACTIONS.clear()
    for transaction in transactions:
        transaction.roll_back()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def junit_xml(document: dict[str, Any]) -> str:
    """One ``<testcase>`` per judged (metric, slicing): failure for FAIL, skipped for insufficient data."""
    results = document.get("results", [])
    judged_estimates = (document.get("label_free") or {}).get("estimated_results") == "judge"

    def status(r: dict[str, Any]) -> str | None:  # an estimate the verdict does not rest on: skipped, saying so
        return "reported_only" if r.get("estimated") and not judged_estimates else r.get("status")

    suite = ET.Element(
        "testsuite",
        name=f"fairgate {(document.get('model') or {}).get('name') or 'model'}",
        tests=str(len(results)),
        failures=str(sum(status(r) == "fail" for r in results)),
        skipped=str(sum(status(r) in ("insufficient_data", "reported_only") for r in results)),
        errors="0",
    )
    for r in results:
        slicing = slicing_label(r.get("slicing") or [])
        case = ET.SubElement(suite, "testcase", classname=f"fairness.{slicing}", name=str(r.get("metric")))
        detail = (
            f"{r.get('metric')} on {slicing} = {r.get('value')} (CI {r.get('ci_low')} .. {r.get('ci_high')}), "
            f"threshold {r.get('threshold')} ({r.get('direction')}); worst group {r.get('worst_group')}"
        )
        if status(r) == "reported_only":
            message = f"estimated from the scores (no labels yet), {r.get('status')}; not counted in the verdict"
            ET.SubElement(case, "skipped", message=message)
        elif r.get("status") == "fail":
            ET.SubElement(case, "failure", message=detail, type="FairnessThresholdFailed").text = detail
        elif r.get("status") == "insufficient_data":
            ET.SubElement(case, "skipped", message="insufficient data: groups below min_group_size")
        else:
            ET.SubElement(case, "system-out").text = detail
    if document.get("verdict") == "insufficient":  # nothing judged: one case says so, failing when it blocks
        _insufficient_case(suite, (document.get("verdict_detail") or {}).get("insufficient") or "block")
    suites = ET.Element("testsuites", name="fairgate")
    suites.append(suite)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _insufficient_case(suite: ET.Element, rule: str) -> None:
    """The audit-level case of an ``insufficient`` verdict: a failure when it blocks, else skipped."""
    case = ET.SubElement(suite, "testcase", classname="fairness.audit", name="verdict")
    message = insufficient_sentence(rule)
    suite.set("tests", str(int(suite.get("tests", "0")) + 1))
    if rule == "block":
        ET.SubElement(case, "failure", message=message, type="NothingJudged").text = message
        suite.set("failures", str(int(suite.get("failures", "0")) + 1))
    else:
        ET.SubElement(case, "skipped", message=message)
        suite.set("skipped", str(int(suite.get("skipped", "0")) + 1))


def json_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON file's content: every value or the report's suppression, as the policy's reporting.json says."""
    reporting = (document.get("policy") or {}).get("reporting") or {}
    return published_document(document, int(reporting.get("min_cell_size", 10)), json_content(document))


@task(name="write outputs", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1)
def write_outputs(document: dict[str, Any], out_dir: Path) -> dict[str, str]:
    """Write the JSON document (full or suppressed, per reporting.json) into ``out_dir``, and its JUnit XML
    rendering when the policy asks for it.

    The JSON is always written: it is the run's record (the report and the trail are built from it). JUnit
    only when ``reporting.format`` lists ``junit``: an unrequested file in a CI workspace gets picked up. The
    model card (JSON and Markdown) likewise only when it lists ``model_card``.
    """
    stem = output_stem(document)
    text = json.dumps(json_document(document), indent=2, allow_nan=False)  # NaN/Infinity are not JSON
    written = {"json": str(write_atomic(out_dir / f"{stem}.json", text.encode()))}
    if "junit" in requested_formats(document):
        written["junit"] = str(write_atomic(out_dir / f"{stem}.junit.xml", junit_xml(document).encode()))
    if "model_card" in requested_formats(document):
        written.update(write_model_card(document, out_dir / stem))
    return written


def model_card_json(document: Mapping[str, Any] | AuditDocument) -> str:
    """The model card in the Model Card Toolkit's JSON schema (fairgate/report/model_card.py), as text; the
    document as a dict or already typed."""
    from fairgate.report.build import as_document  # imported when a card is written (the report's models)
    from fairgate.report.model_card import toolkit_card

    return json.dumps(toolkit_card(as_document(document)), indent=2, allow_nan=False) + "\n"


def write_model_card(document: Mapping[str, Any], stem: Path) -> dict[str, str]:
    """Write ``<stem>.model_card.json`` (Model Card Toolkit schema v0.0.2) and its Markdown ``.model_card.md``."""
    from fairgate.report.build import as_document
    from fairgate.report.model_card import card_markdown

    typed = as_document(document)  # validated once for both files
    card = write_atomic(stem.with_name(f"{stem.name}.model_card.json"), model_card_json(typed).encode())
    markdown = card_markdown(typed).encode()
    return {
        "model_card": str(card),
        "model_card_md": str(write_atomic(stem.with_name(f"{stem.name}.model_card.md"), markdown)),
    }


def requested_formats(document: Mapping[str, Any]) -> list[str]:
    """The output formats the policy asked for (``reporting.format`` of the policy echoed in the document).

    >>> requested_formats({"policy": {"reporting": {"format": ["json", "junit"]}}})
    ['json', 'junit']
    >>> requested_formats({"policy": {}})
    ['json']
    """
    reporting = (document.get("policy") or {}).get("reporting") or {}
    return [str(f) for f in reporting.get("format") or ["json"]]


# Staging folders of runs still in progress: a Ctrl-C or SIGTERM handler removes them (cli/signals.py).
_OPEN_STAGING: set[Path] = set()


# A run's staging folder lives for seconds; one this old was left by a killed run (SIGKILL, power loss).
STALE_STAGING_SECONDS = 3600


def staging_dir(out_dir: Path, run_id: str) -> Path:
    """A hidden folder inside ``out_dir`` where a run writes everything before it is complete.

    Staging folders that killed runs left in ``out_dir`` more than an hour ago are removed on the way.
    """
    for stale in out_dir.glob(".partial-*"):
        with contextlib.suppress(OSError):
            if time.time() - stale.stat().st_mtime > STALE_STAGING_SECONDS:
                shutil.rmtree(stale, ignore_errors=True)
    staging = out_dir / f".partial-{run_id}"
    _OPEN_STAGING.add(staging)
    return staging


def promote_outputs(staging: Path, out_dir: Path) -> dict[str, str]:
    """Move a finished run's files from its staging folder into ``out_dir`` (renames, same file system).

    A plain call in the flows, not a task run: a few renames, inside the step that records the run."""
    moved: dict[str, str] = {}
    for path in sorted(p for p in staging.rglob("*") if p.is_file()):
        target = out_dir / path.relative_to(staging)
        make_folder(target.parent)
        existed = target.exists()
        os.replace(path, target)
        if not existed:
            _note(target)
        moved[str(path)] = str(target)
    discard_staging(staging)
    return moved


def discard_staging(staging: Path) -> None:
    """Remove a run's staging folder (after promotion, or when the run failed)."""
    shutil.rmtree(staging, ignore_errors=True)
    _OPEN_STAGING.discard(staging)


def discard_open_staging() -> None:
    """Remove the staging folders of runs still in progress (the process is being interrupted)."""
    for staging in list(_OPEN_STAGING):
        discard_staging(staging)


# ------------------------------------------------------------------------------ a run's result, for Python callers
#: The report's files in the run summary's ``report`` block, in the order they are listed.
REPORT_FILE_KINDS = ("html", "pdf", "explorer")


def written_files(summary: Mapping[str, Any]) -> dict[str, str]:
    """Every file an audit run wrote, by kind: its outputs (``json``, ``junit``, the model card) then its report
    (``html``, ``pdf``, ``explorer``), as the run summary (flows/audit.py ``run_summary``) records them."""
    files = {str(kind): str(path) for kind, path in (summary.get("outputs") or {}).items() if path}
    report = summary.get("report") or {}
    files.update({kind: str(report[kind]) for kind in REPORT_FILE_KINDS if report.get(kind)})
    return files


def audit_result(summary: Mapping[str, Any]) -> AuditResult:
    """The run's :class:`fairgate.AuditResult`: its JSON document read back, with the files the run wrote, so a
    notebook links them (``AuditResult._repr_html_``)."""
    from fairgate.document.result import AuditResult  # the document's models load pydantic: only when asked

    document = json.loads(Path(summary["outputs"]["json"]).read_text(encoding="utf-8"))
    return AuditResult(document, files=written_files(summary))
