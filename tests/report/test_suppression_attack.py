"""Complementary suppression against an attacker that subtracts, solves and bounds over every published table.

The attacker (tests/report/suppression_attacker.py) is written apart from fairgate.report.disclosure: it reads
the published tables from the report's view model (sizes, printed TP/FP/TN/FN counts, printed rates with their
sizes) and tries every subtraction, the exact linear-algebra test and the non-negativity bounds. It must find
nothing on the COMPAS demo, on a census-income-like audit and on an audit with many small intersections; and it
must find the leaks of the old rules (per-table; sizes only with counts printed and "n < k" labels), so it can
fail.
"""

from __future__ import annotations

import itertools
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from suppression_attacker import (
    OUTCOMES,
    POPULATION,
    RATES,
    Publication,
    bounded,
    cell_of,
    count_subtraction,
    counts_of,
    from_rows,
    from_view,
    gap_integer,
    integer,
    linear,
    linear_counts,
    subtraction,
    with_result_gaps,
    with_withheld_gaps,
    withheld_gap_pairs,
)

import fairgate
from fairgate.document import AuditDocument
from fairgate.engine.labels import group_key
from fairgate.report import build_view
from fairgate.report.suppress import Suppression, document_counts, groups_by_slicing, primary_only

K = 10


def levels(doc: AuditDocument) -> dict[str, list[str]]:
    """Every value each attribute takes in any group."""
    out: dict[str, set[str]] = {}
    for g in doc.groups:
        for a, v in g.group.items():
            out.setdefault(a, set()).add(v)
    return {a: sorted(v) for a, v in out.items()}


def attack(doc: AuditDocument, pub: Publication) -> tuple[dict[Any, float], set[Any]]:
    return subtraction(pub), linear(pub, levels(doc))


def report_publication(document: dict[str, Any], k: int = K) -> tuple[AuditDocument, Publication]:
    doc = AuditDocument.model_validate(document)
    return doc, from_view(build_view(doc, min_cell_size=k), doc.n_rows, doc)


def assert_nothing_recovered(doc: AuditDocument, pub: Publication, k: int = K) -> None:
    """No hidden size or count is derived, pinned or bounded under k; no printed size or count is under k."""
    assert pub.with_counts, "the tables should print counts, or the count attacks prove nothing"
    assert pub.hidden_counts
    assert not [(c, v) for c, v in pub.visible.items() if 0 < v < k]
    assert not [(t, v) for t, v in pub.counts.items() if 0 < v < k]
    assert subtraction(pub) == {}
    assert count_subtraction(pub) == {}
    lv = levels(doc)
    assert linear(pub, lv) == set()
    assert linear_counts(pub, lv) == set()
    assert bounded(pub, lv, k) == {}
    assert integer(pub, lv, k) == {}


def with_gaps(doc: AuditDocument, pub: Publication) -> Publication:
    """What the judged results add: a shown side's rate and the gap give the other's; a gap between two withheld
    rates is an equation between their counts (whole-number pairs pinned are added as published)."""
    pub = with_withheld_gaps(with_result_gaps(pub, doc), doc)
    gap_integer(pub, levels(doc), doc)
    return pub


def old_counts_publication(doc: AuditDocument, k: int = K) -> Publication:
    """The previous pattern: sizes suppressed (complementary, sizes only), every visible group printing its
    counts and rates, and "n < k" beside the hidden groups under k."""
    old = Suppression.of(doc.groups, k, doc.n_rows)  # without counts: the sizes-only rule
    hidden = {cell_of(s, json.loads(key)) for s, keys in old.hidden.items() for key in keys}
    pub = from_rows([(g.slicing, g.group, g.n) for g in doc.groups], hidden, doc.n_rows)
    pub.with_counts = True
    for g in doc.groups:
        c = cell_of(g.slicing, g.group)
        if g.slicing and c not in hidden:
            pub.counts |= {(c, o): v for o, v in zip(OUTCOMES, counts_of(g) or [], strict=True)}
            pub.rates |= {
                (c, m): g.metrics[m].value for m in RATES if m in g.metrics and g.metrics[m].value is not None
            }
    first = [g for g in doc.groups if len(g.slicing) == 1 and g.slicing == doc.groups[1].slicing]
    for i, o in enumerate(OUTCOMES):
        pub.counts[(POPULATION, o)] = sum((counts_of(g) or [0.0] * 4)[i] for g in first)
    pub.small = {c for c in hidden if next(g.n for g in doc.groups if cell_of(g.slicing, g.group) == c) < k}
    return pub


