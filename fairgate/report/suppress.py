"""Small-cell suppression, decided once per document so no table or chart can leak a small group.

Suppression follows statistical agencies' practice: a group under the minimum is primary-suppressed (its size
and every metric hidden); then, across every slicing and the population jointly, more groups are hidden until no
hidden size (nor any unpublished margin under the minimum) follows from the published ones by sums and
differences (complementary suppression, :mod:`fairgate.report.disclosure`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fairgate.document.groups import GroupEntry
from fairgate.engine.labels import group_key
from fairgate.report.disclosure import Tables, suppress

GroupKey = str  # fairgate.engine.labels.group_key: one key per group, whatever its attribute order
SlicingKey = tuple[str, ...]


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
    hidden: dict[SlicingKey, set[GroupKey]]
    sizes: dict[tuple[SlicingKey, GroupKey], float]

    @classmethod
    def of(cls, groups: Sequence[GroupEntry], min_cell_size: int, n_rows: float | None = None) -> Suppression:
        """The suppression of a document's groups at ``min_cell_size``; ``n_rows`` is the published total.

        Without ``n_rows`` the total is taken as the sum of the first slicing's groups (what it is, since rows
        with a missing attribute are left out of every slicing).
        """
        if n_rows is None:
            first = next(iter(groups_by_slicing(groups).values()), [])
            n_rows = sum(g.n or 0.0 for g in first)
        tables = Tables.of(((g.slicing, g.group, g.n) for g in groups if g.slicing), n_rows)
        pattern = suppress(tables, min_cell_size)
        hidden: dict[SlicingKey, set[GroupKey]] = {}
        for g in groups:
            key = tuple(g.slicing)
            hidden.setdefault(key, set())
            if (frozenset(key), group_key(g.group)) in pattern.suppressed:
                hidden[key].add(group_key(g.group))
        return cls(
            min_cell_size=min_cell_size,
            hidden=hidden,
            sizes={(tuple(g.slicing), group_key(g.group)): g.n for g in groups if g.n is not None},
        )

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

    def size(self, slicing: Sequence[str], group: Mapping[str, object]) -> float | None:
        """A group's size as the document states it (None when the group is not in the document)."""
        return self.sizes.get((tuple(slicing), group_key(group)))
