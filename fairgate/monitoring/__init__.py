"""Monitoring: the audits of one model over time (DESIGN.md, "monitoring/").

``history`` holds earlier runs as the audit trail recorded them; ``trend`` turns them and the current audit
into per-result series and the change since the previous run, with its significance. Nightly monitoring:
``windows``/``windowed`` (windows summed from stored period cubes, judged by the audit's gate), ``contrasts`` and
``drift`` (the nightly observations and the CUSUM detector with its alerts and open episodes), ``power`` (rules
too weak for their min_change) and ``headline`` (the night in one line, and its exit code). Pure: the trail is
read by ``tasks.store``.
"""

from fairgate.monitoring.history import History, PastResult, PastRun
from fairgate.monitoring.trend import build_trend, change_test, standard_error, trend_of

__all__ = ["History", "PastResult", "PastRun", "build_trend", "change_test", "standard_error", "trend_of"]