def old_rule_publication(doc: AuditDocument, k: int = K) -> Publication:
    hidden = {
        cell_of(slicing, json.loads(key))
        for slicing, rows in groups_by_slicing(doc.groups).items()
        for key in primary_only(rows, k)
    }
    return from_rows([(g.slicing, g.group, g.n) for g in doc.groups], hidden, doc.n_rows)


def assert_every_small_group_hidden(doc: AuditDocument, pub: Publication, k: int = K) -> None:
    small = {cell_of(g.slicing, g.group) for g in doc.groups if g.slicing and 0 < g.n < k}
    assert small, "the audit should have small groups, or the test proves nothing"
    assert small <= pub.hidden


# --- the COMPAS demo (real data) ---------------------------------------------------------------------------


def test_compas_no_suppressed_size_or_count_can_be_recovered(compas_doc: dict[str, Any]) -> None:
    doc, pub = report_publication(compas_doc)
    assert_every_small_group_hidden(doc, pub)
    # The failures name their groups and gaps: with one side shown, the other's rate; with both withheld, an
    # equation between their counts (and both rates, from a difference and a ratio of the same two).
    assert_nothing_recovered(doc, with_gaps(doc, pub))
    # The examples are closed: Asian-under-25 (7) is hidden and not the Asian total minus the two other
    # age groups; Asian-Female (2) is not Asian minus Asian-Male.
    asian_young = cell_of(["race", "age_cat"], {"race": "Asian", "age_cat": "Less than 25"})
    assert asian_young in pub.hidden
    assert cell_of(["race"], {"race": "African-American"}) in pub.visible  # small cells go, not whole tables
    shown = {c for c, _ in pub.rates}
    assert len(shown) >= 15  # and the large groups keep their rates: both sexes, every age band
    assert {cell_of(["sex"], {"sex": s}) for s in ("Female", "Male")} <= shown
    assert {cell_of(["age_cat"], {"age_cat": a}) for a in ("25 - 45", "Greater than 45", "Less than 25")} <= shown
    # The two largest race groups are sides of judged gaps: they keep their rates (complements avoid the sides
    # of judged results).
    assert {cell_of(["race"], {"race": r}) for r in ("African-American", "Caucasian")} <= shown


def test_compas_failure_says_why_its_worst_off_group_is_withheld(compas_doc: dict[str, Any]) -> None:
    """African-American · Male (3,044) is withheld with Hispanic · Female, the other side of the race x sex
    failures: each failing row says why in words; a failure whose groups show their rates says nothing."""
    doc = AuditDocument.model_validate(compas_doc)
    rows = [r for s in build_view(doc, min_cell_size=K).sections for r in s.results if r.status == "fail"]
    race_sex = [r for r in rows if r.slicing == ["race", "sex"]]
    assert race_sex
    assert all("(rates withheld)" in r.worst_group for r in race_sex)
    why = "withheld: with the gap, its rates would reveal Hispanic · Female's counts"
    assert {r.withheld_why for r in race_sex} == {why}
    assert {r.withheld_why for r in rows if r.slicing == ["race"]} == {""}


