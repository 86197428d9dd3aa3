"""``fairgate plan``: how many rows an audit needs for its gate to fail on a disparity, or what an audit could detect.

``fairgate plan --policy P --metric M --disparity D (--attributes F | --shares A=g:s,...)``: the rows needed for the
gate to fail with ``--power`` (80%) when the target group's metric is off by D, found by simulated audits judged
by the engine itself (``fairgate.engine.sample_size``). ``fairgate plan --audit RUN_JSON``: per judged result of an
existing audit, the disparity it could have detected with 80% power. Exit codes: 0 done, 2 invalid input (one
line on stderr). No Prefect server is started.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from cli import console, options
from cli.exits import fail, refusing
from fairgate.engine.labels import slicing_label
from fairgate.errors import FairgateError

_out = console.stdout()


def plan(
    policy: Annotated[Path | None, typer.Option("--policy", help="The fairness policy (YAML).")] = None,
    metric: Annotated[str | None, typer.Option("--metric", help="The policy metric to plan for.")] = None,
    disparity: Annotated[
        float | None,
        typer.Option("--disparity", help="The true disparity to detect: a gap (e.g. 0.10), or a ratio (e.g. 0.7)."),
    ] = None,
    attributes: Annotated[
        str | None,
        typer.Option("--attributes", help=f"People whose attribute columns give the groups' shares: {options.SOURCE}."),
    ] = None,
    shares: Annotated[
        list[str] | None,
        typer.Option("--shares", help="Stated shares, one option per attribute: race=A:0.5,B:0.3,C:0.2."),
    ] = None,
    group: Annotated[
        str | None,
        typer.Option("--group", help="The group with the disparity, attr=value (default: the largest non-reference)."),
    ] = None,
    base_rate: Annotated[float, typer.Option("--base-rate", help="Share of favourable labels in every group.")] = 0.5,
    tpr: Annotated[float, typer.Option("--tpr", help="True positive rate of every group but the target.")] = 0.7,
    fpr: Annotated[float, typer.Option("--fpr", help="False positive rate of every group but the target.")] = 0.3,
    power: Annotated[float, typer.Option("--power", min=0.5, max=0.99, help="The power wanted.")] = 0.8,
    runs: Annotated[int, typer.Option("--runs", min=20, max=5000, help="Simulated audits per row count.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="The simulation's seed.")] = 0,
    audit: Annotated[
        Path | None, typer.Option("--audit", help="An audit's JSON: what each result could have detected.")
    ] = None,
    as_json: options.Json = False,
) -> None:
    """Rows needed for the gate to fail on a disparity (simulated audits), or, with --audit, what an audit could
    detect per result.

    Exit 0, or 2 on invalid input.
    """
    if audit is not None:
        return _audit_table(audit, as_json)
    with refusing():
        rates, search = (base_rate, tpr, fpr), (power, runs, seed)
        plan_result = _plan(policy, metric, disparity, attributes, shares, group, rates, search)
    if as_json:
        sys.stdout.write(json.dumps(plan_result.to_dict(), indent=2) + "\n")
        return
    attribute, value = plan_result.target
    _out.print(
        f"{plan_result.rows_needed:,} rows: the gate fails in {plan_result.power:.0%} of {plan_result.runs} simulated "
        f"audits when {attribute}={value}'s {plan_result.metric} is off by {plan_result.disparity:g} against "
        f"{plan_result.reference} (threshold {plan_result.threshold:g}; {plan_result.results_judged} result(s) judged "
        f"per audit, Holm over all of them; seed {plan_result.seed})",
        highlight=False,
    )
    tried = ", ".join(f"{n:,}: {p:.0%}" for n, p in plan_result.tried)
    _out.print(f"row counts tried (power): {tried}", highlight=False)


def _plan(
    policy_path: Path | None,
    metric: str | None,
    disparity: float | None,
    attributes: str | None,
    stated: list[str] | None,
    group: str | None,
    rates: tuple[float, float, float],
    search: tuple[float, int, int],
) -> Any:
    from fairgate.engine.sample_size import Scenario, default_target, observed_shares, plan_rows, stated_shares
    from tasks.audit import read_policy

    if policy_path is None or metric is None or disparity is None:
        raise FairgateError("give --policy, --metric and --disparity (or --audit RUN_JSON for an existing audit)")
    if (attributes is None) == (not stated):
        raise FairgateError("give the groups' shares either as --attributes FILE or as --shares attr=g:share,...")
    policy, _ = read_policy.fn(policy_path)
    names = policy.attribute_names
    if attributes is not None:
        from tasks.planning import read_attribute_columns

        shares = observed_shares(read_attribute_columns(attributes, names), names)
    else:
        shares = stated_shares(parse_shares(stated or [], names))
    target = parse_group(group) if group else default_target(policy, shares) if names[0] in shares.columns else None
    scenario = Scenario(metric, disparity, shares, target or (names[0], ""), *rates)
    power, runs, seed = search
    return plan_rows(policy, scenario, power=power, runs=runs, seed=seed)


def parse_shares(texts: list[str], names: list[str]) -> dict[str, dict[str, float]]:
    """``--shares race=A:0.5,B:0.5`` options as {attribute: {group: share}}.

    >>> parse_shares(["sex=F:0.4,M:0.6"], ["sex"])
    {'sex': {'F': 0.4, 'M': 0.6}}
    """
    out: dict[str, dict[str, float]] = {}
    for text in texts:
        name, equals, body = text.partition("=")
        if not equals or name.strip() not in names:
            raise FairgateError(
                f"--shares {text!r}: write attribute=group:share,..., the attribute one of the policy's {names}"
            )
        groups: dict[str, float] = {}
        for item in body.split(","):
            value, colon, share = item.strip().rpartition(":")
            try:
                groups[value.strip()] = float(share)
            except ValueError:
                colon = ""
            if not colon or not value.strip():
                raise FairgateError(f"--shares {text!r}: {item!r} is not group:share (e.g. Caucasian:0.34)")
        out[name.strip()] = groups
    return out


def parse_group(text: str) -> tuple[str, str]:
    """``--group race=African-American`` as (attribute, group)."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip() or not value.strip():
        raise FairgateError(f"--group {text!r}: write attribute=group, e.g. --group race=African-American")
    return name.strip(), value.strip()


def _audit_table(path: Path, as_json: bool) -> None:
    from fairgate.engine.sample_size import detectable_table
    from tasks.planning import read_audit_document

    try:
        rows = detectable_table(read_audit_document(path))
    except FairgateError as exc:
        fail(exc.message)
    if as_json:
        sys.stdout.write(json.dumps({"audit": str(path), "results": rows}, indent=2) + "\n")
        return
    table = Table(title=f"what {path.name} could have detected (80% power)", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("metric", "slicing", "value", "threshold", "status", "detectable"):
        table.add_column(column, justify="left" if column in ("metric", "slicing", "status") else "right")
    for row in rows:
        table.add_row(
            row["metric"],
            slicing_label(row["slicing"]),
            console.number(row["value"]),
            console.number(row["threshold"]),
            str(row["status"] or ""),
            console.number(row["detectable_disparity"]),
        )
    table.caption = (
        "detectable: the disparity each result would fail with 80% power at the audit's Holm level; a pass whose "
        "detectable disparity lies far beyond the threshold says little"
    )
    _out.print(table)
