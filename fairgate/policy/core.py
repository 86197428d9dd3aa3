"""The policy: pydantic models of the ``fairness_checker:`` YAML document (DESIGN.md, "Policy file").

Unknown keys are errors, and every error names the place in the file and what to write instead.
Parsing YAML *text* is pure; reading the file is the caller's job (tasks/).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from fairgate.errors import POLICY_LIST_TOO_LONG, PolicyError
from fairgate.policy.base import STRICT
from fairgate.policy.comparison import Comparison
from fairgate.policy.delivery import DeliveryConfig
from fairgate.policy.execution import Execution
from fairgate.policy.individual import (
    CHECK_DIRECTIONS,
    CHECK_RANGES,
    IndividualFairness,
    check_written_as_metric,
    unjudged_check_hint,
)
from fairgate.policy.labels import DEFAULT_LABEL_RULES, LabelRules
from fairgate.policy.loader import load_policy_yaml
from fairgate.policy.mitigation import Mitigation
from fairgate.policy.model_card import ModelCard
from fairgate.policy.monitoring import Monitoring, check_monitoring
from fairgate.policy.outcomes import Outcomes
from fairgate.policy.proxy import ProxyConfig
from fairgate.policy.ranking import RankingOptions
from fairgate.policy.sections import (
    AuditTrail,
    CiCdGate,
    Columns,
    IntersectionalAnalysis,
    Limits,
    Override,
    Reporting,
    Statistics,
)
from fairgate.policy.task import MulticlassOptions, RegressionOptions

if TYPE_CHECKING:
    from fairgate.engine.kinds import Capability

Direction = Literal["lower_is_better", "higher_is_better"]


class _Strict(BaseModel):
    model_config = STRICT


class SensitiveAttribute(_Strict):
    """One sensitive attribute (``sensitive_attributes`` entry): its column, values and reference group."""

    name: str = Field(min_length=1)
    """The attribute's column name in the attributes input."""
    values: list[str] | None = None
    """The values the data may hold (as text); any other value is an error (exit 2). A declared value without rows
    is still a group of the attribute's slicing (size 0, reported as insufficient), in every kind of audit; groups
    are listed in value order. Without it, at most `limits.max_values_per_attribute` distinct values are
    accepted."""
    reference_group: str | None = None
    """The group others are compared with; default: the group with the most people (largest effective size). Must be
    among `values` when they are declared."""
    missing: Literal["exclude", "unknown"] = "exclude"
    """People whose value is missing: `exclude` them (default) or audit them as their own group (`unknown`, named by
    `unknown_label`)."""
    unknown_label: str = "unknown"
    """The group name of missing values with `missing: unknown`."""
    labels: dict[str, str] | None = None
    """How the reports print coded values (`{"1": "Female (1)"}`); only declared values. The data, the JSON and the
    judgement keep the codes."""

    @field_validator("values", "labels", mode="before")
    @classmethod
    def _values_as_strings(cls, values: Any) -> Any:
        # Group values are strings as they appear in the data (DESIGN.md): YAML may read 1 or true.
        if isinstance(values, list):
            return [str(v) for v in values]
        return {str(k): v for k, v in values.items()} if isinstance(values, dict) else values

    @field_validator("reference_group", mode="before")
    @classmethod
    def _reference_as_string(cls, value: Any) -> Any:
        return None if value is None else str(value)

    @model_validator(mode="after")
    def _reference_among_values(self) -> SensitiveAttribute:
        if self.values is not None:
            if len(set(self.values)) != len(self.values):
                raise ValueError(f"attribute {self.name!r} lists a value twice in values: {self.values}")
            if self.reference_group is not None and self.reference_group not in self.values:
                raise ValueError(
                    f"reference_group {self.reference_group!r} of attribute {self.name!r} is not among its "
                    f"values {self.values}; write one of those, or add it to values"
                )
            unknown = sorted(set(self.labels or {}) - set(self.declared_values or []))
            if unknown:
                raise ValueError(
                    f"labels of attribute {self.name!r} name value(s) {unknown} that are not among its values "
                    f"{self.values}; label only declared values"
                )
        return self

    @property
    def declared_values(self) -> list[str] | None:
        """The values a row may hold, including the explicit unknown group when missing values are kept."""
        if self.values is None:
            return None
        return self.values + ([self.unknown_label] if self.missing == "unknown" else [])