def test_compas_old_count_pattern_leaks_to_the_same_attacker(compas_doc: dict[str, Any]) -> None:
    """Sizes-only suppression with the counts printed: hidden cells' counts are pinned by non-negativity (the
    hidden cells' FN in a row sum to what the published ones leave), and small counts are printed outright."""
    doc = AuditDocument.model_validate(compas_doc)
    pub = old_counts_publication(doc)
    assert [(t, v) for t, v in pub.counts.items() if 0 < v < K]  # printed small counts
    leaks = bounded(pub, levels(doc), K)
    true = {cell_of(g.slicing, g.group): counts_of(g) for g in doc.groups}
    pinned = {t: lo for t, (lo, hi) in leaks.items() if hi - lo < 1e-6 and t[1] in OUTCOMES}
    assert len(pinned) >= 5
    assert all(true[c][OUTCOMES.index(o)] == pytest.approx(v, abs=1e-6) for (c, o), v in pinned.items())
    # "n < 10" beside a hidden group bounds its size under 10: the label alone tells it is small.
    asian_young = cell_of(["race", "age_cat"], {"race": "Asian", "age_cat": "Less than 25"})
    assert asian_young in pub.small


def test_compas_gaps_leak_without_withholding_the_partners(compas_doc: dict[str, Any]) -> None:
    """A failure names its worst-off and best-off groups and prints their gap: with the best-off group's rate
    shown, the worst-off group's follows. Without withholding such partners the attacker pins hidden counts."""
    doc = AuditDocument.model_validate(compas_doc)
    alone = Suppression.of(doc.groups, K, doc.n_rows, document_counts(doc))  # the counts rule, no partners
    pub = _publication(doc, alone)
    assert bounded(pub, levels(doc), K) == {}  # the tables alone hold
    leaks = bounded(with_result_gaps(pub, doc), levels(doc), K)
    true = {cell_of(g.slicing, g.group): counts_of(g) for g in doc.groups}
    pinned = {t: lo for t, (lo, hi) in leaks.items() if hi - lo < 1e-6 and 0 < lo < K}
    assert pinned  # e.g. Hispanic-Female's FN (7)
    assert all(true[c][OUTCOMES.index(o)] == pytest.approx(v, abs=1e-6) for (c, o), v in pinned.items())


def test_compas_gaps_between_withheld_rates_leak_without_the_revealed_rates(compas_doc: dict[str, Any]) -> None:
    """Both sides of the race x sex failure withheld, both sizes printed (the rule before it took a judged
    selection-rate gap as revealing both rates): the difference and the ratio of the two selection rates give
    both, so their favourable decisions (African-American · Male 1,207, Hispanic · Female 87), and with the
    tables the attacker pins Hispanic · Female's false positives (24) and bounds small counts under k."""
    doc = AuditDocument.model_validate(compas_doc)
    pairs = [
        ((frozenset(r.slicing), group_key(r.worst_group)), (frozenset(r.slicing), group_key(r.best_group)))
        for r in doc.results
        if r.slicing and r.worst_group and r.best_group
    ]
    old = Suppression.of(doc.groups, K, doc.n_rows, document_counts(doc), pairs)
    old.withhold_partners(doc, covered=set())
    pub = with_result_gaps(_publication(doc, old), doc)
    assert bounded(pub, levels(doc), K) == {}  # without the new route the old pattern holds
    pub = with_withheld_gaps(pub, doc)
    hispanic_female = cell_of(["race", "sex"], {"race": "Hispanic", "sex": "Female"})
    assert [b for _, _, b in withheld_gap_pairs(pub, doc)].count(hispanic_female) == 2  # both results
    found = gap_integer(pub, levels(doc), doc)
    assert [(1207, 87)] in found.values()  # one whole-number pair left
    true = {cell_of(g.slicing, g.group): counts_of(g) for g in doc.groups}
    assert (hispanic_female, "fp") in linear_counts(pub, levels(doc))
    leaks = bounded(pub, levels(doc), K)
    assert leaks[(hispanic_female, "fp")] == pytest.approx((24.0, 24.0), abs=1e-6)
    assert true[hispanic_female][OUTCOMES.index("fp")] == 24
    small = {t: hi for t, (_, hi) in leaks.items() if hi < K}
    assert small  # small counts bounded under k
    assert all(true[c][OUTCOMES.index(o)] <= hi + 1e-6 for (c, o), hi in small.items())


