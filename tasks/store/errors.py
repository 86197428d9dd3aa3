"""The trail's refusals: not a trail or misconfigured (exit 2), a damaged trail (exit 1), a busy trail (exit 4)."""

from __future__ import annotations

from fairgate.errors import FairgateError


class TrailError(FairgateError):
    """The audit trail cannot be read or written: not a trail, or a configuration problem (exit 2)."""

    exit_code = 2


class TrailDamaged(TrailError):
    """A file that is an audit trail is damaged: truncated, unreadable or with tables dropped (exit 1)."""

    exit_code = 1


class TrailBusy(TrailError):
    """Another process held the trail (its write lock, or DuckDB's lock on the file) for longer than the bounded
    wait: neither damaged nor misconfigured, try again (exit 5; 4 is the verdict "insufficient")."""

    exit_code = 5
