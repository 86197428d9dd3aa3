"""``flows.audit_api.run_audit``: the audit flow from Python returns an ``AuditResult`` that knows the files it wrote,
so a notebook links the reports; bad input raises ``FairgateError`` and writes nothing."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pytest
from pipeline_helpers import POLICY_FAILING, Inputs

import fairgate
from flows.audit_api import run_audit
from tasks.outputs import written_files


def test_the_result_carries_and_links_the_files_the_run_wrote(inputs: Inputs) -> None:
    inputs.policy.write_text(POLICY_FAILING.replace("format: [json, junit]", "format: [json, junit, html]"))
    result = run_audit(
        inputs.policy, inputs.predictions, inputs.labels, inputs.attributes, out_dir=inputs.out, model_name="compas"
    )
    assert result.verdict == "fail"  # a fail is a result, not an exception
    assert set(result.files) == {"json", "junit", "html", "explorer"}  # an HTML report comes with its explorer
    for path in result.files.values():
        assert Path(path).is_file()
        assert Path(path).parent == inputs.out
    written = json.loads(Path(result.files["json"]).read_text(encoding="utf-8"))
    assert result.to_dict() == written  # the document is the one on disk
    html = result._repr_html_()
    assert "not written" not in html
    for kind, path in result.files.items():
        assert f'{kind}: <a href="{escape(Path(path).as_posix(), quote=True)}">' in html


def test_bad_input_raises_and_writes_nothing(inputs: Inputs) -> None:
    missing = inputs.folder / "missing.parquet"
    with pytest.raises(fairgate.FairgateError, match=r"missing\.parquet"):
        run_audit(inputs.policy, missing, inputs.labels, inputs.attributes, out_dir=inputs.out)
    assert not inputs.out.exists() or not any(inputs.out.iterdir())


def test_written_files_lists_outputs_then_report() -> None:
    summary = {
        "outputs": {"json": "out/a.json", "junit": "out/a.junit.xml"},
        "report": {"html": "out/a.html", "pdf": None, "explorer": "out/a.explorer.html", "delivery": {}},
    }
    assert list(written_files(summary).items()) == [
        ("json", "out/a.json"),
        ("junit", "out/a.junit.xml"),
        ("html", "out/a.html"),
        ("explorer", "out/a.explorer.html"),
    ]
    assert written_files({"outputs": {"json": "a.json"}, "report": None}) == {"json": "a.json"}
