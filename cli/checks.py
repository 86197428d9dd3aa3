"""Up-front checks of ``fairgate audit``'s arguments, before Prefect starts and before any data is read.

Everything that would otherwise fail only after the whole audit (~25 s) is checked here, and refused with a
:class:`~fairgate.errors.FairgateError` naming the option and the fix (exit 2, nothing written): an output
folder that cannot be written, a trail path that is a folder or not a trail, an SMTP credential variable that
is not set, a control character in a name that reaches a mail header, a file name the system cannot open.
(cli/exits.py maps any other exception before or around the flow to exit 3: "this is a bug".)
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import unicodedata
from collections.abc import Mapping
from pathlib import Path

import fairgate
from fairgate.errors import FairgateError


def check_audit_arguments(
    policy_path: Path,
    inputs: dict[str, str],
    out: Path | None,
    trail: Path | None,
    names: dict[str, str | None],
) -> None:
    """Refuse bad ``audit`` arguments before any work; raise a FairgateError naming the option and the fix.

    Parameters
    ----------
    policy_path
        ``--policy``.
    inputs
        ``--predictions``, ``--labels``, ``--attributes`` by role, as given.
    out, trail
        ``--out`` and ``--trail`` (None: the policy's defaults).
    names
        ``--model`` and ``--model-version`` by option name (they reach the e-mail's subject header).
    """
    check_path_name("policy", str(policy_path))
    for role, text in inputs.items():
        check_path_name(role, text.partition("::")[0] if not _exists(Path(text)) else text)
    for option, folder in {"out": out, "trail": trail}.items():
        check_path_name(option, str(folder or ""))
    for option, value in names.items():
        check_header_text(option, value)
    from tasks.audit import read_policy  # the policy's own errors are _precheck's; it is read again, cheaply

    policy, _ = read_policy.fn(policy_path)
    check_writing(policy, out, trail, inputs)
    check_delivery_environment(policy)


def check_writing(
    policy: fairgate.Policy, out: Path | None, trail: Path | None, inputs: Mapping[str, str | None] = {}
) -> tuple[Path, Path]:
    """Where a command writes, checked before any work (every command that writes calls this): the output folder
    can be written, the trail can record (tasks/store ``check_trail``: not a folder, a FIFO, a CSV, a damaged or
    a keyed trail without its key; the ``FAIRGATE_TRAIL_ANCHOR`` file usable), and no input is the trail.
    Returns the output folder and the trail's path."""
    from tasks.store import default_trail_path

    output = out if out is not None else Path(policy.reporting.output_dir)
    check_output_folder(output, "--out" if out is not None else "reporting.output_dir in the policy")
    trail_path = trail or default_trail_path(policy, output)
    check_trail_file(trail_path, inputs)
    return output, trail_path


def check_path_name(role: str, text: str) -> None:
    """A path the operating system refuses by its name alone (too long) is bad input, not a crash.

    >>> check_path_name("labels", "x" * 300 + ".csv")
    Traceback (most recent call last):
    fairgate.errors.FairgateError: --labels: a name in the path is too long (304 characters in 'xxxx'...; ...
    """
    if not text:
        return
    try:
        os.stat(text)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            longest = max(Path(text).parts, key=len)
            raise FairgateError(
                f"--{role}: a name in the path is too long ({len(longest)} characters in {longest[:4]!r}...; "
                "the file system allows 255 per name); rename the file or folder to a shorter name"
            ) from None


def check_header_text(option: str, value: str | None) -> None:
    """Refuse control characters (CR, LF, ...) in a value that reaches an e-mail header.

    >>> check_header_text("model", "credit\\r\\nBcc: x@example.org")
    Traceback (most recent call last):
    fairgate.errors.FairgateError: --model 'credit\\r\\nBcc: x@example.org' contains a control character ...
    """
    if value is None:
        return
    bad = [c for c in value if unicodedata.category(c) in {"Cc", "Zl", "Zp"}]
    if bad:
        raise FairgateError(
            f"--{option} {value!r} contains a control character ({bad[0]!r}: line breaks would reach the e-mail "
            f"subject header); give --{option} on one line, without control characters"
        )


def check_output_folder(folder: Path, option: str) -> None:
    """The output folder exists as a writable folder, or can be created (its nearest existing parent is one)."""
    if _exists(folder) and not folder.is_dir():
        raise FairgateError(f"{option}: {str(folder)!r} is a file, not a folder; give a folder (created if missing)")
    ancestor = _nearest_existing(folder)
    if not ancestor.is_dir():
        raise FairgateError(
            f"{option}: {str(folder)!r} cannot be created because {str(ancestor)!r} is a file; choose another folder"
        )
    if not os.access(ancestor, os.W_OK | os.X_OK) or not _can_create_in(ancestor):
        raise FairgateError(
            f"{option}: {str(ancestor)!r} is not writable (permissions or a read-only file system), so "
            f"{str(folder)!r} cannot be written; choose another folder or make it writable"
        )


def _can_create_in(folder: Path) -> bool:
    """Whether a folder can really be made in ``folder`` (os.access says yes to root on /proc, say): made and
    removed at once, so nothing is left behind."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".fairgate-probe-", dir=folder))
    except OSError:
        return False
    return True


def check_trail_file(trail: Path, inputs: Mapping[str, str | None] = {}) -> None:
    """The trail can record a run: a DuckDB trail (or no file yet, in a folder that can be written) that is not one
    of the ``inputs`` (role -> source text), with its key when it is keyed, and a usable anchor file."""
    from tasks.store import check_trail

    if trail.is_dir():
        raise FairgateError(
            f"--trail {str(trail)!r} is a folder; give the trail's file, e.g. {str(trail / 'audit_trail.duckdb')!r}"
        )
    check_input_is_not_output(inputs, trail, "--trail")
    check_trail(trail)  # a FIFO is refused before anything opens it; a keyed trail needs its key
    if not _exists(trail):
        check_output_folder(trail.parent, f"--trail {str(trail)!r}: its folder")
    elif not os.access(trail, os.R_OK | os.W_OK):
        raise FairgateError(f"--trail {str(trail)!r} is not writable; fix its permissions or give another trail")


def check_input_is_not_output(inputs: Mapping[str, str | None], output: Path, option: str) -> None:
    """An output is never one of the inputs (tasks/inputs/io.py ``refuse_overwriting``), e.g. a DuckDB input
    table in the file given as the trail. Inputs that cannot be parsed are the input checks' to refuse."""
    from tasks.inputs.io import parse_source, refuse_overwriting

    sources = []
    for role, text in inputs.items():
        if text:
            with contextlib.suppress(FairgateError):
                sources.append(parse_source(role, text))
    refuse_overwriting(sources, output, option)


def check_delivery_environment(policy: fairgate.Policy) -> None:
    """Every SMTP credential variable the policy names is set (checked again when sending)."""
    delivery = policy.delivery
    if delivery is None or not delivery.enabled or delivery.smtp is None:
        return
    for key in ("username_env", "password_env"):
        variable = getattr(delivery.smtp, key)
        if variable and variable not in os.environ:
            raise FairgateError(
                f"delivery.smtp.{key} in the policy names the environment variable {variable!r}, which is not "
                f"set; export {variable} before the audit, or remove {key} from the policy"
            )


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long to look up: check_path_name says so
        return False


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.absolute().parents):
        if _exists(candidate):
            return candidate
    return Path("/")