def _publication(doc: AuditDocument, suppression: Suppression) -> Publication:
    """What a report with this suppression prints: shown sizes, printed counts, shown groups' rates."""
    pub = Publication({}, {POPULATION: float(doc.n_rows)}, {}, {}, True)
    for g in doc.groups:
        if not g.slicing:
            continue
        c = cell_of(g.slicing, g.group)
        pub.groups[c] = dict(g.group)
        if not suppression.hides_size(g.slicing, g.group):
            pub.visible[c] = float(g.n)
        for o, v in zip(OUTCOMES, counts_of(g) or [], strict=True):
            if not suppression.hides_count(g.slicing, g.group, o):
                pub.counts[(c, o)] = v
        if not suppression.hides(g.slicing, g.group):
            shown = {m: g.metrics[m].value for m in RATES if m in g.metrics}
            pub.rates |= {(c, m): v for m, v in shown.items() if v is not None}
    first = [g for g in doc.groups if g.slicing == ["race"]]
    for i, o in enumerate(OUTCOMES):
        pub.counts[(POPULATION, o)] = sum((counts_of(g) or [0.0] * 4)[i] for g in first)
    return pub


def test_compas_old_rule_leaks_to_the_same_attacker(compas_doc: dict[str, Any]) -> None:
    doc = AuditDocument.model_validate(compas_doc)
    found, solvable = attack(doc, old_rule_publication(doc))
    asian_female = cell_of(["race", "sex"], {"race": "Asian", "sex": "Female"})
    assert found[asian_female] == 2  # Asian 32 - Asian-Male 30
    assert asian_female in solvable
    assert set(found) <= solvable  # every subtraction is a linear derivation too


def test_compas_html_prints_no_small_number_and_no_hidden_rate(
    compas_report: dict[str, Path], compas_doc: dict[str, Any]
) -> None:
    """In the rendered HTML no group table prints a size or count from 1 to k-1; a suppressed row prints no
    rate; and the printed sizes are exactly the view's visible sizes (so the attacker above saw what a reader
    sees)."""
    rows = _group_rows(compas_report["html"].read_text())
    suppressed = [cells for cls, cells in rows if "suppressed" in cls]
    assert suppressed
    numbers = [float(c.replace(",", "")) for _, cells in rows for c in cells[1:] if re.fullmatch(r"[0-9,]+", c)]
    assert numbers
    assert not [v for v in numbers if 0 < v < K]
    _, pub = report_publication(compas_doc)
    n_columns = {len(cells) for _, cells in rows}
    for cells in suppressed:
        assert all(c in ("·", "–") or re.fullmatch(r"[0-9,]+", c) for c in cells[2:]), cells
        assert "<" not in "".join(cells), cells  # one label for every hidden group
    printed = sorted(int(cells[1].replace(",", "")) for _, cells in rows if re.fullmatch(r"[0-9,]+", cells[1]))
    assert printed == sorted(int(v) for v in pub.visible.values())  # the population has its own table
    assert n_columns


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, list[str]]] = []
        self.table = 0
        self.cells: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "table" and "groups" in (values.get("class") or ""):
            self.table += 1
        elif tag == "tr" and self.table and self.cells is None:
            self.cls = values.get("class") or ""
            self.cells = []
        elif tag in ("td", "th") and self.cells is not None:
            self.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self.cells is not None:
            if self.cells and self.table and not self._header:
                self.rows.append((self.cls, self.cells))
            self.cells = None
        elif tag == "table" and self.table:
            self.table -= 1

    @property
    def _header(self) -> bool:
        return self.cells is not None and bool(self.cells) and self.cells[0] == "Group"

    def handle_data(self, data: str) -> None:
        if self.cells:
            self.cells[-1] += data.strip()


