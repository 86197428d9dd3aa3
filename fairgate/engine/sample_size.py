"""How many rows an audit needs for its gate to fail on a given disparity (``fairgate plan``).

The question is answered by the gate itself, not by a formula beside it that could disagree: for a candidate
row count N, seeded simulated audits of N people are judged by the engine's own steps (the cube's slicings as
the policy plans them, ``compute_slicing``, ``adjudicate``: the deciding interval or test, alpha, Holm over every
result the policy judges, ``min_events`` and ``min_group_size``), and the power is the share of them whose
verdict is ``fail``. The smallest N reaching the wanted power is found by bisection (on a log scale, from a
bracket found by doubling); every candidate N is judged on the same seeds (common random numbers), which keeps
the estimated power nearly monotone in N.

**The simulated population.** The groups' shares are stated per attribute (attributes independent) or read from
an attributes file (the joint shares of its rows). Every group has the same base rate (share of favourable
labels) and the same TPR and FPR, except one, the *target* group (by default the largest group that is not the
attribute's reference group), which carries the disparity on the metric's rates: a difference of ``d`` lowers
its TPR by ``d`` (equal opportunity, equalized odds), raises its FPR by ``d`` (false positive rate) or lowers
both (selection rate: demographic parity); a ratio ``r`` multiplies them by ``r``. Every other metric of the
policy is judged too, as the gate judges them: it is the whole gate whose failure is counted.

Each simulated audit is drawn as cube counts (a multinomial over the cells attributes x label x prediction), not
as rows, so a plan for a million rows costs what a plan for a thousand does.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from fairgate.engine.adjudicate import adjudicate
from fairgate.engine.columns import PERSON_SQ, PRED, ROWS, TRUE, WEIGHT, WEIGHT_SQ
from fairgate.engine.cube import Cube, build_cube
from fairgate.engine.kinds import kind_of, refusal
from fairgate.engine.metrics import SummaryOf, policy_metric
from fairgate.engine.slicing import compute_slicing, plan_slicings
from fairgate.engine.text import fmt
from fairgate.errors import FairgateError
from fairgate.policy.core import Policy

TPR, FPR, SELECTION = "true_positive_rate", "false_positive_rate", "selection_rate"
PLANNABLE_BASES = frozenset({TPR, FPR, SELECTION})
SHARE_TOLERANCE = 0.01  # stated shares must sum to 1 within this
MAX_ROWS = 50_000_000
BISECTION_RATIO = 1.05  # stop when the bracket's ends are within 5% of each other
START_ROWS = 1_000


@dataclass(frozen=True)
class Scenario:
    """What is planned for: the metric, the true disparity, the groups' shares and the rates.

    ``shares``: one row per combination of the policy's attributes (string columns) with its share in
    ``"share"`` (summing to 1). ``target``: the (attribute, group) carrying the disparity.
    """

    metric: str
    disparity: float
    shares: pl.DataFrame
    target: tuple[str, str]
    base_rate: float = 0.5
    tpr: float = 0.7
    fpr: float = 0.3


@dataclass(frozen=True)
class Plan:
    """The rows needed, the power the simulation found there, and every row count tried on the way."""

    rows_needed: int
    power: float
    target_power: float
    runs: int
    seed: int
    metric: str
    disparity: float
    threshold: float
    target: tuple[str, str]
    reference: str
    results_judged: int  # the Holm family: every result the gate judges in one audit of that size
    tried: list[tuple[int, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {
            "rows_needed": self.rows_needed,
            "power": self.power,
            "target_power": self.target_power,
            "runs": self.runs,
            "seed": self.seed,
            "metric": self.metric,
            "disparity": self.disparity,
            "threshold": self.threshold,
            "group": {self.target[0]: self.target[1]},
            "reference_group": self.reference,
            "results_judged": self.results_judged,
            "tried": [{"rows": n, "power": p} for n, p in self.tried],
        }


# ------------------------------------------------------------------------------------------ checking
def check_scenario(policy: Policy, scenario: Scenario) -> float:
    """Refuse what cannot be planned (a FairgateError naming the fix); the metric's threshold otherwise."""
    kind = kind_of(policy.task)
    if not kind.can("plan"):
        raise FairgateError(refusal("plan", kind))
    rule = next((m for m in policy.metrics if m.name == scenario.metric), None)
    if rule is None:
        judged = [m.name for m in policy.metrics]
        raise FairgateError(f"--metric {scenario.metric!r} is not judged by the policy; its metrics: {judged}")
    metric = policy_metric(scenario.metric)
    if not isinstance(metric, SummaryOf) or not PLANNABLE_BASES.issuperset(metric.bases):
        raise FairgateError(
            f"--metric {scenario.metric!r} cannot be planned: fairgate plan simulates disparities in selection, "
            "true positive and false positive rates (demographic parity, disparate impact, equal opportunity, "
            "equalized odds, false positive rate difference or ratio)"
        )
    threshold = float(rule.threshold)
    d = scenario.disparity
    if metric.summary == "ratio" and not (0.0 < d < threshold):
        raise FairgateError(
            f"--disparity {d:g} for the ratio {scenario.metric} must be the true ratio, above 0 and below the "
            f"policy's threshold {threshold:g} (a ratio at or above it does not fail the gate)"
        )
    if metric.summary == "difference" and not (threshold < d < 1.0):
        raise FairgateError(
            f"--disparity {d:g} must be the true gap, above the policy's threshold {threshold:g} for "
            f"{scenario.metric} (a gap within it does not fail the gate) and below 1"
        )
    for name, value in (("base rate", scenario.base_rate), ("TPR", scenario.tpr), ("FPR", scenario.fpr)):
        if not 0.0 < value < 1.0:
            raise FairgateError(f"the {name} {value:g} must lie strictly between 0 and 1")
    _check_shares(policy, scenario)
    target = _target_rates(scenario, metric)
    if not all(0.0 <= r <= 1.0 for r in target):
        raise FairgateError(
            f"a disparity of {d:g} takes the target group's rates out of [0, 1] (TPR, FPR {target}); "
            "give other --tpr/--fpr"
        )
    return threshold


