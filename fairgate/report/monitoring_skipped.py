"""The streams the drift detector left out tonight, grouped: one line per reason, the date said once.

The document lists one item per stream ("2014-01-20: <stream>: <why>"); printed as they come, the same date and
the same reason repeat on every line. The report reads them as "<why>: <stream>, <stream> ...", each stream in
words (:func:`fairgate.monitoring.contrasts.stream_label`) with the number of people it would need.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from fairgate.monitoring.contrasts import stream_label

_NIGHT = re.compile(r"^(\d{4}-\d{2}-\d{2}): (.*)$")
_NEEDS = re.compile(r"^(.*?) \(needs (\d+): (.*)\)$")


@dataclass(frozen=True)
class SkippedStreams:
    """The left-out streams as the report prints them."""

    n_streams: int
    nights: str  # the date(s), once ("2014-01-20"); "" when the items carry none
    lines: list[str]  # one per (night, reason): the reason, then the streams it leaves out


def skipped_streams(items: Sequence[str]) -> SkippedStreams:
    """The detector's skipped items grouped by reason (and night, when they span several).

    >>> view = skipped_streams([
    ...     "2014-01-20: equal_opportunity_difference · race · Asian vs White · true_positive_rate: the group has "
    ...     "too few people tonight for true positive rate (needs 40: at least 5 expected events of each kind at "
    ...     "the baseline rate 0.610)",
    ...     "2014-01-20: equal_opportunity_difference · race · Other vs White · true_positive_rate: the group has "
    ...     "too few people tonight for true positive rate (needs 25: at least 5 expected events of each kind at "
    ...     "the baseline rate 0.500)",
    ... ])
    >>> view.nights, view.n_streams
    ('2014-01-20', 2)
    >>> print(view.lines[0])
    the group has too few people tonight for true positive rate (the people needed for at least 5 expected events \
of each kind at the group's baseline rate) — Equal opportunity difference · race · Asian vs White (needs 40); \
Equal opportunity difference · race · Other vs White (needs 25)
    """
    grouped: dict[tuple[str, str], list[str]] = {}
    for item in items:
        found = _NIGHT.match(item)
        night, rest = (found.group(1), found.group(2)) if found else ("", item)
        stream, _, why = rest.partition(": ")
        words = stream_label(stream)
        needs = _NEEDS.match(why)
        if needs:
            head, count, detail = needs.groups()
            rule = re.sub(r" at the baseline rate [0-9.]+$", " at the group's baseline rate", detail)
            why = f"{head} (the people needed for {rule})"
            words = f"{_without_rate(words, head)} (needs {count})"
        grouped.setdefault((night, why), []).append(words)
    nights = sorted({night for night, _ in grouped if night})
    several = len(nights) > 1
    lines = [
        (f"{night}, " if several and night else "") + f"{why} — {'; '.join(streams)}"
        for (night, why), streams in grouped.items()
    ]
    return SkippedStreams(len(items), ", ".join(nights) if not several else f"{nights[0]} to {nights[-1]}", lines)


def _without_rate(words: str, reason: str) -> str:
    """A stream's words without its rate when the reason already names it ("... for true positive rate")."""
    head, separator, rate = words.rpartition(" · ")
    return head if separator and reason.endswith(f"for {rate}") else words
