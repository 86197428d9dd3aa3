"""The regression options: the policy's ``regression:`` section (fairgate/policy/task.py), re-exported here."""

from __future__ import annotations

from fairgate.policy.task import RegressionOptions

__all__ = ["RegressionOptions"]
