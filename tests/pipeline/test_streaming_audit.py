"""The streaming audit (``execution: {streaming: always}``): the rows stay in DuckDB, the results do not change.

The same CLI audit of the real COMPAS inputs with and without streaming gives the same document (every result,
group, interval, curve and diagnostic; only the recorded execution path and the policy differ), and bad input
is refused on the streaming path with exit 2 and the very message of the in-memory path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import Inputs, assert_refused
from test_bad_input import (
    duplicate_ids,
    header_only,
    label_two,
    label_yes,
    missing_column,
    nan_score,
    score_above_one,
    unknown_attribute_value,
)
from typer.testing import CliRunner

from cli import app

STREAMING = "  execution: {streaming: always, memory_limit: 500MB}\n"
# What may differ: when and where it ran, the policy text (it holds the execution section), the inputs'
# folder and the trail (each run has its own copy and output folder); everything the audit computed must not.
RUN_SPECIFIC = {
    "run_id",
    "created_at",
    "output_dir",
    "execution",
    "policy",
    "policy_sha256",
    "inputs",
    "validation",
    "trend",
    "command_line",  # the command names each run's own input folder
}


def _document(out: Path) -> dict[str, Any]:
    (path,) = out.glob("fairness_*.json")
    return json.loads(path.read_text())


def _copy(inputs: Inputs, folder: Path, *, streaming: bool) -> Inputs:
    folder.mkdir()
    paths = {}
    for name in ("predictions", "labels", "attributes", "policy"):
        source: Path = getattr(inputs, name)
        paths[name] = folder / source.name
        paths[name].write_bytes(source.read_bytes())
    if streaming:
        paths["policy"].write_text(paths["policy"].read_text() + STREAMING)
    return Inputs(folder, paths["predictions"], paths["labels"], paths["attributes"], paths["policy"])


def _assert_same(left: Any, right: Any, path: str = "$") -> None:
    """Equal, floats to 1e-12 relative (the cube's float sums may be added in another order)."""
    if isinstance(left, dict):
        assert isinstance(right, dict), path
        assert set(left) == set(right), f"{path}: keys {sorted(set(left) ^ set(right))}"
        for key in left:
            _assert_same(left[key], right[key], f"{path}.{key}")
    elif isinstance(left, list):
        assert isinstance(right, list), path
        assert len(left) == len(right), path
        for i, (a, b) in enumerate(zip(left, right, strict=True)):
            _assert_same(a, b, f"{path}[{i}]")
    elif isinstance(left, float) and isinstance(right, float):
        assert math.isclose(left, right, rel_tol=1e-12, abs_tol=1e-12), f"{path}: {left!r} != {right!r}"
    else:
        assert left == right, f"{path}: {left!r} != {right!r}"


def test_streaming_gives_the_same_document_except_the_recorded_path(
    inputs: Inputs, runner: CliRunner, tmp_path: Path
) -> None:
    in_memory = _copy(inputs, tmp_path / "memory", streaming=False)
    streamed = _copy(inputs, tmp_path / "streamed", streaming=True)
    results = [runner.invoke(app, run.args("--quiet")) for run in (in_memory, streamed)]
    assert [r.exit_code for r in results] == [1, 1], [r.stderr for r in results]
    memory_doc, streamed_doc = _document(in_memory.out), _document(streamed.out)
    assert memory_doc["execution"] == {"path": "in_memory", "auc_method": "exact", "auc_bins": None}
    assert streamed_doc["execution"] == {
        "path": "streaming",
        "memory_limit": "500MB",
        "auc_method": "exact",
        "auc_bins": None,
    }
    assert streamed_doc["n_rows"] == 7214
    kept = {k: v for k, v in memory_doc.items() if k not in RUN_SPECIFIC}
    _assert_same(kept, {k: v for k, v in streamed_doc.items() if k not in RUN_SPECIFIC})
    # Validation ran the same expectations with the same outcomes (only the inputs' folder differs).
    checks = [
        [{k: v for k, v in c.items() if k != "input"} for c in d["validation"]["checks"]]
        for d in (memory_doc, streamed_doc)
    ]
    assert checks[0] == checks[1]
    assert len(checks[0]) >= 10


def test_streaming_with_histogram_auc_records_the_bound(inputs: Inputs, runner: CliRunner, tmp_path: Path) -> None:
    run = _copy(inputs, tmp_path / "histogram", streaming=False)
    run.policy.write_text(run.policy.read_text() + "  execution: {streaming: always, auc: histogram, auc_bins: 4096}\n")
    result = runner.invoke(app, run.args("--quiet"))
    assert result.exit_code == 1, result.stderr
    document = _document(run.out)
    assert document["execution"]["auc_method"] == "histogram"
    assert document["execution"]["auc_bins"] == 4096
    aucs = [g["metrics"]["roc_auc"] for g in document["groups"] if "roc_auc" in g["metrics"]]
    assert aucs
    # COMPAS scores are deciles: each sits alone in its bin, so the histogram AUC is exact, but the bound
    # (which cannot know that) is stated and covers the ties between the classes in each decile.
    assert all(a["error_bound"] is None or a["error_bound"] >= 0 for a in aucs)
    assert any((a["error_bound"] or 0) > 0 for a in aucs)


CASES: list[Callable[[Inputs], tuple[list[str], list[str]]]] = [
    header_only,
    duplicate_ids,
    missing_column,
    label_two,
    label_yes,
    nan_score,
    score_above_one,
    unknown_attribute_value,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_bad_input_is_refused_alike_when_streaming(
    case: Callable[[Inputs], tuple[list[str], list[str]]], runner: CliRunner, inputs: Inputs, tmp_path: Path
) -> None:
    messages = []
    for streaming in (False, True):
        run = _copy(inputs, tmp_path / f"streaming-{streaming}", streaming=streaming)
        args, expected = case(run)
        before = sorted(p.name for p in run.folder.iterdir())
        message = assert_refused(runner.invoke(app, args), expected, run, before)
        messages.append(message.replace(str(run.folder), "<folder>"))
    assert messages[0] == messages[1]


def test_streaming_always_with_a_proxy_is_refused(inputs: Inputs, runner: CliRunner, tmp_path: Path) -> None:
    run = _copy(inputs, tmp_path / "proxy", streaming=True)
    text = run.policy.read_text()
    run.policy.write_text(text + "  proxy: {method: bisg, attribute: race}\n")
    before = sorted(p.name for p in run.folder.iterdir())
    result = runner.invoke(app, run.args())
    assert_refused(result, ["streaming: always", "proxy"], run, before)
