"""Number and label formatting for the report: metric names, rounding, counts, slicing and group labels."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from types import MappingProxyType
from typing import Any

from fairgate.engine.labels import slicing_label
from fairgate.engine.metric_labels import METRIC_LABELS as METRIC_LABELS
from fairgate.engine.metric_labels import metric_label as metric_label
from fairgate.engine.metrics import policy_metric
from fairgate.policy.outcomes import RATE_ABBREVIATIONS, Outcomes, rate_phrase
from fairgate.report.model import KeyValue

#: Group metrics shown in the by-group tables, in reading order.
TABLE_METRICS: tuple[str, ...] = (
    "selection_rate",
    "base_rate",
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "positive_predictive_value",
    "accuracy",
    "roc_auc",
    "expected_calibration_error",
)
#: The badge text of each result status; statuses that are neither pass nor fail get their own badge.
STATUS_MARKS: dict[str, str] = {
    "pass": "PASS",
    "fail": "FAIL",
    "inconclusive": "INCONCLUSIVE",
    "insufficient_data": "NO DATA",
}
#: Results that were not judged pass or fail (shown with their reason).
UNDECIDED_STATUSES = ("inconclusive", "insufficient_data")


def rate_label(name: str, words: Outcomes) -> str:
    """A group metric's short name with what it counts in the policy's words (other metrics: their name).

    >>> compas = Outcomes(favorable_decision="not flagged high-risk", unfavorable_decision="flagged high-risk",
    ...                   favorable_truth="did not reoffend", unfavorable_truth="reoffended")
    >>> rate_label("false_negative_rate", compas)
    'FNR – flagged high-risk among those who did not reoffend'
    >>> rate_label("accuracy", compas)
    'Accuracy'
    """
    phrase = rate_phrase(name, words)
    return f"{RATE_ABBREVIATIONS[name]} – {phrase}" if phrase else metric_label(name)


def policy_metric_label(name: str, words: Outcomes) -> str:
    """A policy metric's name; one built on a single error rate also says what that rate counts.

    >>> policy_metric_label("false_negative_rate_difference", Outcomes(unfavorable_decision="flagged high-risk",
    ...                                                                favorable_truth="did not reoffend"))
    'FNR difference (flagged high-risk among those who did not reoffend)'
    >>> policy_metric_label("equal_opportunity_difference", Outcomes())
    'Equal opportunity difference'
    """
    for summary in ("difference", "ratio"):
        base = name.removesuffix(f"_{summary}")
        phrase = rate_phrase(base, words) if base != name and name not in METRIC_LABELS else None
        if phrase:
            return f"{RATE_ABBREVIATIONS[base]} {summary} ({phrase})"
    return metric_label(name)


def roc_axes(words: Outcomes) -> tuple[str, str]:
    """The ROC chart's axis titles: the two rates it plots, in the policy's words."""
    return rate_label("false_positive_rate", words), rate_label("true_positive_rate", words)


def calibration_axes(words: Outcomes, favorable_label: int) -> tuple[str, str]:
    """The reliability chart's axis titles: the score is the predicted chance of the favourable outcome.

    With favourable label 0 the engine uses 1 - the model's score (a risk score turned into the chance of the
    favourable outcome), and the axis says so.

    >>> calibration_axes(Outcomes(favorable_truth="did not reoffend"), 0)[0]
    'Predicted chance: did not reoffend (1 − model score)'
    """
    flipped = " (1 − model score)" if favorable_label == 0 else " (model score)"
    return f"Predicted chance: {words.favorable_truth}{flipped}", f"Observed share who {words.favorable_truth}"


def base_metrics(name: str) -> tuple[str, ...]:
    """The group metrics a policy metric summarises (``equalized_odds_difference`` -> TPR and FPR)."""
    try:
        return tuple(policy_metric(name).bases)
    except (ValueError, AttributeError):
        for suffix in ("_difference", "_ratio"):
            if name.endswith(suffix):
                return (name.removesuffix(suffix),)
        return ()


def fmt(value: float | None, digits: int = 3) -> str:
    """A number for a table, rounded once from the document's value (the one number formatter of the reports).

    Fixed digits, halves rounded away from zero as the JSON's number reads (0.1235 -> 0.124), a true minus sign
    for negatives (never "-0.000"), an en dash when undefined.

    >>> fmt(0.123456), fmt(None), fmt(float("nan")), fmt(-0.3312, 2), fmt(-0.0001), fmt(0.1235)
    ('0.123', '–', '–', '−0.33', '0.000', '0.124')
    """
    if value is None or not math.isfinite(value):
        return "–"
    return _signed(Decimal(repr(float(value))).quantize(_unit(digits), rounding=ROUND_HALF_UP), digits)


def fmt_bound(value: float, digits: int, *, upper: bool) -> str:
    """An interval end rounded outward (a lower end down, an upper end up).

    So the printed interval always contains the document's.

    >>> fmt_bound(0.42252, 3, upper=False), fmt_bound(0.89801, 3, upper=True), fmt_bound(-0.2801, 2, upper=True)
    ('0.422', '0.899', '−0.28')
    """
    rounding = ROUND_CEILING if upper else ROUND_FLOOR
    return _signed(Decimal(repr(float(value))).quantize(_unit(digits), rounding=rounding), digits)


def interval_text(low: float | None, high: float | None, digits: int | None = 3) -> str:
    """An interval with its ends rounded outward, "" when an end is undefined.

    ``digits`` None: the decimals its width needs, two or up to four for narrow ones. Ends joined by an en dash,
    or by "to" when an end is negative (a dash beside a minus sign misreads).

    >>> interval_text(0.42252, 0.8989), interval_text(-0.3312, -0.2801, 2), interval_text(None, 1.0)
    ('0.422–0.899', '−0.34 to −0.28', '')
    >>> interval_text(0.004, 0.0121, None), interval_text(0.21, 0.35, None)
    ('0.004–0.013', '0.21–0.35')
    """
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    if digits is None:
        width = abs(high - low)
        digits = 2 if width <= 0 else max(2, min(4, -math.floor(math.log10(width))))
    lo, hi = fmt_bound(low, digits, upper=False), fmt_bound(high, digits, upper=True)
    joint = " to " if MINUS in lo + hi else "–"
    return f"{lo}{joint}{hi}"


def estimate_text(value: float | None, low: float | None, high: float | None, brackets: str = "[]") -> str:
    """A value with its interval beside it, as a table cell prints it ("undefined" without a value).

    >>> estimate_text(0.5, 0.42252, 0.61), estimate_text(-0.3, -0.33, -0.28, "()"), estimate_text(None, 0, 1)
    ('0.500 [0.422–0.610]', '−0.300 (−0.330 to −0.280)', 'undefined')
    """
    if value is None or not math.isfinite(value):
        return "undefined"
    ci = interval_text(low, high)
    return f"{fmt(value)} {brackets[0]}{ci}{brackets[1]}" if ci else fmt(value)


def fmt_signed(value: float | None, digits: int = 3) -> str:
    """A change with its sign, rounded once as :func:`fmt` rounds ("+" for a gain, a true minus for a loss).

    >>> fmt_signed(0.38712), fmt_signed(-0.1049), fmt_signed(0.0), fmt_signed(None)
    ('+0.387', '−0.105', '0.000', '–')
    """
    text = fmt(value, digits)
    return text if text == "–" or text.startswith(MINUS) or float(text) == 0 else f"+{text}"


def fmt_p(value: float | None) -> str:
    """A p-value with three significant digits, small ones in powers of ten ("2.06 × 10⁻⁵" reads as "2.06e−05").

    >>> fmt_p(0.33512), fmt_p(2.0571e-05), fmt_p(1.0), fmt_p(None)
    ('0.335', '2.06e−05', '1', '–')
    """
    if value is None or not math.isfinite(value):
        return "–"
    return f"{float(value):.3g}".replace("-", MINUS)


#: The minus sign of every printed negative number (U+2212: the width of a digit, unlike a hyphen).
MINUS = "\u2212"


def _unit(digits: int) -> Decimal:
    return Decimal(1).scaleb(-digits)


def _signed(number: Decimal, digits: int) -> str:
    text = f"{abs(number):.{digits}f}"
    return MINUS + text if number < 0 else text


def round_number(value: Any, digits: int = 4) -> float | None:
    """A finite number rounded for the view, None for anything undefined.

    >>> round_number(0.123456789), round_number(None), round_number(float("inf"))
    (0.1235, None, None)
    """
    if value is None or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return round(float(value), digits)


def fmt_count(n: float | None) -> str:
    """A head count with thousands separators.

    >>> fmt_count(7214.0), fmt_count(None)
    ('7,214', '–')
    """
    if n is None:
        return "–"
    return f"{round(n):,}"


def slicing_key(slicing: Sequence[str]) -> str:
    """The label of a slicing.

    >>> slicing_key(["race", "sex"]), slicing_key([])
    ('race × sex', 'whole population')
    """
    return slicing_label(slicing)


def visible_text(text: str) -> str:
    r"""``text`` with invisible or reordering characters shown as escapes.

    Control characters (NUL, line breaks), bidirectional overrides and isolates (U+202E turns the rest of a
    line around), zero-width and other format characters: a group name from the data cannot then hide or
    disguise what a report says.

    >>> visible_text("Caucasian\u202e\x00")
    'Caucasian\\u202e\\x00'
    >>> visible_text("Native American · Zürich")
    'Native American · Zürich'
    """
    return "".join(_escaped(c) if unicodedata.category(c) in _HIDDEN_CATEGORIES else c for c in text)


# Cc: control characters; Cf: format characters (bidi controls, zero-width); Zl/Zp: line/paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def _escaped(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


#: The policy's ``labels:`` per attribute (coded value -> its reading), in force while a view is built.
_VALUE_LABELS: ContextVar[Mapping[str, Mapping[str, str]]] = ContextVar(
    "fairgate_value_labels", default=MappingProxyType({})
)


@contextmanager
def value_labels(labels: Mapping[str, Mapping[str, str]]) -> Iterator[None]:
    """Within the block, :func:`group_label` and :func:`value_label` read coded values through ``labels``.

    ``labels``: per attribute, the policy's ``labels:`` map (``{"sex": {"1": "Female (1)"}}``).
    """
    token = _VALUE_LABELS.set(labels)
    try:
        yield
    finally:
        _VALUE_LABELS.reset(token)


def labels_of(policy: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """The ``labels:`` maps of a policy echo's sensitive attributes (attributes without one are left out)."""
    out: dict[str, dict[str, str]] = {}
    for attribute in policy.get("sensitive_attributes") or []:
        if isinstance(attribute, Mapping) and attribute.get("labels"):
            out[str(attribute["name"])] = {str(k): str(v) for k, v in attribute["labels"].items()}
    return out


