"""Multiclass suppression per class against the attacker, which models what a multiclass report publishes.

The attacker (tests/report/multiclass_attacker.py over suppression_attacker.py) reads the multiclass pages: every
group's label, printed sizes, printed confusion matrices, each printed class's one-vs-rest rates at full
precision, the population's matrix, the per-class judged gaps between named groups, and the adverse decision's
rates of the groups the report leaves unmarked. It must recover no hidden size, no count from 1 to k-1 (a cell,
or a withheld class's one-vs-rest count) and bound none under k, on the COMPAS tiers demo and on a generated
audit with many small intersections; and it must break the pattern that withholds a class only where the class
holds a small count itself, with no complements (so the test can fail).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl
import pytest
from multiclass_attacker import class_sums, publication, with_class_gaps
from suppression_attacker import Publication, _Atoms, bounded, cell_of, linear, linear_counts
from test_multiclass_report import document  # noqa: F401  (the COMPAS tiers demo's document, a fixture)

import fairgate
from fairgate.document import AuditDocument
from fairgate.report import build_view
from fairgate.report.count_cells import class_unit
from fairgate.report.suppress import Suppression

K = 10


def levels(doc: AuditDocument) -> dict[str, list[str]]:
    out: dict[str, set[str]] = {}
    for g in doc.multiclass.groups:
        for a, v in g.group.items():
            out.setdefault(a, set()).add(v)
    return {a: sorted(v) for a, v in out.items()}


def truths(doc: AuditDocument) -> dict[Any, float]:
    """Every group's size and cells, by the attacker's keys."""
    out: dict[Any, float] = {}
    for g in doc.multiclass.groups:
        c = cell_of(g.slicing, g.group)
        out[(c, "n")] = g.n
        out |= {(c, f"{i}>{j}"): v for i, row in enumerate(g.confusion) for j, v in enumerate(row)}
    return out


def withheld_sums(doc: AuditDocument, pub: Publication, k: int) -> dict[Any, float]:
    """Each one-vs-rest count under k of a class whose rates a shown-size group does not print."""
    n = len(doc.multiclass.classes)
    out = {}
    for g in doc.multiclass.groups:
        c = cell_of(g.slicing, g.group)
        if not g.slicing:
            continue
        for cls in range(n):
            if (c, f"selection_rate[{cls}]") in pub.rates:
                continue
            for cells in class_sums(n, cls).values():
                value = sum(g.confusion[int(o[0])][int(o[2])] for o in cells)
                if value < k:
                    out[(c, cells)] = value
    return out


def recovered(doc: AuditDocument, pub: Publication, k: int = K) -> dict[str, Any]:
    """What the attacker recovers: hidden sizes, and hidden counts (cells or withheld class sums) under k."""
    lv = levels(doc)
    true = truths(doc)
    atoms = _Atoms(pub, lv)
    small_cells = {t for t in pub.hidden_counts if 0 < true[t] < k}
    sums = withheld_sums(doc, pub, k)
    out: dict[str, Any] = {
        "printed": [t for t, v in pub.counts.items() if 0 < v < k] + [c for c, v in pub.visible.items() if 0 < v < k],
        "sizes": linear(pub, lv),
        "cells": linear_counts(pub, lv) & small_cells,
        "sums": {t for t, v in sums.items() if v > 0 and atoms.solvable(t)},
        "bounded": {t: r for t, r in bounded(pub, lv, k).items() if t[1] == "n" or true[t] < k},
    }
    for target, value in sums.items():  # a withheld class's count under k never bounded under k
        vector = atoms.vector(*target)
        high = atoms.solve(-vector, {})
        if high is not None and float(vector @ high) < k - 1e-6:
            out["bounded"][target] = (value, float(vector @ high))
    return {key: v for key, v in out.items() if v}


def report_publication(doc: AuditDocument, k: int = K) -> tuple[Suppression, Publication]:
    suppression = Suppression.of_document(doc, k)
    pub = publication(build_view(doc, min_cell_size=k), doc, suppression.hides)
    return suppression, with_class_gaps(pub, doc)


def classic_publication(doc: AuditDocument, k: int = K) -> Publication:
    """The pattern without complements: a class withheld where its own one-vs-rest counts hold 1 to k-1, a
    matrix where a cell does, a size under k; everything else printed (rates at full precision)."""
    from multiclass_attacker import RATE_NAMES, outcomes, rate_defs

    block = doc.multiclass
    n = len(block.classes)
    favourable = {i for i, c in enumerate(block.classes) if c not in (block.adverse_classes or [])}
    pub = Publication({}, {}, {}, {}, True, outcomes=outcomes(n), rate_defs=rate_defs(n, favourable))
    pub.visible[cell_of([], {})] = float(doc.n_rows)
    for g in block.groups:
        c = cell_of(g.slicing, g.group)
        cells = {(c, f"{i}>{j}"): v for i, row in enumerate(g.confusion) for j, v in enumerate(row)}
        if not g.slicing:
            pub.counts |= cells
            continue
        pub.groups[c] = dict(g.group)
        if g.n >= k:
            pub.visible[c] = g.n
        if g.n >= k and not any(0 < v < k for v in cells.values()):
            pub.counts |= cells
        for cls in range(n):
            counts = [sum(g.confusion[int(o[0])][int(o[2])] for o in s) for s in class_sums(n, cls).values()]
            if g.n >= k and not any(0 < v < k for v in counts):
                pub.rates |= {(c, f"{r}[{cls}]"): g.rates[r][cls].value for r in RATE_NAMES if g.rates[r][cls].value}
    return pub


def withheld_figures(doc: AuditDocument, suppression: Suppression) -> tuple[int, int]:
    """(groups with every class withheld, group-classes withheld) over the slicings."""
    n = len(doc.multiclass.classes)
    per_group = [
        [suppression.hides_unit(g.slicing, g.group, class_unit(c)) for c in range(n)]
        for g in doc.multiclass.groups
        if g.slicing
    ]
    return sum(all(row) for row in per_group), sum(sum(row) for row in per_group)


# --- the COMPAS tiers demo ----------------------------------------------------------------------------------


def test_demo_no_small_count_or_hidden_size_can_be_recovered(document: dict[str, Any]) -> None:  # noqa: F811
    doc = AuditDocument.model_validate(document)
    suppression, pub = report_publication(doc)
    assert pub.hidden_counts, "the report should hide cells, or this proves nothing"
    assert pub.rates
    assert recovered(doc, pub) == {}
    # Per class: a large group keeps the rates of its classes without a small count (Caucasian's High,
    # both sexes' every class), while Asian (32) and Native American (18) withhold every class.
    assert not suppression.hides_unit(["race"], {"race": "Caucasian"}, class_unit(2))
    assert not any(
        suppression.hides_unit(["sex"], {"sex": s}, class_unit(c)) for s in ("Male", "Female") for c in (0, 1, 2)
    )
    assert all(suppression.hides_unit(["race"], {"race": "Asian"}, class_unit(c)) for c in (0, 1, 2))


def test_demo_pattern_without_complements_leaks_to_the_same_attacker(document: dict[str, Any]) -> None:  # noqa: F811
    """Withholding a class only where the class itself holds a small count: Caucasian · Female's 6 people
    truly and predicted High are Caucasian's 44 minus Caucasian · Male's 38, both printed."""
    doc = AuditDocument.model_validate(document)
    pub = classic_publication(doc)
    found = recovered(doc, pub)
    assert found
    cf = cell_of(["race", "sex"], {"race": "Caucasian", "sex": "Female"})
    assert (cf, "2>2") in found["cells"]


def test_the_suppressed_json_nulls_each_withheld_class(document: dict[str, Any]) -> None:  # noqa: F811
    from fairgate.report.published import published_document

    doc = AuditDocument.model_validate(document)
    suppression = Suppression.of_document(doc, K)
    out = published_document(document, K, "suppressed")
    for g in out["multiclass"]["groups"]:
        if not g["slicing"]:
            continue
        for c in range(3):
            hidden = suppression.hides_unit(g["slicing"], g["group"], class_unit(c))
            assert all(
                (r[c]["value"] is None) == hidden for r in g["rates"].values() if r[c]["value"] is not None or hidden
            )
        if suppression.hides_unit(g["slicing"], g["group"], "matrix"):
            assert g["confusion"] is None
        if suppression.hides_size(g["slicing"], g["group"]):
            assert g["n"] is None
    text = json.dumps(out["multiclass"]["groups"])
    asian_female = next(g for g in out["multiclass"]["groups"] if g["group"] == {"race": "Asian", "sex": "Female"})
    assert asian_female["n"] is None
    assert asian_female["confusion"] is None
    assert '"n": 2.0' not in text


# --- a generated audit with many small intersections (seeded) --------------------------------------------------


MANY_SMALL = {
    "region": (["north", "south", "east", "west"], [0.45, 0.3, 0.17, 0.08]),
    "sex": (["F", "M", "X"], [0.49, 0.48, 0.03]),
    "age": (["young", "middle", "old"], [0.3, 0.5, 0.2]),
}


@pytest.fixture(scope="module")
def small_doc() -> dict[str, Any]:
    return many_small_doc()


def many_small_doc() -> dict[str, Any]:
    """2,500 seeded rows, three classes, a skewed region and a rare sex: two pairs, many small intersections."""
    rng = np.random.default_rng(7)
    n = 2500
    frame = {a: rng.choice(v, size=n, p=p) for a, (v, p) in MANY_SMALL.items()}
    truth = rng.choice(["low", "mid", "high"], size=n, p=[0.55, 0.3, 0.15])
    noise = rng.uniform(0, 1, n)
    pred = np.where(noise < 0.6, truth, rng.choice(["low", "mid", "high"], size=n, p=[0.5, 0.3, 0.2]))
    attributes = "\n".join(f"    - {{name: {a}, values: {json.dumps(v)}}}" for a, (v, _) in MANY_SMALL.items())
    policy = fairgate.Policy.from_yaml(
        f"""
