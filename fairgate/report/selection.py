"""Which groups a PDF table or chart shows when a slicing has more than fit: one rule for every kind.

Every visible group named in a failure on the slicing (its worst-off group and the group it is compared with)
is shown, then every large group (at least :data:`LARGE_SHARE` of the slicing's people), then the remaining
room up to the limit goes by the caller's priority (by default the largest groups). Suppressed groups are never
picked: they are not shown at all. The HTML report's full tables list every group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from fairgate.report.format import group_label

#: Groups a PDF table or chart of one slicing shows besides the named and the large ones: more do not read.
PDF_GROUP_LIMIT = 8
#: A group holding at least this share of a slicing's people is shown whatever the limit.
LARGE_SHARE = 0.05

T = TypeVar("T")


class _Named(Protocol):
    @property
    def slicing(self) -> Sequence[str]: ...
    @property
    def status(self) -> str: ...
    @property
    def worst_group(self) -> Mapping[str, Any] | str | None: ...
    @property
    def best_group(self) -> Mapping[str, Any] | str | None: ...


def failure_labels(results: Iterable[_Named], slicing: Sequence[str]) -> set[str]:
    """The labels of the groups named by the failing results on ``slicing``: worst-off and comparison groups.

    The results are the document's (groups as mappings) or the report's rows (groups already as labels).

    >>> from types import SimpleNamespace as R
    >>> fail = R(slicing=["race"], status="fail", worst_group={"race": "b"}, best_group={"race": "a"})
    >>> passed = R(slicing=["race"], status="pass", worst_group={"race": "c"}, best_group={"race": "a"})
    >>> sorted(failure_labels([fail, passed], ["race"]))
    ['a', 'b']
    """
    out: set[str] = set()
    for result in results:
        if list(result.slicing) != list(slicing) or result.status != "fail":
            continue
        for group in (result.worst_group, result.best_group):
            if isinstance(group, str):
                out.add(group)
            elif group:
                out.add(group_label(group, list(slicing)))
    return out


def select_groups(
    groups: Sequence[T],
    *,
    label: Callable[[T], str],
    size: Callable[[T], float | None],
    hidden: Callable[[T], bool] = lambda _: False,
    named: set[str] | frozenset[str] = frozenset(),
    limit: int = PDF_GROUP_LIMIT,
    priority: Callable[[T], float] | None = None,
) -> list[T]:
    """The groups to show, in priority order (largest first by default): named, large, then the most pressing.

    >>> sizes = {"Amerindian": 19, "Asian": 22, "Black": 900, "White": 5287, "Other": 300}
    >>> pick = lambda limit, named=frozenset(): select_groups(
    ...     list(sizes), label=str, size=sizes.get, named=named, limit=limit)
    >>> pick(2), pick(2, {"Asian"})
    (['White', 'Black'], ['White', 'Black', 'Asian'])
    """
    visible = [g for g in groups if not hidden(g)]
    rank = priority or (lambda g: -(size(g) or 0.0))
    ranked = sorted(visible, key=lambda g: (rank(g), label(g)))
    if len(ranked) <= limit and not named:
        return ranked
    total = sum(size(g) or 0.0 for g in visible)
    must = [g for g in ranked if label(g) in named or (total and (size(g) or 0.0) >= LARGE_SHARE * total)]
    room = max(0, limit - len(must))
    rest = [g for g in ranked if not any(g is m for m in must)][:room]
    chosen = {id(g) for g in (*must, *rest)}
    return [g for g in ranked if id(g) in chosen]
