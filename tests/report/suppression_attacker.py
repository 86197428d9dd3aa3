"""An attacker on the published group tables, written independently of fairgate.report.disclosure.

It knows what a reader of the report knows: every slicing's group labels (suppressed rows are listed), each
visible group's size, each printed confusion count (TP, FP, TN, FN), each printed rate of a group (a rate with
the group's counts is an equation: TPR * (TP + FN) = TP), the population's size and counts, any label that says
a hidden group is small, and that every table is a margin of the same people. Its attacks:

- ``subtraction``: every parent (a published or already derived cell, or the population) minus any subset of its
  published or derived children in any finer table, and the other way round (a parent as the sum of its
  children), repeated until nothing new is found; on the sizes, and on each count's table alike;
- ``linear``: the exact test. People are split into atoms (one per combination of every attribute's values and,
  with counts, of the outcome TP/FP/TN/FN); a published size, count or rate is a linear equation over atoms; a
  hidden cell is derivable iff its atom vector lies in the row space of the published equations (numpy rank);
- ``integer``: counts are whole numbers. A rate read at full precision is a fraction p/q in lowest terms, so
  its denominator is a multiple m*q of q within the range the published equations leave it (two linear
  programmes) and its numerator m*p: a rate whose hidden counts have one candidate left, or only candidates
  under k, discloses them;
- ``bounded``: non-negativity. Atoms are counts of people, so never negative: a hidden cell's range over the
  non-negative solutions of the published equations (two linear programmes) may be a single point (a sum of
  hidden cells published as 0 pins each at 0) or lie under k (a sum under k bounds each part under k), which
  discloses a small cell without solving for it.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.optimize import linprog

Cell = tuple[frozenset[str], str]  # (attributes, canonical group text)
OUTCOMES = ("tp", "fp", "tn", "fn")
SIZE = "n"
Target = tuple[Cell, str]  # a cell and what of it: SIZE or one of OUTCOMES

#: Each rate a report prints, as (numerator outcomes, denominator outcomes): rate * denominator = numerator.
RATES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "selection_rate": (("tp", "fp"), OUTCOMES),
    "base_rate": (("tp", "fn"), OUTCOMES),
    "true_positive_rate": (("tp",), ("tp", "fn")),
    "false_positive_rate": (("fp",), ("fp", "tn")),
    "false_negative_rate": (("fn",), ("tp", "fn")),
    "true_negative_rate": (("tn",), ("fp", "tn")),
    "positive_predictive_value": (("tp",), ("tp", "fp")),
    "negative_predictive_value": (("tn",), ("tn", "fn")),
    "accuracy": (("tp", "tn"), OUTCOMES),
}


def cell_of(slicing: Sequence[str], group: Mapping[str, str]) -> Cell:
    return frozenset(slicing), json.dumps(sorted((str(a), str(v)) for a, v in group.items()))


POPULATION = cell_of([], {})


@dataclass
class Publication:
    """What the report publishes: each table's group list, the visible sizes, counts and rates."""

    groups: dict[Cell, dict[str, str]]  # every listed group (visible or not), with its values
    visible: dict[Cell, float]  # published sizes (the population included)
    counts: dict[Target, float] = field(default_factory=dict)  # published counts (the population's included)
    rates: dict[tuple[Cell, str], float] = field(default_factory=dict)  # published rates of groups, by metric
    with_counts: bool = False  # the tables have count columns (every group has TP, FP, TN, FN)
    small: set[Cell] = field(default_factory=set)  # hidden groups a label says hold fewer than k
    #: More linear equations over counts: (weight of each (cell, outcome), right-hand side).
    equations: list[tuple[dict[Target, float], float]] = field(default_factory=list)

    @property
    def hidden(self) -> set[Cell]:
        return set(self.groups) - set(self.visible)

    @property
    def hidden_counts(self) -> set[Target]:
        if not self.with_counts:
            return set()
        return {(c, o) for c in self.groups for o in OUTCOMES if (c, o) not in self.counts}

    def targets(self) -> set[Target]:
        return {(c, SIZE) for c in self.hidden} | self.hidden_counts


