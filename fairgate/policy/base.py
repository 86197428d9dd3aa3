"""The one configuration of every policy section: unknown keys refused, values frozen, numbers finite.

``allow_inf_nan=False`` is what keeps ``.inf`` and ``.nan`` (valid YAML floats) out of every threshold, delay,
timeout and margin: an infinite override threshold would pass every result, and a NaN would reach the JSON
document as a bare ``NaN`` token, which is not JSON.
"""

from __future__ import annotations

from pydantic import ConfigDict

STRICT = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
