"""Small-cell suppression, decided once per document so no table or chart can leak a small group or count.

The rule, as statistical agencies apply it to frequency tables: every cell of every published table of people
(a group's size, and each of its confusion counts: TP, FP, TN, FN, or a multiclass confusion cell) holding 1 to
k-1 people is suppressed (primary); then, across every slicing, every count and the population jointly, more
cells are hidden until no hidden cell follows from the published ones by sums and differences, and no hidden
cell under k is bounded under k by them with counts being non-negative (complementary suppression,
:mod:`fairgate.report.disclosure`). A rate with its group's size is a count, so a group with any hidden count
shows none of its rates or counts; a group whose size is hidden shows nothing. Every hidden group carries the
same label, whatever the reason.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fairgate.document.document import AuditDocument
from fairgate.document.groups import GroupEntry
from fairgate.document.multiclass import MulticlassBlock
from fairgate.engine.labels import WITHHELD, group_key, withheld_label
from fairgate.policy.outcomes import RATE_DEFINITIONS
from fairgate.report.disclosure import CellKey, Counts, Line, Tables, suppress
from fairgate.report.format import base_metrics, fmt_count, group_label
from fairgate.report.model import SUPPRESSED
from fairgate.report.tables import count_cell

GroupKey = str  # fairgate.engine.labels.group_key: one key per group, whatever its attribute order
SlicingKey = tuple[str, ...]


def small_count(n: float | None, min_cell_size: int) -> bool:
    """The primary rule for a count printed outside the group tables: 1 to k-1 people is never printed.

    >>> [small_count(n, 10) for n in (None, 0, 1, 9, 10)]
    [False, False, True, True, False]
    """
    return n is not None and 0 < n < min_cell_size


def count_text(n: float | None, min_cell_size: int) -> str:
    """A count outside the group tables (a mitigation's groups, a training cell): the one label when small.

    >>> count_text(18, 20), count_text(18, 10), count_text(0, 10)
    ('suppressed', '18', '0')
    """
    if n is None:
        return "–"
    return SUPPRESSED if small_count(n, min_cell_size) else fmt_count(n)


def groups_by_slicing(groups: Iterable[GroupEntry]) -> dict[SlicingKey, list[GroupEntry]]:
    """The document's groups, per slicing, in document order."""
    out: dict[SlicingKey, list[GroupEntry]] = {}
    for entry in groups:
        out.setdefault(tuple(entry.slicing), []).append(entry)
    return out


def primary_only(rows: Sequence[GroupEntry], k: int) -> set[GroupKey]:
    """The old rule, kept to show what it leaks (tests): n < k, plus the next smallest when one is hidden.

    It protects each slicing on its own, so a hidden intersection is still the attribute's group minus its
    published siblings (Asian 32 - Asian-Male 30 = Asian-Female 2). :class:`Suppression` does not use it.
    """
    primary = {group_key(r.group) for r in rows if r.n is None or r.n < k}
    if len(primary) == 1 and len(rows) > 2:
        others = sorted((r for r in rows if group_key(r.group) not in primary), key=lambda r: r.n or 0.0)
        primary.add(group_key(others[0].group))
    return primary


@dataclass(frozen=True)
class Suppression:
    """Which groups a report hides: ``hides(slicing, group)`` is asked by every table, note and chart."""

    min_cell_size: int
    #: Groups that show no rate, count or chart (their size, or one of their counts, is hidden).
    hidden: dict[SlicingKey, set[GroupKey]]
    sizes: dict[tuple[SlicingKey, GroupKey], float]
    #: Groups whose size is hidden too (a subset of ``hidden``).
    size_hidden: dict[SlicingKey, set[GroupKey]] = field(default_factory=dict)
    #: The hidden counts (by name: tp, fp, ...) of each hidden group whose counts the document states.
    counts_hidden: dict[tuple[SlicingKey, GroupKey], set[str]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        groups: Sequence[GroupEntry],
        min_cell_size: int,
        n_rows: float | None = None,
        counts: Counts | None = None,
        pairs: Iterable[tuple[CellKey, CellKey]] = (),
        revealed: Iterable[Line] = (),
        named: Iterable[CellKey] = (),
    ) -> Suppression:
        """The suppression of a document's groups at ``min_cell_size``; ``n_rows`` is the published total.

        Without ``n_rows`` the total is taken as the sum of the first slicing's groups (what it is, since rows
        with a missing attribute are left out of every slicing). ``counts`` (see :func:`document_counts`) are
        suppressed with the sizes; without them only sizes are. Of each of ``pairs`` of groups (cells), when
        one is withheld the other is too, its counts protected like small ones. ``revealed`` are
        more equations known whatever is withheld (:func:`revealed_rates`); ``named`` the groups a failing
        result names, withheld last.
        """
        if n_rows is None:
            first = next(iter(groups_by_slicing(groups).values()), [])
            n_rows = sum(g.n or 0.0 for g in first)
        tables = Tables.of(((g.slicing, g.group, g.n) for g in groups if g.slicing), n_rows, counts)
        extra = tuple(line for line in revealed if all(m in tables.values for m in line.members))
        if extra:
            tables = dataclasses.replace(tables, lines=tables.lines + extra)
        pattern = suppress(tables, min_cell_size, pairs, named)
        hidden: dict[SlicingKey, set[GroupKey]] = {}
        size_hidden: dict[SlicingKey, set[GroupKey]] = {}
        counts_hidden: dict[tuple[SlicingKey, GroupKey], set[str]] = {}
        for g in groups:
            key, cell = tuple(g.slicing), (frozenset(g.slicing), group_key(g.group))
            hidden.setdefault(key, set())
            size_hidden.setdefault(key, set())
            if cell in pattern.suppressed:
                size_hidden[key].add(cell[1])
            names = {c[1].rsplit("#", 1)[1] for c in tables.counts_of.get(cell, ()) if c in pattern.suppressed}
            if cell in pattern.suppressed or names:
                hidden[key].add(cell[1])
                counts_hidden[(key, cell[1])] = names
        return cls(
            min_cell_size=min_cell_size,
            hidden=hidden,
            sizes={(tuple(g.slicing), group_key(g.group)): g.n for g in groups if g.n is not None},
            size_hidden=size_hidden,
            counts_hidden=counts_hidden,
        )

    @classmethod
    def of_document(cls, document: AuditDocument, min_cell_size: int) -> Suppression:
        """The suppression of a document: its group sizes and their confusion counts, then result partners.

        A result states the gap between its worst-off and best-off groups and names both: with one's rate
        shown, the other's follows to full precision. So when one side is withheld, the other is too (its size
        stays printed). A gap of a rate over the whole group reveals both sides' rates whatever is withheld
        (:func:`revealed_rates`): they are lines of the tables. The groups a failing result names are withheld
        last of all.
        """
        pairs = [
            ((frozenset(r.slicing), group_key(r.worst_group)), (frozenset(r.slicing), group_key(r.best_group)))
            for r in document.results
            if r.slicing and r.worst_group and r.best_group
        ]
        counts = document_counts(document)
        revealed = revealed_rates(document) if counts and document.multiclass is None else []
        named = [
            (frozenset(r.slicing), group_key(g))
            for r in document.results
            if r.slicing and r.status == "fail"
            for g in (r.worst_group, r.best_group)
            if g
        ]
        out = cls.of(document.groups, min_cell_size, document.n_rows, counts, pairs, revealed=revealed, named=named)
        out.withhold_partners(document, covered=set())
        return out

    def withhold_partners(self, document: AuditDocument, covered: set[int]) -> None:
        """Withhold the shown side of each judged result (but those in ``covered``) whose other side is withheld.

        Without counts (regression, ranking) the pattern does not know the pairs, so this closes them.
        """
        changed = True
        while changed:
            changed = False
            for result in document.results:
                sides = [g for g in (result.worst_group, result.best_group) if g]
                hidden = [self.hides(result.slicing, g) for g in sides]
                if id(result) not in covered and len(sides) == 2 and any(hidden) and not all(hidden):
                    self.withhold(result.slicing, sides[hidden.index(False)])
                    changed = True

    def withhold(self, slicing: Sequence[str], group: Mapping[str, object]) -> None:
        """Withhold a shown group's rates and counts, not its size.

        More unknowns never narrow what an attacker can solve for, so the pattern stays safe.
        """
        key = next((s for s in self.hidden if sorted(s) == sorted(slicing)), tuple(slicing))
        self.hidden.setdefault(key, set()).add(group_key(group))
        self.counts_hidden.pop((key, group_key(group)), None)  # none listed: every count hidden

    @property
    def n_hidden(self) -> int:
        """How many groups are suppressed, over every slicing."""
        return sum(len(keys) for keys in self.hidden.values())

    def hides(self, slicing: Sequence[str], group: Mapping[str, object] | None) -> bool:
        """Whether a group of a slicing is suppressed (the whole population never is)."""
        if not group:
            return False
        key, gk = tuple(slicing), group_key(group)
        if key in self.hidden:
            return gk in self.hidden[key]
        same = next((s for s in self.hidden if sorted(s) == sorted(key)), None)  # the attributes in another order
        if same is not None:
            return gk in self.hidden[same]
        # A slicing the groups do not list (a diagnostic's own): hide what is small.
        n = self.sizes.get((key, gk))
        return n is not None and 0 < n < self.min_cell_size

    def hides_size(self, slicing: Sequence[str], group: Mapping[str, object] | None) -> bool:
        """Whether a group's size is suppressed too (its rates and counts are whenever this holds)."""
        if not group or not self.hides(slicing, group):
            return False
        key = next((s for s in self.size_hidden if sorted(s) == sorted(slicing)), None)
        return key is None or group_key(group) in self.size_hidden[key]

    def hides_count(self, slicing: Sequence[str], group: Mapping[str, object], name: str) -> bool:
        """Whether one count (tp, fp, tn, fn) of a group is hidden.

        Every count of a group that shows its rates is published; a hidden group publishes the counts the
        suppression leaves (none when its size is hidden).
        """
        if not self.hides(slicing, group):
            return False
        if self.hides_size(slicing, group):
            return True
        names = self.counts_hidden.get((tuple(slicing), group_key(group)))
        return names is None or name in names

    def name(self, slicing: Sequence[str], group: Mapping[str, object] | None) -> str:
        """A group's name wherever a report names it (a failure's worst-off group, a note), marked when hidden.

        A reviewer always learns which group a result is about; only its figures are withheld.
        """
        if not group:
            return "–"
        label = group_label(group, slicing)
        return withheld_label(label) if self.hides(slicing, group) else label

    def why_withheld(
        self, slicing: Sequence[str], group: Mapping[str, object] | None, partner: Mapping[str, object] | None
    ) -> str:
        """Why a result's named group shows no rates, when its partner's are withheld too ("" otherwise).

        The printed gap with the group's rates would give its partner's: rule 3 withholds them whatever else
        holds, so the words tell nothing about the group's own counts (every such pair reads the same).
        """
        if not group or not partner or not self.hides(slicing, group) or not self.hides(slicing, partner):
            return ""
        return f"withheld: with the gap, its rates would reveal {group_label(partner, slicing)}'s counts"

    def size_text(self, slicing: Sequence[str], group: Mapping[str, object], n: float | None) -> str:
        """A group's size as a table prints it: the one label when the size is hidden."""
        if n is None or self.hides_size(slicing, group):
            return SUPPRESSED
        return fmt_count(n)

    def note(self) -> str:
        """The rule, stated once for every report, e-mail and page that lists groups."""
        k = self.min_cell_size
        here = f" ({self.n_hidden} groups here)" if self.n_hidden else ""
        return (
            f"Small-cell rule: a group's rates are withheld when a count in it (its size, or one of its confusion "
            f"counts: true or false positives or negatives, a cell of a multiclass matrix) is from 1 to {k - 1}, "
            f"and for as few other groups as needed so that no such count can be worked out, or bounded under {k}, "
            f"from everything published, a judged gap included; a size that would reveal one is withheld "
            f'too{here}. Every such group is still named, marked "{WITHHELD}", '
            f"whatever the reason; the full JSON (reporting.json: full) holds its figures for authorised readers."
        )

    def size(self, slicing: Sequence[str], group: Mapping[str, object]) -> float | None:
        """A group's size as the document states it (None when the group is not in the document)."""
        return self.sizes.get((tuple(slicing), group_key(group)))


def document_counts(document: AuditDocument) -> Counts:
    """Each group's confusion counts, keyed by its cell.

    TP, FP, TN, FN of a binary audit, the K x K cells of a multiclass one; empty when the document states none
    (regression and ranking).
    """
    if document.multiclass is not None:
        return multiclass_counts(document.multiclass)
    return binary_counts(document.groups)


def binary_counts(groups: Iterable[GroupEntry]) -> Counts:
    """Each binary group's TP, FP, TN, FN (None where its rates are hidden); empty without these rates."""
    out: dict[CellKey, dict[str, float | None]] = {}
    for g in groups:
        if not g.slicing:
            continue
        values: list[float | None] = list(confusion_counts(g))
        if not values and not any(m in g.metrics for m in _COUNT_RATES):
            return {}  # a document without these rates publishes no counts
        out[(frozenset(g.slicing), group_key(g.group))] = dict(
            zip(COUNT_NAMES, values or [None] * len(COUNT_NAMES), strict=True)
        )
    return out


def multiclass_counts(block: MulticlassBlock) -> Counts:
    """Each multiclass group's confusion cells (true class i predicted j), None where the block hides them."""
    out: dict[CellKey, dict[str, float | None]] = {}
    k = len(block.classes)
    for g in block.groups:
        if not g.slicing:
            continue
        matrix = g.confusion or [[None] * k for _ in range(k)]
        out[(frozenset(g.slicing), group_key(g.group))] = {f"{i}>{j}": matrix[i][j] for i in range(k) for j in range(k)}
    return out


#: The confusion counts of a binary group, favourable outcome = positive.
COUNT_NAMES = ("tp", "fp", "tn", "fn")
#: What each count is: the decision (favourable = positive) and the truth.
_COUNT_KINDS = {
    "tp": {"decision": True, "truth": True},
    "fp": {"decision": True, "truth": False},
    "tn": {"decision": False, "truth": False},
    "fn": {"decision": False, "truth": True},
}


def rate_counts(rate: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """A group rate as counts, (numerator, denominator), from its one definition; None for another metric.

    >>> rate_counts("true_positive_rate"), rate_counts("selection_rate")
    ((('tp',), ('tp', 'fn')), (('tp', 'fp'), ('tp', 'fp', 'tn', 'fn')))
    """
    if rate not in RATE_DEFINITIONS:
        return None
    counted, favourable, given, given_favourable = RATE_DEFINITIONS[rate]
    denominator = tuple(n for n in COUNT_NAMES if given is None or _COUNT_KINDS[n][given] == given_favourable)
    return tuple(n for n in denominator if _COUNT_KINDS[n][counted] == favourable), denominator


def revealed_rates(document: AuditDocument) -> list[Line]:
    """The rates a judged result reveals whatever is withheld, as equations over counts.

    A result over a rate of the whole group (the selection rate: favourable decisions over the size) prints
    the gap between its two named sides. With both sides' rates withheld and both sizes printed, the gap is
    one linear equation between their counts (``a / n_a - b / n_b = gap``); a difference and a ratio of the
    same two rates (demographic parity and disparate impact) give both rates outright, and whole numbers
    often leave one pair of counts for a single gap. So each side's rate is taken as published:
    ``rate * size - numerator = 0``, one line per side (redundant for a group whose counts are printed).
    """
    entries = {(frozenset(g.slicing), group_key(g.group)): g for g in document.groups if g.slicing}
    lines: dict[tuple[CellKey, str], Line] = {}
    for r in document.results:
        if not (r.slicing and r.worst_group and r.best_group):
            continue
        for base in base_metrics(r.metric):
            definition = rate_counts(base)
            if definition is None or definition[1] != COUNT_NAMES:
                continue  # a rate over part of the group: its denominator is not a printed size
            for group in (r.worst_group, r.best_group):
                cell = (frozenset(r.slicing), group_key(group))
                rate = _rate(entries[cell], base) if cell in entries else None
                if rate is not None and math.isfinite(rate):
                    parts = tuple(count_cell(cell, n) for n in definition[0])
                    lines[(cell, base)] = Line(cell, parts, (rate, *(-1.0 for _ in parts)))
    return [lines[key] for key in sorted(lines, key=lambda key: (sorted(key[0][0]), key[0][1], key[1]))]


def _rate(entry: GroupEntry, rate: str) -> float | None:
    estimate = entry.metrics.get(rate)
    return None if estimate is None else estimate.value


_COUNT_RATES = ("base_rate", "true_positive_rate", "false_positive_rate")


def confusion_counts(entry: GroupEntry) -> list[float]:
    """TP, FP, TN, FN of a group, from its size, base rate, TPR and FPR (empty when one is undefined).

    The document keeps rates; the counts follow exactly: positives = n * base rate, TP = TPR * positives.

    >>> from fairgate.document.common import Estimate
    >>> rates = {"base_rate": 0.4, "true_positive_rate": 0.75, "false_positive_rate": 0.5}
    >>> entry = GroupEntry(slicing=["a"], group={"a": "x"}, n=100, sufficient=True,
    ...     metrics={m: Estimate(value=v, ci_low=None, ci_high=None) for m, v in rates.items()})
    >>> confusion_counts(entry)
    [30.0, 30.0, 30.0, 10.0]
    """
    if entry.n is None:  # a suppressed JSON's hidden group: its counts are hidden with its size
        return []
    values = {m: (entry.metrics[m].value if m in entry.metrics else None) for m in _COUNT_RATES}
    if any(v is None or not math.isfinite(v) for v in values.values()):
        # A group without positives has no TPR (or without negatives no FPR): take the count as 0 then.
        base = values["base_rate"]
        if base is None or not math.isfinite(base):
            return []
        if (values["true_positive_rate"] is None and base > 0) or (values["false_positive_rate"] is None and base < 1):
            return []
    positives = entry.n * float(values["base_rate"] or 0.0)
    negatives = entry.n - positives
    tp = positives * float(values["true_positive_rate"] or 0.0)
    fp = negatives * float(values["false_positive_rate"] or 0.0)
    return [round(x, 6) for x in (tp, fp, negatives - fp, positives - tp)]
