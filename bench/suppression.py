"""Bench: complementary small-cell suppression on the demos' audits and on a census-like generated audit.

For each audit it prints, per rule, how many groups have their rates withheld by size (under 100 people, 100 to
999, 1,000 or more, naming the last), how many sizes are withheld, and the CPU and wall time:

- ``sizes only``: the sizes' complementary suppression, no counts (the rule before counts were protected);
- ``what reports use``: sizes and confusion counts; when one side of a judged gap is withheld the other side's
  rates too; the rates a judged gap of selection rates reveals whatever is withheld taken as published.

COMPAS (7,214 people; race, sex, age_cat, pairs and the triple: 75 groups) is ``fairgate demo``'s audit; the
multiclass demo (``fairgate demo --task multiclass``, COMPAS's three tiers) has 3 x 3 confusion matrices; the
census-like audit is tests/report/test_suppression_attack.py's (3,000 seeded rows, skewed race and age);
``mcsmall`` is tests/report/test_suppression_multiclass.py's multiclass audit with many small intersections. A
multiclass audit is measured per class (what reports use) and with every rate of a group withheld at once.

    .venv/bin/python bench/suppression.py [--repeat 3] [--audits COMPAS,multiclass,mcsmall,census] [--k 10,20,40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "report"))

from conftest import COMPAS_CSV, compas_frame, demo_policy  # noqa: E402
from test_suppression_attack import CENSUS, _audit, _frame  # noqa: E402
from test_suppression_multiclass import many_small_doc, withheld_figures  # noqa: E402

import fairgate  # noqa: E402
import fairgate.report.suppress as suppress_module  # noqa: E402
import fairgate.report.tables as tables_module  # noqa: E402
from fairgate.document import AuditDocument  # noqa: E402
from fairgate.engine.labels import group_key  # noqa: E402
from fairgate.engine.multiclass.audit import adjudicate_multiclass, count_multiclass, slicings_multiclass  # noqa: E402
from fairgate.report.count_cells import multiclass_counts  # noqa: E402
from fairgate.report.disclosure import clear_patterns  # noqa: E402
from fairgate.report.format import group_label  # noqa: E402
from fairgate.report.suppress import Suppression  # noqa: E402
from tasks.inputs.io import demo_rows  # noqa: E402


def timed(run: Callable[[], Suppression], repeat: int) -> tuple[Suppression, list[float], list[float]]:
    """The last suppression, and the CPU and wall seconds of each run."""
    cpu, wall, out = [], [], None
    for _ in range(repeat):
        clear_patterns()  # a fresh computation each run, not the pattern kept from the last
        if hasattr(tables_module, "clear_blocks"):  # nor the blocks ranked last (a checkout that keeps them)
            tables_module.clear_blocks()
        suppress_module._RELEASED.clear()  # nor the multiclass classes released last
        c, w = time.process_time(), time.perf_counter()
        out = run()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    assert out is not None
    return out, cpu, wall


def compas() -> AuditDocument:
    model = fairgate.ModelInfo(name="compas", version="bench")
    result = fairgate.audit(compas_frame(), demo_policy(), model=model, run_id="bench")
    return AuditDocument.model_validate(json.loads(result.to_json()))


def multiclass() -> AuditDocument:
    rows = demo_rows(COMPAS_CSV, "demo_multiclass")
    text = (ROOT / "fairgate" / "policies" / "compas_multiclass.yaml").read_text()
    policy = fairgate.Policy.from_yaml(text.replace("n_bootstrap: 1000", "n_bootstrap: 50"))
    cube = count_multiclass(rows, policy)
    return AuditDocument.model_validate(
        adjudicate_multiclass(cube, slicings_multiclass(cube, policy), policy).to_dict()
    )


def mcsmall() -> AuditDocument:
    return AuditDocument.model_validate(many_small_doc())


def census() -> AuditDocument:
    frame = _frame(np.random.default_rng(11), 3000, CENSUS)
    return AuditDocument.model_validate(_audit(frame, {a: v for a, (v, _) in CENSUS.items()}, "null", 30))


def withheld_by_size(doc: AuditDocument, s: Suppression) -> str:
    """Groups with rates withheld: under 100, 100-999, 1,000 or more (named)."""
    classes = [0, 0, 0]
    large = []
    groups = doc.multiclass.groups if doc.multiclass is not None else doc.groups
    for g in groups:
        if g.slicing and s.hides(g.slicing, g.group):
            n = g.n or 0.0
            classes[(n >= 100) + (n >= 1000)] += 1
            if n >= 1000:
                large.append(f"{group_label(g.group, g.slicing)} ({n:,.0f})")
    text = f"{sum(classes):>2} withheld (<100: {classes[0]}, 100-999: {classes[1]}, >=1000: {classes[2]})"
    return text + (f" [{'; '.join(large)}]" if large else "")


def bench(name: str, doc: AuditDocument, repeat: int, k: int) -> None:
    groups = doc.multiclass.groups if doc.multiclass is not None else doc.groups
    n_groups = sum(1 for g in groups if g.slicing)
    own = sum(1 for g in groups if g.slicing and _small_own(g, k))
    print(f"{name}: {n_groups} groups, {own} holding a count from 1 to {k - 1} of their own")
    runs = {
        "sizes only        ": lambda: Suppression.of(doc.groups, k, doc.n_rows),
        "what reports use  ": lambda: Suppression.of_document(doc, k),
    }
    if doc.multiclass is not None:  # per class (what reports use) against every rate of a group at once
        runs = {
            "every rate of a group ": lambda: whole_groups(doc, k),
            "per class (reports)   ": runs["what reports use  "],
        }
    for label, run in runs.items():
        s, cpu, wall = timed(run, repeat)
        n_size = sum(len(v) for v in s.size_hidden.values())
        by_class = ""
        if doc.multiclass is not None:
            every, classes = withheld_figures(doc, s)
            by_class = f" {every} with every class withheld, {classes} group-classes withheld;"
        print(
            f"  {label}: {withheld_by_size(doc, s)};{by_class} {n_size} sizes; "
            f"CPU median {statistics.median(cpu):.3f} s, wall median {statistics.median(wall):.3f} s, n={repeat}"
        )


def whole_groups(doc: AuditDocument, k: int) -> Suppression:
    """The multiclass rule before classes: any hidden cell withholds every rate of the group."""
    assert doc.multiclass is not None
    pairs = [
        ((frozenset(r.slicing), group_key(r.worst_group)), (frozenset(r.slicing), group_key(r.best_group)))
        for r in doc.results
        if r.slicing and r.worst_group and r.best_group
    ]
    out = Suppression.of(doc.groups, k, doc.n_rows, multiclass_counts(doc.multiclass), pairs)
    out.withhold_partners(doc, covered=set())
    return out


def _small_own(g: Any, k: int) -> bool:
    from fairgate.report.suppress import confusion_counts

    cells = [v for row in g.confusion or [] for v in row] if hasattr(g, "confusion") else confusion_counts(g)
    return any(v is not None and 0 < v < k for v in [g.n, *cells])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--k", default="10", help="min_cell_size values, comma-separated (e.g. 10,20,40)")
    parser.add_argument("--audits", default="COMPAS,multiclass,census", help="which audits, comma-separated")
    args = parser.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load average: {' '.join(f.read().split()[:3])}")
    wanted = args.audits.split(",")
    for name, make in (("COMPAS", compas), ("multiclass", multiclass), ("mcsmall", mcsmall), ("census", census)):
        if name in wanted:
            doc = make()
            for k in (int(v) for v in args.k.split(",")):
                print(f"k = {k}")
                bench(name, doc, args.repeat, k)
    with open("/proc/loadavg") as f:
        print(f"load average: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()
