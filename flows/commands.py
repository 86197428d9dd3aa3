"""The command a reviewer types to reproduce a run that no command line started.

A nightly deployment, a monitoring night or a registry-triggered audit runs from its parameters; its document's
``command_line`` is the equivalent ``fairgate audit`` (or ``fairgate monitor run``) command, so the report's
reproduce block names what to type, as it does for a run started from the command line.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

#: The flow parameter -> its command-line option, in the order the commands declare them.
AUDIT_OPTIONS = {
    "policy": "--policy",
    "predictions": "--predictions",
    "labels": "--labels",
    "attributes": "--attributes",
    "out_dir": "--out",
    "trail": "--trail",
    "model_name": "--model",
    "model_version": "--model-version",
}
MONITOR_OPTIONS = {**AUDIT_OPTIONS, "model_name": "--model-name"}
#: ``fairgate mitigate --method reweighing``'s options (a list given as the option repeated).
REWEIGH_OPTIONS = {
    "policy": "--policy",
    "training": "--training",
    "out_dir": "--out",
    "attributes": "--attribute",
    "file_format": "--format",
    "base_weight": "--base-weight",
    "answers": "--answers",
    "trail": "--trail",
}
_OPTIONS = {"monitor run": MONITOR_OPTIONS, "mitigate --method reweighing": REWEIGH_OPTIONS}


def equivalent_command(command: str, parameters: Mapping[str, Any]) -> str:
    """``fairgate <command>`` with the parameters given as its options (unset ones left out).

    >>> equivalent_command("audit", {"policy": "/p.yaml", "predictions": "/d/p.csv", "model_name": "m 1"})
    "fairgate audit --policy /p.yaml --predictions /d/p.csv --model 'm 1'"
    >>> equivalent_command("mitigate --method reweighing", {"policy": "p.yaml", "attributes": ["race", "sex"]})
    'fairgate mitigate --method reweighing --policy p.yaml --attribute race --attribute sex'
    """
    options = _OPTIONS.get(command, AUDIT_OPTIONS)
    words = ["fairgate", *command.split()]
    for name, option in options.items():
        value = parameters.get(name)
        for item in value if isinstance(value, list | tuple) else [] if value is None else [value]:
            words += [option, str(item)]
    return shlex.join(words)
