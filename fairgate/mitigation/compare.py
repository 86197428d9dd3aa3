"""Comparing two models on the same people: each judged metric's change with a paired bootstrap interval.

The two models' favourable-outcome predictions are counted into one *joint* cube, keyed by every sensitive
attribute, the label and both predictions. Each cell is a set of people with the same label and the same pair
of decisions, so resampling people (a multinomial draw over the joint cells, as ``engine.bootstrap`` does for
one model) resamples the same people for both models: the change candidate - baseline of every metric then
has a paired interval, much narrower than two independent intervals would give when the models agree on
most people. Metrics come from ``engine.metrics`` (the audit's own definitions), per slicing as the audit
plans them.

Metrics that need the models' scores (ROC AUC, calibration) are not compared: the joint cube holds decisions
only. They are listed with that reason, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import polars as pl

from fairgate.engine.bootstrap import draw_counts, slicing_seed
from fairgate.engine.cube import as_lazy, build_cube
from fairgate.engine.labels import reason_label, slicing_label, spelled
from fairgate.engine.metric_labels import metric_label, metric_words
from fairgate.engine.metrics import Accuracy, GroupCounts, GroupMetric, PolicyMetric, SummaryOf, policy_metric
from fairgate.engine.slicing import plan_slicings
from fairgate.engine.text import ValueLabels, policy_labels
from fairgate.errors import DataError, PolicyError
from fairgate.mitigation.change_family import ChangeFamily, change_family
from fairgate.mitigation.promotion import DECISIONS_ONLY, ModelAudit, choose, gate, joint_rows, model_audit
from fairgate.policy.core import Policy

Slicing = tuple[str, ...]
Status = Literal["worse", "better", "no_evidence_of_change", "undefined", "insufficient_data"]
Decision = Literal["promote", "do_not_promote"]

_TRUE, _BASE, _CAND, _ROWS = "__y_true", "__pred_baseline", "__pred_candidate", "__rows"
_ROLES = ("baseline", "candidate")
_JUDGED = {"worse", "better", "no_evidence_of_change"}
# Fewer replicates than this cannot place a percentile interval's tails, least of all simultaneous ones.
MIN_BOOTSTRAP = 100
METHOD = (
    "paired bootstrap (both models resampled on the same people): a gap's or ratio's change from one joint "
    "simultaneous max-t family over both models' pairwise differences and their changes; accuracy's, percentile"
)


@dataclass(frozen=True)
class JointCube:
    """People counted per (attributes, label, baseline decision, candidate decision).

    Label and decisions are 0/1 indicators of the favourable outcome (``policy.favorable_label``).
    """

    cells: pl.DataFrame
    attributes: tuple[str, ...]
    slicings: list[Slicing]

    @property
    def n_rows(self) -> int:
        """How many people both models were compared on."""
        return int(self.cells[_ROWS].sum())


def group_sizes(joint: JointCube) -> list[tuple[list[str], dict[str, str], float]]:
    """The people compared in each group of every compared slicing (the whole population is ``n_rows``)."""
    sizes = []
    for slicing in joint.slicings:
        if not slicing:
            continue
        keys = list(slicing)
        table = joint.cells.group_by(keys).agg(pl.col(_ROWS).sum()).sort(keys)
        sizes += [(keys, {a: str(row[a]) for a in keys}, float(row[_ROWS])) for row in table.iter_rows(named=True)]
    return sizes


def joint_cube(baseline: Any, candidate: Any, policy: Policy, *, id_column: str | None = None) -> JointCube:
    """Pair two models' aligned rows on the policy's id column and count them into a joint cube.

    Each input holds the id, label, prediction (or score, thresholded at ``columns.decision_threshold``) and
    attribute columns under the policy's names (the id under ``id_column``, default ``columns.id``). Each is
    first checked as the audit checks its rows (binary labels and predictions, scores in [0, 1], declared
    attribute values); the two must hold the same people, with the same labels and attributes.

    Raises
    ------
    DataError
        Naming which input is wrong and how (different people, conflicting labels, weights not supported).
    """
    if policy.columns.weight is not None or policy.proxy is not None:
        raise DataError(
            "fairgate compare needs each person counted once with a known group; remove columns.weight and the "
            "proxy section from the policy (weighted or inferred membership is not supported by compare)"
        )
    frames = {role: as_lazy(data).collect() for role, data in zip(_ROLES, (baseline, candidate), strict=True)}
    checked = {
        role: build_cube(frame, policy, source=f"the {role} rows", exact_auc=False) for role, frame in frames.items()
    }
    key = id_column or policy.columns.id
    rows = {role: _decisions(frame, policy, role, key) for role, frame in frames.items()}
    paired = _paired(rows["baseline"], rows["candidate"], policy, key)
    attributes = tuple(policy.attribute_names)
    cells = (
        paired.group_by([*attributes, _TRUE, _BASE, _CAND])
        .agg(pl.len().cast(pl.Int64).alias(_ROWS))
        .sort([*attributes, _TRUE, _BASE, _CAND])
    )
    return JointCube(cells, attributes, plan_slicings(checked["baseline"], policy))


def _decisions(frame: pl.DataFrame, policy: Policy, role: str, key: str) -> pl.DataFrame:
    """id, attributes (missing values as the policy says), favourable label and decision indicators."""
    columns = policy.columns
    if key not in frame.columns:
        raise DataError(f"the {role} rows have no id column {key!r}; set columns.id in the policy")
    if frame[key].n_unique() != frame.height:
        raise DataError(f"the {role} rows repeat ids in {key!r}; each person must appear once")
    if columns.y_pred in frame.columns:
        decision = pl.col(columns.y_pred).cast(pl.Float64, strict=False)
    else:
        decision = (pl.col(columns.score).cast(pl.Float64) >= columns.decision_threshold).cast(pl.Float64)
    favourable = float(policy.favorable_label)
    selected = frame.select(
        pl.col(key),
        *[_attribute(policy, name) for name in policy.attribute_names],
        (pl.col(columns.y_true).cast(pl.Float64, strict=False) == favourable).cast(pl.Int8).alias(_TRUE),
        (decision == favourable).cast(pl.Int8).alias(_BASE if role == "baseline" else _CAND),
    )
    kept = pl.all_horizontal(pl.col(name).is_not_null() for name in policy.attribute_names)
    return selected.filter(kept)  # missing: exclude leaves the person out, as the cube does


def _attribute(policy: Policy, name: str) -> pl.Expr:
    attribute = policy.attribute(name)
    column = pl.col(name).cast(pl.String)
    return column.fill_null(attribute.unknown_label) if attribute.missing == "unknown" else column


def _paired(baseline: pl.DataFrame, candidate: pl.DataFrame, policy: Policy, key: str) -> pl.DataFrame:
    """The two models' rows joined on id; the same people with the same labels and attributes, or an error."""
    joined = _by_position(baseline, candidate, key)
    if joined is None:  # different people: the join names them
        joined = baseline.join(candidate, on=key, how="inner", suffix="__candidate")
    for role, mine, other in (("baseline", baseline, candidate), ("candidate", candidate, baseline)):
        if joined.height < mine.height:  # ids are unique: someone lacks the other model's prediction
            ids = mine.join(other, on=key, how="anti")[key]
            partner = "candidate" if role == "baseline" else "baseline"
            raise DataError(
                f"{ids.len()} person(s) have a {role} prediction but no {partner} prediction (e.g. {key}="
                f"{ids[0]!r}); compare needs both models' predictions for the same people: give both "
                "prediction inputs the same ids"
            )
    shared = [*policy.attribute_names, _TRUE]
    differs = {column: pl.col(column).ne_missing(pl.col(f"{column}__candidate")).sum() for column in shared}
    counts = joined.select(**differs).row(0, named=True)
    for column, count in counts.items():
        if count:
            example = joined.filter(pl.col(column).ne_missing(pl.col(f"{column}__candidate")))[key][0]
            name = policy.columns.y_true if column == _TRUE else column
            raise DataError(
                f"{count} person(s) have a different {name!r} in the baseline and candidate rows "
                f"(e.g. {key}={example!r}); compare both models against the same labels and attributes"
            )
    return joined.select(key, *shared, _BASE, _CAND)


