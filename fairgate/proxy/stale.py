"""Stale attributes: whether the declared sensitive attributes are too old to audit on."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import polars as pl


def stale_attributes(collected_at: pl.Series, *, as_of: dt.date, max_age_days: int) -> dict[str, Any]:
    """Age of the sensitive attributes: flagged stale when the median collection date is older than allowed.

    The median (not the oldest record) decides, so a few old records do not flag a fresh dataset; the share
    of records older than ``max_age_days`` is reported beside it.
    """
    if collected_at.dtype == pl.String:
        dates = collected_at.str.to_date(strict=False)
    elif collected_at.dtype == pl.Date:
        dates = collected_at
    else:
        dates = collected_at.cast(pl.Date, strict=False)  # datetimes
    n_unparsed = dates.null_count() - collected_at.null_count()
    valid = dates.drop_nulls()
    if valid.len() == 0:
        return {
            "column": collected_at.name,
            "max_age_days": max_age_days,
            "n": 0,
            "stale": None,
            "n_unparsed": n_unparsed,
        }
    days = [d for d in valid.to_list() if isinstance(d, dt.date)]
    ages = np.array([(as_of - d).days for d in days])
    median_age = float(np.median(ages))
    return {
        "column": collected_at.name,
        "as_of": as_of.isoformat(),
        "max_age_days": max_age_days,
        "n": int(valid.len()),
        "n_unparsed": n_unparsed,
        "oldest": min(days).isoformat(),
        "newest": max(days).isoformat(),
        "median_age_days": median_age,
        "n_older_than_max": int((ages > max_age_days).sum()),
        "share_older_than_max": float((ages > max_age_days).mean()),
        "stale": median_age > max_age_days,
    }
