"""Metric names in code form in a report's text: every report type names its metrics in words.

The policy appendix quotes the policy file as YAML, where ``disparate_impact_ratio`` is the setting's literal
text, so it is left out; everything else a reader sees (page 1, tables, notes, recommendations, glossary, charts'
captions) must say "Disparate impact ratio". The names are every kind's catalogue and every group rate, so a
new metric is covered when it is registered.
"""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path
from typing import Any

from fairgate.engine.kinds import KINDS
from fairgate.engine.metrics import GroupMetric
from fairgate.engine.tasks import metric_catalogue

APPENDIX = "Appendix: policy applied"


@functools.cache
def metric_names() -> frozenset[str]:
    """Every metric a policy may name, of every kind, and every group rate: the names with an underscore."""
    names = set(GroupMetric.registry)
    for kind in KINDS:
        names |= {name.split(".")[-1] for name in metric_catalogue(kind)}
    return frozenset(name for name in names if "_" in name)


def outside_the_appendix(text: str) -> str:
    """The text without the policy appendix (from its heading to the next heading, the glossary)."""
    start = text.find(APPENDIX)
    if start < 0:
        return text
    end = text.find("Glossary", start)
    return text[:start] + (text[end:] if end >= 0 else "")


def code_form_metric_names(text: str) -> list[str]:
    """The metric names printed in code form (``equal_opportunity_difference``) outside the policy appendix."""
    shown = outside_the_appendix(text)
    return sorted(name for name in metric_names() if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", shown))


def pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", str(pdf), "-"], check=True, capture_output=True, text=True).stdout


def test_the_check_finds_a_name_in_code_form_and_skips_the_appendix() -> None:
    """The check itself can fail: a name in code form is found, the same name in the appendix is not."""
    assert code_form_metric_names("fails on race: disparate_impact_ratio 0.5") == ["disparate_impact_ratio"]
    assert code_form_metric_names("Disparate impact ratio 0.5") == []
    quoted = f"Decision\n{APPENDIX}\n- {{name: disparate_impact_ratio}}\nGlossary\nDisparate impact ratio"
    assert code_form_metric_names(quoted) == []


# Page 1 of every report type: each number printed is accounted for by the JSON document (the one formatter's
# rounding: fairgate.report.format), so a wrong number on the page, or a page that no longer matches its
# document, fails.

NUMBER = re.compile(r"(?<![\w.])\d(?:[\d,]*\d)?(?:\.\d+)?(?:e-?\d+)?")
#: A hash prefix as the reports print it ("sha256 a15e87be063b…"): an identifier, not a number.
HASH = re.compile(r"(?i)sha-?256:? [0-9a-f]{6,}…?")


def page_text(pdf: Path, page: int = 1, *, layout: bool = False) -> str:
    """One page's words, whitespace collapsed, true minus signs as hyphens (so "−0.105" reads as -0.105)."""
    args = ["pdftotext", "-f", str(page), "-l", str(page), *(["-layout"] if layout else []), str(pdf), "-"]
    text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return " ".join(text.replace("\u2212", "-").split())


def page_count(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], check=True, capture_output=True, text=True).stdout
    match = re.search(r"^Pages:\s+(\d+)", info, re.M)
    assert match is not None
    return int(match.group(1))


def _number_texts(value: float) -> set[str]:
    """The texts the one formatter may print for a document's number: rounded once (3 or 2 digits, halves away
    from zero; interval ends outward), as a count, as a p-value, as a percentage of a share."""
    from fairgate.report.format import fmt, fmt_bound, fmt_count, fmt_p

    texts = {fmt(value), fmt(value, 2), fmt(value, 4), fmt_p(value)}
    texts |= {fmt_bound(value, d, upper=u) for d in (2, 3) for u in (False, True)}
    if float(value).is_integer():
        texts |= {str(int(value)), fmt_count(value)}
    if 0 < value <= 1:
        texts.add(f"{value:.0%}".rstrip("%"))
    return {t.replace("\u2212", "-").lstrip("-") for t in texts}


def document_numbers(document: Any) -> set[str]:
    """Every number text a page may print from ``document`` (a JSON value): its numbers as the one formatter
    prints them, and the numbers written inside its texts (dates, reasons, details)."""
    found: set[str] = set()
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int | float):
            found |= _number_texts(float(item))
        elif isinstance(item, str):
            found |= set(NUMBER.findall(item.replace("\u2212", "-")))
    return found


def unexplained_numbers(text: str, document: Any) -> list[str]:
    """The numbers of ``text`` (a page from :func:`page_text`) that ``document`` does not account for."""
    allowed = document_numbers(document)
    return [n for n in NUMBER.findall(HASH.sub("", text)) if n not in allowed]
