"""Group sizes published outside an audit's group tables (a monitoring window, a comparison's evaluation set).

The sizes go through the one small-cell rule (:mod:`fairgate.report.disclosure`): every slicing's groups and the
total are suppressed jointly, so no size of 1 to k-1 people is printed and none follows from the others by sums
and differences. A withheld size is ``None``; the report prints the one label for it and the suppression note.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fairgate.engine.labels import group_key
from fairgate.report.disclosure import Tables, suppress

#: A group's size: (slicing, group, people).
GroupSize = tuple[Sequence[str], Mapping[str, str], float]


def published_sizes(groups: Iterable[GroupSize], n_rows: float, min_cell_size: int) -> list[dict[str, Any]]:
    """Each group's size as it may be published: ``n`` None when the small-cell rule withholds it.

    >>> rows = [(["race"], {"race": "A"}, 90), (["race"], {"race": "B"}, 7), (["race"], {"race": "C"}, 40)]
    >>> [g["n"] for g in published_sizes(rows, 137, 10)]
    [90, None, None]
    """
    listed = [(list(s), {str(a): str(v) for a, v in g.items()}, float(n)) for s, g, n in groups]
    pattern = suppress(Tables.of(listed, float(n_rows)), min_cell_size)
    return [
        {
            "slicing": slicing,
            "group": group,
            "n": None if (frozenset(slicing), group_key(group)) in pattern.suppressed else round(n),
        }
        for slicing, group, n in listed
    ]


def withheld(sizes: Iterable[Mapping[str, Any]]) -> int:
    """How many of the published sizes are withheld."""
    return sum(1 for size in sizes if size.get("n") is None)


def size_note(min_cell_size: int, n_withheld: int) -> str:
    """The small-cell rule as a report states it where it withholds a size.

    >>> size_note(10, 2)[:60]
    'Small-cell rule: a group size from 1 to 9 people is never pr'
    """
    return (
        f"Small-cell rule: a group size from 1 to {min_cell_size - 1} people is never printed, nor any size from "
        f"which one could be worked out (or bounded under {min_cell_size}) with the totals and the other sizes "
        f'published; {n_withheld} size(s) here are marked "suppressed", whatever the reason.'
    )