def _by_position(baseline: pl.DataFrame, candidate: pl.DataFrame, key: str) -> pl.DataFrame | None:
    """Both sorted by id and set side by side when they hold the very same ids, else None.

    Faster than a hash join on millions of rows.
    """
    if baseline.height != candidate.height:
        return None
    baseline, candidate = baseline.sort(key), candidate.sort(key)
    if not baseline[key].equals(candidate[key]):
        return None
    # Named as the join names them: a column both hold gets the suffix on the candidate's side.
    shared = {c: f"{c}__candidate" for c in candidate.columns if c in baseline.columns and c != key}
    renamed = candidate.drop(key).rename(shared)
    return pl.concat([baseline, renamed], how="horizontal")


@dataclass(frozen=True)
class _Change:
    """One judged metric's change on one slicing, with its bootstrap replicates kept for the intervals."""

    metric: str
    slicing: Slicing
    direction: str
    baseline: float
    candidate: float
    replicates: np.ndarray  # candidate - baseline per replicate
    # Why the change cannot be judged although it has a value (a rate resting on too few people), if so.
    insufficient: str | None = None
    # A gap's or ratio's change: the joint simultaneous family its intervals come from (else percentile).
    family: ChangeFamily | None = None

    @property
    def judged(self) -> bool:
        """Whether the change takes part in the decision: defined, and resting on enough people."""
        return bool(np.isfinite(self.candidate - self.baseline)) and self.insufficient is None


