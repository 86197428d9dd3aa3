"""Page 1 of the multiclass, regression and ranking PDFs, read back with pdftotext, accounts for its numbers.

Each kind's demo document is computed in-process by the engine (the demo's own inputs), rendered to PDF once,
and page 1's text is checked as the binary's is (test_report_page_one.py): the numbers that are not data (page
numbers, the run's date and id, counts of results, the confidence level, the suppression threshold, the policy
hash's prefix) are matched in their context and removed, then every number left must be a value of the document
rounded by the one formatter: a result's value, interval end (outward), threshold, gap past it and its multiple;
a group label; the row count; on the ranking page the summaries' values and interval ends and the ranking
settings. The whole PDF names every metric in words (no ``disparate_impact_ratio`` outside the policy appendix).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from pdf_words import code_form_metric_names, pdf_text
from test_report_page_one import NUMBER, _allowed_numbers, _f3, _high3, _low3, _page_count, _page_text

import fairgate
from fairgate.engine.multiclass.audit import adjudicate_multiclass, count_multiclass, slicings_multiclass
from fairgate.engine.ranking.audit import adjudicate_ranking, count_ranking, slicings_ranking
from fairgate.engine.regression.audit import adjudicate_regression, count_regression, slicings_regression
from fairgate.policy.core import Policy
from fairgate.report import build_view
from tasks.inputs.demo_law import fit_and_predict, law_rows
from tasks.inputs.demo_ranking import write_ranking_demo_inputs
from tasks.inputs.io import demo_rows
from tasks.render.report import build_report_files

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils (pdftotext) not installed")

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "fairgate"
COMPAS_CSV = REPO / ".." / "shared" / "data" / "compas" / "compas-scores-two-years.csv"
LAW_CSV = PACKAGE / "data" / "law" / "law_data.csv"
MIN_CELL = 10


def _multiclass(_: Path) -> dict[str, Any]:
    rows = demo_rows(COMPAS_CSV, "demo_multiclass")
    text = (
        (PACKAGE / "policies" / "compas_multiclass.yaml").read_text().replace("n_bootstrap: 1000", "n_bootstrap: 200")
    )
    policy = fairgate.Policy.from_yaml(text)
    cube = count_multiclass(rows, policy)
    return adjudicate_multiclass(cube, slicings_multiclass(cube, policy), policy).to_dict()


def _regression(_: Path) -> dict[str, Any]:
    policy = Policy.from_yaml((PACKAGE / "policies" / "law_regression.yaml").read_text())
    audited, _fit = fit_and_predict(law_rows(LAW_CSV))
    rows = audited.rename({"zfya": "y_true"}).select("id", "race", "sex", "y_true", "y_pred")
    counts = count_regression(rows, policy)
    return adjudicate_regression(counts, slicings_regression(counts, policy), policy).to_dict()


def _ranking(folder: Path) -> dict[str, Any]:
    policy = Policy.from_yaml((PACKAGE / "policies" / "law_ranking.yaml").read_text())
    files = write_ranking_demo_inputs(LAW_CSV, folder)
    rows = (
        pl.read_parquet(files["predictions"])
        .join(pl.read_parquet(files["labels"]), on="id")
        .join(pl.read_parquet(files["attributes"]), on="id")
    )
    cube = count_ranking(rows, policy)
    return adjudicate_ranking(cube, slicings_ranking(cube, policy), policy).to_dict()


BUILDERS = {"multiclass": _multiclass, "regression": _regression, "ranking": _ranking}


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def rendered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    kind = request.param
    folder = tmp_path_factory.mktemp(kind)
    document = BUILDERS[kind](folder)
    assert document["task"] == kind
    pdf = build_report_files(document, out_dir=folder, formats=["pdf"], min_cell_size=MIN_CELL)["pdf"]
    assert pdf is not None
    return {"kind": kind, "document": document, "pdf": pdf}


def _kind_numbers(document: dict[str, Any]) -> set[str]:
    """Numbers of the kind's own block that page 1 may carry when the kind's first page starts on it."""
    allowed: set[str] = set()
    block = document.get("ranking") or {}
    for summary in block.get("summaries") or []:
        allowed |= {_f3(summary["value"]), _low3(summary.get("ci_low")), _high3(summary.get("ci_high"))}
        allowed.add(str(summary.get("k")))
    for key in ("n_lists", "bootstrap_buckets", "judged_k"):
        if block.get(key) is not None:
            allowed.add(f"{block[key]:,}")
    allowed |= {str(k) for k in block.get("top_k") or []}
    return allowed


def _without_known_context(text: str, pdf: Path, document: dict[str, Any]) -> str:
    """Page 1 without the numbers that are not data, each checked in its context first."""
    detail = document["verdict_detail"]
    pages = _page_count(pdf)
    assert f"Page 1 of {pages}" in text
    text = text.replace(f"Page 1 of {pages}", "")
    assert document["created_at"] in text
    for known in (document["created_at"], document["run_id"], document["model"]["version"], document["model"]["name"]):
        text = text.replace(known, "")
    counts = re.findall(r"(\d+) of (\d+) fairness results are outside the policy", text)
    assert counts == [(str(detail["n_failed"]), str(detail["n_results"]))]
    text = re.sub(r"\d+ of \d+", "", text)
    level = round(document["confidence_level"] * 100)
    text = re.sub(rf"\(({level}% CI|confidence intervals at {level}%)\)", "", text)
    text = re.sub(rf"{level}% simultaneous intervals", "", text)
    # The small-cell rule as the suppression note states it ("... is from 1 to 9, ... bounded under 10 ..."),
    # when page 1 reaches it (a long "What to do" moves it to page 2).
    text = text.replace(f"is from 1 to {MIN_CELL - 1}", "").replace(f"bounded under {MIN_CELL}", "")
    # What to do: at most three numbered actions, then how many more the Recommendations list.
    ordinals = [int(n) for n in re.findall(r"(?:^| )(\d)\. (?=[A-Z])", text)]
    assert ordinals == list(range(1, len(ordinals) + 1))
    assert len(ordinals) <= 3
    text = re.sub(r"(?:^| )\d\. (?=[A-Z])", " ", text)
    actions = build_view(document, min_cell_size=MIN_CELL).actions
    more = re.findall(r"(\d+) more action\(s\) are listed", text)
    assert all(n == str(len(actions) - 3) for n in more)  # when page 1 reaches it
    text = re.sub(r"\d+ more action\(s\) are listed", "", text)
    lead = re.findall(r"(\d+) mitigations? for the failed metrics?", text)  # the frame's "What to do"
    assert lead == ([str(len(actions))] if actions else [])
    text = re.sub(r"\d+ mitigations? for the failed", "", text)
    text = re.sub(r"\((\d+) groups? here\)", "", text)  # the suppressed count: checked by the suppression tests
    undecided = [r for r in document["results"] if r["status"] in ("inconclusive", "insufficient_data")]
    found = re.findall(r"(\d+) result\(s\) are neither pass nor fail", text)
    assert found == ([str(len(undecided))] if undecided else [])
    text = re.sub(r"\d+ result\(s\) are neither", "", text)
    text = text.replace(document["policy_sha256"][:16], "")
    text = text.replace("1 / log2(1 + rank)", "").replace("Singh & Joachims 2018", "")  # the ranking's discount
    return text.replace("80% power", "")


def test_every_number_on_page_one_comes_from_the_json(rendered: dict[str, Any]) -> None:
    document, pdf = rendered["document"], rendered["pdf"]
    text = _without_known_context(" ".join(_page_text(pdf, 1).split()), pdf, document)
    allowed = _allowed_numbers(document) | _kind_numbers(document)
    unexplained = [n for n in (m.rstrip(",") for m in NUMBER.findall(text)) if n not in allowed]
    assert unexplained == [], f"{rendered['kind']}: numbers on page 1 not found in the JSON document: {unexplained}"


def test_every_metric_is_named_in_words(rendered: dict[str, Any]) -> None:
    assert code_form_metric_names(pdf_text(rendered["pdf"])) == [], rendered["kind"]


def test_the_check_reads_the_page_it_is_given(rendered: dict[str, Any]) -> None:
    """The page-1 check can fail: a number that is not in the document is reported."""
    document = rendered["document"]
    allowed = _allowed_numbers(document) | _kind_numbers(document)
    assert "987.654" not in allowed
    assert [n for n in NUMBER.findall("value 987.654") if n not in allowed] == ["987.654"]


def test_the_binary_pdf_names_every_metric_in_words(compas_report: dict[str, Path]) -> None:
    """Recommendations, the impossibility note and every table of the binary report name metrics in words."""
    assert code_form_metric_names(pdf_text(compas_report["pdf"])) == []


#: The technique each kind's demo failures get: its own metrics' advice, not the general remedy of an unknown metric.
KIND_TECHNIQUES = {
    "multiclass": {
        "Reweigh the training data",
        "Use group-specific decision thresholds",
        "Retrain under a fairness constraint",
    },
    "regression": {"Retrain under a fairness constraint"},
    "ranking": {"Re-rank under an exposure or representation constraint"},
}


def test_every_kind_says_what_to_do_for_each_failed_metric(rendered: dict[str, Any]) -> None:
    """The binary report's advice for every kind: one action per failed metric, named as its results table names it."""
    kind, document = rendered["kind"], rendered["document"]
    view = build_view(document, min_cell_size=MIN_CELL)
    failed = {r.metric_label for r in view.failures}
    assert failed, f"{kind}: the demo fails its policy"
    assert {a.metric_label for a in view.actions} == failed
    assert {a.title for a in view.actions} <= KIND_TECHNIQUES[kind]
    assert all("general remedy" not in a.summary for a in view.actions)
    page_one = " ".join(_page_text(rendered["pdf"], 1).split())
    assert "What to do" in page_one
    assert view.actions[0].title in page_one


