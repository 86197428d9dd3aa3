"""The cyclic garbage collector paused while the engine builds its results.

An audit builds tens of thousands of small dicts and lists (comparisons, group entries, the validated document)
and frees almost all of them by reference counting. Each allocation burst sets off the cyclic collector, whose
full passes walk every object the process holds (its imported libraries included): a tenth of a 10M-row audit's
CPU time went to them. The engine's steps run with the collector paused and resume it when the outermost one
ends (re-entrant and thread-safe: slicings run on two threads). Cycles made meanwhile are collected then.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def collection_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block (as it was before, once the outermost block ends).

    >>> import gc
    >>> with collection_paused():
    ...     gc.isenabled()
    False
    """
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def paused_collection(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """``function`` run with the cyclic collector paused (:func:`collection_paused`)."""

    @functools.wraps(function)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with collection_paused():
            return function(*args, **kwargs)

    return run


@contextmanager
def long_lived() -> Iterator[None]:
    """A block that makes objects meant to live as long as the process, such as a command's library imports.

    The collector is paused during it, and what exists at its end is moved out of the collector's generations
    (``gc.freeze``), so that later passes do not walk it again. Importing Prefect, SciPy or Great Expectations
    makes hundreds of thousands of such objects, and the passes they set off found next to no garbage.
    """
    with collection_paused():
        yield
        gc.freeze()  # before the collector resumes: its first pass would otherwise walk all of it once
