"""The trail's two refusals: not a trail or misconfigured (exit 2), and a damaged trail (exit 1)."""

from __future__ import annotations

from fairgate.errors import FairgateError


class TrailError(FairgateError):
    """The audit trail cannot be read or written: not a trail, or a configuration problem (exit 2)."""

    exit_code = 2


class TrailDamaged(TrailError):
    """A file that is an audit trail is damaged: truncated, unreadable or with tables dropped (exit 1)."""

    exit_code = 1
