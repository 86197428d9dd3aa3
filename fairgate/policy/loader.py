"""Reading policy YAML text safely: bounded size, bounded alias expansion, no duplicate keys.

PyYAML's ``safe_load`` accepts duplicate keys (the last one wins, so ``enabled: false`` three lines below
``enabled: true`` silently turns the gate off) and builds aliases by reference, so a few hundred bytes of
nested aliases (a "billion laughs") become a graph whose expansion by the policy model exhausts memory.
:func:`load_policy_yaml` refuses both before anything walks the document. These limits protect the parser, so
the policy cannot raise them; a real policy is far below them.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from fairgate.errors import (
    POLICY_DUPLICATE_KEY,
    POLICY_RECURSIVE_ALIAS,
    POLICY_TOO_DEEP,
    POLICY_TOO_LARGE,
    POLICY_TOO_MANY_NODES,
    PolicyError,
)

#: The largest policy file read, in bytes (UTF-8).
MAX_POLICY_BYTES = 1_000_000
#: The most YAML nodes a policy may hold once every alias is expanded (each use of an alias counts in full).
MAX_POLICY_NODES = 100_000

_MERGE_TAG = "tag:yaml.org,2002:merge"


class _StrictLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types here
    """A SafeLoader that refuses a key written twice in one mapping (anchors, aliases and ``<<`` still work)."""

    source = "policy"

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:  # before merge keys are flattened: a merged key may be overridden
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: PyYAML's own error follows
                continue
            if first is not None:
                raise PolicyError(POLICY_DUPLICATE_KEY.format(source=self.source, key=key, first=first, second=line))
            seen[key] = line
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def load_policy_yaml(text: str, *, source: str = "policy") -> Any:
    """Parse policy YAML text into plain Python objects, refusing what could hide or explode.

    Parameters
    ----------
    text
        The policy file's text.
    source
        How to name the file in messages.

    Returns
    -------
    Any
        The parsed document (a mapping for a valid policy).

    Raises
    ------
    PolicyError
        When the text is larger than :data:`MAX_POLICY_BYTES`, is not valid YAML, expands (aliases included)
        to more than :data:`MAX_POLICY_NODES` nodes, or writes a key twice in one mapping.
    """
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_POLICY_BYTES:
        raise PolicyError(POLICY_TOO_LARGE.format(source=source, size=size, limit=MAX_POLICY_BYTES))
    loader = _StrictLoader(text)
    loader.source = source
    try:
        root = loader.get_single_node()  # composes the node graph: aliases are shared nodes, not copies
        if root is None:
            return None
        nodes = _expanded_size(root, source)
        if nodes > MAX_POLICY_NODES:
            raise PolicyError(POLICY_TOO_MANY_NODES.format(source=source, nodes=nodes, limit=MAX_POLICY_NODES))
        return loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise PolicyError(f"{source} is not valid YAML: {exc}") from None
    except RecursionError:
        raise PolicyError(POLICY_TOO_DEEP.format(source=source)) from None
    finally:
        loader.dispose()


def _expanded_size(root: Node, source: str) -> int:
    """The number of nodes of the document with every alias expanded, counted without expanding.

    Memoised per shared node, so a billion laughs is counted in time linear in its text. A recursive alias is
    refused.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise PolicyError(POLICY_RECURSIVE_ALIAS.format(source=source, line=node.start_mark.line + 1))
        active.add(key)
        total = 1
        if isinstance(node, SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        active.discard(key)
        sizes[key] = total
        return total

    return size(root)
