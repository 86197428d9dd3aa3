"""Hostile policies through the CLI (issue 10): exit 2, one clear message, no traceback, nothing written."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import duckdb
import pytest
from pipeline_helpers import Inputs, run_fairgate
from typer.testing import CliRunner

from cli import app


def gate_switched_off_by_a_repeated_key(i: Inputs) -> list[str]:
    # The failing policy would exit 0 if the second 'enabled' silently won.
    i.policy.write_text(
        i.policy.read_text() + "  ci_cd_gate:\n    enabled: true\n    fail_on: any\n    enabled: false\n"
    )
    return [i.policy.name, "'enabled' is written twice", "lines 16 and 18"]


def repeated_metrics_list(i: Inputs) -> list[str]:
    i.policy.write_text(i.policy.read_text() + "  metrics:\n    - {name: disparate_impact_ratio, threshold: 0.5}\n")
    return [i.policy.name, "'metrics' is written twice", "lines 8 and 15"]


def alias_bomb(i: Inputs) -> list[str]:
    levels = ["  lol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"  lol{k}: &l{k} [{', '.join([f'*l{k - 1}'] * 10)}]" for k in range(1, 9)]
    i.policy.write_text("fairness_checker:\n" + "\n".join(levels) + "\n")
    return [i.policy.name, "YAML nodes", "aliases", "MAX_POLICY_NODES"]


def list_over_the_limit(i: Inputs) -> list[str]:
    i.policy.write_text(i.policy.read_text() + "  limits: {max_list_length: 5}\n")
    return [i.policy.name, "values of attribute 'race' has 6 entries", "raise limits.max_list_length"]


def id_like_attribute(i: Inputs) -> list[str]:
    con = duckdb.connect()
    con.read_csv(str(i.attributes)).create_view("t")
    con.sql("select *, 'customer-' || id as customer from t").to_csv(str(i.attributes))
    con.close()
    i.policy.write_text(i.policy.read_text().replace("  metrics:", "    - {name: customer}\n  metrics:"))
    return [i.attributes.name, "attribute 'customer' has 7,214 distinct values", "limits.max_values_per_attribute"]


def override_opening_the_gate(i: Inputs) -> list[str]:
    # COMPAS by race fails disparate impact (0.52); a ratio threshold of -3.0 would pass every model.
    i.policy.write_text(
        i.policy.read_text() + "  overrides: [{metric: disparate_impact_ratio, threshold: -3.0, reason: waived}]\n"
    )
    return [i.policy.name, "overrides[0]: threshold -3.0 for 'disparate_impact_ratio' is out of range", "[0.0, 1.0]"]


def infinite_override_threshold(i: Inputs) -> list[str]:
    i.policy.write_text(i.policy.read_text() + "  overrides: [{threshold: .inf, reason: waived}]\n")
    return [i.policy.name, "overrides.0.threshold: must be a finite number"]


CASES: list[Callable[[Inputs], list[str]]] = [
    override_opening_the_gate,
    infinite_override_threshold,
    gate_switched_off_by_a_repeated_key,
    repeated_metrics_list,
    alias_bomb,
    list_over_the_limit,
    id_like_attribute,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_hostile_policy_exits_2_fast_with_a_clear_message_and_writes_nothing(
    case: Callable[[Inputs], list[str]], runner: CliRunner, inputs: Inputs
) -> None:
    expected = case(inputs)
    before = sorted(p.name for p in inputs.folder.iterdir())
    start = time.perf_counter()
    result = runner.invoke(app, inputs.args())
    elapsed = time.perf_counter() - start
    message = " ".join(result.stderr.split())  # rich wraps long lines
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in expected:
        assert fragment in message, (fragment, message)
    # The alias bomb used to take minutes and gigabytes, the id-like column six minutes; a bad policy is
    # refused before the flow starts, bad data once the cube's first group-by has run.
    assert elapsed < (60.0 if case is id_like_attribute else 5.0)
    assert not inputs.out.exists()
    assert sorted(p.name for p in inputs.folder.iterdir()) == before


# Prefect's log lines reach the real stderr, not the in-process runner's: these run the CLI as a user does.
def test_nothing_judged_says_why_on_stderr(inputs: Inputs) -> None:
    inputs.policy.write_text(inputs.policy.read_text().replace("min_group_size: 50", "min_group_size: 100000"))
    result = run_fairgate(inputs.args("--quiet"), cwd=inputs.folder)
    message = " ".join(result.stderr.split())
    assert result.returncode == 4, (result.returncode, result.stderr)  # insufficient: nothing judged, it blocks
    assert "no policy result was judged" in message
    assert "below intersectional_analysis.min_group_size (100000)" in message
    assert "race=African-American (n=3696)" in message
    assert "Lower min_group_size" in message
    document = json.loads(next(inputs.out.glob("*.json")).read_text())
    assert (document["verdict"], document["exit_code"]) == ("insufficient", 4)


def test_nothing_judged_passes_the_gate_only_when_the_policy_allows_it(inputs: Inputs) -> None:
    text = inputs.policy.read_text().replace("min_group_size: 50", "min_group_size: 100000")
    inputs.policy.write_text(text + "  ci_cd_gate: {insufficient: allow}\n")
    result = run_fairgate(inputs.args(), cwd=inputs.folder)
    output = " ".join(result.stdout.split())
    assert result.returncode == 0, (result.returncode, result.stderr)
    assert "verdict: INSUFFICIENT" in output
    assert "ci_cd_gate.insufficient: allow" in output
    document = json.loads(next(inputs.out.glob("*.json")).read_text())
    assert (document["verdict"], document["exit_code"]) == ("insufficient", 0)
    junit = next(inputs.out.glob("*.xml")).read_text()
    assert 'name="verdict"' in junit
    assert "<skipped" in junit


def test_an_empty_reference_group_is_warned_about(inputs: Inputs) -> None:
    inputs.policy.write_text(
        inputs.policy.read_text().replace(
            "[Male, Female], reference_group: Male", "[Male, Female, X], reference_group: X"
        )
    )
    result = run_fairgate(inputs.args("--quiet"), cwd=inputs.folder)
    message = " ".join(result.stderr.split())
    assert result.returncode == 1, (result.returncode, result.stderr)  # the failing policy still fails
    assert "the reference group sex='X' declared in the policy has no rows in the data" in message


def test_an_oversized_policy_file_is_refused_without_reading_it(runner: CliRunner, inputs: Inputs) -> None:
    with inputs.policy.open("a") as policy:
        policy.write("#" + "x" * 2_000_000 + "\n")
    result = runner.invoke(app, inputs.args())
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert "fairgate reads policies of at most 1,000,000 bytes" in " ".join(result.stderr.split())
