"""How a number and a group read in any text that reaches a reader: the one rounding rule and the one group name.

The engine's reasons and notes, the reports, the CLI and the e-mail all print numbers through :func:`fmt` (a
value rounded once, halves away from zero, a true minus sign) and :func:`interval_text` (ends rounded outward,
"−0.33 to −0.28" when an end is negative), and name groups through :func:`group_name` with the policy's value
labels (``labels:`` per sensitive attribute): ``Black · Female``, never ``sex=2``.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Any

#: The minus sign of every printed negative number (U+2212: the width of a digit, unlike a hyphen).
MINUS = "\u2212"
#: Between the values of a group of several attributes.
GROUP_SEPARATOR = " · "
#: Per attribute, its coded values' readings (a policy's ``labels:``, ``{"sex": {"1": "Male", "2": "Female"}}``).
ValueLabels = Mapping[str, Mapping[str, str]]


def fmt(value: float | None, digits: int = 3) -> str:
    """A number for a table or a sentence, rounded once from the document's value (the one number formatter).

    Fixed digits, halves rounded away from zero as the JSON's number reads (0.1235 -> 0.124), a true minus sign
    for negatives (never "-0.000"), an en dash when undefined.

    >>> fmt(0.123456), fmt(None), fmt(float("nan")), fmt(-0.3312, 2), fmt(-0.0001), fmt(0.1235)
    ('0.123', '–', '–', '−0.33', '0.000', '0.124')
    """
    if value is None or not math.isfinite(value):
        return "–"
    return _signed(Decimal(repr(float(value))).quantize(_unit(digits), rounding=ROUND_HALF_UP), digits)


def fmt_signed(value: float | None, digits: int = 3) -> str:
    """A difference with its sign always shown (``+0.120``, ``−0.034``), else as :func:`fmt`.

    >>> fmt_signed(0.12), fmt_signed(-0.0342), fmt_signed(None)
    ('+0.120', '−0.034', '–')
    """
    text = fmt(value, digits)
    return text if text.startswith((MINUS, "–")) or text.strip("0.") == "" else f"+{text}"


def fmt_p(p: float | None) -> str:
    """A p-value in words a reader can take: "< 0.001" below it, else three decimals (an adjusted 1 is "1.000").

    >>> fmt_p(0.00002), fmt_p(0.0412), fmt_p(1.0), fmt_p(None)
    ('< 0.001', '0.041', '1.000', '–')
    """
    if p is None or not math.isfinite(p):
        return "–"
    return "< 0.001" if p < 0.001 else fmt(p)


def p_is(p: float | None) -> str:
    """A p-value as a sentence says it: "p = 0.041", or "p < 0.001" for a tiny one (never "p = < 0.001").

    >>> p_is(0.0412), p_is(1e-53)
    ('p = 0.041', 'p < 0.001')
    """
    text = fmt_p(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def fmt_share(share: float | None, digits: int = 0) -> str:
    """A share as a percentage, rounded by the one rule (``0.4567`` -> ``46%``).

    >>> fmt_share(0.4567), fmt_share(0.12345, 1), fmt_share(None)
    ('46%', '12.3%', '–')
    """
    if share is None or not math.isfinite(share):
        return "–"
    return f"{fmt(100 * share, digits)}%"


def fmt_count(n: float | None) -> str:
    """A head count, rounded to a whole person, with thousands separators.

    >>> fmt_count(7214.0), fmt_count(9.6), fmt_count(None)
    ('7,214', '10', '–')
    """
    if n is None or not math.isfinite(n):
        return "–"
    return f"{round(n):,}"


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


def bracket_text(low: float | None, high: float | None, digits: int = 3, *, signed: bool = False) -> str:
    """An interval in the command line's and a reason's bracket form, its ends rounded outward as :func:`interval_text`.

    ``signed``: a change's interval, each end with its sign ("+0.012"); "" when an end is undefined.

    >>> bracket_text(0.42252, 0.8989), bracket_text(-0.3312, 0.0121, signed=True), bracket_text(None, 1.0)
    ('[0.422, 0.899]', '[−0.332, +0.013]', '')
    >>> bracket_text(0.00421, 0.01049, 4)
    '[0.0042, 0.0105]'
    """
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    ends = [fmt_bound(low, digits, upper=False), fmt_bound(high, digits, upper=True)]
    if signed:
        ends = [end if end.startswith(MINUS) or end.strip("0.") == "" else f"+{end}" for end in ends]
    return f"[{ends[0]}, {ends[1]}]"


def estimate_text(value: float | None, low: float | None, high: float | None, brackets: str = "[]") -> str:
    """A value with its interval beside it, as a table cell prints it ("undefined" without a value).

    >>> estimate_text(0.5, 0.42252, 0.61), estimate_text(-0.3, -0.33, -0.28, "()"), estimate_text(None, 0, 1)
    ('0.500 [0.422–0.610]', '−0.300 (−0.330 to −0.280)', 'undefined')
    """
    if value is None or not math.isfinite(value):
        return "undefined"
    ci = interval_text(low, high)
    return f"{fmt(value)} {brackets[0]}{ci}{brackets[1]}" if ci else fmt(value)


def _unit(digits: int) -> Decimal:
    return Decimal(1).scaleb(-digits)


def _signed(number: Decimal, digits: int) -> str:
    text = f"{abs(number):.{digits}f}"
    return MINUS + text if number < 0 else text


def unit_text(power: int, unit: str) -> str:
    """A unit as printed after a number: none, the unit, or its square.

    >>> unit_text(0, "rupees"), unit_text(1, "SD of ZFYA"), unit_text(2, "SD of ZFYA")
    ('', 'SD of ZFYA', '(SD of ZFYA)²')
    """
    if power <= 0:
        return ""
    return unit if power == 1 else f"({unit})²"


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


def value_name(attribute: str, value: Any, labels: ValueLabels | None = None) -> str:
    """A group value as a reader sees it: the policy's label for a coded value, else the value itself.

    >>> value_name("sex", 1, {"sex": {"1": "Female (1)"}}), value_name("sex", "2", {"sex": {"1": "Female (1)"}})
    ('Female (1)', '2')
    """
    text = str(value)
    return visible_text((labels or {}).get(attribute, {}).get(text, text))


def group_name(
    group: Mapping[str, Any] | None,
    slicing: Sequence[str] | None = None,
    labels: ValueLabels | None = None,
    *,
    empty: str = "all",
) -> str:
    """A group's name: its values (in the slicing's order) through the policy's labels, joined with " · ".

    Values only: the table's columns, or the slicing named beside, say which attribute each is.

    >>> group_name({"race": "Black", "sex": "2"}, labels={"sex": {"2": "Female"}})
    'Black · Female'
    >>> group_name({"sex": "Male", "race": "Black"}, ["race", "sex"]), group_name({}, empty="the population")
    ('Black · Male', 'the population')
    """
    if not group:
        return empty
    keys = [k for k in slicing if k in group] if slicing else list(group)
    return GROUP_SEPARATOR.join(value_name(k, group[k], labels) for k in keys)


def policy_labels(policy: Any) -> dict[str, dict[str, str]]:
    """The value labels of a policy's sensitive attributes (``labels:``; attributes without one left out).

    ``policy``: a :class:`fairgate.policy.core.Policy`, or its echo in a document (a mapping).
    """
    attributes = policy.get("sensitive_attributes") if isinstance(policy, Mapping) else policy.sensitive_attributes
    out: dict[str, dict[str, str]] = {}
    for attribute in attributes or []:
        name, labels = (
            (attribute.get("name"), attribute.get("labels"))
            if isinstance(attribute, Mapping)
            else (attribute.name, attribute.labels)
        )
        if labels:
            out[str(name)] = {str(k): str(v) for k, v in labels.items()}
    return out
