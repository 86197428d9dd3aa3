"""Bootstrap replicates drawn from the cube, with no pass over the rows.

Resampling the n audited rows with replacement puts a multinomial number of rows into each cell of the cube.
Summed over the cells that make up one cell of a slicing (group x y_true x y_pred x score bin), those counts
are again multinomial, with the summed probabilities. So each slicing draws its replicates directly at its own
resolution: exactly the distribution that aggregating a draw over the whole cube would give, without drawing
the cube's finer cells or summing a (cells x replicates) matrix per slicing.

A slicing contained in a larger planned one (a pair in a triple, an attribute in a pair, the population in
everything) sums its replicates from that parent's drawn cells instead of drawing its own
(``fairgate.engine.planning.replicate_parents``): the same multinomial law by the same aggregation, with about
a third fewer draws when triples are audited. Its replicates are then tied to the parent's; nothing in an
audit combines replicates of different slicings. :func:`shared_draws` keeps a parent's draws while the slicings
that read them run, wherever each runs (threads, Prefect tasks): each is drawn once, from the parent's stream.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from typing import TypeVar

import numpy as np

from fairgate.engine.kept import PerObject


def slicing_seed(seed: int, slicing: Sequence[str]) -> np.random.SeedSequence:
    """The random stream of one slicing, fixed by the policy's seed and the slicing's attributes.

    A slicing thus gets the same replicates whether it runs in this process, another thread or a Prefect task.
    """
    digest = hashlib.sha256("\x1f".join(slicing).encode()).digest()
    return np.random.SeedSequence([seed, int.from_bytes(digest[:8], "little")])


def draw_counts(rows: np.ndarray, n_bootstrap: int, seed: np.random.SeedSequence) -> np.ndarray:
    """Row counts per cell for ``n_bootstrap`` resamples of ``rows.sum()`` rows.

    An (n_bootstrap x cells) float matrix whose rows are multinomial with cell probabilities proportional
    to ``rows``: a transposed view of a (cells x n_bootstrap) array, which is the layout the slicings' sparse
    products read (see :func:`_split`).

    >>> counts = draw_counts(np.array([2.0, 3.0, 5.0]), 4, np.random.SeedSequence(0))
    >>> counts.shape, counts.sum(axis=1).tolist()
    ((4, 3), [10.0, 10.0, 10.0, 10.0])
    """
    total = round(float(rows.sum()))
    if n_bootstrap == 0 or total == 0:
        return np.zeros((n_bootstrap, rows.size))
    rng = np.random.default_rng(seed)
    width = math.isqrt(max(rows.size - 1, 0)) + 1  # cells per block: about the square root of their number
    blocks = -(-rows.size // width)
    padded = np.zeros(blocks * width)
    padded[: rows.size] = rows
    shares = padded.reshape(blocks, width)
    left = np.full((1, n_bootstrap), total, dtype=np.int64)
    per_block = _split(left, shares.sum(axis=1)[None, :], rng)[0]
    per_cell = _split(per_block, shares, rng, dtype=np.float64).reshape(blocks * width, n_bootstrap)[: rows.size]
    return per_cell.T


def _split(
    left: np.ndarray, shares: np.ndarray, rng: np.random.Generator, dtype: type[np.generic] = np.int64
) -> np.ndarray:
    """Multinomial splits of the counts ``left`` (parts x replicates) over each part's ``shares`` (parts x k).

    An array (parts x k x replicates) whose column ``[p, :, r]`` is multinomial(``left[p, r]``, ``shares[p]``
    normalised).

    Drawn as conditional binomials, one share at a time, vectorised over the parts and replicates: share j
    takes Binomial(what is left, share j / the shares from j on), exactly the multinomial's law (its chain
    rule). :func:`draw_counts` splits the rows over blocks of cells first and then each block's count over its
    cells: the same multinomial over the cells (a multinomial's sums over blocks are multinomial, and given
    them the blocks' cells are independent multinomials), with a Python loop of about twice the square root of
    the cells instead of one per cell. numpy's own ``multinomial`` draws the same chain in C, one replicate at
    a time, at about 1.3 times the CPU.
    """
    remaining = np.cumsum(shares[:, ::-1], axis=1)[:, ::-1]  # the shares from j on
    with np.errstate(divide="ignore", invalid="ignore"):
        # a share over a sum that includes it is at most 1 in floating point too; empty tails draw nothing
        chances = np.where(remaining > 0, shares / remaining, 0.0)
    # ``dtype``: float64 holds every count exactly (far below 2**53) and is what the sparse products read.
    out = np.empty((shares.shape[0], shares.shape[1], left.shape[1]), dtype=dtype)
    left = left.copy()
    for j in range(shares.shape[1] - 1):
        drawn = rng.binomial(left, chances[:, j, None])
        out[:, j] = drawn
        left -= drawn
    out[:, -1] = left
    return out


# Per owner (the cube's cells, by id; dropped with them): draws shared by several slicings, each with the number of
# reads still expected; None once read out. Dropped at the last expected read, so at most the parents being read
# (and those drawn ahead of their readers) are held.
_SHARED: PerObject[dict[Hashable, tuple[Future[object], list[int]] | None]] = PerObject(dict)
_SHARED_LOCK = threading.Lock()
Drawn = TypeVar("Drawn")


def shared_draws(owner: object, key: Hashable, readers: int, draw: Callable[[], Drawn]) -> Drawn:
    """``draw()``, computed once for ``readers`` reads of ``key`` while ``owner`` lives, whichever thread asks first.

    The others wait for that result instead of drawing it again. After the ``readers``-th read the draws are
    dropped; a later read (a slicing computed once more) draws them again, the same values from the same stream.
    """
    with _SHARED_LOCK:
        entries = _SHARED.of(owner)
        entry = entries.get(key)
        first = entry is None
        if entry is None:
            entry = entries[key] = (Future(), [readers])
        future, left = entry
        left[0] -= 1
        if left[0] <= 0:
            entries[key] = None  # read out
    if first:
        _fill(entries, key, entry, draw)
    drawn: Drawn = future.result()  # type: ignore[assignment]  # the key's one draw() result
    return drawn


def draw_ahead(owner: object, key: Hashable, readers: int, draw: Callable[[], object]) -> None:
    """``draw()`` now, kept for the ``readers`` reads of ``key`` (:func:`shared_draws`) still to come.

    Nothing when a reader has already started, or finished, reading ``key``. A thread that draws the shared
    parents one after another ahead of the slicings keeps one core drawing (numpy releases the GIL) while the
    slicings' statistics, which mostly hold it, run on the other. The values are the same whoever draws them.
    """
    with _SHARED_LOCK:
        entries = _SHARED.of(owner)
        if key in entries:
            return
        entry = entries[key] = (Future(), [readers])
    _fill(entries, key, entry, draw)


def _fill(
    entries: dict[Hashable, tuple[Future[object], list[int]] | None],
    key: Hashable,
    entry: tuple[Future[object], list[int]],
    draw: Callable[[], object],
) -> None:
    """Set the entry's draws; on an error, hand it to the waiting readers and forget the entry."""
    try:
        entry[0].set_result(draw())
    except BaseException as error:
        entry[0].set_exception(error)
        with _SHARED_LOCK:
            if entries.get(key) is entry:
                entries.pop(key, None)
        raise