def subtraction(pub: Publication) -> dict[Cell, float]:
    """Hidden sizes found by differences and sums of parents and children, iterated to a fixed point."""
    return _subtract(pub.groups, pub.visible, pub.hidden)


def count_subtraction(pub: Publication) -> dict[Target, float]:
    """Hidden counts found the same way, each count's tables on their own (the FN table, the TP table...)."""
    found: dict[Target, float] = {}
    if not pub.with_counts:
        return found
    for outcome in OUTCOMES:
        visible = {c: v for (c, o), v in pub.counts.items() if o == outcome}
        hidden = {c for c, o in pub.hidden_counts if o == outcome}
        found |= {(c, outcome): v for c, v in _subtract(pub.groups, visible, hidden).items()}
    return found


def _subtract(groups: Mapping[Cell, Mapping[str, str]], visible: Mapping[Cell, float], hidden: set[Cell]) -> dict:
    known = dict(visible)
    # Every cell the tables are sums of: the listed groups and their margins on fewer attributes, published
    # or not (a margin the report does not print can still be summed up from a finer table, then subtracted).
    cells: dict[Cell, dict[str, str]] = {POPULATION: {}}
    for group in groups.values():
        for size in range(1, len(group) + 1):
            for subset in itertools.combinations(sorted(group), size):
                margin = {a: group[a] for a in subset}
                cells.setdefault(cell_of(subset, margin), margin)
    tables: dict[frozenset[str], list[Cell]] = {}
    for c in cells:
        tables.setdefault(c[0], []).append(c)
    found: dict[Cell, float] = {}
    changed = True
    while changed:
        changed = False
        for parent, values in cells.items():
            for finer, members in tables.items():
                if not parent[0] < finer:
                    continue
                children = [c for c in members if all(cells[c].get(a) == v for a, v in values.items())]
                unknown = [c for c in children if c not in known]
                if parent in known and len(unknown) == 1:
                    # The parent minus every other (published or derived) child: any subset that leaves one.
                    value = known[parent] - sum(known[c] for c in children if c in known)
                    known[unknown[0]] = found[unknown[0]] = value
                    changed = True
                elif parent not in known and children and not unknown:
                    known[parent] = found[parent] = sum(known[c] for c in children)
                    changed = True
    return {c: v for c, v in found.items() if c in hidden}


