"""The one reference-group rule of every kind: the configured reference of each attribute, else the largest group.

A slicing's groups are compared with its reference (differences, ratios, their tests). The reference is the
group whose value of every attribute is the one ``reference_group`` names; when an attribute of the slicing has
none configured, or that group is absent from the data, it is the group with the most people (the largest
effective size for weighted audits). Every kind's slicing and document use these two functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from fairgate.policy.core import Policy

Group = dict[str, str]


def configured_reference(slicing: tuple[str, ...], policy: Policy) -> Group | None:
    """The group the policy names as the slicing's reference (every attribute configured), else None.

    >>> from fairgate.policy.core import Policy
    >>> p = Policy.from_yaml('''
    ... fairness_checker:
    ...   sensitive_attributes: [{name: sex, reference_group: Male}, {name: race}]
    ...   metrics: [{name: disparate_impact_ratio, threshold: 0.8}]
    ... ''')
    >>> configured_reference(("sex",), p), configured_reference(("sex", "race"), p)
    ({'sex': 'Male'}, None)
    """
    configured = {a: policy.attribute(a).reference_group for a in slicing}
    if slicing and all(v is not None for v in configured.values()):
        return {a: str(v) for a, v in configured.items()}
    return None


def reference_index(groups: list[Group], configured: Group | None, sizes: np.ndarray) -> int:
    """The index of the reference among ``groups``: the configured group when present, else the largest.

    >>> reference_index([{"g": "a"}, {"g": "b"}], None, np.array([3.0, 5.0]))
    1
    >>> reference_index([{"g": "a"}, {"g": "b"}], {"g": "a"}, np.array([3.0, 5.0]))
    0
    """
    if configured is not None and configured in groups:
        return groups.index(configured)
    return int(np.argmax(sizes))


class SlicedGroups(Protocol):
    """What the attributes block reads of a slicing's result, in every kind."""

    @property
    def slicing(self) -> Sequence[str]:
        """The attributes of the slicing."""

    @property
    def groups(self) -> list[Group]:
        """Its groups, in the kind's group order."""

    @property
    def reference(self) -> Group | None:
        """The group the others were compared with (None: no comparison, the population)."""


@dataclass(frozen=True)
class Referenced:
    """A slicing's groups and reference, for a kind whose slicing result does not carry its reference."""

    slicing: Sequence[str]
    groups: list[Group]
    reference: Group | None


def attribute_entries(
    names: Sequence[str], parts: Iterable[SlicedGroups], excluded_missing: Mapping[str, int]
) -> list[dict[str, Any]]:
    """The document's ``attributes`` block: each attribute's reference group, values and people left out.

    The reference is the one its single-attribute slicing compared with (configured, else the largest group).
    """
    single = {p.slicing[0]: p for p in parts if len(p.slicing) == 1}
    entries = []
    for name in names:
        part = single.get(name)
        entries.append(
            {
                "name": name,
                "reference_group": part.reference[name] if part is not None and part.reference else None,
                "values": [g[name] for g in part.groups] if part is not None else [],
                "excluded_missing": excluded_missing.get(name, 0),
            }
        )
    return entries
