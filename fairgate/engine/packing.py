"""Several keys of a frame packed into one integer per row (mixed radix), and unpacked again.

Summing by one integer key (a sort or ``np.unique`` and a ``bincount``) is much cheaper than a group-by over
several text keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl


@dataclass(frozen=True)
class Digits:
    """One key's place in a packed key.

    ``radix`` values: a text key's sorted ``levels``, or an integer key's values from ``low`` (of ``dtype``).
    """

    radix: int
    levels: pl.Series | None
    low: int
    dtype: Any

    def decode(self, name: str, digits: np.ndarray) -> pl.Series:
        """The key's values (a Series called ``name``) from its digits."""
        if self.levels is not None:
            return self.levels.gather(digits).alias(name)
        return pl.Series(name, digits + self.low).cast(self.dtype)


def packed_keys(frame: pl.DataFrame, keys: list[str]) -> tuple[np.ndarray, list[Digits]] | None:
    """Each row's keys as one int64 in mixed radix, and each key's place; None for null keys or an overflow.

    A text key's digit is its value's index among its sorted values, an integer key's its offset from its minimum.
    """
    codes = np.zeros(frame.height, dtype=np.int64)
    places: list[Digits] = []
    span = 1
    for key in keys:
        column = frame[key]
        if column.null_count() or not (column.dtype == pl.String or column.dtype.is_integer()):
            return None
        if column.dtype == pl.String:
            levels = column.unique().sort()
            digits = column.cast(pl.Enum(levels.to_list())).to_physical().to_numpy().astype(np.int64)
            place = Digits(len(levels), levels, 0, column.dtype)
        else:
            low = int(column.min()) if frame.height else 0  # type: ignore[arg-type]
            digits = column.to_numpy().astype(np.int64) - low
            place = Digits(int(digits.max()) + 1 if frame.height else 1, None, low, column.dtype)
        span *= max(place.radix, 1)
        if span >= 2**62:
            return None
        codes = codes * place.radix + digits
        places.append(place)
    return codes, places


def packed_codes(
    cell_codes: Mapping[str, tuple[Sequence[str], np.ndarray]], slicing: Sequence[str], rows: int
) -> np.ndarray | None:
    """Each cube cell's group of the slicing as one integer: its attributes' codes packed (lexicographic order).

    ``cell_codes``: the cube's, per attribute its levels and each of the ``rows`` cells' index into them. None when
    the slicing has too many value combinations to pack into 64 bits.

    >>> codes = {"a": (["x", "y"], np.array([0, 1, 1])), "b": (["p", "q", "r"], np.array([2, 0, 1]))}
    >>> packed_codes(codes, ("a", "b"), 3).tolist()
    [2, 3, 4]
    """
    coded = [cell_codes[key] for key in slicing]
    if int(np.prod([float(len(levels)) for levels, _ in coded])) >= 2**62:
        return None
    packed = np.zeros(rows, dtype=np.int64)
    for levels, codes in coded:
        packed = packed * len(levels) + codes
    return packed