def compare(joint: JointCube, policy: Policy, audit: ModelAudit | None = None) -> dict[str, Any]:
    """The comparison of one candidate: accuracy's and each judged metric's change with paired intervals.

    The candidate's entry of :func:`compare_candidates` with the shared fields (rule, statistics) beside it.
    """
    result = compare_candidates({"candidate": joint}, policy, None if audit is None else {"candidate": audit})
    shared = {key: value for key, value in result.items() if key not in {"candidates", "chosen", "plane"}}
    entry = {key: value for key, value in result["candidates"][0].items() if key != "name"}
    return {**shared, **entry}


def compare_candidates(
    joints: Mapping[str, JointCube], policy: Policy, audits: Mapping[str, ModelAudit] | None = None
) -> dict[str, Any]:
    """Each candidate against the baseline on the same people, a decision per candidate, and the choice.

    ``joints`` maps each candidate's name to its joint cube with the baseline; ``statistics.n_bootstrap`` paired
    replicates (seed ``statistics.seed``). A gap's or ratio's change has the interval of its joint simultaneous
    family (``change_family``), accuracy's the percentile one. With ``comparison.simultaneous``, the deciding
    intervals hold jointly over every judged change of *every* candidate (Bonferroni over ``statistics.alpha``).

    ``audits``: each candidate's own audit (``promotion.model_audit``); promotable only when it passes. Without
    it, each candidate's decisions in its joint cube are audited (no scores). ``chosen``: ``promotion.choose``.
    """
    if not joints:
        raise DataError("fairgate compare needs at least one candidate; pass --candidate")
    if policy.statistics.n_bootstrap < MIN_BOOTSTRAP:
        raise PolicyError(
            f"statistics.n_bootstrap is {policy.statistics.n_bootstrap}; fairgate compare needs at least "
            f"{MIN_BOOTSTRAP} bootstrap replicates for its paired intervals (1000 is a good choice)"
        )
    measured = {name: _measure(joint, policy) for name, joint in joints.items()}
    rule = policy.comparison
    with_accuracy = rule.rule == "no_worse_fairness_or_accuracy"
    k = max(1, sum(sum(c.judged for c in changes) + int(with_accuracy) for changes, _ in measured.values()))
    level = policy.reporting.confidence_level
    decision_level = 1 - policy.statistics.alpha / k if rule.simultaneous else level
    entries = [
        _candidate(name, joints[name], policy, changes, accuracy, decision_level)
        for name, (changes, accuracy) in measured.items()
    ]
    for entry in entries:
        verdict = audits[entry["name"]] if audits is not None else _decisions_audit(joints[entry["name"]], policy)
        gate(entry, verdict, rule.promote_failing_if_better)
    chosen, reasons = choose(entries, decision_level)
    decision: Decision = "promote" if chosen is not None else "do_not_promote"
    return {
        "decision": decision,
        "exit_code": 0 if chosen is not None else 1,
        "chosen": chosen,
        "chosen_fails_policy": chosen is not None
        and not next(e for e in entries if e["name"] == chosen)["passes_policy"],
        "reasons": reasons,
        "rule": rule.model_dump(mode="json"),
        "n_rows": next(iter(joints.values())).n_rows,
        "favorable_label": policy.favorable_label,
        "statistics": _statistics(policy, decision_level, k, len(entries)),
        "candidates": entries,
        "not_compared": [
            {"metric": m.name, "reason": "needs the models' scores; compare holds their decisions only"}
            for m in policy.metrics
            if needs_scores(policy_metric(m.name))
        ],
    }