def _check_shares(policy: Policy, scenario: Scenario) -> None:
    shares = scenario.shares
    for attribute in policy.sensitive_attributes:
        if attribute.name not in shares.columns:
            raise FairgateError(
                f"no shares for the policy's attribute {attribute.name!r}; give --shares {attribute.name}=A:0.6,B:0.4 "
                "or an --attributes file with that column"
            )
        present = set(shares[attribute.name].to_list())
        missing = [v for v in (attribute.values or []) if v not in present]
        if attribute.reference_group is not None and attribute.reference_group not in present:
            missing.append(attribute.reference_group)
        if missing:
            raise FairgateError(
                f"the shares of {attribute.name!r} leave out group(s) {sorted(set(missing))} the policy names; "
                "give every group a share"
            )
    total = float(shares["share"].sum())
    if abs(total - 1.0) > SHARE_TOLERANCE or bool((shares["share"] < 0).any()):
        raise FairgateError(f"the group shares sum to {total:.4g}, not 1; give shares that add up to 1")
    name, group = scenario.target
    if name not in policy.attribute_names or group not in set(shares[name].to_list()):
        raise FairgateError(f"--group {name}={group}: no such group among the shares; name one that has a share")


# ------------------------------------------------------------------------------------------ shares
def stated_shares(stated: Mapping[str, Mapping[str, float]]) -> pl.DataFrame:
    """Shares stated per attribute, the attributes independent: one row per combination with its share.

    >>> stated_shares({"sex": {"F": 0.4, "M": 0.6}})["share"].to_list()
    [0.4, 0.6]
    """
    names = list(stated)
    rows = []
    for combination in itertools.product(*(stated[n].items() for n in names)):
        rows.append({**{n: g for n, (g, _) in zip(names, combination, strict=True)}, "share": _product(combination)})
    return pl.DataFrame(rows, schema={**{n: pl.String for n in names}, "share": pl.Float64})


