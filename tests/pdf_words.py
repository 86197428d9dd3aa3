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