class MetricRule(_Strict):
    """One judged metric (``metrics`` entry): its name, threshold and optional direction."""

    name: str
    """The metric's name, e.g. `disparate_impact_ratio`, `equal_opportunity_difference` (the task's catalogue lists the
    names)."""
    threshold: float
    """The limit the metric is judged against: the largest difference allowed, or the smallest ratio. Must lie in the
    metric's range."""
    direction: Direction | None = None
    """`lower_is_better` or `higher_is_better`; default the metric's natural direction (a differing one is refused)."""

    @model_validator(mode="after")
    def _known_and_consistent(self) -> MetricRule:
        from fairgate.engine.metrics import policy_metric  # local: metrics imports nothing from config
        from fairgate.engine.tasks import find_metric

        if self.name in CHECK_DIRECTIONS:  # consistency, counterfactual_flip_rate: not group metrics
            raise ValueError(check_written_as_metric(self.name, self.threshold))
        metric = find_metric(self.name)  # a name known to any task; Policy checks it against its own task
        if metric is None:
            policy_metric(self.name)  # raises ValueError naming the known (binary) metrics
            raise AssertionError("unreachable: every binary metric is in the binary catalogue")
        natural = metric.direction
        if self.direction is not None and self.direction != natural:
            raise ValueError(
                f"metric {self.name!r} is {metric.describe()}, so its direction is {natural}; "
                f"write direction: {natural} (or leave direction out)"
            )
        check_threshold(self.name, self.threshold)
        return self

    @property
    def effective_direction(self) -> Direction:
        """The direction given, or else the metric's natural one (the same in every task that knows it)."""
        from fairgate.engine.tasks import find_metric

        metric = find_metric(self.name)
        assert metric is not None  # checked on construction
        return self.direction or metric.direction


def check_threshold(metric: str, threshold: float, *, where: str = "") -> None:
    """The one range rule for a metric's threshold, wherever a policy sets one (``metrics:``, overrides).

    Finite (the models refuse .inf and .nan already) and within the metric's range: a threshold outside it
    would decide every result one way, so an override of -3.0 for a ratio would open the gate.
    """
    from fairgate.engine.tasks import find_metric  # local: the engine's catalogue imports nothing from policy

    entry = find_metric(metric)
    if entry is not None:
        (low, high), text, example = entry.threshold_range, entry.describe(), entry.example_threshold
    elif metric in CHECK_RANGES:  # an individual-fairness check
        (low, high), text, example = CHECK_RANGES[metric]
    else:
        return  # an unknown name is refused by the reference checks, with the names that are known
    if not (math.isfinite(threshold) and low <= threshold <= high):
        raise ValueError(
            f"{where}threshold {threshold} for {metric!r} is out of range: {text}, so the threshold must lie "
            f"in [{low}, {high}] (e.g. {example})"
        )