class _Atoms:
    """The published equations over atoms (attribute values x outcome)."""

    def __init__(self, pub: Publication, levels: Mapping[str, Sequence[str]]) -> None:
        self.names = sorted(levels)
        self.outcomes = OUTCOMES if pub.with_counts else (SIZE,)
        self.atoms = [
            (*combo, o) for combo in itertools.product(*(levels[a] for a in self.names)) for o in self.outcomes
        ]
        rows: list[np.ndarray] = []
        rhs: list[float] = []
        for c, value in sorted(pub.visible.items(), key=str):
            rows.append(self.vector(c, SIZE))
            rhs.append(value)
        for (c, o), value in sorted(pub.counts.items(), key=str):
            rows.append(self.vector(c, o))
            rhs.append(value)
        for (c, metric), rate in sorted(pub.rates.items(), key=str):
            numerator, denominator = RATES[metric]
            rows.append(self.vector(c, numerator) - rate * self.vector(c, denominator))
            rhs.append(0.0)
        for weights, value in pub.equations:
            rows.append(sum((w * self.vector(c, o) for (c, o), w in weights.items()), np.zeros(len(self.atoms))))
            rhs.append(value)
        # A combination a table does not list is empty, and the reader knows it: a published zero.
        for attributes in {c[0] for c in pub.groups}:
            ordered = sorted(attributes)
            for combo in itertools.product(*(levels[a] for a in ordered)):
                cell = cell_of(ordered, dict(zip(ordered, combo, strict=True)))
                if cell not in pub.groups:
                    rows.append(self.vector(cell, SIZE))
                    rhs.append(0.0)
        self.matrix = np.array(rows)
        self.rhs = np.array(rhs)
        # An orthonormal basis of the row space (one SVD): a vector is derivable iff its projection is itself.
        _, singular, vt = np.linalg.svd(self.matrix, full_matrices=False)
        tol = max(self.matrix.shape) * singular[0] * np.finfo(float).eps * 10
        self.basis = vt[singular > tol]

    def vector(self, cell: Cell, what: str | Iterable[str]) -> np.ndarray:
        values = dict(json.loads(cell[1]))
        outcomes = set(self.outcomes) if what == SIZE else ({what} if isinstance(what, str) else set(what))
        return np.array(
            [
                atom[-1] in outcomes and all(atom[self.names.index(a)] == v for a, v in values.items())
                for atom in self.atoms
            ],
            dtype=float,
        )

    def solvable(self, target: Target) -> bool:
        vector = self.vector(*target)
        residual = vector - self.basis.T @ (self.basis @ vector)
        return bool(np.linalg.norm(residual) < 1e-6 * max(1.0, np.linalg.norm(vector)))

    def solve(self, objective: np.ndarray, upper: Mapping[Cell, float]) -> np.ndarray | None:
        """A non-negative solution minimising ``objective`` (None when unbounded)."""
        a_ub = np.array([self.vector(c, SIZE) for c in upper]) if upper else None
        b_ub = np.array(list(upper.values())) if upper else None
        result = linprog(objective, A_ub=a_ub, b_ub=b_ub, A_eq=self.matrix, b_eq=self.rhs, method="highs")
        if result.status == 3:
            return None
        assert result.status == 0, result.message  # the true counts are a solution
        return np.asarray(result.x)


def linear(pub: Publication, levels: Mapping[str, Sequence[str]], targets: Iterable[Cell] = ()) -> set[Cell]:
    """Hidden sizes (and ``targets``, e.g. margins the report does not print) whose atom vector is in the span
    of the published equations."""
    atoms = _Atoms(pub, levels)
    return {c for c in sorted(pub.hidden | set(targets), key=str) if atoms.solvable((c, SIZE))}


def linear_counts(pub: Publication, levels: Mapping[str, Sequence[str]]) -> set[Target]:
    """Hidden counts whose atom vector is in the span of the published equations (sizes, counts and rates)."""
    atoms = _Atoms(pub, levels)
    return {t for t in sorted(pub.hidden_counts, key=str) if atoms.solvable(t)}


def bounded(pub: Publication, levels: Mapping[str, Sequence[str]], k: int) -> dict[Target, tuple[float, float]]:
    """Hidden sizes and counts that non-negativity pins to one value or bounds under k, with their range.

    Each target's range is the min and max of two linear programmes; solutions found on the way are kept, and
    a target that some kept solutions already put at k or more and at two different values is not solved for.
    """
    atoms = _Atoms(pub, levels)
    upper = {c: k - 1.0 for c in pub.small}  # "n < k" beside a hidden group
    targets = sorted(pub.targets(), key=str)
    vectors = {t: atoms.vector(*t) for t in targets}
    seen: dict[Target, list[float]] = {t: [] for t in targets}
    out = {}

    def keep(x: np.ndarray | None) -> None:
        if x is not None:
            for t in targets:
                seen[t].append(float(vectors[t] @ x))

    for target in targets:
        values = seen[target]
        if values and max(values) >= k - 1e-6 and max(values) - min(values) > 1e-6:
            continue
        high_x = atoms.solve(-vectors[target], upper)
        low_x = atoms.solve(vectors[target], upper)
        keep(high_x)
        keep(low_x)
        high = np.inf if high_x is None else float(vectors[target] @ high_x)
        low = float(vectors[target] @ low_x) if low_x is not None else -np.inf
        if high < k - 1e-6 or high - low < 1e-6:
            out[target] = (low, high)
    return out