def _group_rows(html: str) -> list[tuple[str, list[str]]]:
    parser = _Rows()
    parser.feed(html)
    return parser.rows


# --- generated audits (seeded) -----------------------------------------------------------------------------


def _audit(frame: pl.DataFrame, attributes: dict[str, list[str]], pairs: str, min_group_size: int) -> dict[str, Any]:
    attribute_yaml = "\n".join(f"    - {{name: {a}, values: {json.dumps(v)}}}" for a, v in attributes.items())
    policy = fairgate.Policy.from_yaml(
        f"""
fairness_checker:
  sensitive_attributes:
{attribute_yaml}
  metrics:
    - {{name: demographic_parity_difference, threshold: 0.10}}
    - {{name: equal_opportunity_difference, threshold: 0.10}}
  intersectional_analysis: {{enabled: true, min_group_size: {min_group_size}, attribute_pairs: {pairs}}}
  statistics: {{n_bootstrap: 20, seed: 0}}
""",
        source="generated policy",
    )
    result = fairgate.audit(frame, policy, model=fairgate.ModelInfo(name="generated", version="1"), run_id="gen")
    return json.loads(result.to_json())


def _frame(rng: np.random.Generator, n: int, attributes: dict[str, tuple[list[str], list[float]]]) -> pl.DataFrame:
    columns = {a: rng.choice(values, size=n, p=p) for a, (values, p) in attributes.items()}
    score = rng.uniform(0, 1, n)
    return pl.DataFrame(
        {
            **columns,
            "y_true": (rng.uniform(0, 1, n) < score).astype(np.int64),
            "y_pred": (score > 0.5).astype(np.int64),
            "score": score,
        }
    )


CENSUS = {
    "race": (
        ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"],
        [0.855, 0.096, 0.031, 0.01, 0.008],
    ),
    "sex": (["Male", "Female"], [0.67, 0.33]),
    "age": (["17-25", "26-45", "46-65", "66+"], [0.2, 0.5, 0.26, 0.04]),
    "marital": (["Married", "Never-married", "Divorced"], [0.47, 0.33, 0.2]),
}


@pytest.fixture(scope="module")
def census_doc() -> dict[str, Any]:
    """A census-income-like audit: skewed race and age, every pair, triples: many small intersections."""
    frame = _frame(np.random.default_rng(11), 3000, CENSUS)
    return _audit(frame, {a: v for a, (v, _) in CENSUS.items()}, "null", 30)


SMALL = {
    "region": (["north", "south", "east", "west"], [0.4, 0.3, 0.2, 0.1]),
    "sex": (["F", "M", "X"], [0.48, 0.48, 0.04]),
    "age": (["young", "middle", "old"], [0.3, 0.5, 0.2]),
    "disability": (["no", "yes"], [0.9, 0.1]),
}


@pytest.fixture(scope="module")
def small_doc() -> dict[str, Any]:
    """Many small intersections, and pairs chosen so some margins are printed only as parts of a triple."""
    frame = _frame(np.random.default_rng(5), 900, SMALL)
    return _audit(frame, {a: v for a, (v, _) in SMALL.items()}, "[[region, sex], [age, disability]]", 20)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["census_doc", "small_doc"])
def test_generated_audits_no_suppressed_size_or_count_can_be_recovered(
    name: str, request: pytest.FixtureRequest
) -> None:
    doc, pub = report_publication(request.getfixturevalue(name))
    assert_every_small_group_hidden(doc, pub)
    assert len(pub.hidden) >= 10, "many small intersections expected"
    assert_nothing_recovered(doc, with_gaps(doc, pub))