class Policy(_Strict):
    """A complete fairness policy. Build with :meth:`from_yaml` or :meth:`from_mapping`."""

    sensitive_attributes: list[SensitiveAttribute] = Field(min_length=1)
    """The attributes audited, one entry each (at least one): its column, values, reference group and missing-value
    rule."""
    metrics: list[MetricRule] = Field(min_length=1)
    """The judged metrics, one entry each (at least one): name, threshold and optional direction. Each `task:` has its
    own list of metric names."""
    favorable_label: Literal[0, 1] = 1
    """Which value of `y_true`/`y_pred` is favourable to the person: 1 (loan approved) or 0 when 1 means flagged or high
    risk (COMPAS). Rates then count the favourable outcome, as AIF360 does."""
    outcomes: Outcomes = Outcomes()
    """The use case's words for the favourable and unfavourable decision and true outcome; every rate, axis and advice
    in the report uses them."""
    use_case: str | None = None
    """A name for the use case (e.g. `credit_scoring`); overrides can target it."""
    intersectional_analysis: IntersectionalAnalysis = IntersectionalAnalysis()
    """Which intersections (pairs, triples) are audited and the group size a group needs to be judged."""
    reporting: Reporting = Reporting()
    """Report formats, interval level, output folder, smallest cell shown, what the JSON holds, trend length."""
    ci_cd_gate: CiCdGate = CiCdGate()
    """The gate: whether it is on, which failing results fail the audit, and what an inconclusive result means."""
    statistics: Statistics = Statistics()
    """Bootstrap size and seed, calibration bins, significance levels, the gate's alpha, minimum events, exact AUC."""
    overrides: list[Override] = []
    """Changes to the base policy for one metric, slicing, group set or use case (each with a reason)."""
    columns: Columns = Columns()
    """The names of the input columns (id, truth, prediction, score, weight, ranking list and rank) and the decision
    threshold."""
    audit_trail: AuditTrail = AuditTrail()
    """Where the tamper-evident audit trail (a DuckDB file) is kept."""
    delivery: DeliveryConfig | None = None
    """Report e-mail: recipients, sender, subject, attachments, SMTP settings and retries. Absent: no e-mail."""
    proxy: ProxyConfig | None = None
    """Infer a sensitive attribute that was never collected (BISG, BIFSG, India, custom tables). Absent: no
    inference."""
    attribute_max_age_days: int = Field(default=730, ge=1)
    """Attributes collected longer ago than this many days are flagged as stale (when the data carries a collection
    date, `proxy.collected_at_column`)."""
    limits: Limits = Limits()
    """Size limits of an audit (distinct values, groups per slicing, list lengths); raise them deliberately."""
    comparison: Comparison = Comparison()
    """How `fairgate compare` decides whether a candidate model may replace the baseline."""
    monitoring: Monitoring | None = None
    """`fairgate monitor`: periods, windows, baseline and drift alert rules. A policy without it keeps its hash."""
    mitigation: Mitigation | None = None
    """The remedy a failing audit proposes (thresholds, reweighing, retraining), and the defaults of `fairgate
    mitigate`. Absent: nothing proposed."""
    execution: Execution = Execution()
    """How the audit runs: task runner (local or Dask), streaming through DuckDB, DuckDB's memory bound, AUC method."""
    task: str = "binary"
    """The kind of model audited: `binary` (default), `multiclass`, `regression` or `ranking` (the kinds of
    `fairgate/engine/kinds.py`)."""
    multiclass: MulticlassOptions | None = None
    """`task: multiclass` only: the declared classes and the adverse ones."""
    regression: RegressionOptions | None = None
    """`task: regression` only: the histogram grid and the bootstrap's sub-cells."""
    individual_fairness: IndividualFairness | None = None
    """Consistency (k nearest neighbours) and counterfactual flips; needs `--features` (and optionally
    `--counterfactual`)."""
    ranking: RankingOptions | None = None
    """`task: ranking` only: top-k cut-offs, position discount and bootstrap buckets."""
    model_card: ModelCard | None = None
    """What the model is for, in its owner's words (owner, intended use, data, limitations); shown in the report's model
    card."""
    labels: LabelRules | None = None
    """Late labels (label-dependent results estimated from the scores when `--labels` is left out) and external
    labels (`--external-labels`): whether estimates count in the verdict, the calibration test's level and the
    label-bias finding's threshold. Absent: the defaults."""

    @field_validator("task")
    @classmethod
    def _registered_kind(cls, task: str) -> str:
        from fairgate.engine.kinds import kind_of  # light: the registry imports no engine module

        return kind_of(task).name  # raises ValueError naming the kinds

    @model_validator(mode="after")
    def _within_limits(self) -> Policy:
        limit = self.limits.max_list_length
        for where, count in self._list_lengths():
            if count > limit:
                raise ValueError(POLICY_LIST_TOO_LONG.format(where=where, count=count, limit=limit))
        return self

    def _list_lengths(self) -> list[tuple[str, int]]:
        """Every list of the policy, by its place in the file, with its length."""
        lengths = [
            ("sensitive_attributes", len(self.sensitive_attributes)),
            ("metrics", len(self.metrics)),
            ("intersectional_analysis.attribute_pairs", len(self.intersectional_analysis.attribute_pairs or [])),
            ("overrides", len(self.overrides)),
            ("ci_cd_gate.critical_metrics", len(self.ci_cd_gate.critical_metrics)),
        ]
        lengths += [(f"the values of attribute {a.name!r}", len(a.values or [])) for a in self.sensitive_attributes]
        lengths += [(f"overrides[{i}].exclude_groups", len(o.exclude_groups)) for i, o in enumerate(self.overrides)]
        return lengths

    @model_validator(mode="after")
    def _cross_references(self) -> Policy:
        names = [a.name for a in self.sensitive_attributes]
        if len(set(names)) != len(names):
            raise ValueError(f"sensitive_attributes names must be unique; got {names}")
        for pair in self.intersectional_analysis.attribute_pairs or []:
            for name in pair:
                if name not in names:
                    raise ValueError(
                        f"intersectional_analysis.attribute_pairs names {name!r}, which is not a sensitive "
                        f"attribute; declared attributes: {names}"
                    )
            if pair[0] == pair[1]:
                raise ValueError(f"attribute pair {list(pair)} pairs an attribute with itself")
        rule_names = {m.name for m in self.metrics} | set(self.individual_rules())
        for critical in self.ci_cd_gate.critical_metrics:
            if critical not in rule_names:
                raise ValueError(
                    f"ci_cd_gate.critical_metrics names {critical!r}, which is not in metrics; "
                    f"metrics configured: {sorted(rule_names)}{unjudged_check_hint(critical)}"
                )
        for override in self.overrides:
            if override.metric is not None and override.metric not in rule_names:
                raise ValueError(
                    f"an override names metric {override.metric!r}, which is not in metrics; "
                    f"metrics configured: {sorted(rule_names)}{unjudged_check_hint(override.metric)}"
                )
            for name in override.slicing or []:
                if name not in names:
                    raise ValueError(f"an override's slicing names {name!r}, which is not a sensitive attribute")
        self._override_thresholds(sorted(rule_names))
        check_monitoring(self.monitoring, sorted(rule_names), names)
        return self

    def _override_thresholds(self, judged: list[str]) -> None:
        """An override's threshold obeys the range rule of every metric it applies to (all, without metric:)."""
        for index, override in enumerate(self.overrides):
            if override.threshold is None:
                continue
            applies_to = judged if override.metric is None else [override.metric]
            for metric in applies_to:
                check_threshold(metric, override.threshold, where=f"overrides[{index}]: ")

    @model_validator(mode="after")
    def _fits_task(self) -> Policy:
        """The section the task needs, metrics the task judges, and no binary-only feature in other tasks."""
        from fairgate.engine.kinds import KINDS, kind_of
        from fairgate.engine.tasks import metric_catalogue, unknown_metric_message

        for name in KINDS:  # a kind's options section is named after it
            if getattr(self, name, None) is not None and self.task != name:
                raise ValueError(f"a {name}: section is only read with task: {name} (task is {self.task!r})")
        kind = kind_of(self.task)
        options = getattr(self, kind.name, None)
        if kind.options_required is not None and options is None:
            raise ValueError(f"task: {kind.name} needs a {kind.name}: section {kind.options_required}")
        catalogue = metric_catalogue(self.task)
        for rule in self.metrics:
            if rule.name not in catalogue:
                raise ValueError(unknown_metric_message(rule.name, self.task))
            if rule.direction not in (None, catalogue[rule.name].direction):
                natural = catalogue[rule.name].direction
                raise ValueError(f"metric {rule.name!r} of task {self.task}: write direction: {natural}")
        check_metrics = getattr(options, "check_metrics", None)  # options constraining the judged metrics
        if check_metrics is not None:
            check_metrics([rule.name for rule in self.metrics])
        self._refuse_what_the_kind_cannot()
        return self

    def _refuse_what_the_kind_cannot(self) -> None:
        """Sections and settings asking for a capability the policy's kind lacks (the kind registry's data)."""
        from fairgate.engine.kinds import kind_of, refusal

        kind = kind_of(self.task)
        asked: list[tuple[Capability, bool]] = [
            ("dask", self.execution.runner == "dask"),
            ("streaming", self.execution.streaming == "always"),
            ("proxy", self.proxy is not None),
            ("mitigation", self.mitigation is not None),
            ("monitoring", self.monitoring is not None),
            ("exclude_groups", any(o.exclude_groups for o in self.overrides)),
            ("individual_fairness", self.individual_fairness is not None),
        ]
        for capability, present in asked:
            if present and not kind.can(capability):
                raise ValueError(f"{refusal(capability, kind)}; remove it from the policy")

    # ----------------------------------------------------------------------------------------- building
    @classmethod
    def from_yaml(cls, text: str, *, source: str = "policy") -> Policy:
        """Parse the policy YAML text (the ``fairness_checker:`` document).

        >>> p = Policy.from_yaml('''
        ... fairness_checker:
        ...   sensitive_attributes: [{name: sex, values: [Male, Female], reference_group: Male}]
        ...   metrics: [{name: disparate_impact_ratio, threshold: 0.8}]
        ... ''')
        >>> p.metrics[0].effective_direction
        'higher_is_better'
        """
        return cls.from_mapping(load_policy_yaml(text, source=source), source=source)

    @classmethod
    def from_mapping(cls, document: Any, *, source: str = "policy") -> Policy:
        """Validate an already parsed policy document (a mapping with the ``fairness_checker`` key).

        Raises
        ------
        PolicyError
            When the document is not such a mapping, has other top-level keys, or fails validation; the
            message names each offending place and the fix.
        """
        if not isinstance(document, dict) or "fairness_checker" not in document:
            raise PolicyError(
                f"{source} must be a YAML mapping with a top-level 'fairness_checker:' key "
                "(see the example policy in docs/reference/policy-guide.md)"
            )
        extra = sorted(set(document) - {"fairness_checker"})
        if extra:
            raise PolicyError(f"{source}: unknown top-level key(s) {extra}; only 'fairness_checker' is allowed")
        try:
            return cls.model_validate(document["fairness_checker"])
        except ValidationError as exc:
            raise PolicyError(_explain(exc, source)) from None

    # ----------------------------------------------------------------------------------------- queries
    @property
    def attribute_names(self) -> list[str]:
        """The names of the sensitive attributes, in file order."""
        return [a.name for a in self.sensitive_attributes]

    def attribute(self, name: str) -> SensitiveAttribute:
        """The sensitive attribute called ``name`` (StopIteration when there is none)."""
        return next(a for a in self.sensitive_attributes if a.name == name)

    def individual_rules(self) -> dict[str, tuple[float, Direction]]:
        """The individual-fairness checks the policy judges: name -> (threshold, direction)."""
        return {} if self.individual_fairness is None else self.individual_fairness.rules()

    def canonical_json(self) -> str:
        """The policy as canonical JSON: equal policies give equal text (and hash).

        ``outcomes`` only counts when the policy names its words: a policy written before the section existed
        keeps its hash, so trails and trends still match it across the upgrade.
        """
        from fairgate.engine.kinds import DEFAULT_KIND, KINDS  # light: the registry imports no engine module

        dumped = self.model_dump(mode="json")
        if not self.outcomes.named:
            del dumped["outcomes"]
        if self.comparison == Comparison():  # likewise: the section's defaults keep older policies' hashes
            del dumped["comparison"]
        if self.execution == Execution():
            del dumped["execution"]
        if self.task == DEFAULT_KIND:  # binary policies keep the hash they had before the key existed
            del dumped["task"]
        for section in KINDS:  # the kinds' options sections (named after them), when absent
            if dumped.get(section, 0) is None:
                del dumped[section]
        for optional in ("monitoring", "mitigation", "individual_fairness", "labels"):
            if dumped[optional] is None:  # a policy without the section keeps its hash
                del dumped[optional]
        if self.model_card is None or self.model_card == ModelCard():  # a policy without the card keeps its hash
            del dumped["model_card"]
        _drop_later_defaults(dumped)
        for column, default in (("list_id", "list_id"), ("rank", "rank")):  # ranking's columns, likewise
            if dumped["columns"][column] == default:
                del dumped["columns"][column]
        return json.dumps(dumped, sort_keys=True, separators=(",", ":"))

    def sha256(self) -> str:
        """The SHA-256 hex digest of :meth:`canonical_json`."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()

    def rule_for(self, metric: str, slicing: tuple[str, ...]) -> ResolvedRule:
        """The rule for one (metric, slicing) after applying matching overrides in file order."""
        individual = self.individual_rules() | (self.labels or DEFAULT_LABEL_RULES).rules()
        if metric in individual:  # an individual-fairness check (policy/individual.py)
            threshold, direction = individual[metric]
        else:
            base = next(m for m in self.metrics if m.name == metric)
            threshold, direction = base.threshold, base.effective_direction
        critical = metric in self.ci_cd_gate.critical_metrics
        excluded: list[dict[str, str]] = []
        reasons: list[str] = []
        for override in self.overrides:
            if not override.matches(metric, slicing, self.use_case):
                continue
            reasons.append(override.reason)
            if override.threshold is not None:
                threshold = override.threshold
            if override.critical is not None:
                critical = override.critical
            excluded.extend(override.exclude_groups)
        return ResolvedRule(
            metric=metric,
            threshold=threshold,
            direction=direction,
            critical=critical,
            excluded_groups=excluded,
            override_reasons=reasons,
        )


class ResolvedRule(_Strict):
    """The rule for one (metric, slicing) after overrides: threshold, direction, criticality, exclusions."""

    metric: str
    threshold: float
    direction: Direction
    critical: bool
    excluded_groups: list[dict[str, str]]
    override_reasons: list[str]


def _explain(exc: ValidationError, source: str) -> str:
    """Turn pydantic's errors into one line that names each place in the file and the fix."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(p) for p in ("fairness_checker", *error["loc"]))
        if error["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown key (check its spelling against docs/reference/policy.md)")
        elif error["type"] == "missing":
            problems.append(f"{where}: required key is missing")
        elif error["type"] == "finite_number":
            problems.append(f"{where}: must be a finite number (.inf and .nan are not numbers a policy can use)")
        else:
            message = " ".join(error["msg"].removeprefix("Value error, ").split())
            problems.append(f"{where}: {message}")
    return f"{source} is not a valid fairgate policy: {'; '.join(problems)}"


def _drop_later_defaults(dumped: dict[str, Any]) -> None:
    """Keys added later, at their defaults, left out: same hashes.

    Proxy's, ci_cd_gate.insufficient, labels, regression.outcome_unit.
    """
    for attribute in dumped["sensitive_attributes"]:
        if attribute.get("labels") is None:
            attribute.pop("labels", None)
    if dumped["ci_cd_gate"].get("insufficient") == "block":
        del dumped["ci_cd_gate"]["insufficient"]
    regression = dumped.get("regression")
    if regression is not None and regression.get("outcome_unit") is None:
        regression.pop("outcome_unit", None)
    proxy = dumped.get("proxy")
    if proxy is not None and proxy.get("calibrated") is True:
        del proxy["calibrated"]
