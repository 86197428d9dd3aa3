"""``fairgate demo``: the bundled COMPAS data and policy, no arguments, the full pipeline including the report."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pipeline_helpers import COMPAS_CSV, InProcessRunner

from cli import DEMO_DATA, DEMO_POLICY, app
from tasks.store import list_runs, verify


def test_bundled_compas_is_the_shared_file_with_its_provenance() -> None:
    assert hashlib.sha256(DEMO_DATA.read_bytes()).hexdigest() == hashlib.sha256(COMPAS_CSV.read_bytes()).hexdigest()
    provenance = (DEMO_DATA.parent / "PROVENANCE.md").read_text()
    assert hashlib.sha256(DEMO_DATA.read_bytes()).hexdigest() in provenance
    assert "favorable_label: 0" in DEMO_POLICY.read_text()


@pytest.mark.slow
def test_demo_runs_the_full_audit_and_fails_compas(
    runner: InProcessRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["demo", "--quiet"])
    assert result.exit_code == 1, result.stderr  # COMPAS fails its fairness policy: the gate says no
    out = tmp_path / "fairness_reports"
    (document_path,) = [p for p in out.glob("*.json") if not p.name.endswith(".model_card.json")]
    document = json.loads(document_path.read_text())
    assert document["verdict"] == "fail"
    assert document["n_rows"] == 7214
    assert document["model"] == {"name": "compas", "version": "northpointe-2013"}
    assert document["favorable_label"] == 0
    assert document["command_line"] == "fairgate demo --quiet"  # the demo's command, not its temporary files
    # ProPublica's finding: Black defendants are flagged far more often than white ones (DI well under 0.8).
    race_di = next(
        r for r in document["results"] if r["metric"] == "disparate_impact_ratio" and r["slicing"] == ["race"]
    )
    assert race_di["status"] == "fail"
    assert race_di["value"] < 0.8
    suffixes = {p.name.split(".", 1)[1] for p in out.glob("fairness_*")}
    assert {"json", "junit.xml", "html", "pdf", "model_card.json", "model_card.md", "explorer.html"} <= suffixes
    # The what-if explorer beside the HTML report: its data names the race groups the report shows.
    (explorer,) = out.glob("*.explorer.html")
    page = explorer.read_text()
    assert "window.fairgateExplorer" in page
    assert '"name":"African-American"' in page
    (report,) = [p for p in out.glob("fairness_*.html") if not p.name.endswith(".explorer.html")]
    assert 'id="explorer-link"' in report.read_text()
    assert f'href="{explorer.name}"' in report.read_text()
    # The demo's model card: the Toolkit JSON with the policy's intended use, the window from the screening dates.
    (card_path,) = out.glob("*.model_card.json")
    card = json.loads(card_path.read_text())
    assert "research and demonstration only" in card["considerations"]["use_cases"][0]["description"]
    assert "window 2013-01-01 to 2014-12-31" in card["model_parameters"]["data"][-1]["description"]
    assert len(list_runs(out / "audit_trail.duckdb")) == 1
    assert verify(out / "audit_trail.duckdb")["ok"]
