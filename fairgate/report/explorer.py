"""The what-if threshold explorer's data: per slicing and group, the score histogram by label, from the cube.

Computed on aggregates only (never rows): the binary cube keeps, per group and label, either every distinct score
(its score table, for exact AUC), a fine score histogram (AUC at scale) or the calibration bins. The explorer turns
the one it has into *cells* on the raw score's scale (the column ``columns.score`` as given, before any flip to the
favourable outcome), each with the weight of favourable and unfavourable truths, so that the page can apply any
threshold with the rule of ``columns.decision_threshold``: predicted label 1 when ``score >= t``. A cell is one
distinct score when the scores take few values (every threshold is then exact), else a bin whose score is its
lower edge (exact at thresholds on the bin grid): width ``1 / EXPLORER_BINS`` from the score table, or a union of
whole bins of the cube's histogram (or calibration bins) when it has no score table.

Groups the report suppresses (:class:`fairgate.report.suppress.Suppression`) are left out entirely: nothing about
them, not even their size, is in the data. No file I/O here: ``tasks/render/explorer.py`` renders and writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from fairgate.document.groups import GroupEntry
from fairgate.engine.columns import BIN, HBIN, PERSON_SQ, SCORE, TRUE, WEIGHT, WEIGHT_SQ
from fairgate.engine.cube import BIN_EDGE_TOLERANCE, Cube, score_squares
from fairgate.engine.labels import SLICING_SEPARATOR, slicing_label
from fairgate.engine.metrics import SummaryOf, WorstCaseOf, policy_metric
from fairgate.engine.stats import z_value
from fairgate.policy.core import Policy
from fairgate.report.explorer_fit import fitted_thresholds
from fairgate.report.format import policy_metric_label, rate_label
from fairgate.report.suppress import Suppression, binary_counts, small_count

EXPLORER_BINS = 100  # continuous scores: cells of width 0.01 on the raw score
MAX_EXACT_SCORES = 200  # at most this many distinct scores in a slicing: one cell per score, every threshold exact
# The group metrics the page computes from its counts (the audit document's names); summaries of others are left out.
PAGE_RATES = (
    "selection_rate",
    "true_positive_rate",
    "false_positive_rate",
    "positive_predictive_value",
    "false_negative_rate",
    "accuracy",
)
FI_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
_CELL = "__cell"
# The cube keeps 1 - score when 0 is favourable; 1 - (1 - s) can miss s by one unit in the last place (0.1 comes
# back as 0.09999999999999998, which a threshold of 0.1 would then not reach), so flipped scores are rounded back.
RAW_DECIMALS = 12
DENSE_KEYS = 20_000_000  # packed (attributes, cell, label) keys up to this many are summed densely


@dataclass(frozen=True)
class ScoreCells:
    """The cube's scores as cells on the raw score: attribute values, cell score, favourable truth, weight."""

    frame: pl.DataFrame
    exact: bool
    resolution: str
    weighted: bool = False  # the frame also sums squared weights (WEIGHT_SQ, and PERSON_SQ from the cells)


def explorer_data(
    cube: Cube,
    groups: Sequence[Mapping[str, Any]],
    policy: Policy,
    min_cell_size: int,
    suppression: Suppression | None = None,
) -> dict[str, Any]:
    """The explorer page's data: every slicing of ``groups`` (the document's group entries) with its shown groups.

    Returns a JSON-ready dict: ``favorable_label``, ``decision_rule``, ``start_threshold``, ``z`` (the interval's
    normal quantile), ``level``, ``summaries`` (the policy's metrics the page can compute, with their thresholds),
    ``labels`` (the rates and summaries in words, as the report names them),
    ``fi_thresholds`` and ``slicings`` (label, attributes, score grid, resolution, groups with cell counts, the
    fitted group thresholds along the accuracy-fairness frontier: ``fairgate/report/explorer_fit.py``).
    ``suppression`` is the report's (:meth:`Suppression.of_document`), so the page shows exactly the groups the
    report shows.
    """
    entries = [GroupEntry.model_validate(g) if isinstance(g, Mapping) else g for g in groups]
    if suppression is None:  # no document's rule given (its judged results' partners): the groups' own
        suppression = Suppression.of(entries, min_cell_size, counts=binary_counts(entries))
    by_slicing: dict[tuple[str, ...], list[GroupEntry]] = {}
    for entry in entries:
        if entry.slicing:  # the whole population is not a slicing to move thresholds in
            by_slicing.setdefault(tuple(entry.slicing), []).append(entry)
    min_group = policy.intersectional_analysis.min_group_size
    cells = score_cells(cube, policy)
    slicings = []
    for slicing, members in by_slicing.items():
        shown = [e for e in members if not suppression.hides(slicing, e.group) and (e.n or 0) > 0]
        if shown:
            squares = cube.squares_column(slicing) if cells.weighted else None
            data = _slicing_data(cells, slicing, shown, squares, min_cell_size)
            slicings.append(data | {"fitted": fitted_thresholds(data, policy)})
    return {
        "favorable_label": policy.favorable_label,
        "outcomes": policy.outcomes.model_dump() if policy.outcomes is not None else None,
        "decision_rule": f"predicted label 1 when {policy.columns.score} >= threshold",
        "start_threshold": policy.columns.decision_threshold,
        "level": policy.reporting.confidence_level,
        "z": z_value(policy.reporting.confidence_level),
        "min_cell_size": min_cell_size,
        "min_group_size": min_group,
        "summaries": page_summaries(policy),
        "labels": page_labels(policy),
        "fi_thresholds": list(FI_THRESHOLDS),
        "slicings": slicings,
    }


