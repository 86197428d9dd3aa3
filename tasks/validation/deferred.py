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

The same holds for a submodule named in full (``scipy.stats``: three expectations fairgate never runs do ``from
scipy import stats`` at their top and use it only when they run) and for Mistune (GE's HTML rendering of
Markdown, ``import mistune`` at the top of ``great_expectations.render.view.view``).

Only the first import inside the block is deferred (a package already imported stays as it is); outside the
block nothing changes. The first use runs the module under one lock (Python 3.11's ``LazyLoader`` takes none):
a second thread that uses it meanwhile waits for the whole module instead of seeing it half run (the engine's
metric threads may reach scipy.stats: a table its own Fisher's test refuses is handed to scipy for the error).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import sys
import threading
import types
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
        spec.loader = _LockedLazyLoader(spec.loader)
        return spec


class _LockedLazyLoader(importlib.util.LazyLoader):
    """The standard library's lazy loader, the module's first use run under a lock of its own."""

    def exec_module(self, module: ModuleType) -> None:
        super().exec_module(module)  # the standard lazy module: its state kept in its spec's loader_state
        spec = object.__getattribute__(module, "__spec__")  # (module.__spec__ would run the module now)
        spec.loader_state.update(lock=threading.RLock(), running=False)
        object.__setattr__(module, "__class__", _LockedLazyModule)


class _LockedLazyModule(types.ModuleType):
    """A deferred module not run yet: its first attribute access runs it (as Python 3.13's lazy module does).

    The module keeps this class while it runs, so another thread waits on the lock for the whole module; the
    running thread's own accesses (a submodule's ``from . import x``) read the module as it stands.
    """

    def __getattribute__(self, attr: str) -> object:
        spec = object.__getattribute__(self, "__spec__")
        state = spec.loader_state
        with state["lock"]:
            if object.__getattribute__(self, "__class__") is _LockedLazyModule:
                if state["running"]:  # this thread is running it: what is there so far
                    return types.ModuleType.__getattribute__(self, attr)
                state["running"] = True
                try:
                    _run(self, spec)
                finally:  # a module whose code failed is run again on its next use, as a failed import is
                    state["running"] = False
                object.__setattr__(self, "__class__", state["__class__"])
        return getattr(self, attr)


def _run(module: ModuleType, spec: ModuleSpec) -> None:
    """Run a deferred module's code, keeping what was set on it before (as the standard lazy module does)."""
    before = spec.loader_state["__dict__"]
    now = object.__getattribute__(module, "__dict__")
    updated = {key: value for key, value in now.items() if key not in before or now[key] is not before[key]}
    spec.loader.exec_module(module)  # type: ignore[union-attr]  # the real loader (LazyLoader put it back)
    if spec.name in sys.modules and sys.modules[spec.name] is not module:
        raise ValueError(f"module object for {spec.name!r} substituted in sys.modules during a lazy load")
    now.update(updated)


@contextlib.contextmanager
def deferred(*names: str) -> Iterator[None]:
    """Within the block, the first import of each of ``names`` (packages or modules, named in full) runs its code
    on first use."""
    finder = _DeferringFinder([name for name in names if name not in sys.modules])
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
