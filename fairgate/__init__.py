"""fairgate: a fairness checker for ML models (the pure engine).

>>> import polars as pl, fairgate
>>> policy = fairgate.Policy.from_yaml('''
... fairness_checker:
...   sensitive_attributes: [{name: sex}]
...   metrics: [{name: demographic_parity_difference, threshold: 0.1}]
...   intersectional_analysis: {min_group_size: 1}
...   statistics: {n_bootstrap: 50}
... ''')
>>> frame = pl.DataFrame({"y_true": [1, 0, 1, 0], "y_pred": [1, 0, 0, 0], "sex": ["F", "F", "M", "M"]})
>>> fairgate.audit(frame, policy).verdict
'fail'
"""

from fairgate.document.document import AuditDocument
from fairgate.document.result import SCHEMA_VERSION, AuditResult
from fairgate.engine.adjudicate import ModelInfo, adjudicate
from fairgate.engine.audit import audit
from fairgate.engine.cube import Cube, build_cube
from fairgate.engine.labels import group_key, slicing_label
from fairgate.engine.slicing import SlicingResult, compute_slicing, plan_slicings
from fairgate.errors import DataError, FairgateError, PolicyError
from fairgate.policy.core import Policy

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