fairness_checker:
  task: multiclass
  multiclass: {{classes: [low, mid, high], adverse_classes: [high]}}
  sensitive_attributes:
{attributes}
  metrics:
    - {{name: demographic_parity_difference, threshold: 0.10}}
    - {{name: equal_opportunity_difference, threshold: 0.10}}
    - {{name: adverse.disparate_impact_ratio, threshold: 0.80}}
  intersectional_analysis:
    {{enabled: true, min_group_size: 30, attribute_pairs: [[region, sex], [sex, age]], include_triples: false}}
  statistics: {{n_bootstrap: 20, seed: 0}}
""",
        source="generated policy",
    )
    rows = pl.DataFrame({**frame, "y_true": truth, "y_pred": pred})
    result = fairgate.audit(rows, policy, model=fairgate.ModelInfo(name="generated", version="1"), run_id="mc")
    return json.loads(result.to_json())


@pytest.mark.slow
def test_generated_many_small_intersections_nothing_recovered(small_doc: dict[str, Any]) -> None:
    doc = AuditDocument.model_validate(small_doc)
    suppression, pub = report_publication(doc)
    everything, classes = withheld_figures(doc, suppression)
    assert pub.hidden, "small intersections expected: some sizes withheld"
    assert classes >= 30, "many small intersections expected"
    assert recovered(doc, pub) == {}
    assert everything < len([g for g in doc.multiclass.groups if g.slicing])  # some classes stay shown


@pytest.mark.slow
def test_generated_pattern_without_complements_leaks(small_doc: dict[str, Any]) -> None:
    doc = AuditDocument.model_validate(small_doc)
    assert recovered(doc, classic_publication(doc))