def _statistics(policy: Policy, decision_level: float, k: int, n_candidates: int) -> dict[str, Any]:
    """How the intervals were computed: method, replicates, levels and the multiplicity correction."""
    return {
        "method": METHOD,
        "n_bootstrap": policy.statistics.n_bootstrap,
        "seed": policy.statistics.seed,
        "confidence_level": policy.reporting.confidence_level,
        "decision_level": decision_level,
        "n_judged_changes": k,
        "n_candidates": n_candidates,
        "multiplicity": _multiplicity(policy.comparison.simultaneous, k, n_candidates, policy.statistics.alpha),
    }


def _multiplicity(simultaneous: bool, k: int, n_candidates: int, alpha: float) -> str:
    if not simultaneous:
        return "none: each change is decided on its own interval (comparison.simultaneous is false)"
    across = f" across {n_candidates} candidates" if n_candidates > 1 else ""
    return f"Bonferroni over {k} judged changes{across}: each deciding interval at level 1 - {alpha:g}/{k}"


def _decisions_audit(joint: JointCube, policy: Policy) -> ModelAudit:
    """The candidate's audit from its decisions in the joint cube (callers without the model's own rows)."""
    return model_audit(joint_rows(joint.cells, joint.attributes, policy, _CAND), policy, source=DECISIONS_ONLY)


def point_estimates(joint: JointCube, policy: Policy) -> dict[str, Any]:
    """Both models' accuracy and judged metrics, point estimates only (no bootstrap): a cheap audit of a model.

    The shape of one :func:`compare_candidates` entry (``accuracy`` and ``changes`` rows with ``baseline`` and
    ``candidate`` values), with no intervals, so that :func:`fairgate.mitigation.plane.accuracy_fairness_plane`
    reads it. Used to place every model of a grid on the accuracy-fairness plane.
    """
    changes, accuracy = _measure(joint, policy, n_bootstrap=0)

    def row(change: _Change) -> dict[str, Any]:
        return {
            "metric": change.metric,
            "slicing": list(change.slicing),
            "direction": change.direction,
            "baseline": _num(change.baseline),
            "candidate": _num(change.candidate),
            "change": _num(change.candidate - change.baseline),
        }

    return {"accuracy": row(accuracy), "changes": [row(c) for c in changes if c.insufficient is None]}


def _measure(joint: JointCube, policy: Policy, n_bootstrap: int | None = None) -> tuple[list[_Change], _Change]:
    """One candidate's changes of every judged metric, and of accuracy, with their replicates."""
    replicates = policy.statistics.n_bootstrap if n_bootstrap is None else n_bootstrap
    changes: list[_Change] = []
    accuracy: _Change | None = None
    for slicing in joint.slicings:
        by_model, groups, n = _slicing_counts(joint, slicing, policy, replicates)
        if not slicing:
            accuracy = _accuracy_change(by_model)
        changes += _metric_changes(by_model, groups, n, slicing, policy, replicates)
    assert accuracy is not None  # the population slicing is always planned
    return changes, accuracy


def _slicing_counts(
    joint: JointCube, slicing: Slicing, policy: Policy, n_bootstrap: int
) -> tuple[dict[str, GroupCounts], list[dict[str, str]], np.ndarray]:
    """Each model's group counts: the point estimate at index 0 of the leading axis, then the replicates."""
    cells = joint.cells
    if slicing:
        groups_frame = cells.select(list(slicing)).unique().sort(list(slicing)).with_row_index("__group")
        index = cells.join(groups_frame, on=list(slicing), how="left", maintain_order="left")["__group"].to_numpy()
        groups = groups_frame.drop("__group").to_dicts()
    else:
        index, groups = np.zeros(cells.height, dtype=np.int64), [{}]
    n_groups = len(groups)
    flat = ((index.astype(np.int64) * 2 + cells[_TRUE].to_numpy()) * 2 + cells[_BASE].to_numpy()) * 2 + cells[
        _CAND
    ].to_numpy()
    rows = np.bincount(flat, weights=cells[_ROWS].to_numpy(), minlength=n_groups * 8).astype(np.float64)
    seed = slicing_seed(policy.statistics.seed, ("__compare__", *slicing))
    drawn = draw_counts(rows, n_bootstrap, seed)
    joint_counts = np.vstack([rows[None, :], drawn]).reshape(-1, n_groups, 2, 2, 2)  # (R, G, y, baseline, cand)
    by_model = {
        "baseline": _confusion(joint_counts.sum(axis=4)),
        "candidate": _confusion(joint_counts.sum(axis=3)),
    }
    return by_model, [{k: str(v) for k, v in g.items()} for g in groups], rows.reshape(n_groups, 8).sum(axis=1)


