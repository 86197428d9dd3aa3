"""The kind registry (fairgate/engine/kinds.py): one public call audits every kind, one reference rule names the
largest group when none is configured, and a fifth kind plugs in by registering (issue 22)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import fairgate
from fairgate.document.result import AuditResult
from fairgate.engine import kinds
from fairgate.engine.tasks import TaskMetric, metric_catalogue
from fairgate.errors import PolicyError

N = 3000
RNG = np.random.default_rng(7)
# Group "b" is the largest; none is configured as the reference.
GROUPS = RNG.choice(["a", "b", "c"], N, p=[0.25, 0.45, 0.30])


def _policy(task: str, section: str, metric: str, threshold: float, columns: str = "") -> fairgate.Policy:
    return fairgate.Policy.from_yaml(f"""
fairness_checker:
  task: {task}
  {section}
  sensitive_attributes: [{{name: g}}]
  metrics: [{{name: {metric}, threshold: {threshold}}}]
  intersectional_analysis: {{min_group_size: 20}}
  statistics: {{n_bootstrap: 60}}
  {columns}
""")


def _frames() -> dict[str, tuple[pl.DataFrame, fairgate.Policy]]:
    y = RNG.integers(0, 2, N)
    binary = pl.DataFrame({"y_true": y, "y_pred": RNG.integers(0, 2, N), "g": GROUPS})
    tiers = ["low", "medium", "high"]
    multiclass = pl.DataFrame({"y_true": RNG.choice(tiers, N), "y_pred": RNG.choice(tiers, N), "g": GROUPS})
    numbers = RNG.normal(size=N)
    regression = pl.DataFrame({"y_true": numbers, "y_pred": numbers + RNG.normal(size=N) * 0.1, "g": GROUPS})
    lists = np.repeat(np.arange(N // 20), 20)
    ranking = pl.DataFrame(
        {
            "q": lists,
            "r": np.tile(np.arange(1, 21), N // 20),
            "y_true": RNG.integers(0, 2, N).astype(float),
            "g": GROUPS,
        }
    )
    return {
        "binary": (binary, _policy("binary", "", "disparate_impact_ratio", 0.8)),
        "multiclass": (
            multiclass,
            _policy("multiclass", "multiclass: {classes: [low, medium, high]}", "demographic_parity_difference", 0.9),
        ),
        "regression": (regression, _policy("regression", "", "mean_residual_difference", 0.5)),
        "ranking": (
            ranking,
            _policy("ranking", "ranking: {top_k: [5]}", "top_k_rate_ratio", 0.5, "columns: {list_id: q, rank: r}"),
        ),
    }


@pytest.mark.parametrize("kind", list(kinds.KINDS))
def test_fairgate_audit_audits_every_kind_and_names_the_largest_group_as_reference(kind: str) -> None:
    frame, policy = _frames()[kind]
    result = fairgate.audit(frame, policy)
    document = result.to_dict()
    assert result.verdict in ("pass", "fail")
    assert document["task"] == kind
    (attribute,) = document["attributes"]
    assert attribute["reference_group"] == "b"  # the largest group, whatever the kind


def test_a_configured_reference_is_named_by_every_kind() -> None:
    for kind, (frame, policy) in _frames().items():
        configured = fairgate.Policy.from_mapping(
            {"fairness_checker": policy.model_dump(mode="json", exclude_defaults=True)
             | {"sensitive_attributes": [{"name": "g", "reference_group": "c"}]}}
        )  # fmt: skip
        (attribute,) = fairgate.audit(frame, configured).to_dict()["attributes"]
        assert attribute["reference_group"] == "c", kind


def test_capabilities_are_the_registrys_data() -> None:
    assert kinds.kinds_that_can("dask") == ["binary"]
    _, policy = _frames()["regression"]
    with pytest.raises(PolicyError, match=r"execution\.runner: dask works on binary audits only"):
        fairgate.Policy.from_mapping(
            {
                "fairness_checker": policy.model_dump(mode="json", exclude_defaults=True)
                | {"execution": {"runner": "dask"}}
            }
        )


# ------------------------------------------------------------------------------------- a throwaway fifth kind
def _toy_modules() -> tuple[types.ModuleType, types.ModuleType]:
    """A kind judging the gap in mean prediction between groups: its catalogue and its steps, nothing else."""
    catalogue = types.ModuleType("toy_kind_catalogue")
    catalogue.CATALOGUE = {  # type: ignore[attr-defined]
        "mean_gap": TaskMetric("mean_gap", "lower_is_better", (0.0, 1.0), 0.1, "difference", "gap in mean")
    }
    engine = types.ModuleType("toy_kind_engine")

    def count(rows: Any, policy: fairgate.Policy, *, source: str = "") -> pl.DataFrame:
        return pl.DataFrame(rows).group_by("g").agg(pl.col("y_pred").mean().alias("mean"), pl.len().alias("n"))

    def slicings(cube: pl.DataFrame, policy: fairgate.Policy) -> float:
        return float(cube["mean"].max() - cube["mean"].min())

    def adjudicate(cube: pl.DataFrame, gap: float, policy: fairgate.Policy, **_: Any) -> AuditResult:
        threshold = policy.rule_for("mean_gap", ("g",)).threshold
        return types.SimpleNamespace(verdict="fail" if gap > threshold else "pass", gap=gap)  # type: ignore[return-value]

    engine.STEPS = kinds.KindSteps(count=count, slicings=slicings, adjudicate=adjudicate)  # type: ignore[attr-defined]
    return catalogue, engine


def test_a_fifth_kind_plugs_in_by_registering(monkeypatch: pytest.MonkeyPatch) -> None:
    catalogue, engine = _toy_modules()
    monkeypatch.setitem(sys.modules, catalogue.__name__, catalogue)
    monkeypatch.setitem(sys.modules, engine.__name__, engine)
    monkeypatch.setitem(kinds.KINDS, "toy", kinds.Kind("toy", catalogue.__name__, engine.__name__))
    policy = _policy("toy", "", "mean_gap", 0.1)
    assert metric_catalogue("toy")["mean_gap"].summary == "difference"
    frame = pl.DataFrame({"y_pred": [0.9, 0.8, 0.1, 0.2], "g": ["a", "a", "b", "b"]})
    assert fairgate.audit(frame, policy).verdict == "fail"
    # What the toy kind did not declare is refused through the registry, in the words every kind uses.
    with pytest.raises(PolicyError, match="a monitoring: section works on binary audits only"):
        fairgate.Policy.from_mapping(
            {"fairness_checker": policy.model_dump(mode="json", exclude_defaults=True)
             | {"monitoring": {"alerts": [{"metric": "mean_gap", "min_change": 0.1}]}}}
        )  # fmt: skip
    with pytest.raises(PolicyError, match="unknown metric 'disparate_impact_ratio' for task: toy"):
        _policy("toy", "", "disparate_impact_ratio", 0.8)


@pytest.mark.parametrize("kind", list(kinds.KINDS))
def test_every_registered_kind_has_its_part_in_every_layer(kind: str) -> None:
    """The registry names the kinds; each layer's table must cover exactly the registered ones (a kind added to
    KINDS without its validation, trail cells, report pages, charts or demo fails here, not in a user's run)."""
    from cli.demos import DEMOS
    from tasks.render.kind_charts import KIND_CHARTS
    from tasks.task_kinds import KIND_TASKS

    registered = kinds.kind_of(kind)
    assert kind in KIND_TASKS
    assert kind in DEMOS
    if registered.report_pages is None:  # the shared pages and charts
        assert kind not in KIND_CHARTS
        return
    module, function = registered.report_pages.split(":")
    assert callable(getattr(__import__(module, fromlist=[function]), function))
    assert kind in KIND_CHARTS
    assert (Path(__file__).parents[2] / "reports" / "partials" / f"{kind}.html.j2").is_file()