@pytest.mark.parametrize("name", ["census_doc", "small_doc"])
def test_generated_audits_old_rule_leaks(name: str, request: pytest.FixtureRequest) -> None:
    doc = AuditDocument.model_validate(request.getfixturevalue(name))
    found, solvable = attack(doc, old_rule_publication(doc))
    assert found, "the old per-table rule should leak to subtraction here"
    true = {cell_of(g.slicing, g.group): g.n for g in doc.groups}
    assert all(true[c] == pytest.approx(v) for c, v in found.items())  # the attacker's values are right
    assert set(found) <= solvable


@pytest.mark.slow
def test_unprinted_margins_under_the_minimum_are_protected(small_doc: dict[str, Any]) -> None:
    """A margin the report never prints (e.g. sex x age when only triples hold both) is not derivable when it
    is small: summing a triple over the third attribute must not reveal it."""
    doc, pub = report_publication(small_doc)
    printed = {frozenset(g.slicing) for g in doc.groups}
    margins: dict[Any, float] = {}
    triples = sorted({frozenset(g.slicing) for g in doc.groups if len(g.slicing) == 3}, key=sorted)
    for pair in {frozenset(p) for t in triples for p in itertools.combinations(sorted(t), 2)} - printed:
        triple = next(t for t in triples if pair < t)
        for g in doc.groups:  # the pair's margin, summed from one triple's groups
            if frozenset(g.slicing) == triple:
                c = cell_of(sorted(pair), {a: g.group[a] for a in pair})
                margins[c] = margins.get(c, 0.0) + g.n
    small = {c for c, v in margins.items() if 0 < v < K}
    assert small, "the generated data should have a small unprinted margin"
    assert linear(pub, levels(doc), small) == set()


# --- the rule itself ---------------------------------------------------------------------------------------


def _entry(slicing: list[str], group: dict[str, str], n: float) -> Any:
    from fairgate.document.groups import GroupEntry

    return GroupEntry(slicing=slicing, group=group, n=n, sufficient=n >= 30, metrics={})


def test_complement_is_the_smallest_sibling_and_deterministic() -> None:
    """The issue's example: Asian 32 = Asian-Male 30 + Asian-Female 2. Asian-Male must go (it is the only
    sibling), and then the Female total forces one more female cell: the smallest (Black-Female, 40, not
    White-Female, 50), then Black-Male through the Black total. Nothing else is hidden."""
    sizes = {("Asian", "Male"): 30, ("Asian", "Female"): 2, ("White", "Male"): 50, ("White", "Female"): 50}
    sizes |= {("Black", "Male"): 40, ("Black", "Female"): 40}
    groups = [_entry(["race", "sex"], {"race": r, "sex": s}, n) for (r, s), n in sizes.items()]
    for race in ("Asian", "White", "Black"):
        groups.append(_entry(["race"], {"race": race}, sum(n for (r, _), n in sizes.items() if r == race)))
    for sex in ("Male", "Female"):
        groups.append(_entry(["sex"], {"sex": sex}, sum(n for (_, s), n in sizes.items() if s == sex)))
    first = Suppression.of(groups, K, 212)
    hidden = {json.loads(k)["race"] + "-" + json.loads(k)["sex"] for k in first.hidden[("race", "sex")]}
    assert hidden == {"Asian-Female", "Asian-Male", "Black-Female", "Black-Male"}
    assert first.hidden[("race",)] == set()
    assert first.hidden[("sex",)] == set()
    assert Suppression.of(list(reversed(groups)), K, 212).hidden == first.hidden


