"""Small-cell suppression, decided once per document so no table or chart can leak a small group.

Suppression follows statistical agencies' practice: a group under the minimum is primary-suppressed (its size
and every metric hidden); if exactly one group of a slicing is suppressed, the next smallest is hidden too
(secondary suppression), so the hidden size cannot be recovered as total minus the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fairgate.document.groups import GroupEntry
from fairgate.engine.labels import group_key

GroupKey = str  # fairgate.engine.labels.group_key: one key per group, whatever its attribute order
SlicingKey = tuple[str, ...]


def groups_by_slicing(groups: Iterable[GroupEntry]) -> dict[SlicingKey, list[GroupEntry]]:
    """The document's groups, per slicing, in document order."""
    out: dict[SlicingKey, list[GroupEntry]] = {}
    for entry in groups:
        out.setdefault(tuple(entry.slicing), []).append(entry)
    return out


def suppressed_groups(rows: Sequence[GroupEntry], k: int) -> set[GroupKey]:
    """Primary suppression (n < k) plus secondary suppression of the next smallest when only one is hidden.

    >>> rows = [GroupEntry(slicing=["a"], group={"a": v}, n=n, sufficient=True, metrics={})
    ...         for v, n in (("x", 5), ("y", 40), ("z", 90))]
    >>> sorted(suppressed_groups(rows, 10))
    ['{"a": "x"}', '{"a": "y"}']
    """
    primary = {group_key(r.group) for r in rows if r.n < k}
    if len(primary) == 1 and len(rows) > 2:
        others = sorted((r for r in rows if group_key(r.group) not in primary), key=lambda r: r.n)
        primary.add(group_key(others[0].group))
    return primary


@dataclass(frozen=True)
class Suppression:
    """Which groups a report hides: ``hides(slicing, group)`` is asked by every table, note and chart."""

    min_cell_size: int
    hidden: dict[SlicingKey, set[GroupKey]]
    sizes: dict[tuple[SlicingKey, GroupKey], float]

    @classmethod
    def of(cls, groups: Sequence[GroupEntry], min_cell_size: int) -> Suppression:
        """The suppression of a document's groups at ``min_cell_size``."""
        by_slicing = groups_by_slicing(groups)
        return cls(
            min_cell_size=min_cell_size,
            hidden={key: suppressed_groups(rows, min_cell_size) for key, rows in by_slicing.items()},
            sizes={(tuple(g.slicing), group_key(g.group)): g.n for g in groups},
        )

    def hides(self, slicing: Sequence[str], group: Mapping[str, object] | None) -> bool:
        """Whether a group of a slicing is suppressed (the whole population never is)."""
        if not group:
            return False
        key, gk = tuple(slicing), group_key(group)
        if gk in self.hidden.get(key, set()):
            return True
        n = self.sizes.get((key, gk))
        return n is not None and n < self.min_cell_size

    def size(self, slicing: Sequence[str], group: Mapping[str, object]) -> float | None:
        """A group's size as the document states it (None when the group is not in the document)."""
        return self.sizes.get((tuple(slicing), group_key(group)))