#: The group value standing for the base rate of each kind without a 0/1 outcome.
OUTCOME_LEVELS = {"regression": "mean_label", "ranking": "mean_relevance"}


def test_every_kind_states_its_base_rates_and_what_they_imply(rendered: dict[str, Any]) -> None:
    """Multiclass: per class against the rest (tested); regression and ranking: the outcome's level per group
    (its mean outcome, its mean relevance; not tested), with the independence-versus-sufficiency note."""
    kind, document = rendered["kind"], rendered["document"]
    entries = document["diagnostics"]["base_rates"]
    singles = sorted(s[0] for s in document["slicings"] if len(s) == 1)
    assert sorted({e["slicing"][0] for e in entries}) == singles
    view = build_view(document, min_cell_size=MIN_CELL)
    assert view.base_rates
    assert view.impossibility
    if kind == "multiclass":
        assert {e["outcome_class"] for e in entries} == set(document["multiclass"]["classes"])
        return
    level = OUTCOME_LEVELS[kind]
    groups = {(tuple(g["slicing"]), tuple(g["group"].items())): g for g in document["groups"]}
    for entry in entries:
        assert entry["differ"] is None  # stated, not tested
        assert entry["groups"]  # the demos' attributes have at least two sufficient groups
        for g in entry["groups"]:
            assert (
                g["base_rate"]
                == groups[(tuple(entry["slicing"]), tuple(g["group"].items()))]["metrics"][level]["value"]
            )
        assert "cannot both hold" in entry["impossibility"]
    text = " ".join(note.text for note in view.impossibility)
    assert "independence" in text
    assert "sufficiency" in text
    pdf = " ".join(pdf_text(rendered["pdf"]).split())
    assert view.levels_heading in pdf  # in the kind's words: a regression has no base rates
    assert "Base rates and what they imply" not in pdf