def _product(combination: Sequence[tuple[str, float]]) -> float:
    return float(math.prod(share for _, share in combination))


def observed_shares(attributes: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """The joint shares of the attribute columns ``names`` in a frame of people.

    A missing value is its own group, the text ``"null"``: seen, and refused when the policy names the groups.
    """
    counted = attributes.select(pl.col(n).cast(pl.String).fill_null("null") for n in names).group_by(names).len()
    return counted.with_columns((pl.col("len") / pl.col("len").sum()).alias("share")).drop("len").sort(names)


def default_target(policy: Policy, shares: pl.DataFrame, attribute: str | None = None) -> tuple[str, str]:
    """The largest group that is not its attribute's reference group (the first attribute's by default)."""
    name = attribute or policy.attribute_names[0]
    reference = _reference(policy, name, shares)
    return name, next(g for g in _by_share(shares, name) if g != reference)


def _reference(policy: Policy, attribute: str, shares: pl.DataFrame) -> str:
    configured = policy.attribute(attribute).reference_group
    if configured is not None:
        return str(configured)
    return _by_share(shares, attribute)[0]


def _by_share(shares: pl.DataFrame, attribute: str) -> list[str]:
    """The attribute's groups, largest share first (ties by name)."""
    marginal = shares.group_by(attribute).agg(pl.col("share").sum())
    return [str(g) for g in marginal.sort(["share", attribute], descending=[True, False])[attribute].to_list()]


# ------------------------------------------------------------------------------------------ simulation
def _target_rates(scenario: Scenario, metric: SummaryOf) -> tuple[float, float]:
    """The target group's (TPR, FPR) under the disparity (module docstring)."""
    d, tpr, fpr = scenario.disparity, scenario.tpr, scenario.fpr
    bases = set(metric.bases)
    if metric.summary == "ratio":
        if bases == {FPR}:
            return tpr, fpr * d
        return (tpr * d, fpr * d) if bases == {SELECTION} else (tpr * d, fpr)
    if bases == {FPR}:
        return tpr, fpr + d
    return (tpr - d, fpr - d) if bases == {SELECTION} else (tpr - d, fpr)


@dataclass(frozen=True)
class CellModel:
    """The cube's cells for the scenario and each cell's probability: a multinomial draw is one audit's cube."""

    cube: Cube  # the template: every cell once
    probabilities: np.ndarray

    def draw(self, rows: int, rng: np.random.Generator) -> Cube:
        """One simulated audit of ``rows`` people, as its cube (empty cells dropped, as a counted cube has none)."""
        counts = rng.multinomial(rows, self.probabilities)
        schema = self.cube.cells.schema
        cells = self.cube.cells.with_columns(
            pl.Series(ROWS, counts).cast(schema[ROWS]),
            *(pl.Series(c, counts.astype(float)).cast(schema[c]) for c in (WEIGHT, WEIGHT_SQ, PERSON_SQ)),
        ).filter(pl.col(ROWS) > 0)
        return replace(self.cube, cells=cells)


def cell_model(policy: Policy, scenario: Scenario) -> CellModel:
    """Every cell (attribute combination x label x prediction) with its probability under the scenario."""
    metric = policy_metric(scenario.metric)
    assert isinstance(metric, SummaryOf)
    target_tpr, target_fpr = _target_rates(scenario, metric)
    names = policy.attribute_names
    attribute, group = scenario.target
    frame = scenario.shares.select(*names, "share").filter(pl.col("share") > 0)
    in_target = pl.col(attribute) == group
    tpr = pl.when(in_target).then(target_tpr).otherwise(scenario.tpr)
    fpr = pl.when(in_target).then(target_fpr).otherwise(scenario.fpr)
    cells = frame.join(pl.DataFrame({TRUE: [0, 0, 1, 1], PRED: [0, 1, 0, 1]}), how="cross").with_columns(
        (
            pl.col("share")
            * pl.when(pl.col(TRUE) == 1).then(scenario.base_rate).otherwise(1.0 - scenario.base_rate)
            * pl.when(pl.col(TRUE) == 1)
            .then(pl.when(pl.col(PRED) == 1).then(tpr).otherwise(1.0 - tpr))
            .otherwise(pl.when(pl.col(PRED) == 1).then(fpr).otherwise(1.0 - fpr))
        ).alias("__p")
    )
    favourable = policy.favorable_label
    columns = policy.columns
    raw = cells.select(
        *names,
        (pl.col(TRUE) if favourable == 1 else 1 - pl.col(TRUE)).alias(columns.y_true),
        (pl.col(PRED) if favourable == 1 else 1 - pl.col(PRED)).alias(columns.y_pred),
    )
    cube = build_cube(raw, policy, source="the planned population")
    keys = [*names, TRUE, PRED]
    ordered = cube.cells.select(keys).join(cells.select(*keys, "__p"), on=keys, how="left", maintain_order="left")
    probabilities = ordered["__p"].fill_null(0.0).to_numpy()
    return CellModel(cube, probabilities / probabilities.sum())


def with_bootstrap_seed(policy: Policy, seed: int) -> Policy:
    """The policy with another ``statistics.seed`` (everything else, the decision rule included, unchanged)."""
    return policy.model_copy(update={"statistics": policy.statistics.model_copy(update={"seed": seed})})


def audit_fails(cube: Cube, policy: Policy) -> tuple[bool, int]:
    """Whether the gate fails this cube's audit (the engine's own steps), and how many results it judged."""
    parts = [compute_slicing(cube, slicing, policy) for slicing in plan_slicings(cube, policy)]
    document = adjudicate(cube, parts, policy).to_dict()
    detail = document.get("verdict_detail") or {}
    return document["verdict"] == "fail" and not detail.get("nothing_judged"), int(detail.get("n_judged") or 0)


def simulated_power(
    model: CellModel, policy: Policy, rows: int, runs: int, seed: int, first_run: int = 0
) -> tuple[float, int]:
    """The share of ``runs`` simulated audits of ``rows`` people that fail, and the most results one judged.

    Run i draws its cube with the seed (seed, first_run + i): every row count is judged on the same seeds. Each run
    also bootstraps with its own seed (:func:`with_bootstrap_seed`): one bootstrap draw shared by every simulated
    audit would shift all their critical values alike, and the power found would be that draw's, not the gate's.
    """
    fails, judged = 0, 0
    for run in range(first_run, first_run + runs):
        rng = np.random.default_rng([seed, run])
        judged_by = with_bootstrap_seed(policy, int(rng.integers(2**62)))
        failed, n = audit_fails(model.draw(rows, rng), judged_by)
        fails += failed
        judged = max(judged, n)
    return fails / runs, judged


# ------------------------------------------------------------------------------------------ search
def plan_rows(policy: Policy, scenario: Scenario, *, power: float = 0.8, runs: int = 100, seed: int = 0) -> Plan:
    """The smallest row count at which at least ``power`` of ``runs`` simulated audits fail (module docstring).

    Doubling (or halving) from ``START_ROWS`` brackets it; bisection on a log scale narrows the bracket to
    ``BISECTION_RATIO``; the answer is the bracket's upper end, confirmed on fresh seeds (:func:`_confirmed`), and
    its power over both sets of seeds is reported.
    """
    threshold = check_scenario(policy, scenario)
    model = cell_model(policy, scenario)
    tried: dict[int, float] = {}
    judged = 0

    def reaches(rows: int) -> bool:
        nonlocal judged
        if rows not in tried:
            tried[rows], n = simulated_power(model, policy, rows, runs, seed)
            judged = max(judged, n)
        return tried[rows] >= power

    low, high = _bracket(reaches)
    while high / low > BISECTION_RATIO and high - low > 1:
        middle = round(math.sqrt(low * high))
        low, high = (low, middle) if reaches(middle) else (middle, high)

    def searched(rows: int) -> float:
        reaches(rows)
        return tried[rows]

    def fresh(rows: int) -> float:
        return simulated_power(model, policy, rows, runs, seed, first_run=runs)[0]

    rows, confirmed = _confirmed(high, searched, fresh, power)
    return Plan(
        rows_needed=rows,
        power=confirmed,
        target_power=power,
        runs=2 * runs,
        seed=seed,
        metric=scenario.metric,
        disparity=scenario.disparity,
        threshold=threshold,
        target=scenario.target,
        reference=_reference(policy, scenario.target[0], scenario.shares),
        results_judged=judged,
        tried=sorted(tried.items()),
    )


def _confirmed(rows: int, searched: Any, fresh: Any, target: float) -> tuple[int, float]:
    """The row count confirmed on fresh seeds, and its power over both sets of seeds.

    The search stops at the first row count whose estimate reaches the target, so that estimate is biased up
    (the winner's curse: at a true power of 0.76 an estimate from 100 audits reaches 0.8 one time in five). The
    power is estimated again on independent seeds and pooled with the search's; while the pooled estimate falls
    short, the row count grows by the bisection's step.
    """
    pooled = 0.5 * (searched(rows) + fresh(rows))
    while pooled < target and rows < MAX_ROWS:
        rows = math.ceil(rows * BISECTION_RATIO)
        pooled = 0.5 * (searched(rows) + fresh(rows))
    return rows, pooled


def _bracket(reaches: Any) -> tuple[int, int]:
    """(rows that fall short, rows that reach the power), a factor of 2 apart."""
    rows = START_ROWS
    if reaches(rows):
        while rows > 2 and reaches(rows // 2):
            rows //= 2
        return max(rows // 2, 1), rows
    while not reaches(rows * 2):
        rows *= 2
        if rows * 2 > MAX_ROWS:
            raise FairgateError(
                f"even {MAX_ROWS:,} rows do not give the gate that power: the disparity is too close to the "
                "threshold, or the target group too small; plan a larger disparity or a larger group"
            )
    return rows, rows * 2


# ------------------------------------------------------------------------------------------ an existing audit
def detectable_table(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per judged result of an audit document: the disparity it could have detected with 80% power.

    The document's own ``detectable_disparity`` (the threshold plus (critical value + z_0.8) times the largest
    pair standard error, at the Holm level of the audit): a pass where it lies far beyond the threshold says little.
    Results without it (not judged, or no interval) are listed with the reason.
    """
    rows = []
    for result in document.get("results") or []:
        if result.get("status") in (None, "insufficient_data") and result.get("detectable_disparity") is None:
            continue
        rows.append(
            {
                "metric": result["metric"],
                "slicing": list(result.get("slicing") or []),
                "value": result.get("value"),
                "threshold": result.get("threshold"),
                "status": result.get("status"),
                "detectable_disparity": result.get("detectable_disparity"),
                "sentence": _detectable_sentence(result),
            }
        )
    return rows


def _detectable_sentence(result: Mapping[str, Any]) -> str:
    detectable, threshold = result.get("detectable_disparity"), result.get("threshold")
    if detectable is None or threshold is None:
        return str(result.get("reason") or "no interval: nothing to say what it could detect")
    ratio = str(result["metric"]).endswith("_ratio")
    direction = "down to" if ratio else "of"
    return (
        f"with 80% power this audit would fail a true {'ratio' if ratio else 'gap'} {direction} {fmt(detectable)} "
        f"(threshold {threshold:g}); a smaller violation could pass unnoticed"
    )