def _confusion(counts: np.ndarray) -> GroupCounts:
    """GroupCounts from (R, G, y_true, y_pred) counts; no score bins (compare holds decisions only)."""
    no_bins = np.zeros((*counts.shape[:2], 1))
    return GroupCounts(
        tp=counts[..., 1, 1],
        fp=counts[..., 0, 1],
        tn=counts[..., 0, 0],
        fn=counts[..., 1, 0],
        bin_n=no_bins,
        bin_positive=no_bins,
        bin_score=no_bins,
    )


def _accuracy_change(by_model: dict[str, GroupCounts]) -> _Change:
    values = {role: Accuracy().compute(counts)[:, 0] for role, counts in by_model.items()}
    return _change("accuracy", (), "higher_is_better", values)


def _metric_changes(
    by_model: dict[str, GroupCounts],
    groups: list[dict[str, str]],
    n: np.ndarray,
    slicing: Slicing,
    policy: Policy,
    n_bootstrap: int,
) -> list[_Change]:
    """The change of each judged metric on this slicing, over the groups the audit would judge."""
    changes = []
    for rule in policy.metrics:
        metric = policy_metric(rule.name)
        if metric.population_level != (not slicing) or needs_scores(metric):
            continue
        resolved = policy.rule_for(rule.name, slicing)
        judged = (n >= policy.intersectional_analysis.min_group_size) & np.array(
            [not any(_matches(g, p) for p in resolved.excluded_groups) for g in groups]
        )
        if metric.population_level:
            judged = np.ones_like(judged)
        values = {role: _evaluate(metric, counts, judged) for role, counts in by_model.items()}
        change = _change(rule.name, slicing, resolved.direction, values)
        if isinstance(metric, SummaryOf) and slicing and n_bootstrap > 0:
            points = (change.baseline, change.candidate)
            change = replace(change, family=change_family(by_model, metric.bases, metric.summary, judged, points))
        short = _too_few_events(metric, by_model, judged, groups, policy.statistics.min_events, policy_labels(policy))
        changes.append(change if short is None else replace(change, insufficient=short))
    return changes


def _too_few_events(
    metric: PolicyMetric,
    by_model: dict[str, GroupCounts],
    judged: np.ndarray,
    groups: list[dict[str, str]],
    minimum: int,
    labels: ValueLabels | None = None,
) -> str | None:
    """Why a change cannot be judged, or None when every judged group's rates rest on enough people.

    A rate of either model resting on fewer than ``statistics.min_events`` people makes the change
    insufficient_data, as the audit judges such a result. Groups are named as the audit's reasons name them (``labels``:
    the policy's value labels), the rate in its words.
    """
    for role, counts in by_model.items():
        for base in metric.bases:
            events = GroupMetric.registry[base]().events(counts)[0]
            short = [i for i in np.flatnonzero(judged) if events[i] < minimum]
            if short:
                named = ", ".join(reason_label(groups[i], labels) for i in short[:3])
                return f"the {role}'s {spelled(base)} rests on fewer than min_events={minimum} people in {named}"
    return None


def needs_scores(metric: PolicyMetric) -> bool:
    """Whether a policy metric rests on scores (AUC, calibration), which the joint cube does not hold."""
    return any(GroupMetric.registry[base].needs_scores for base in metric.bases)


def _matches(group: dict[str, str], pattern: dict[str, str]) -> bool:
    return all(group.get(k) == v for k, v in pattern.items())


def _evaluate(metric: PolicyMetric, counts: GroupCounts, judged: np.ndarray) -> np.ndarray:
    bases = {}
    for base in metric.bases:
        values = GroupMetric.registry[base]().compute(counts)
        bases[base] = np.where(judged, values, np.nan)  # groups too small to judge take no part, as in the audit
    return metric.evaluate(bases)


