"""Policy section ``individual_fairness:``: similar people, similar decisions (issue 15).

The audit reads a fourth input, the people's features (``fairgate audit --features FILE``: an id column and
numeric feature columns), and computes AIF360's ``consistency`` with ``k`` nearest neighbours over ``features``
(a list of columns, or ``all numeric``: every column but the id), scaled as ``scaling`` says (``none`` is AIF360's:
distances on the raw features; ``standard`` z-scores; ``minmax`` maps each column to [0, 1]). With
``--counterfactual FILE`` (the model's decisions for the same people with the sensitive attribute flipped) it
also reports the share of changed decisions per group.

Thresholds, each judged in every group of the population and of each sensitive attribute with the same rules as
every other result (one-sided test with its interval, in the audit's one Holm family):
``min_consistency`` (each group's consistency at least this) and ``max_flip_rate`` (each group's counterfactual
flip rate at most this). Without a threshold a quantity is reported, not judged.

``sample_people: N`` (at least 1,000; absent: everyone) makes consistency an estimate for large audits: with more
than N people, a simple random sample of N of them (numpy's Generator seeded with ``seed``, default 0) is queried,
their neighbours still searched among everyone, so each sampled person's term is exact and the sampled mean an
unbiased estimate of AIF360's value; its interval then also covers the sampling. With N people or fewer, everyone.

>>> s = IndividualFairness.model_validate({"features": ["age", "priors_count"], "min_consistency": 0.8})
>>> s.k, s.scaling, sorted(s.rules())
(5, 'none', ['consistency'])
>>> IndividualFairness.model_validate({"features": "all numeric"}).features
'all numeric'
>>> IndividualFairness.model_validate({"sample_people": 100_000}).seed
0
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    StrictInt,
    field_validator,
    model_serializer,
)

from fairgate.policy.base import STRICT

Scaling = Literal["none", "standard", "minmax"]
Direction = Literal["lower_is_better", "higher_is_better"]
ALL_NUMERIC = "all numeric"
CONSISTENCY = "consistency"
FLIP_RATE = "counterfactual_flip_rate"
#: The judged checks' names (as they appear in results, overrides and critical_metrics) and directions.
CHECK_DIRECTIONS: dict[str, Direction] = {CONSISTENCY: "higher_is_better", FLIP_RATE: "lower_is_better"}
#: Each check's threshold range, what it measures and an example (the section's field bounds, for overrides).
CHECK_RANGES: dict[str, tuple[tuple[float, float], str, float]] = {
    CONSISTENCY: ((0.0, 1.0), "the share of each person's nearest neighbours given their decision (1 is best)", 0.8),
    FLIP_RATE: ((0.0, 1.0), "the share of decisions that change when the attribute is swapped (0 is best)", 0.02),
}
#: Each check's threshold key in the section, and an example of it (the documentation's).
_THRESHOLD_KEYS = {CONSISTENCY: ("min_consistency", 0.8), FLIP_RATE: ("max_flip_rate", 0.02)}
#: Fewer sampled people than this would make the sampling error dominate every group's interval.
MIN_SAMPLE_PEOPLE = 1_000


def section_example(name: str, threshold: float | None = None) -> str:
    """The ``individual_fairness:`` section that judges the check ``name`` (at ``threshold``, else an example)."""
    key, example = _THRESHOLD_KEYS[name]
    value = example if threshold is None else threshold
    return f"individual_fairness: {{features: {ALL_NUMERIC}, k: 5, {key}: {value:g}}}"


def check_written_as_metric(name: str, threshold: float) -> str:
    """The refusal of an individual-fairness check written as an entry of ``metrics:``: where it goes instead."""
    inputs = "--features FILE" + (" and --counterfactual FILE" if name == FLIP_RATE else "")
    return (
        f"{name!r} is an individual-fairness check, not a group metric: it is configured in the policy's "
        f"individual_fairness: section, not under metrics:. Remove it from metrics and write "
        f"'{section_example(name, threshold)}' (features: a list of columns, or all numeric), then audit with "
        f"{inputs} (docs/guides/individual-fairness.md); these checks judge binary decisions, so they are refused in "
        "multiclass, regression and ranking audits"
    )


def unjudged_check_hint(name: str) -> str:
    """How to judge the check ``name`` that critical_metrics or an override names ("" for any other name)."""
    if name not in _THRESHOLD_KEYS:
        return ""
    key, _ = _THRESHOLD_KEYS[name]
    return (
        f" ({name!r} is an individual-fairness check: it is judged when the individual_fairness: section sets "
        f"{key}, e.g. '{section_example(name)}')"
    )


class IndividualFairness(BaseModel):
    """The ``individual_fairness:`` section: features, neighbours, scaling and the two thresholds."""

    model_config = STRICT

    features: list[str] | Literal["all numeric"] = "all numeric"
    """The feature columns of the neighbour search, or `all numeric`."""
    k: int = Field(default=5, ge=1, le=1000)
    """Neighbours per person (AIF360's default); the person counts as one of their own k neighbours, as in AIF360."""
    scaling: Scaling = "none"
    """`none` (AIF360's), `standard` or `minmax` scaling of the features first."""
    min_consistency: float | None = Field(default=None, ge=0.0, le=1.0)
    """The smallest consistency allowed per group; unset: reported only."""
    max_flip_rate: float | None = Field(default=None, ge=0.0, lt=1.0)
    """The largest share of decisions that may change with the attribute flipped; unset: reported only."""
    sample_people: StrictInt | None = Field(default=None, ge=MIN_SAMPLE_PEOPLE)
    """Estimate consistency on a seeded random sample of this many people (at least 1,000); null: everyone."""
    seed: StrictInt = Field(default=0, ge=0, le=2**63 - 1)
    """The seed of the sample."""

    @field_validator("features")
    @classmethod
    def _distinct_columns(cls, features: list[str] | str) -> list[str] | str:
        if isinstance(features, list):
            if not features:
                raise ValueError(f"features is empty: list the feature columns, or write '{ALL_NUMERIC}'")
            if len(set(features)) != len(features):
                raise ValueError(f"features lists a column twice: {features}")
        return features

    @model_serializer(mode="wrap")
    def _without_unused_sampling(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Without ``sample_people`` the sampling keys are left out: policies written before them keep their hash."""
        dumped: dict[str, Any] = handler(self)
        if self.sample_people is None:
            dumped.pop("sample_people", None)
            dumped.pop("seed", None)
        return dumped

    @field_validator("sample_people", mode="before")
    @classmethod
    def _whole_people(cls, value: object) -> object:
        # bool is an int to Python; 1.5e5 or "100000" would be read as a count silently: all refused here.
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < MIN_SAMPLE_PEOPLE):
            raise ValueError(
                f"sample_people must be a whole number of people, at least {MIN_SAMPLE_PEOPLE:,} (got {value!r}): "
                f"write e.g. sample_people: 100000, or leave the key out to query everyone (AIF360's exact value)"
            )
        return value

    def rules(self) -> dict[str, tuple[float, Direction]]:
        """The judged checks: name -> (threshold, direction)."""
        rules: dict[str, tuple[float, Direction]] = {}
        if self.min_consistency is not None:
            rules[CONSISTENCY] = (self.min_consistency, CHECK_DIRECTIONS[CONSISTENCY])
        if self.max_flip_rate is not None:
            rules[FLIP_RATE] = (self.max_flip_rate, CHECK_DIRECTIONS[FLIP_RATE])
        return rules