def integer(pub: Publication, levels: Mapping[str, Sequence[str]], k: int) -> dict[tuple[Cell, str], list[int]]:
    """Rates of groups with hidden counts whose whole-number candidates disclose a count, with the candidates
    (the multipliers m: denominator m*q, numerator m*p).

    Disclosed: one candidate left (the rate's counts are pinned), or every candidate puts the numerator (or the
    denominator minus it) from 1 to k-1 while a hidden count is part of it.
    """
    atoms = _Atoms(pub, levels)
    hidden = pub.hidden_counts | {(c, o) for c in pub.hidden for o in OUTCOMES}
    out: dict[tuple[Cell, str], list[int]] = {}
    for (c, metric), rate in sorted(pub.rates.items(), key=str):
        numerator, denominator = RATES[metric]
        if not any((c, o) in hidden for o in denominator) or not math.isfinite(rate):
            continue
        fraction = Fraction(rate).limit_denominator(1_000_000)
        p, q = fraction.numerator, fraction.denominator
        vector = atoms.vector(c, denominator)
        high_x, low_x = atoms.solve(-vector, {}), atoms.solve(vector, {})
        high = math.inf if high_x is None else float(vector @ high_x)
        low = 0.0 if low_x is None else float(vector @ low_x)
        top = 10**6 if math.isinf(high) else math.floor(high / q + 1e-6)
        candidates = list(range(max(1, math.ceil(low / q - 1e-6)), top + 1))
        rest = tuple(o for o in denominator if o not in numerator)
        parts = [(p, numerator), (q - p, rest)]
        small = [
            share > 0 and candidates and candidates[-1] * share < k and any((c, o) in hidden for o in outcomes)
            for share, outcomes in parts
        ]
        if len(candidates) == 1 or any(small):
            out[(c, metric)] = candidates[:10]
    return out


def counts_of(entry: Any) -> list[float] | None:
    """TP, FP, TN, FN of a document group from its size and rates (the attacker's own arithmetic)."""
    metrics = entry.metrics
    if entry.n is None or "base_rate" not in metrics:
        return None
    base = metrics["base_rate"].value
    tpr = metrics["true_positive_rate"].value if "true_positive_rate" in metrics else None
    fpr = metrics["false_positive_rate"].value if "false_positive_rate" in metrics else None
    positives = entry.n * base
    negatives = entry.n - positives
    tp = positives * (tpr or 0.0)
    fp = negatives * (fpr or 0.0)
    return [round(x, 6) for x in (tp, fp, negatives - fp, positives - tp)]


def from_view(view: object, n_rows: float, document: Any = None) -> Publication:
    """The publication as the report's view model states it: tables, sizes, the printed counts and rates.

    With the ``document``, a printed rate is read at its full precision (stronger than the rounded print) and
    the population's counts are taken as published.
    """
    groups: dict[Cell, dict[str, str]] = {}
    visible: dict[Cell, float] = {POPULATION: float(n_rows)}
    counts: dict[Target, float] = {}
    rates: dict[tuple[Cell, str], float] = {}
    exact = {cell_of(g.slicing, g.group): g for g in document.groups} if document is not None else {}
    with_counts = False
    for section in view.sections:  # type: ignore[attr-defined]
        for g in section.groups:
            c = cell_of(section.attributes, g.group)
            groups[c] = dict(g.group)
            if g.n is not None:
                visible[c] = float(g.n)
            if g.counts and exact:
                with_counts = True
                true = counts_of(exact[c]) or []
                for o, text, value in zip(OUTCOMES, g.counts, true, strict=False):
                    if any(ch.isdigit() for ch in text):
                        counts[(c, o)] = value
            for name, shown in zip(section.metric_names, g.cells, strict=True):
                if name in RATES and shown.value is not None and c in exact:
                    rates[(c, name)] = float(exact[c].metrics[name].value)
    if with_counts:
        first = next(s for s in view.sections if len(s.attributes) == 1)  # type: ignore[attr-defined]
        for i, o in enumerate(OUTCOMES):
            counts[(POPULATION, o)] = sum(
                (counts_of(exact[cell_of(first.attributes, g.group)]) or [0.0] * 4)[i] for g in first.groups
            )
    return Publication(groups, visible, counts, rates, with_counts)