def test_a_small_unprinted_margin_is_protected_even_when_its_parts_are_not_linked_otherwise() -> None:
    """Only the triple (a, b, c) and the attributes are printed. The margin a1 x b1 holds 6 people (3 + 3): it
    is never printed, but a1 minus the (printed) a1 x b2 cells would give it. The rule protects it."""
    sizes = {("a1", "b1", "c1"): 3, ("a1", "b1", "c2"): 3, ("a1", "b2", "c1"): 40, ("a1", "b2", "c2"): 50}
    sizes |= {("a2", "b1", "c1"): 45, ("a2", "b1", "c2"): 35, ("a2", "b2", "c1"): 60, ("a2", "b2", "c2"): 70}
    groups = [_entry(["a", "b", "c"], {"a": a, "b": b, "c": c}, n) for (a, b, c), n in sizes.items()]
    for i, name in enumerate("abc"):
        for value in sorted({key[i] for key in sizes}):
            total = sum(n for key, n in sizes.items() if key[i] == value)
            groups.append(_entry([name], {name: value}, total))
    n_rows = sum(sizes.values())
    suppression = Suppression.of(groups, K, n_rows)
    hidden = {cell_of(s, json.loads(k)) for s, keys in suppression.hidden.items() for k in keys}
    pub = from_rows([(g.slicing, g.group, g.n) for g in groups], hidden, n_rows)
    margin = cell_of(["a", "b"], {"a": "a1", "b": "b1"})
    levels = {"a": ["a1", "a2"], "b": ["b1", "b2"], "c": ["c1", "c2"]}
    assert linear(pub, levels, [margin]) == set()
    assert subtraction(pub) == {}


def test_notes_never_state_a_hidden_size() -> None:
    """The small-groups note gives every hidden group one label, "size suppressed", whether it is under k
    (Asian-Female, 2) or hidden with it (Asian-Male, 30: its size would give Asian-Female as 32 - 30); "n < k"
    would tell the two apart."""
    from fairgate.document.diagnostics import Diagnostics, InsufficientGroup
    from fairgate.report.notes import insufficient

    groups = [_entry(["race"], {"race": "Asian"}, 32), _entry(["race"], {"race": "White"}, 100)]
    groups += [_entry(["race", "sex"], {"race": "Asian", "sex": s}, n) for s, n in (("Male", 30), ("Female", 2))]
    groups += [_entry(["race", "sex"], {"race": "White", "sex": s}, 50) for s in ("Male", "Female")]
    groups += [_entry(["sex"], {"sex": s}, n) for s, n in (("Male", 80), ("Female", 52))]
    suppression = Suppression.of(groups, K, 132)
    assert suppression.hides_size(["race", "sex"], {"race": "Asian", "sex": "Male"})
    small = [
        InsufficientGroup(slicing=["race", "sex"], group={"race": "Asian", "sex": s}, n=n, min_group_size=50)
        for s, n in (("Male", 30), ("Female", 2))
    ]
    diagnostics = Diagnostics(base_rates=[], worst_subgroups=[], simpson=[], insufficient_groups=small)
    text = insufficient(diagnostics, suppression)[0].value
    assert "Male (size suppressed)" in text
    assert "Female (size suppressed)" in text
    assert "30" not in text
    assert "<" not in text


