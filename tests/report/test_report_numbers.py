"""Honest numbers: one formatter (rounded once, interval ends outward, true minus signs), threshold lines from
judged groups only, one worst-off definition and one group-selection rule for tables and charts."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from cli.audit_cmd import _estimate_texts
from fairgate.engine.metric_labels import in_sentence
from fairgate.engine.metrics import GroupMetric, policy_metric
from fairgate.policy.outcomes import Outcomes
from fairgate.report import build_view
from fairgate.report.figures import chart_rows, threshold_line
from fairgate.report.format import MINUS, estimate_text, fmt, interval_text, rate_label

PRINTED = re.compile(r"^\[?(−?\d+\.\d+)(?:–| to )(−?\d+\.\d+)\]?$")


def _parse(text: str) -> tuple[float, float]:
    match = PRINTED.match(text)
    assert match, text
    low, high = (float(x.replace(MINUS, "-")) for x in match.groups())
    return low, high


def _random_intervals(seed: int, n: int = 2000) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        scale = 10 ** rng.randint(-3, 1)
        a, b = sorted(rng.uniform(-scale, scale) for _ in range(2))
        out.append((a, b))
    out += [(0.42252, 0.8989), (0.0, 1.0), (-0.3312, -0.2801), (0.423, 0.899), (0.9935, 1.26149)]
    return out


@pytest.mark.parametrize("digits", [2, 3, 4, None])
def test_a_printed_interval_always_contains_the_documents(digits: int | None) -> None:
    for low, high in _random_intervals(seed=24):
        text = interval_text(low, high, digits)
        lo, hi = _parse(text)
        places = len(text.split(" to " if " to " in text else "–")[0].split(".")[1])
        assert digits is None or places == digits
        step = 10**-places + 1e-12
        assert lo <= low, (low, high, text)
        assert high <= hi, (low, high, text)
        assert low - lo < step, (low, high, text)  # widened by one printed digit at most
        assert hi - high < step, (low, high, text)
        assert "--" not in text
        assert not re.search(r"\d-\d", text)
        if low < 0 or high < 0:
            assert " to " in text
            assert "–" not in text
        else:
            assert " to " not in text


def test_the_cli_prints_intervals_with_the_reports_formatter() -> None:
    for low, high in _random_intervals(seed=7, n=500):
        value, ci = _estimate_texts({"value": (low + high) / 2, "ci_low": low, "ci_high": high})
        assert ci == f"[{interval_text(low, high)}]"
        lo, hi = _parse(ci)
        assert lo <= low
        assert high <= hi
        assert value == fmt((low + high) / 2)
    # The reported case: JSON 0.42252 printed 0.423 by the CLI, above the interval's true end.
    assert _estimate_texts({"value": 0.661, "ci_low": 0.42252, "ci_high": 0.89899})[1] == "[0.422–0.899]"


def test_negatives_read_with_a_minus_sign_and_to() -> None:
    assert interval_text(-0.3312, -0.2801, 2) == f"{MINUS}0.34 to {MINUS}0.28"
    assert estimate_text(-0.3, -0.33, -0.28) == f"{MINUS}0.300 [{MINUS}0.330 to {MINUS}0.280]"
    assert fmt(-0.0004) == "0.000"  # never a signed zero


def test_threshold_lines_come_from_the_judged_groups_only(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc, min_cell_size=1)  # no suppression: the point is which groups draw the line
    race = next(s for s in view.sections if s.attributes == ["race"])
    left_out = [g for g in race.groups if not g.sufficient and not g.suppressed]
    assert left_out, "the COMPAS race slicing has visible groups left out of the judgement (Asian, Native American)"
    for metric in ("false_positive_rate", "false_negative_rate"):
        col = race.metric_names.index(metric)
        judged = [g.cells[col].value for g in race.groups if g.sufficient and not g.suppressed]
        everyone = [g.cells[col].value for g in race.groups if not g.suppressed]
        line = threshold_line(race, metric)
        assert line is not None
        assert line[0] == pytest.approx(min(v for v in judged if v is not None) + 0.1)
        assert min(v for v in everyone if v is not None) < min(v for v in judged if v is not None)  # it matters
        assert "judged" in line[1]


def test_binary_pdf_tables_and_charts_keep_every_group_named_in_a_failure(compas_doc: dict[str, Any]) -> None:
    view = build_view(compas_doc, min_cell_size=10)
    for section in view.sections:
        named = set()
        for r in compas_doc["results"]:
            if r["slicing"] == section.attributes and r["status"] == "fail":
                named |= {
                    " · ".join(g[a] for a in section.attributes) for g in (r["worst_group"], r["best_group"]) if g
                }
        visible = {g.label for g in section.groups if not g.suppressed}
        assert named & visible <= {g.label for g in section.highlight}, section.key
        assert named & visible <= {g.label for g in chart_rows(section, 24)}, section.key
    wide = next(s for s in view.sections if s.attributes == ["race", "sex", "age_cat"])
    assert len(wide.highlight) < len(wide.groups), "the widest intersection must not fit for this test to bite"


def test_every_page_names_the_worst_off_group_by_the_cores_one_definition(compas_doc: dict[str, Any]) -> None:
    """Page 1, the results tables and the worst-off subgroups read worst-off from GroupMetric.higher_is_better."""
    view = build_view(compas_doc, min_cell_size=1)  # no suppression: the point is which group is worst off
    rows = [r for s in view.sections for r in s.results]
    checked = 0
    for row in rows:
        bases = policy_metric(row.metric).bases
        direction = GroupMetric.registry[bases[0]].higher_is_better if len(bases) == 1 else None
        if direction is None or row.worst_group.endswith("(rates withheld)"):
            continue
        section = next(s for s in view.sections if s.attributes == row.slicing)
        col = section.metric_names.index(bases[0])
        judged = [g for g in section.groups if g.sufficient and not g.suppressed and g.cells[col].value is not None]
        pick = min if direction else max
        assert row.worst_group == pick(judged, key=lambda g: g.cells[col].value or 0.0).label, row.metric
        checked += 1
    assert checked >= 10
    for headline in view.headline_failures:  # page 1 names the same group as the slicing's results table
        same = next(r for r in rows if (r.metric, r.slicing) == (headline.metric, headline.slicing))
        assert headline.worst_group == same.worst_group
    # The worst-off table names a rate after its adverse word, in lower case ("lowest selection rate").
    rates = {in_sentence(rate_label(name, Outcomes()).split(" – ")[0]): name for name in GroupMetric.registry}
    for worst in view.worst_subgroups:
        name = rates[worst.rate.split(" – ")[0]]
        assert worst.adverse == ("lowest" if GroupMetric.registry[name].higher_is_better else "highest"), name


#: Where a number is formatted by hand in a user-facing text (an f-string's ``:.3f``, ``:+.4f``): the one rule is
#: ``fairgate.engine.text`` (fmt, fmt_signed, fmt_p, interval_text, bracket_text). Charts' coordinates and the
#: validation messages' templates (counts written ``:.0f`` by Great Expectations' own renderer) are not texts.
_HAND_FORMATTED = re.compile(r"\{[^{}\n]*:\+?\.\d+f\}")
_NOT_TEXT = ("tasks/render/", "tasks/serve/", "tasks/validation/")


def test_no_number_reaches_a_reader_formatted_by_hand() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for folder in ("fairgate", "tasks", "flows", "cli")
        for path in sorted((root / folder).rglob("*.py"))
        if not str(path.relative_to(root)).startswith(_NOT_TEXT)
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _HAND_FORMATTED.search(line)
    ]
    assert found == [], "\n".join(found)


def test_a_promotion_reason_and_the_cli_use_the_cores_interval() -> None:
    from cli.console import number
    from fairgate.engine.text import bracket_text
    from fairgate.mitigation.promotion import _brief

    low, high = 0.42252, 0.89899
    brief = _brief(
        {
            "metric": "accuracy_difference",
            "slicing": ["race"],
            "threshold": 0.1,
            "value": 0.66,
            "ci_low": low,
            "ci_high": high,
        }
    )
    assert "[0.422, 0.899]" in brief  # not 0.423: the lower end rounded down, as interval_text does
    assert bracket_text(low, high) == f"[{interval_text(low, high).replace('–', ', ')}]"
    assert number(-0.0342, signed=True) == f"{MINUS}0.034"


def test_intervals_sit_beneath_their_values_when_the_counts_take_four_columns(compas_doc: dict[str, Any]) -> None:
    """The HTML gives TP, FP, TN and FN a column each: an interval printed beside its value there ran into the
    next column ("0.666 0.64–0.70.788"). The PDF, with the counts in one column, keeps intervals beside values."""
    from tasks.render.report import render_html

    view = build_view(compas_doc)
    for full_tables in (True, False):
        html = render_html(view, {}, full_tables=full_tables)
        tables = re.findall(r'<table class="(groups[^"]*)">(.*?)</table>', html, flags=re.S)
        counted = [(cls, body) for cls, body in tables if "Caucasian · Male" in body and "TP" in body]
        assert counted, full_tables
        for cls, body in counted:
            four_columns = all(f'class="num count">{c}</th>' in body for c in ("TP", "FP", "TN", "FN"))
            assert four_columns == full_tables
            assert ("inline-ci" in cls) != full_tables, (full_tables, cls)
