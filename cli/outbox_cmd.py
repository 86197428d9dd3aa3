"""``fairgate outbox send``: re-send the report e-mails kept in the outbox after a failed delivery.

Exit codes: 0 every kept message sent (or none to send), 1 some could not be sent (they stay in the outbox),
2 bad configuration (no delivery.smtp in the policy, a credential variable not set, --out not a folder, the
trail not a trail). Each attempt is recorded in the trail's ``deliveries`` table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from cli import console, options
from cli.exits import refusing
from fairgate.errors import FairgateError

outbox_app = typer.Typer(help="The outbox: report e-mails kept after a failed delivery.", no_args_is_help=True)
_out = console.stdout()


@outbox_app.command("send")
def send(
    policy: options.Policy,
    out: options.Out = None,
    trail: options.Trail = None,
    as_json: options.Json = False,
) -> None:
    """Send the kept .eml messages through the policy's SMTP server; exit 0 all sent, 1 some failed.

    The policy is the audits' (its delivery.smtp settings are used), --out their output folder.
    """
    from cli.checks import check_delivery_environment, check_trail_file
    from tasks.audit import read_policy
    from tasks.outbound.deliver import outbox_folder, send_outbox
    from tasks.store import default_trail_path

    with refusing():
        parsed, _ = read_policy.fn(policy)
        delivery = parsed.delivery
        if delivery is None:
            raise FairgateError(f"policy {str(policy)!r} has no delivery section; give the policy the audits used")
        output = out if out is not None else Path(parsed.reporting.output_dir)
        if not output.is_dir():
            raise FairgateError(f"--out {str(output)!r} is not a folder; give the audits' output folder")
        trail_path = trail or default_trail_path(parsed, output)
        check_trail_file(trail_path)
        check_delivery_environment(parsed)
        outbox = outbox_folder(delivery, output)
        outcomes = send_outbox(outbox, delivery, trail_path)
    failed = sum(o["status"] != "sent" for o in outcomes)
    if as_json:
        sys.stdout.write(json.dumps({"outbox": str(outbox), "outcomes": outcomes}, indent=2, default=str) + "\n")
        raise typer.Exit(1 if failed else 0)
    if not outcomes:
        _out.print(f"outbox {outbox}: no kept messages to send", highlight=False)
        return
    for outcome in outcomes:
        colour = "green" if outcome["status"] == "sent" else "red"
        _out.print(
            f"[{colour}]{outcome['status']}[/] {Path(outcome['eml']).name}: {outcome['detail']}", highlight=False
        )
    _out.print(f"{len(outcomes) - failed} sent, {failed} failed (recorded in {trail_path})", highlight=False)
    if failed:
        raise typer.Exit(1)