def from_rows(
    rows: Sequence[tuple[Sequence[str], Mapping[str, str], float]], hidden: set[Cell], n_rows: float
) -> Publication:
    """A publication from (slicing, group, n) rows with a given set of hidden cells (e.g. the old rule's)."""
    groups = {cell_of(s, g): {str(a): str(v) for a, v in g.items()} for s, g, _ in rows if s}
    visible = {cell_of(s, g): float(n) for s, g, n in rows if s and cell_of(s, g) not in hidden}
    visible[POPULATION] = float(n_rows)
    return Publication(groups, visible)


#: A judged result's gap as one rate's difference between its worst-off and best-off groups (both named).
RESULT_RATES = {
    "demographic_parity_difference": "selection_rate",
    "equal_opportunity_difference": "true_positive_rate",
}


def with_result_gaps(pub: Publication, document: Any) -> Publication:
    """The publication plus what the judged results give: a result names its worst-off and best-off groups and
    prints their gap, so with one side's rate published the other's is that rate plus or minus the gap (the
    attacker takes the sign the report implies by naming which side is worse)."""
    exact = {cell_of(g.slicing, g.group): g for g in document.groups}
    for r in document.results:
        rate = RESULT_RATES.get(r.metric)
        if rate is None or not r.worst_group or not r.best_group or r.value is None:
            continue
        sides = (cell_of(r.slicing, r.worst_group), cell_of(r.slicing, r.best_group))
        for known, other in (sides, sides[::-1]):
            if (known, rate) not in pub.rates or (other, rate) in pub.rates or other not in exact:
                continue
            truth = exact[other].metrics[rate].value
            derived = min((pub.rates[(known, rate)] + s * r.value for s in (1, -1)), key=lambda c: abs(c - truth))
            if abs(derived - truth) < 1e-9:  # the gap is exactly the two rates' difference
                pub.rates[(other, rate)] = derived
    return pub


#: A judged result over the selection rate: how its value relates the two sides' rates.
SELECTION_RESULTS = {"demographic_parity_difference": "difference", "disparate_impact_ratio": "ratio"}


def withheld_gap_pairs(pub: Publication, document: Any) -> list[tuple[Any, Cell, Cell]]:
    """The judged selection-rate results whose two named sides both have their rates withheld and their sizes
    printed: (result, worst, best)."""
    out = []
    for r in document.results:
        if r.metric not in SELECTION_RESULTS or not r.worst_group or not r.best_group or r.value is None:
            continue
        sides = (cell_of(r.slicing, r.worst_group), cell_of(r.slicing, r.best_group))
        if all((c, "selection_rate") not in pub.rates and c in pub.visible for c in sides):
            out.append((r, *sides))
    return out


