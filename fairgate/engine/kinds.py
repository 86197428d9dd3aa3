"""The one registry of the kinds of model fairgate audits: binary, multiclass, regression, ranking.

Each kind is a :class:`Kind`: its name, the engine module that holds its steps and catalogue, and what it can
do beyond an audit (its capabilities, as data). Everything that differs by kind asks this registry (the
policy's checks, ``fairgate.audit``, the flow, the commands that work on some kinds only) instead of testing
a kind's name. A kind's engine module is imported on first use: the registry itself is light.

A kind's package holds ``catalogue.py`` (``CATALOGUE: dict[str, TaskMetric]``, the metrics its policies may
judge) and ``audit.py`` (``STEPS``, a :class:`KindSteps`). To add a kind: write its package under
``fairgate/engine/<kind>/`` with those two modules and add its entry to :data:`KINDS` (a policy's ``task:`` may
then name it); docs/guides/kinds.md ("One registry of kinds") lists the pieces outside the engine.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from fairgate.document.result import AuditResult

#: What a kind can do beyond an audit. A policy or command asking for a capability its kind lacks is refused.
Capability = Literal[
    "streaming",  # execution.streaming: always (the cube built inside DuckDB)
    "dask",  # execution.runner: dask
    "proxy",  # a proxy: section (attributes inferred by BISG)
    "mitigation",  # a mitigation: section, fairgate mitigate
    "monitoring",  # a monitoring: section, fairgate monitor
    "compare",  # fairgate compare
    "individual_fairness",  # an individual_fairness: section, --features
    "exclude_groups",  # overrides with exclude_groups
    "plan",  # fairgate plan (the rows an audit needs, by simulated audits)
]
ALL_CAPABILITIES: frozenset[Capability] = frozenset(
    (
        "streaming",
        "dask",
        "proxy",
        "mitigation",
        "monitoring",
        "compare",
        "individual_fairness",
        "exclude_groups",
        "plan",
    )
)
#: The words a refusal uses for each capability (what the user wrote).
CAPABILITY_WORDS: dict[Capability, str] = {
    "streaming": "execution.streaming: always",
    "dask": "execution.runner: dask",
    "proxy": "a proxy: section",
    "mitigation": "a mitigation: section",
    "monitoring": "a monitoring: section",
    "compare": "fairgate compare",
    "individual_fairness": "an individual_fairness: section",
    "exclude_groups": "overrides with exclude_groups",
    "plan": "fairgate plan",
}


@dataclass(frozen=True)
class KindSteps:
    """A kind's pure audit steps.

    ``count(rows, policy, *, source) -> cube`` (a cube sums with ``+``); ``slicings(cube, policy) -> parts``;
    ``adjudicate(cube, parts, policy, *, model, run_id, context) -> AuditResult``. ``audit`` (optional): the
    three in one call, where the kind has a faster way than one after the other (binary's exact-AUC pass runs
    beside its slicings); same arguments as ``fairgate.audit``.
    """

    count: Callable[..., Any]
    slicings: Callable[..., Any]
    adjudicate: Callable[..., AuditResult]
    audit: Callable[..., AuditResult] | None = None


@dataclass(frozen=True)
class Kind:
    """One kind of model: its name, its modules and its capabilities.

    ``catalogue``: the module whose ``CATALOGUE`` lists the metrics its policies may judge (light: read by the
    policy's validation); ``engine``: the module whose ``STEPS`` audit it (imported when an audit runs).
    """

    name: str
    catalogue: str
    engine: str
    capabilities: frozenset[Capability] = frozenset()
    # Labels and predictions are the favourable/unfavourable decision (0/1): recoded to the favourable label,
    # checked by the shared suites, audited through the binary pipeline (streaming, Dask, proxy). Other kinds
    # keep them as given and run their own suites and steps.
    binary_outcomes: bool = False
    # The predictions are lists and positions (columns.list_id, columns.rank) rather than scores or decisions.
    ranked_lists: bool = False
    # A kind whose policy must have its options section (named after the kind): what that section declares.
    options_required: str | None = None
    # "module:function" building the kind's own report pages from (document, suppression), rendered by
    # reports/partials/<kind>.html.j2; None: the shared (binary) pages.
    report_pages: str | None = None
    # The group value standing for the base rate in the base-rate note, and its words, for a kind whose outcome
    # is not a 0/1 label (the binary kinds use the base rate itself; multiclass, one class against the rest).
    outcome_level: tuple[str, str] | None = None
    # "module:function" giving a document's confusion counts as the small-cell rule sees them (its cells, the
    # counts derived from them, and which counts each part of a report states); None: the kind states none.
    count_cells: str | None = None

    @property
    def level_words(self) -> str:
        """What a group's outcome level is called in the reports' words.

        "base rates" for a kind with 0/1 labels (multiclass: each class against the rest), else the kind's
        ``outcome_level`` ("mean outcome").

        >>> kind_of("binary").level_words, kind_of("ranking").level_words
        ('base rates', 'mean relevance')
        """
        return "base rates" if self.outcome_level is None else self.outcome_level[1]

    @property
    def levels_differ(self) -> str:
        """The sentence start saying the level differs between groups ("Base rates differ", "The mean ... differs")."""
        return "Base rates differ" if self.outcome_level is None else f"The {self.outcome_level[1]} differs"

    def can(self, capability: Capability) -> bool:
        """Whether the kind supports ``capability``."""
        return capability in self.capabilities

    def steps(self) -> KindSteps:
        """The kind's audit steps (its engine module imported on first use)."""
        steps: KindSteps = importlib.import_module(self.engine).STEPS
        return steps


def _kind(name: str, package: str, catalogue: str = "catalogue", engine: str = "audit", **more: Any) -> Kind:
    return Kind(name, f"{package}.{catalogue}", f"{package}.{engine}", **more)


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        _kind(
            "binary",
            "fairgate.engine",
            catalogue="binary_catalogue",
            capabilities=ALL_CAPABILITIES,
            binary_outcomes=True,
            count_cells="fairgate.report.suppress:binary_count_cells",
        ),
        _kind(
            "multiclass",
            "fairgate.engine.multiclass",
            options_required="declaring the classes, e.g. multiclass: {classes: [low, medium, high]}",
            report_pages="fairgate.report.multiclass:multiclass_pages",
            count_cells="fairgate.report.count_cells:multiclass_count_cells",
        ),
        _kind(
            "regression",
            "fairgate.engine.regression",
            report_pages="fairgate.report.regression:regression_pages",
            outcome_level=("mean_label", "mean outcome"),
        ),
        _kind(
            "ranking",
            "fairgate.engine.ranking",
            ranked_lists=True,
            report_pages="fairgate.report.ranking:ranking_pages",
            outcome_level=("mean_relevance", "mean relevance"),
        ),
    )
}
#: The kind a policy without ``task:`` audits.
DEFAULT_KIND = "binary"


def kind_of(name: str) -> Kind:
    """The registered kind called ``name`` (ValueError naming the kinds when there is none)."""
    if name not in KINDS:
        raise ValueError(f"unknown task {name!r}; use one of {list(KINDS)}")
    return KINDS[name]


def kinds_that_can(capability: Capability) -> list[str]:
    """The names of the kinds supporting ``capability``, in registry order."""
    return [kind.name for kind in KINDS.values() if kind.can(capability)]


def refusal(capability: Capability, kind: Kind, what: str | None = None) -> str:
    """The message refusing ``capability`` (written as ``what``) for ``kind``."""
    supported = " and ".join(kinds_that_can(capability)) or "no"
    return f"{what or CAPABILITY_WORDS[capability]} works on {supported} audits only (task is {kind.name!r})"
