"""fairgate: a fairness checker for ML models (the pure engine).

>>> import polars as pl, fairgate
>>> policy = fairgate.Policy.from_yaml('''
... fairness_checker:
...   sensitive_attributes: [{name: sex}]
...   metrics: [{name: demographic_parity_difference, threshold: 0.1}]
...   intersectional_analysis: {min_group_size: 1}
...   statistics: {n_bootstrap: 50}
... ''')
>>> frame = pl.DataFrame({"y_true": [1, 0] * 100, "y_pred": [1, 1, 1, 0] * 25 + [1, 0, 0, 0] * 25,
...                       "sex": ["F"] * 100 + ["M"] * 100})
>>> fairgate.audit(frame, policy).verdict  # 75% of F selected against 25% of M
'fail'
>>> fairgate.audit(frame.head(4), policy).verdict  # four people: nothing can be judged either way
'insufficient'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fairgate.document.document import AuditDocument
    from fairgate.document.result import SCHEMA_VERSION, AuditResult
    from fairgate.engine.adjudicate import ModelInfo, adjudicate
    from fairgate.engine.audit import audit
    from fairgate.engine.cube import Cube, build_cube
    from fairgate.engine.labels import group_key, slicing_label
    from fairgate.engine.planning import plan_slicings
    from fairgate.engine.slicing import SlicingResult, compute_slicing
    from fairgate.errors import DataError, FairgateError, PolicyError
    from fairgate.policy.core import Policy

# Imported on first use (PEP 562): the engine pulls in scipy and numpy (~2 s), which `fairgate --help`,
# `fairgate trail` and `import fairgate.errors` do not need.
_EXPORTS = {
    "SCHEMA_VERSION": "fairgate.document.result",
    "AuditDocument": "fairgate.document.document",
    "AuditResult": "fairgate.document.result",
    "Cube": "fairgate.engine.cube",
    "DataError": "fairgate.errors",
    "FairgateError": "fairgate.errors",
    "ModelInfo": "fairgate.engine.adjudicate",
    "Policy": "fairgate.policy.core",
    "PolicyError": "fairgate.errors",
    "SlicingResult": "fairgate.engine.slicing",
    "adjudicate": "fairgate.engine.adjudicate",
    "audit": "fairgate.engine.audit",
    "build_cube": "fairgate.engine.cube",
    "compute_slicing": "fairgate.engine.slicing",
    "group_key": "fairgate.engine.labels",
    "plan_slicings": "fairgate.engine.planning",
    "slicing_label": "fairgate.engine.labels",
}
__all__ = [
    "SCHEMA_VERSION",
    "AuditDocument",
    "AuditResult",
    "Cube",
    "DataError",
    "FairgateError",
    "ModelInfo",
    "Policy",
    "PolicyError",
    "SlicingResult",
    "adjudicate",
    "audit",
    "build_cube",
    "compute_slicing",
    "group_key",
    "plan_slicings",
    "slicing_label",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fairgate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