def _change(metric: str, slicing: Slicing, direction: str, values: dict[str, np.ndarray]) -> _Change:
    base, cand = values["baseline"], values["candidate"]
    return _Change(metric, slicing, direction, float(base[0]), float(cand[0]), (cand - base)[1:])


def _interval(change: _Change, level: float) -> tuple[float | None, float | None]:
    """The change's family interval; else the percentile interval of the defined replicates.

    None when too few replicates are defined (under half).
    """
    if change.family is not None:
        return change.family.interval(level)
    replicates = change.replicates
    defined = replicates[np.isfinite(replicates)]
    if defined.size == 0 or defined.size < replicates.size / 2:
        return None, None
    low, high = np.quantile(defined, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def _status(change: _Change, low: float | None, high: float | None, margin: float) -> tuple[Status, str]:
    point = change.candidate - change.baseline
    if change.insufficient is not None and np.isfinite(point):
        return "insufficient_data", f"{_label(change, start=True)} is not judged: {change.insufficient}"
    if not np.isfinite(point) or low is None or high is None:
        return "undefined", "undefined for one of the models, or in too many resamples (groups too small)"
    lower_is_better = change.direction == "lower_is_better"
    worse_side, better_side = (low > margin, high < -margin) if lower_is_better else (high < -margin, low > margin)
    if worse_side:
        return "worse", f"the candidate's {_label(change)} is worse: its change lies wholly beyond {margin:g}"
    if better_side:
        return "better", f"the candidate's {_label(change)} is better: its change lies wholly on the better side"
    return (
        "no_evidence_of_change",
        f"the interval of the change in {_label(change)} includes no worsening beyond {margin:g}",
    )


def _label(change: _Change, *, start: bool = False) -> str:
    """The metric and its slicing as a reason names them: in lower case inside a sentence."""
    name = metric_label(change.metric) if start else metric_words(change.metric)
    return f"{name} ({slicing_label(change.slicing)})"


def _candidate(
    name: str, joint: JointCube, policy: Policy, changes: list[_Change], accuracy: _Change, decision_level: float
) -> dict[str, Any]:
    """One candidate's entry: its decision, the reasons, accuracy's and each metric's change."""
    rule = policy.comparison
    level = policy.reporting.confidence_level
    rows = [_row(c, level, decision_level, rule.margin) for c in changes]
    accuracy_row = _row(accuracy, level, decision_level, rule.accuracy_margin)
    reasons = [r["reason"] for r in rows if r["status"] == "worse"]
    if rule.rule == "no_worse_fairness_or_accuracy" and accuracy_row["status"] == "worse":
        reasons.append(accuracy_row["reason"])
    if not any(r["status"] in _JUDGED for r in rows):  # the gate cannot pass on nothing
        reasons.append(
            "no judged fairness metric could be compared "
            "(every change is undefined, rests on too few people, or needs scores)"
        )
    decision: Decision = "do_not_promote" if reasons else "promote"
    return {
        "name": name,
        "decision": decision,
        "reasons": reasons,
        "n_rows": joint.n_rows,
        "accuracy": accuracy_row,
        "changes": rows,
        "agreement": _agreement(joint),
    }


def _row(change: _Change, level: float, decision_level: float, margin: float) -> dict[str, Any]:
    low, high = _interval(change, level)
    decision_low, decision_high = _interval(change, decision_level)
    status, reason = _status(change, decision_low, decision_high, margin)
    point = change.candidate - change.baseline
    return {
        "metric": change.metric,
        "slicing": list(change.slicing),
        "direction": change.direction,
        "baseline": _num(change.baseline),
        "candidate": _num(change.candidate),
        "change": _num(point),
        "ci_low": low,
        "ci_high": high,
        "decision_ci_low": decision_low,
        "decision_ci_high": decision_high,
        "status": status,
        "reason": reason,
    }


def _agreement(joint: JointCube) -> dict[str, Any]:
    """How many people the two models decide alike, and how many each favours alone."""
    cells = joint.cells
    same = int(cells.filter(pl.col(_BASE) == pl.col(_CAND))[_ROWS].sum())
    only = {
        f"favourable_only_{role}": int(cells.filter((pl.col(mine) == 1) & (pl.col(other) == 0))[_ROWS].sum())
        for role, mine, other in (("baseline", _BASE, _CAND), ("candidate", _CAND, _BASE))
    }
    return {"same_decision": same, **only}


def _num(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