def page_labels(policy: Policy) -> dict[str, str]:
    """The page's rates and summaries in words, as the report names them (the policy's outcome words)."""
    labels = {name: rate_label(name, policy.outcomes) for name in PAGE_RATES}
    return labels | {m["metric"]: policy_metric_label(m["metric"], policy.outcomes) for m in page_summaries(policy)}


def page_summaries(policy: Policy) -> list[dict[str, Any]]:
    """The policy's metrics that are differences or ratios of the page's rates, with threshold and direction."""
    out = []
    for metric in policy.metrics:
        spec = policy_metric(metric.name)
        if not isinstance(spec, SummaryOf) or not set(spec.bases) <= set(PAGE_RATES):
            continue
        out.append(
            {
                "metric": metric.name,
                "bases": list(spec.bases),
                "summary": spec.summary,
                "worst_case": isinstance(spec, WorstCaseOf),
                "threshold": metric.threshold,
                "direction": metric.direction or spec.direction,
            }
        )
    return out


def _slicing_data(
    cells: ScoreCells, slicing: tuple[str, ...], shown: list[GroupEntry], squares: str | None, min_cell_size: int
) -> dict[str, Any]:
    """One slicing's score grid and, per shown group, the weight of each label at each grid score.

    Weighted, also the sum of squared weights: the page's intervals use Kish's effective sizes, as the engine's do.
    Adjacent grid scores are merged until no group has 1 to k-1 people of a label at one (:func:`small_cells`).
    """
    sums = [pl.col(WEIGHT).sum()] + ([pl.col(squares).sum().alias(WEIGHT_SQ)] if squares else [])
    counted = cells.frame.group_by([*slicing, _CELL, TRUE]).agg(sums)
    grid = np.unique(counted[_CELL].to_numpy())
    keys = [tuple(str(entry.group[a]) for a in slicing) for entry in shown]
    index = {SLICING_SEPARATOR.join(key): i for i, key in enumerate(keys)}
    names = counted.select(pl.concat_str([pl.col(a) for a in slicing], separator=SLICING_SEPARATOR)).to_series()
    group = np.array([index.get(name, -1) for name in names.to_list()], dtype=np.int64)
    kept = group >= 0  # cells of groups not shown (suppressed) are dropped here
    where = (
        group[kept],
        counted[TRUE].to_numpy().astype(np.int64)[kept],
        np.searchsorted(grid, counted[_CELL].to_numpy())[kept],
    )
    tables = np.zeros((2 if squares else 1, len(shown), 2, grid.size))
    np.add.at(tables[0], where, counted[WEIGHT].to_numpy()[kept])
    if squares:
        np.add.at(tables[1], where, counted[WEIGHT_SQ].to_numpy()[kept])
    starts = small_cells(tables[0], min_cell_size)
    merged = starts.size < grid.size
    grid, tables = grid[starts], np.add.reduceat(tables, starts, axis=-1) if grid.size else tables
    numbers = [_numbers(t) for t in tables]
    groups = []
    for i, (key, entry) in enumerate(zip(keys, shown, strict=True)):
        groups.append(
            {
                "name": SLICING_SEPARATOR.join(key),
                "group": dict(entry.group),
                "sufficient": entry.sufficient,  # judged by the audit (n reaches min_group_size)
                "positive": numbers[0][i][1],
                "negative": numbers[0][i][0],
            }
            | ({"positive_sq": numbers[1][i][1], "negative_sq": numbers[1][i][0]} if squares else {})
        )
    return {
        "label": slicing_label(slicing),
        "attributes": list(slicing),
        "scores": [float(v) for v in grid],
        "exact": cells.exact and not merged,
        "resolution": cells.resolution + (MERGED_NOTE.format(k_minus=min_cell_size - 1) if merged else ""),
        "groups": groups,
    }


