"""Page 1 of the COMPAS PDF, read back with pdftotext: every number on it is checked against the JSON document.

The report rounds once from the JSON's values: 3 digits for values, thresholds and gaps (halves away from zero,
as the JSON's decimal reads), interval ends outward (the lower end down, the upper end up, so the printed interval
contains the JSON's), 2 for severity multiples; the expected texts below are computed from the JSON with exactly
that rounding, so the only tolerance is the report's own. Numbers that are not data (page numbers, list ordinals,
the run's date) are matched by their context and checked too, then every other number left on the page must come
from the document.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

from fairgate.engine.labels import slicing_label

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils (pdftotext) not installed")

NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def _page_text(pdf: Path, page: int, *, layout: bool = True) -> str:
    args = ["pdftotext", "-f", str(page), "-l", str(page), *(["-layout"] if layout else []), str(pdf), "-"]
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def _page_count(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], check=True, capture_output=True, text=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))  # type: ignore[union-attr]


def _f3(x: float | None, rounding: str = ROUND_HALF_UP) -> str:
    if x is None:
        return "–"
    return str(Decimal(repr(float(x))).quantize(Decimal("0.001"), rounding=rounding)).replace("-", "\u2212")


def _low3(x: float | None) -> str:
    return _f3(x, ROUND_FLOOR)


def _high3(x: float | None) -> str:
    return _f3(x, ROUND_CEILING)


def _gap(result: dict[str, Any]) -> tuple[str, str]:
    """The gap past the threshold and its multiple of the threshold, as the report rounds them."""
    value, threshold = float(result["value"]), float(result["threshold"])
    gap = threshold - value if result["direction"] == "higher_is_better" else value - threshold
    return _f3(abs(gap)), f"{gap / abs(threshold):.2f}"


def _allowed_numbers(doc: dict[str, Any]) -> set[str]:
    """Every number text the first page may print, derived from the document."""
    allowed: set[str] = set()
    for r in doc["results"]:
        allowed |= {_f3(r["value"]), _low3(r["ci_low"]), _high3(r["ci_high"]), _f3(r["threshold"])}
        if r["value"] is not None:
            allowed |= set(_gap(r))
        allowed |= set(NUMBER.findall(r.get("reason") or ""))  # the engine's reason, printed as recorded
        if r["status"] in ("pass", "inconclusive") and r.get("detectable_disparity") is not None:
            allowed.add(_f3(r["detectable_disparity"]))  # what a pass (or an inconclusive result) could detect
    for attribute in doc["attributes"]:
        for value in attribute["values"]:
            allowed |= set(NUMBER.findall(str(value)))  # group labels such as "25 - 45"
    allowed.add(f"{doc['n_rows']:,}")
    return allowed


@pytest.fixture(scope="module")
def page_one(compas_report: dict[str, Path]) -> str:
    return _page_text(compas_report["pdf"], 1)


def test_every_number_on_page_one_comes_from_the_json(
    page_one: str, compas_report: dict[str, Path], compas_doc: dict[str, Any]
) -> None:
    pdf = compas_report["pdf"]
    text = " ".join(page_one.split())
    detail = compas_doc["verdict_detail"]

    # Numbers that are not data, each checked in its context and then removed.
    pages = _page_count(pdf)
    assert f"Page 1 of {pages}" in text
    text = text.replace(f"Page 1 of {pages}", "")
    assert compas_doc["created_at"] in text
    assert compas_doc["run_id"] in text
    for known in (compas_doc["created_at"], compas_doc["run_id"], compas_doc["model"]["version"]):
        text = text.replace(known, "")
    counts = re.findall(r"(\d+) of (\d+) fairness results are outside the policy", text)
    assert counts == [(str(detail["n_failed"]), str(detail["n_results"]))]
    # Twice: in the verdict sentence and in the facts grid.
    assert re.findall(r"(\d+) of (\d+)", text).count((str(detail["n_failed"]), str(detail["n_results"]))) == 2
    text = re.sub(r"\d+ of \d+", "", text)
    level = round(compas_doc["confidence_level"] * 100)
    assert f"VALUE ({level}% CI)" in text
    text = text.replace(f"({level}% CI)", "")
    undecided = [r for r in compas_doc["results"] if r["status"] in ("inconclusive", "insufficient_data")]
    assert re.findall(r"(\d+) result\(s\) are neither pass nor fail", text) == [str(len(undecided))]
    text = re.sub(r"\d+ result\(s\) are neither", "", text)
    actions = {(r["metric"], r["title"]) for r in compas_doc["recommendations"] if r["kind"] == "mitigation"}
    assert re.findall(r"(\d+) mitigations? for the failed metrics?", text) == [str(len(actions))]
    text = re.sub(r"\d+ mitigations? for the failed", "", text)
    text = text.replace("80% power", "")  # the engine's power statement in the recorded reasons
    ordinals = [int(n) for n in re.findall(r"(?:^| )(\d)\. (?=[A-Z])", text)]
    assert ordinals == list(range(1, len(ordinals) + 1))
    assert len(ordinals) <= 3
    text = re.sub(r"(?:^| )\d\. (?=[A-Z])", " ", text)
    if m := re.search(r"(\d+) more action\(s\) are listed under Recommendations \(page (\d+)\)", text):
        assert int(m.group(1)) == len(actions) - 3
        target = int(m.group(2))
        assert re.search(r"^\s*Recommendations\s*$", _page_text(pdf, target), re.M), "page pointer is wrong"
        text = text.replace(m.group(0), "")

    allowed = _allowed_numbers(compas_doc)
    unexplained = [n for n in NUMBER.findall(text) if n not in allowed]
    assert unexplained == [], f"numbers on page 1 not found in the JSON document: {unexplained}"


def test_scorecard_rows_match_the_json_in_order(page_one: str, compas_doc: dict[str, Any]) -> None:
    metrics = list(dict.fromkeys(r["metric"] for r in compas_doc["results"]))
    by_key = {(r["metric"], tuple(r["slicing"])): r for r in compas_doc["results"]}
    thresholds = [by_key[next(k for k in by_key if k[0] == m)]["threshold"] for m in metrics]
    threshold_line = next(line for line in page_one.splitlines() if line.strip().startswith("Slicing"))
    assert NUMBER.findall(threshold_line) == [_f3(t) for t in thresholds]
    slicings = sorted(dict.fromkeys(tuple(r["slicing"]) for r in compas_doc["results"]), key=len)
    for slicing in slicings:
        label = slicing_label(list(slicing))
        line = next(x for x in page_one.splitlines() if re.match(rf"\s*{re.escape(label)}\s{{2,}}\d", x))
        expected = [_f3(by_key[(m, slicing)]["value"]) if (m, slicing) in by_key else "" for m in metrics]
        assert NUMBER.findall(line) == [e for e in expected if e], label


def test_headline_rows_and_verdict_sentence_match_the_json(
    compas_report: dict[str, Path], compas_doc: dict[str, Any]
) -> None:
    # Reading order (no layout): a wrapped table cell stays together.
    text = " ".join(_page_text(compas_report["pdf"], 1, layout=False).split())
    failures = [r for r in compas_doc["results"] if r["status"] == "fail"]
    severity = {id(r): float(_gap(r)[1]) for r in failures}
    worst = max(failures, key=lambda r: severity[id(r)])
    gap, multiple = _gap(worst)
    assert f"= {_f3(worst['value'])}, above the threshold by {gap} ({multiple} × the threshold)" in text or (
        f"= {_f3(worst['value'])}, below the threshold by {gap} ({multiple} × the threshold)" in text
    )
    for metric in dict.fromkeys(r["metric"] for r in failures):
        top = max((r for r in failures if r["metric"] == metric), key=lambda r: severity[id(r)])
        gap, multiple = _gap(top)
        assert f"{_f3(top['value'])} {_low3(top['ci_low'])}–{_high3(top['ci_high'])}" in text, metric
        assert f"the threshold by {gap} ({multiple} × the threshold)" in text, metric


def _detectable_words(result: dict[str, Any]) -> str:
    """The disparity a result would have caught with 80% power, as page 1 words it."""
    side = "less" if result["direction"] == "higher_is_better" else "more"
    return f"{_f3(result['detectable_disparity'])} or {side}"


def test_what_each_pass_could_have_missed_matches_the_json(
    compas_report: dict[str, Path], compas_doc: dict[str, Any]
) -> None:
    """Each pass's detectable disparity, one sentence per slicing; each inconclusive one's beside it."""
    text = " ".join(_page_text(compas_report["pdf"], 1, layout=False).split())
    passes = [r for r in compas_doc["results"] if r["status"] == "pass" and r["detectable_disparity"] is not None]
    assert passes, "the COMPAS demo has passes (on sex): the test needs one"
    block = re.search(r"What this audit could detect: with 80% power (.*?) What to do", text)
    assert block is not None, "page 1 says nothing about what the audit could detect"
    for slicing in dict.fromkeys(tuple(r["slicing"]) for r in passes):
        sentence = re.search(rf"On {re.escape(slicing_label(list(slicing)))}: (.*?)\.(?: On |$)", block.group(1))
        assert sentence is not None, slicing
        items = sentence.group(1).split("; ")
        expected = [r for r in passes if tuple(r["slicing"]) == slicing]
        assert len(items) == len(expected), (slicing, items)
        for item, result in zip(items, expected, strict=True):
            assert item.endswith(" " + _detectable_words(result)), (item, result["metric"])
    for r in compas_doc["results"]:
        if r["status"] == "inconclusive" and r["detectable_disparity"] is not None:
            label = slicing_label(r["slicing"])
            assert re.search(
                rf"on {re.escape(label)} INCONCLUSIVE \(would catch {re.escape(_detectable_words(r))}\)", text
            ), (r["metric"], label)


INTERVAL = re.compile(r"(−?\d+\.\d+)(?:–| to )(−?\d+\.\d+)")


def test_every_interval_on_page_one_contains_the_json_interval(page_one: str, compas_doc: dict[str, Any]) -> None:
    """Each printed interval is a JSON result's interval widened by at most its last printed digit."""
    text = " ".join(page_one.split())
    printed = [(float(a.replace("−", "-")), float(b.replace("−", "-"))) for a, b in INTERVAL.findall(text)]
    assert printed, "no interval found on page 1"
    ends = [(r["ci_low"], r["ci_high"]) for r in compas_doc["results"] if r["ci_low"] is not None]
    for low, high in printed:
        matches = [(a, b) for a, b in ends if low <= a and b <= high and a - low < 0.001 and high - b < 0.001]
        assert matches, f"printed interval {low}–{high} does not contain any JSON interval"