def test_missing_values_unknown_group_and_excluded_rows() -> None:
    """Missing race audited as its own small "unknown" group (published, so suppressed like any other), missing
    age left out: the population the tables sum to is then the rows kept (the document's n_rows), which is
    what the report prints. The attacker finds nothing."""
    rng = np.random.default_rng(23)
    frame = _frame(rng, 1500, {a: CENSUS[a] for a in ("race", "sex", "age")})
    frame = frame.with_columns(
        pl.when(pl.Series(rng.uniform(0, 1, 1500) < 0.004)).then(None).otherwise(pl.col("race")).alias("race"),
        pl.when(pl.Series(rng.uniform(0, 1, 1500) < 0.01)).then(None).otherwise(pl.col("age")).alias("age"),
    )
    policy = fairgate.Policy.from_yaml(
        f"""
fairness_checker:
  sensitive_attributes:
    - {{name: race, values: {json.dumps(CENSUS["race"][0])}, missing: unknown}}
    - {{name: sex, values: {json.dumps(CENSUS["sex"][0])}}}
    - {{name: age, values: {json.dumps(CENSUS["age"][0])}}}
  metrics:
    - {{name: demographic_parity_difference, threshold: 0.10}}
  intersectional_analysis: {{enabled: true, min_group_size: 30}}
  statistics: {{n_bootstrap: 20, seed: 0}}
""",
        source="generated policy",
    )
    result = fairgate.audit(frame, policy, model=fairgate.ModelInfo(name="missing", version="1"), run_id="m")
    document = json.loads(result.to_json())
    assert document["n_rows"] < 1500  # missing ages left out
    doc, pub = report_publication(document)
    unknown = cell_of(["race"], {"race": "unknown"})
    assert unknown in pub.groups
    assert 0 < next(g.n for g in doc.groups if cell_of(g.slicing, g.group) == unknown) < K
    assert unknown in pub.hidden
    assert_nothing_recovered(doc, pub)


def test_recommendations_do_not_name_a_complementary_suppressed_group() -> None:
    """Asian-Male (30 people) is hidden so Asian-Female (2) cannot be derived; a recommendation for a failure
    whose worst-off group it is names it with the one mark the result rows give it, and no size."""
    from fairgate.mitigation.advice import recommend

    groups = [_entry(["race"], {"race": "Asian"}, 32), _entry(["race"], {"race": "White"}, 100)]
    groups += [_entry(["race", "sex"], {"race": "Asian", "sex": s}, n) for s, n in (("Male", 30), ("Female", 2))]
    groups += [_entry(["race", "sex"], {"race": "White", "sex": s}, 50) for s in ("Male", "Female")]
    suppression = Suppression.of(groups, K, 132)
    worst = {"race": "Asian", "sex": "Male"}
    assert suppression.hides(["race", "sex"], worst)
    doc = {
        "groups": [g.model_dump() for g in groups],
        "results": [
            {"metric": "demographic_parity_difference", "slicing": ["race", "sex"], "status": "fail", "value": 0.25}
            | {"threshold": 0.1, "worst_group": worst, "critical": False}
        ],
    }
    named = recommend(doc, None, min_cell_size=K)[0]["reason"]
    hidden = recommend(doc, None, min_cell_size=K, hidden=suppression.hides)[0]["reason"]
    assert "Asian · Male." in named  # without the report's suppression: no mark (the test can fail)
    assert "Asian · Male (rates withheld)." in hidden  # the reviewer learns which group it is about
    assert "30" not in hidden
    assert "small" not in hidden


def test_integer_attack_pins_a_rate_whose_denominator_has_one_whole_candidate() -> None:
    """A hidden group of 7 whose selection rate 3/7 is read at full precision, its parent 20 and a sibling 9 shown
    (so it holds at most 11): its size is a multiple of 7, so 7, and its favourable decisions 3. Linear algebra
    and the bounds cannot tell (the size ranges over 0 to 11); whole numbers can. With a parent of 40 the size
    could be 7, 14, 21 or 28 and the attack finds nothing."""
    parent = cell_of(["a"], {"a": "p"})
    x, y, z = (cell_of(["a", "b"], {"a": "p", "b": b}) for b in "xyz")
    groups = {parent: {"a": "p"}} | {c: {"a": "p", "b": b} for c, b in zip((x, y, z), "xyz", strict=True)}
    levels = {"a": ["p"], "b": ["x", "y", "z"]}
    pub = Publication(groups, {POPULATION: 20.0, parent: 20.0, y: 9.0}, {}, {(x, "selection_rate"): 3 / 7}, True)
    assert linear(pub, levels) == set()
    assert integer(pub, levels, K) == {(x, "selection_rate"): [1]}
    pub.visible |= {POPULATION: 40.0, parent: 40.0}
    assert integer(pub, levels, K) == {}
