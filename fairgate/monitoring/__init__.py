"""Monitoring: the audits of one model over time (DESIGN.md, "monitoring/").

``history`` holds earlier runs as the audit trail recorded them; ``trend`` turns them and the current audit
into per-result series and the change since the previous run, with its significance. Pure: the trail is read
by ``tasks.store.model_history``.
"""

from fairgate.monitoring.history import History, PastResult, PastRun
from fairgate.monitoring.trend import build_trend, change_test, standard_error, trend_of

__all__ = ["History", "PastResult", "PastRun", "build_trend", "change_test", "standard_error", "trend_of"]