#: Said with a slicing's resolution when its grid was merged for the small-cell rule.
MERGED_NOTE = (
    "; neighbouring scores merged where a group had 1 to {k_minus} people of one outcome at a score, so that no count "
    "the page shows, at any threshold, is from 1 to {k_minus} (the small-cell rule)"
)


def small_cells(table: np.ndarray, min_cell_size: int) -> np.ndarray:
    """The first grid index of each merged cell: adjacent scores joined until no count in the cell is small.

    A cell closes when every group's count of each label in it is 0 or at least ``min_cell_size``
    (``suppress.small_count``, the one rule).

    ``table``: (groups, 2 labels, grid) weights. Every count the page derives at a threshold (a group's TP, FP,
    TN, FN, and their differences between two thresholds) is a sum of whole cells, so it is 0 or at least k too.
    A tail that never reaches k joins the cell before it.

    >>> small_cells(np.array([[[3, 0, 12, 5, 5], [0, 0, 0, 0, 0]]]), 10).tolist()
    [0, 3]
    >>> small_cells(np.array([[[10, 0, 20], [0, 0, 0]]]), 10).tolist()
    [0, 1, 2]
    >>> small_cells(np.array([[[10, 0, 20, 0], [10, 0, 0, 3]]]), 10).tolist()
    [0]
    """
    if min_cell_size <= 1:  # no head count is from 1 to 0: every score keeps its cell (weights may be fractional)
        return np.arange(table.shape[-1], dtype=np.int64)
    starts: list[int] = []
    start, running = 0, np.zeros(table.shape[:-1])
    for j in range(table.shape[-1]):
        running = running + table[..., j]
        if not _has_small(running, min_cell_size):
            starts.append(start)
            start, running = j + 1, np.zeros(table.shape[:-1])
    # A pending tail holds a small count: it joins the cells before it until their sums are not small either.
    while len(starts) > 1 and _has_small(table[..., starts[-1] :].sum(axis=-1), min_cell_size):
        starts.pop()
    return np.array(starts or [0], dtype=np.int64)


def _has_small(counts: np.ndarray, min_cell_size: int) -> bool:
    return any(small_count(float(v), min_cell_size) for v in counts.ravel())


def _numbers(values: np.ndarray) -> list[Any]:
    """Weights as JSON numbers: integers when all are whole (shorter; unweighted counts), else floats."""
    if np.array_equal(values, np.floor(values)):
        return values.astype(np.int64).tolist()  # type: ignore[no-any-return]
    return values.tolist()  # type: ignore[no-any-return]


def score_cells(cube: Cube, policy: Policy) -> ScoreCells:
    """The cube's scores as cells on the raw score, per combination of every attribute.

    From the finest record the cube keeps: the score table, else the score histogram, else the calibration bins.
    Weighted, the cells also sum squared weights, for the Kish sizes: the score table keeps them, the calibration
    cells too (per row and per person); the score histogram does not, so a weighted cube without a score table,
    or with probabilistic membership (whose per-person squares only the cells keep), uses the calibration bins.
    """
    flip = policy.favorable_label == 0  # the cube keeps the favourable outcome's score: 1 - raw when 0 is favourable
    attributes = cube.attributes
    weighted = cube.weighted
    if cube.scores is not None and not (weighted and cube.membership is not None):
        return _from_score_table(cube, flip, weighted)
    if cube.score_histogram is not None and not weighted:
        return _from_bins(cube.score_histogram, attributes, HBIN, cube.histogram_bins, flip, [])
    squares = [WEIGHT_SQ, PERSON_SQ] if weighted else []
    cells = cube.cells.select(*attributes, BIN, TRUE, WEIGHT, *squares)
    return _from_bins(cells, attributes, BIN, cube.calibration_bins, flip, squares)


