"""The ``ranking:`` policy section (``task: ranking``): which top-k cut-offs and which position discount.

A ranking audit reads one row per (list, item): the list it belongs to (``columns.list_id``: a query, a job
opening, a cohort), the item's position in it (``columns.rank``, 1 = top) and its relevance (``columns.y_true``,
a finite number >= 0, e.g. the applicant's later grade). The first entry of ``top_k`` is the cut-off the
policy's ``top_k_rate_*`` rules judge; every entry is reported.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from fairgate.policy.base import STRICT

#: Position discounts: ``log2`` 1 / log2(1 + rank) (DCG, Singh & Joachims 2018), ``reciprocal`` 1 / rank,
#: ``rbp`` patience^(rank - 1) (rank-biased precision, Moffat & Zobel 2008, without its constant 1 - patience).
Discount = Literal["log2", "reciprocal", "rbp"]


class RankingOptions(BaseModel):
    """The ``ranking:`` section.

    >>> options = RankingOptions(top_k=[10, 5])
    >>> options.judged_k, options.discount
    (10, 'log2')
    """

    model_config = STRICT

    top_k: list[int] = Field(default_factory=lambda: [10], min_length=1, max_length=20)
    """Cut-offs of the top-k shares; the first is the one the `top_k_rate` rules judge."""
    discount: Discount = "log2"
    """The exposure of a position: `log2` = 1/log2(1+rank) (DCG), `reciprocal` = 1/rank, `rbp` = patience^(rank-1)."""
    patience: float | None = Field(default=None, gt=0.0, lt=1.0)
    """Only with `discount: rbp`: the chance a reader goes on from one position to the next."""
    bootstrap_buckets: int = Field(default=200, ge=16, le=2000)
    """Lists are hashed into this many buckets; the bootstrap resamples buckets of whole lists."""
    curve_positions: int = Field(default=50, ge=2, le=1000)
    """Positions 1..curve_positions get their own point on the report's exposure curves (later ones are pooled)."""

    @field_validator("top_k")
    @classmethod
    def _positive_distinct(cls, values: list[int]) -> list[int]:
        if any(k < 1 for k in values) or len(set(values)) != len(values):
            raise ValueError(f"ranking.top_k must list distinct positive cut-offs, e.g. [10, 50]; got {values}")
        return values

    @model_validator(mode="after")
    def _patience_with_rbp(self) -> RankingOptions:
        if self.discount == "rbp" and self.patience is None:
            raise ValueError("ranking.discount: rbp needs ranking.patience, e.g. patience: 0.8")
        if self.discount != "rbp" and self.patience is not None:
            raise ValueError(f"ranking.patience is only read with discount: rbp (discount is {self.discount!r})")
        return self

    @property
    def judged_k(self) -> int:
        """The cut-off the ``top_k_rate_difference`` and ``top_k_rate_ratio`` rules judge."""
        return self.top_k[0]