def with_withheld_gaps(pub: Publication, document: Any) -> Publication:
    """The publication plus what a judged gap between two *withheld* selection rates gives.

    Both sides' sizes printed: rate = (TP + FP) / n with n known, so the printed difference (or ratio) is one
    linear equation between the two sides' counts. A difference and a ratio of the same two rates give both
    rates outright, whatever the sizes: a side whose size is withheld then has its rate published (for the
    whole-number attack on its size). Read at full precision (the suppressed JSON keeps the result's value);
    the attacker takes the side order the report implies by naming which side is worse."""
    exact = {cell_of(g.slicing, g.group): g for g in document.groups}
    both: dict[tuple[Cell, Cell], dict[str, float]] = {}
    for r in document.results:
        if r.metric in SELECTION_RESULTS and r.worst_group and r.best_group and r.value is not None:
            sides = (cell_of(r.slicing, r.worst_group), cell_of(r.slicing, r.best_group))
            both.setdefault(sides, {})[SELECTION_RESULTS[r.metric]] = float(r.value)
    for (worst, best), values in both.items():
        if len(values) < 2 or worst not in exact or best not in exact:
            continue
        high_rate = values["difference"] / (1 - values["ratio"])  # high - low = d, low = ratio * high
        truth = {c: exact[c].metrics["selection_rate"].value for c in (worst, best)}
        high, low = (worst, best) if truth[worst] > truth[best] else (best, worst)
        for cell, rate in ((high, high_rate), (low, high_rate * values["ratio"])):
            if cell not in pub.visible and (cell, "selection_rate") not in pub.rates:
                pub.rates[(cell, "selection_rate")] = rate
    for r, worst, best in withheld_gap_pairs(pub, document):
        rate = {c: exact[c].metrics["selection_rate"].value for c in (worst, best)}
        n = {c: pub.visible[c] for c in (worst, best)}
        if SELECTION_RESULTS[r.metric] == "difference":
            high, low = (worst, best) if rate[worst] > rate[best] else (best, worst)
            weights = _selection(high, 1 / n[high]) | _selection(low, -1 / n[low])
            pub.equations.append((weights, abs(r.value)))
        else:  # the ratio of the lower rate to the higher
            high, low = (worst, best) if rate[worst] > rate[best] else (best, worst)
            pub.equations.append((_selection(low, 1 / n[low]) | _selection(high, -r.value / n[high]), 0.0))
    return pub


def _selection(cell: Cell, weight: float) -> dict[Target, float]:
    return {(cell, "tp"): weight, (cell, "fp"): weight}


def gap_integer(
    pub: Publication, levels: Mapping[str, Sequence[str]], document: Any
) -> dict[tuple[Cell, Cell], list[tuple[int, int]]]:
    """Whole-number candidates for the favourable decisions (TP + FP) of two withheld sides of a judged
    selection-rate gap (the equations of :func:`with_withheld_gaps` already in ``pub``): every pair of whole
    counts within their ranges over the published equations (linear programmes) that satisfies each of the
    pair's equations. A pair with one candidate left is pinned: its two counts are added to ``pub`` as
    published, so the other attacks use them. Returns the pairs with their candidates (at most 10 listed)."""
    atoms = _Atoms(pub, levels)
    out: dict[tuple[Cell, Cell], list[tuple[int, int]]] = {}
    pairs = {(worst, best) for _, worst, best in withheld_gap_pairs(pub, document)}
    for a, b in sorted(pairs, key=str):
        va, vb = atoms.vector(a, ("tp", "fp")), atoms.vector(b, ("tp", "fp"))
        mine = [(w, v) for w, v in pub.equations if {c for c, _ in w} == {a, b}]
        ranges = []
        for vector in (va, vb):
            high_x, low_x = atoms.solve(-vector, {}), atoms.solve(vector, {})
            assert high_x is not None
            assert low_x is not None
            ranges.append((math.ceil(float(vector @ low_x) - 1e-6), math.floor(float(vector @ high_x) + 1e-6)))
        candidates = []
        first, value = mine[0]
        for cb in range(ranges[1][0], ranges[1][1] + 1):  # each b, the a its first equation leaves
            ca = round((value - first[(b, "tp")] * cb) / first[(a, "tp")])
            if ranges[0][0] <= ca <= ranges[0][1] and all(abs(_weighted(w, a, b, ca, cb) - v) < 1e-9 for w, v in mine):
                candidates.append((ca, cb))
        out[(a, b)] = candidates[:10]
        if len(candidates) == 1:
            ((ca, cb),) = candidates
            pub.equations += [(_selection(a, 1.0), float(ca)), (_selection(b, 1.0), float(cb))]
    return out


def _weighted(weights: Mapping[Target, float], a: Cell, b: Cell, ca: int, cb: int) -> float:
    """An equation's left side with each side's TP + FP at the given counts (its two weights per side equal)."""
    return weights[(a, "tp")] * ca + weights[(b, "tp")] * cb
