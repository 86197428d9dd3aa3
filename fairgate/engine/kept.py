"""What the engine keeps about an object while it lives: one value per object, made on first ask, dropped with it.

Caches keyed by the object itself would keep it alive (or need it hashable); keyed by ``id`` alone, a new object
could inherit a collected one's entry. :class:`PerObject` keys by ``id`` and drops the entry when the object is
collected (``weakref.finalize``), so neither happens.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class PerObject(Generic[Value]):
    """One ``make()`` value per live object.

    >>> class Thing: ...
    >>> kept = PerObject(dict)
    >>> thing = Thing()
    >>> kept.of(thing)["seen"] = 1
    >>> kept.of(thing), len(kept)
    ({'seen': 1}, 1)
    >>> del thing
    >>> len(kept)
    0
    """

    def __init__(self, make: Callable[[], Value]) -> None:
        self._make = make
        self._values: dict[int, Value] = {}
        self._lock = threading.Lock()

    def of(self, owner: object) -> Value:
        """The value kept for ``owner`` (made now if it has none)."""
        with self._lock:
            value = self._values.get(id(owner))
            if value is None:
                value = self._values[id(owner)] = self._make()
                weakref.finalize(owner, self._values.pop, id(owner), None)
            return value

    def __len__(self) -> int:
        return len(self._values)