def _from_score_table(cube: Cube, flip: bool, weighted: bool) -> ScoreCells:
    """Cells from the score table (sorted by score): each distinct score when few, else bins of 1/EXPLORER_BINS.

    The packed key of every scored row (attribute codes, cell, label) is one Polars expression, summed with one
    ``bincount``: a hash group-by over millions of scored rows took seconds.
    """
    table = cube.scores
    assert table is not None
    if not table[SCORE].is_sorted():  # the cube keeps it sorted; sort if it is not
        table = table.sort(SCORE)
    raw = (1.0 - pl.col(SCORE)).round(RAW_DECIMALS) if flip else pl.col(SCORE)
    changes = (pl.col(SCORE) != pl.col(SCORE).shift(1)).fill_null(False)
    distinct = int(table.select(changes.sum()).item()) + (1 if table.height else 0)
    exact = distinct <= MAX_EXACT_SCORES
    if exact:
        cell = changes.cast(pl.Int64).cum_sum()
        values = table.filter(changes | (pl.int_range(pl.len()) == 0)).select(raw).to_series().to_numpy()
    else:
        cell = (raw * EXPLORER_BINS + BIN_EDGE_TOLERANCE).floor().clip(0, EXPLORER_BINS - 1).cast(pl.Int64)
        values = np.arange(EXPLORER_BINS) / EXPLORER_BINS
    levels = [cube.levels(a) for a in cube.attributes]
    packed = pl.lit(0, dtype=pl.Int64)
    for attribute, names in zip(cube.attributes, levels, strict=True):
        packed = packed * len(names) + pl.col(attribute).cast(pl.Int64)
    packed = (packed * values.size + cell) * 2 + pl.col(TRUE).cast(pl.Int64)
    key = table.select(packed.alias("key")).to_series().to_numpy()
    summed = [table[WEIGHT].to_numpy()]
    if weighted:
        summed.append(score_squares(table)[WEIGHT_SQ].to_numpy())
    span = int(np.prod([len(n) for n in levels], dtype=np.int64)) * values.size * 2
    found, sums = _key_sums(key, summed, span)
    rest, truth = np.divmod(found, 2)
    rest, cells = np.divmod(rest, values.size)
    columns: dict[str, Any] = {}
    for attribute, names in reversed(list(zip(cube.attributes, levels, strict=True))):
        rest, code = np.divmod(rest, len(names))
        columns[attribute] = pl.Series(attribute, names, dtype=pl.String).gather(code)
    frame = pl.DataFrame(
        [columns[a] for a in cube.attributes]
        + [pl.Series(_CELL, values[cells]), pl.Series(TRUE, truth, dtype=pl.Int8)]
        + [pl.Series(name, column) for name, column in zip((WEIGHT, WEIGHT_SQ), sums, strict=False)]
    )
    note = f"exact: every one of the {distinct} distinct scores is kept" if exact else _bin_note(EXPLORER_BINS)
    return ScoreCells(frame, exact, note, weighted)


def _key_sums(key: np.ndarray, columns: list[np.ndarray], span: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The keys present and each column's sum per key (keys below ``span``)."""
    if span <= DENSE_KEYS:  # every possible key in one array: no sort
        found = np.flatnonzero(np.bincount(key, minlength=span))
        return found, [np.bincount(key, weights=c, minlength=span)[found] for c in columns]
    found, where = np.unique(key, return_inverse=True)
    return found, [np.bincount(where, weights=c, minlength=found.size) for c in columns]


def _summed(frame: pl.DataFrame, attributes: Sequence[str], squares: Sequence[str]) -> pl.DataFrame:
    return frame.group_by([*attributes, _CELL, TRUE]).agg(pl.col(c).sum() for c in (WEIGHT, *squares))


def _decoded(attribute: str, levels: list[str]) -> pl.Expr:
    """A score-table attribute's codes back to its values."""
    return pl.col(attribute).cast(pl.Int64).replace_strict(list(range(len(levels))), levels, return_dtype=pl.String)


def _from_bins(
    frame: pl.DataFrame, attributes: Sequence[str], column: str, bins: int, flip: bool, squares: list[str]
) -> ScoreCells:
    """Cells from equal bins of the favourable score: each bin's lower edge on the raw score, then re-binned."""
    index = pl.col(column).cast(pl.Float64)
    lower = ((bins - 1 - index) if flip else index) / bins
    width = coarse_bins(bins)
    cells = frame.select(*attributes, _binned(lower, width), pl.col(TRUE), pl.col(WEIGHT), *squares)
    return ScoreCells(_summed(cells, attributes, squares), False, _bin_note(width), bool(squares))


def coarse_bins(bins: int) -> int:
    """The page's bins over ``bins`` equal bins: the most, up to 128, that are unions of whole bins (65536: 128).

    >>> coarse_bins(65536), coarse_bins(10), coarse_bins(1000)
    (128, 10, 125)
    """
    return next(d for d in range(min(bins, 128), 0, -1) if bins % d == 0)


def _binned(raw: pl.Expr, bins: int) -> pl.Expr:
    """The lower edge of the raw score's bin among ``bins`` equal bins on [0, 1] (the cube's edge rule)."""
    return ((raw * bins + BIN_EDGE_TOLERANCE).floor().clip(0, bins - 1) / bins).alias(_CELL)


def _bin_note(bins: int) -> str:
    return (
        f"bins of width 1/{bins}: exact at thresholds on the grid k/{bins}; between grid points a bin counts as "
        "at its lower edge"
    )