def value_label(attribute: str, value: Any) -> str:
    """A group value as the report prints it: the policy's label for a coded value, else the value itself.

    >>> with value_labels({"sex": {"1": "Female (1)"}}):
    ...     value_label("sex", 1), value_label("sex", "2"), value_label("race", "1")
    ('Female (1)', '2', '1')
    """
    text = str(value)
    return visible_text(_VALUE_LABELS.get().get(attribute, {}).get(text, text))


def group_label(group: Mapping[str, Any] | None, slicing: Sequence[str] | None = None) -> str:
    """``{"sex": "Female", "race": "Black"}`` -> ``"Female · Black"`` (values only: the columns say which).

    Hidden characters in the values are shown escaped (:func:`visible_text`); coded values read through the
    policy's ``labels:`` (:func:`value_labels`).
    """
    if not group:
        return "all"
    keys = list(slicing) if slicing else list(group)
    return " · ".join(value_label(k, group.get(k, "")) for k in keys)


def short(value: Any) -> str:
    """A value of any shape as one short cell text (floats at 3 digits)."""
    if isinstance(value, float):
        return fmt(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={short(x)}" for k, x in value.items())
    if isinstance(value, list):
        return ", ".join(short(x) for x in value)
    return str(value)


def inline(item: Mapping[str, Any]) -> str:
    """A mapping as ``key: value; ...`` (its slicing left out: the row says it)."""
    return "; ".join(f"{k}: {short(v)}" for k, v in item.items() if k != "slicing")


def flatten(value: Any, prefix: str = "", limit: int = 60) -> list[KeyValue]:
    """Nested facts (alignment, validation, inputs) as key/value rows, for a table whatever their shape.

    >>> [(kv.key, kv.value) for kv in flatten({"a": {"b": 1, "c": [1, 2]}, "d": 0.12345})]
    [('a.b', '1'), ('a.c', '1, 2'), ('d', '0.123')]
    """
    out: list[KeyValue] = []
    if value is None:
        return out
    if not isinstance(value, Mapping):
        return [KeyValue(prefix or "value", short(value))]
    for k, v in value.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.extend(flatten(v, key, limit))
        elif isinstance(v, list) and v and isinstance(v[0], Mapping):
            listed = " | ".join(inline(x) for x in v[:5]) + (" | …" if len(v) > 5 else "")
            out.append(KeyValue(key, f"{len(v)} item(s): {listed}"))
        else:
            out.append(KeyValue(key, short(v)))
        if len(out[-1].value) > 240:  # a report cell, not a dump: the JSON document has the rest
            out[-1] = KeyValue(out[-1].key, out[-1].value[:239] + "…")
        if len(out) >= limit:
            out.append(KeyValue("…", "truncated; see the JSON document"))
            break
    return out
