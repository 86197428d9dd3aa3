"""Import a package without running it until it is used: for what Great Expectations imports and our suites
never use.

``import great_expectations`` loads every core expectation, and one of them
(``expect_column_kl_divergence_to_be_less_than``) runs ``import altair`` at its top to draw a chart when it
renders; Altair in turn imports Narwhals. Together that is about a fifth of GE's import (0.2-0.3 s of CPU),
and no fairgate suite renders that chart. Inside :func:`deferred`, the first import of a named package gets
the real module from the standard library's ``importlib.util.LazyLoader``: the module object is created and
put in ``sys.modules`` as usual, and its code runs on the first access to any of its attributes (``alt.Chart``
would load the whole of Altair then, as a plain import would have). Nothing is faked or replaced: the package
is the installed one, only its execution is moved to its first use.

Only the first import inside the block is deferred (a package already imported stays as it is); outside the
block nothing changes. A deferred module must not be first used from two threads at once (Python 3.11's
LazyLoader takes no lock): GE uses Altair only in its rendering code, which the suites do not call.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class _DeferringFinder:
    """A ``sys.meta_path`` finder for the named top-level packages: the usual spec, loaded lazily."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = frozenset(names)

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name not in self.names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec  # not installed (or a namespace package): the import goes on as without this finder
        spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


@contextlib.contextmanager
def deferred(*names: str) -> Iterator[None]:
    """Within the block, the first import of each of ``names`` (top-level packages) runs its code on first use."""
    finder = _DeferringFinder([name for name in names if name not in sys.modules])
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
