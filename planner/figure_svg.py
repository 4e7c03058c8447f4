"""A static SVG drawing of a Plotly figure: what a page shows first, while the interactive figure waits to be asked for.

Why: Streamlit draws ``st.plotly_chart`` with a 4.7 MB browser chunk that takes 0.6-1 s of CPU to evaluate on the
2-core development machine (1-3 s when the machine is loaded), and a page cannot show its figure before that. An
inline SVG needs no code in the browser at all. The same :class:`plotly.graph_objects.Figure` that the interactive
chart draws is drawn here, so the two never say different things; the interactive one adds zoom and PNG download.

What is drawn (the subset of Plotly this package's figures use): scatter traces (lines with ``dash`` and ``shape``
``"hv"``, markers of the common symbols, ``fill`` ``"tonexty"``/``"toself"``/``"tozeroy"``, gaps at ``None``),
bar traces (vertical or horizontal, ``barmode`` stack/group/overlay, per-bar colours, the ``"/"`` pattern, text
``"outside"``), box traces (quartiles by linear interpolation, as Plotly's default ``quartilemethod``; whiskers to the
farthest point within 1.5 IQR; the points beyond drawn), line and rect shapes (``add_vline``/``add_hline`` included),
annotations (data, ``paper`` and ``domain`` references, ``textangle``, background), subplots and shared axes, linear,
log and category axes (``range``, ``autorange="reversed"``, ``rangemode="tozero"``, ``tickvals``/``ticktext``,
``dtick``), the title and the legend. Hovering a marker or a bar shows its ``hovertemplate`` text (a ``<title>``
tooltip). As in Plotly, an annotation on a log axis is placed at the log10 of its value, a shape at the value itself.
Colours default to Streamlit's chart palette (:data:`planner.palette.STREAMLIT_CHART_COLORS`), as ``st.plotly_chart``
draws them. Imports :mod:`planner.palette` only.
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go

from planner.palette import STREAMLIT_CHART_COLORS

__all__ = ["figure_svg"]
_TEXT = "#31333f"
_MUTED = "#808495"
_GRID = "#e6eaf1"
_FONT = "'Source Sans', 'Source Sans Pro', sans-serif"
_DASHES = {"dot": "2,3", "dash": "7,4", "longdash": "12,4", "dashdot": "7,3,2,3", "longdashdot": "12,3,2,3"}
#: Width of one character of 12 px text, px: a budget for labels (Source Sans averages about 0.5 em).
_CHAR_PX = 6.2
_LEGEND_TITLE_PX = 220.0  # a legend title beside the plot wraps at this width
_ID = "\x00id\x00"  # replaced by a hash of the drawing, so two drawings on one page never share a clip path


def _decode(value: Any) -> Any:
    """Plotly's JSON with its typed arrays (``{"dtype", "bdata", "shape"}``) turned back into lists."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            if "shape" in value:
                array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
            return array.tolist()
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_decode(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _number(value: Any) -> float | None:
    """A finite float, or None (missing, NaN, text)."""
    if value is None or isinstance(value, (bool, str)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _esc(text: Any) -> str:
    """Text for SVG: escaped, and ``$`` as an entity (Streamlit's markdown would read ``$…$`` as math)."""
    return html.escape(str(text), quote=True).replace("$", "&#36;")


def _plain(text: Any) -> str:
    """Plotly's label HTML as plain text: ``<br>`` a newline, other tags dropped, entities read."""
    text = re.sub(r"<br\s*/?>", "\n", str(text), flags=re.IGNORECASE)
    text = re.sub(r"<extra>.*?</extra>", "", text, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


_FORMAT = re.compile(r"^(?P<comma>,)?(?:\.(?P<precision>\d+))?(?P<trim>~)?(?P<kind>[efgdrs%])?$")


def _d3(value: Any, spec: str) -> str:
    """``value`` formatted by the d3-format ``spec`` Plotly's templates use (``,.2f``, ``,.4~g``, ``.3f``, ``,``)."""
    number = _number(value)
    match = _FORMAT.match(spec)
    if number is None or match is None:
        return str(value)
    comma = "," if match["comma"] else ""
    precision = match["precision"]
    kind = match["kind"] or ""
    if kind == "%":
        return f"{number * 100:{comma}.{precision or 0}f}%"
    if kind == "f":
        return f"{number:{comma}.{precision or 6}f}"
    if kind == "e":
        return f"{number:.{precision or 6}e}"
    if kind == "d":
        return f"{round(number):{comma}d}"
    if kind in ("g", "r", "s") or precision:
        return f"{number:{comma}.{precision or 6}g}"  # Python's g trims zeros, as d3's ~ does
    return f"{number:{comma}.12g}" if comma else _tick_text(number)


def _tick_text(value: float) -> str:
    """A tick label in Plotly's default style: 1,500 as "1500", 20,000 as "20k", 0.25 as "0.25"."""
    if abs(value) >= 10_000:
        return f"{value / 1000:g}k"
    return f"{value:.6g}"


def _hover(template: str | None, point: dict[str, Any], name: str) -> str:
    """The text a point's tooltip shows: its ``hovertemplate`` filled in, or ``name: x, y``."""
    if not template:
        return f"{name}: {point.get('x')}, {point.get('y')}" if name else f"{point.get('x')}, {point.get('y')}"

    def fill(match: re.Match[str]) -> str:
        path, spec = match["path"], match["spec"]
        value: Any = point
        for part in re.findall(r"[^.\[\]]+", path):
            if isinstance(value, dict):
                value = value.get(part)
            elif isinstance(value, (list, tuple)) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                value = None
        if value is None:
            return ""
        return _d3(value, spec) if spec else (_tick_text(value) if _number(value) is not None else str(value))

    return _plain(re.sub(r"%\{(?P<path>[^}:]+)(?::(?P<spec>[^}]*))?\}", fill, template)).strip()


@dataclass
class _Axis:
    """One axis: where it is on the paper, what it maps, its ticks."""

    name: str  # "x", "x2", "y", ...
    spec: dict[str, Any]
    values: list[Any] = field(default_factory=list)  # every data value on it (numbers or categories)
    shape_values: list[Any] = field(default_factory=list)  # where shapes on it start and end (its range takes them in)
    categories: list[str] = field(default_factory=list)
    kind: str = "linear"
    low: float = 0.0
    high: float = 1.0
    reversed: bool = False
    start_px: float = 0.0  # pixel of the domain's start (left, or bottom for y)
    end_px: float = 1.0

    @property
    def domain(self) -> tuple[float, float]:
        low, high = self.spec.get("domain") or (0.0, 1.0)
        return float(low), float(high)

    def to_axis(self, value: Any) -> float | None:
        """A data value in axis units (log10 for a log axis, the index for a category)."""
        if self.kind == "category":
            text = str(value)
            if text in self.categories:
                return float(self.categories.index(text))
            return _number(value)
        number = _number(value)
        if number is None:
            return None
        if self.kind == "log":
            return math.log10(number) if number > 0 else None
        return number

    def px(self, units: float) -> float:
        """Axis units to pixels."""
        share = (units - self.low) / ((self.high - self.low) or 1.0)
        if self.reversed:
            share = 1.0 - share
        return self.start_px + share * (self.end_px - self.start_px)

    def data_px(self, value: Any) -> float | None:
        units = self.to_axis(value)
        return None if units is None else self.px(units)

    def ticks(self) -> list[tuple[float, str]]:
        """``(axis units, label)`` of each tick inside the range."""
        labels = not (self.spec.get("showticklabels") is False and self.kind != "category")
        low, high = sorted((self.low, self.high))
        if self.spec.get("tickvals") is not None:
            texts = self.spec.get("ticktext") or [None] * len(self.spec["tickvals"])
            out = []
            for value, text in zip(self.spec["tickvals"], texts, strict=False):
                units = self.to_axis(value)
                if units is not None and low - 1e-9 <= units <= high + 1e-9:
                    out.append((units, str(text) if text is not None else self._label(value)))
        elif self.kind == "category":
            out = [(float(i), c) for i, c in enumerate(self.categories) if low <= i <= high]
        elif self.kind == "log":
            decades = range(math.ceil(low - 1e-9), math.floor(high + 1e-9) + 1)
            out = [(float(k), self._label(10.0**k)) for k in decades]
            if len(out) < 3:  # less than two decades: 2 and 5 too
                for k in range(math.floor(low) - 1, math.ceil(high) + 1):
                    for m in (2, 5):
                        units = k + math.log10(m)
                        if low <= units <= high:
                            out.append((units, self._label(m * 10.0**k)))
                out.sort()
        else:
            out = [(v, self._label(v)) for v in _nice_ticks(low, high, abs(self.end_px - self.start_px))]
        return out if labels else [(units, "") for units, _ in out]

    def _label(self, value: float) -> str:
        spec = self.spec.get("tickformat")
        return _d3(value, spec) if spec else _tick_text(float(value))


def _nice_ticks(low: float, high: float, length_px: float) -> list[float]:
    """Round ticks (1, 2, 2.5 or 5 × 10^k apart) across ``[low, high]``, about one per 40-80 px."""
    span = high - low
    if span <= 0:
        return [low]
    wanted = max(3, min(10, int(length_px / 55)))
    raw = span / wanted
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    count = math.floor((high - first) / step + 1e-9) + 1
    return [round(first + i * step, 12) for i in range(count)]


def _symbol(kind: str, x: float, y: float, size: float) -> tuple[str, str]:
    """A marker symbol at ``(x, y)``, ``size`` px across (Plotly's names): its SVG element and geometry attributes."""
    r = size / 2
    base = kind.replace("-open", "")
    if base == "diamond":
        return "path", f'd="M{x:.1f},{y - r:.1f}L{x + r:.1f},{y:.1f}L{x:.1f},{y + r:.1f}L{x - r:.1f},{y:.1f}Z"'
    if base == "square":
        return "rect", f'x="{x - r:.1f}" y="{y - r:.1f}" width="{size:.1f}" height="{size:.1f}"'
    if base.startswith("triangle"):
        return "path", f'd="M{x:.1f},{y - r:.1f}L{x + r:.1f},{y + r:.1f}L{x - r:.1f},{y + r:.1f}Z"'
    if base == "star":
        points = []
        for i in range(10):
            radius = r if i % 2 == 0 else r * 0.45
            angle = math.pi / 2 + i * math.pi / 5
            points.append(f"{x + radius * math.cos(angle):.1f},{y - radius * math.sin(angle):.1f}")
        return "path", f'd="M{"L".join(points)}Z"'
    if base == "line-ns":
        return "path", f'd="M{x:.1f},{y - r:.1f}L{x:.1f},{y + r:.1f}"'
    if base in ("x", "cross"):
        return (
            "path",
            f'd="M{x - r:.1f},{y - r:.1f}L{x + r:.1f},{y + r:.1f}M{x - r:.1f},{y + r:.1f}L{x + r:.1f},{y - r:.1f}"',
        )
    return "circle", f'cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}"'


def _at(value: Any, i: int) -> Any:
    """A per-point attribute's value at point ``i`` (Plotly takes one value or one per point)."""
    if isinstance(value, list):
        return value[i] if i < len(value) else None
    return value


def _marker(
    marker: dict[str, Any], i: int, color: str, x: float, y: float, *, largest: float | None = None
) -> tuple[str, str, str]:
    """Point ``i``'s marker at ``(x, y)``: its SVG element, geometry and paint (fill, outline), from the trace's
    ``marker`` (symbol, size, color and line, each one value or one per point); ``largest`` caps the size (a legend
    entry)."""
    symbol = str(_at(marker.get("symbol"), i) or "circle")
    size = _number(_at(marker.get("size"), i)) or 6.0
    if largest is not None:
        size = min(size, largest)
    fill = _at(marker.get("color"), i)
    fill = fill if isinstance(fill, str) else color
    outline = marker.get("line") or {}
    stroke = _at(outline.get("color"), i)
    stroke_width = _number(_at(outline.get("width"), i))
    if symbol == "line-ns":  # a line has no inside: its outline is what shows
        stroke, stroke_width, fill = stroke or fill, stroke_width or 2.0, "none"
    elif symbol.endswith("-open"):
        stroke, stroke_width, fill = stroke or fill, stroke_width or 1.5, "none"
    paint = f' fill="{_esc(fill)}"'
    if isinstance(stroke, str) and stroke_width:
        paint += f' stroke="{_esc(stroke)}" stroke-width="{stroke_width:g}"'
    tag, geometry = _symbol(symbol, x, y, size)
    return tag, geometry, paint


def _dash(line: dict[str, Any]) -> str:
    dash = _DASHES.get(str(line.get("dash") or "solid"))
    return f' stroke-dasharray="{dash}"' if dash else ""


def _wrap(text: str, width_px: float) -> list[str]:
    """``text`` in lines of at most ``width_px`` (12 px text), broken between words."""
    lines: list[str] = []
    for word in text.split():
        if lines and _width_px(lines[-1] + " " + word) <= width_px:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _text_lines(text: str) -> list[str]:
    return _plain(text).split("\n")


def _width_px(text: str, size: float = 12.0) -> float:
    return max((len(line) for line in _text_lines(text)), default=0) * _CHAR_PX * size / 12


class _Drawing:
    """One figure laid out and drawn (see :func:`figure_svg`)."""

    def __init__(self, fig: go.Figure, width_px: int) -> None:
        spec = _decode(fig.to_plotly_json())
        self.layout: dict[str, Any] = {k: v for k, v in spec.get("layout", {}).items() if k != "template"}
        self.traces: list[dict[str, Any]] = spec.get("data", [])
        self.width = float(width_px)
        self.height = float(self.layout.get("height") or 450)
        self.parts: list[str] = []
        self.axes: dict[str, _Axis] = {}
        self._collect_axes()
        self.legend = self._legend_items()

    # --- axes ---------------------------------------------------------------------------------------------------------
    def _collect_axes(self) -> None:
        for key, value in self.layout.items():
            if m := re.fullmatch(r"([xy])axis(\d*)", key):
                self.axes[m[1] + m[2]] = _Axis(m[1] + m[2], dict(value or {}))
        for trace in self.traces:
            for letter in "xy":
                name = trace.get(f"{letter}axis") or letter
                self.axes.setdefault(name, _Axis(name, {}))
        for trace in self.traces:
            self._add_values(trace)
        for shape in self.layout.get("shapes") or []:  # Plotly's autorange takes in shapes on data axes
            for letter in "xy":
                axis = self.axes.get(str(shape.get(f"{letter}ref") or letter))
                if axis is not None:
                    axis.shape_values.extend(shape.get(f"{letter}{end}") for end in (0, 1))
        for axis in self.axes.values():
            self._settle_kind(axis)

    def _add_values(self, trace: dict[str, Any]) -> None:
        xa, ya = self._trace_axes(trace)
        kind = trace.get("type", "scatter")
        xs, ys = list(trace.get("x") or []), list(trace.get("y") or [])
        if kind == "box":  # drawn upright (:meth:`_box`): its name is a slot on x, its values on y, even when empty
            xa.values.append(str(trace.get("name") or ""))
            ya.values.extend(ys)
            return
        if kind == "bar":
            horizontal = trace.get("orientation") == "h"
            categories, lengths = (ys, xs) if horizontal else (xs, ys)
            (ya if horizontal else xa).values.extend(categories or range(len(lengths)))
            (xa if horizontal else ya).values.extend([0, *lengths])
            return
        xa.values.extend(xs if xs else range(len(ys)))
        ya.values.extend(ys)
        if trace.get("fill") in ("tozeroy",):
            ya.values.append(0)

    def _settle_kind(self, axis: _Axis) -> None:
        declared = axis.spec.get("type")
        texts = [v for v in axis.values if isinstance(v, str)]
        if declared == "category" or (declared in (None, "-") and texts):
            axis.kind = "category"
            axis.categories = list(dict.fromkeys(str(v) for v in axis.values if v is not None))
        elif declared == "log":
            axis.kind = "log"
        axis.reversed = axis.spec.get("autorange") == "reversed"

    def _trace_axes(self, trace: dict[str, Any]) -> tuple[_Axis, _Axis]:
        return self.axes[trace.get("xaxis") or "x"], self.axes[trace.get("yaxis") or "y"]

    def _ranges(self) -> None:
        """Each axis' range: its own, else the span of its data (and of the axes it matches), padded as Plotly does."""
        for axis in self.axes.values():
            given = axis.spec.get("range")
            if given and len(given) == 2 and None not in given and axis.spec.get("autorange") not in (True, "reversed"):
                low, high = (_number(given[0]), _number(given[1]))
                if low is not None and high is not None:
                    axis.low, axis.high = low, high
                    continue
            if axis.kind == "category":
                axis.low, axis.high = -0.5, max(0.5, len(axis.categories) - 0.5)
                continue
            values = [*axis.values, *axis.shape_values]
            # shared axes span every panel's data: make_subplots(shared_xaxes=True) matches each panel's axis to the
            # bottom one, so the panels above share with each other through it
            group = self._matched(axis)
            for other in self.axes.values():
                if other is not axis and self._matched(other) == group:
                    values.extend(other.values)
            units = [u for u in (axis.to_axis(v) for v in values) if u is not None]
            if axis.spec.get("rangemode") == "tozero" and axis.kind == "linear":
                units.append(0.0)
            if not units:
                axis.low, axis.high = (0.0, 1.0) if axis.kind == "log" else (-1.0, 4.0)
                continue
            low, high = min(units), max(units)
            if high == low:
                low, high = low - 1, high + 1
            pad = (high - low) * 0.05
            zero_low = axis.kind == "linear" and low >= 0 and (axis.spec.get("rangemode") == "tozero" or low == 0)
            axis.low = low if zero_low else low - pad
            axis.high = high + pad

    def _matched(self, axis: _Axis) -> str:
        """The axis that ``axis``'s ``matches`` chain ends at (its own name when it matches none)."""
        name, seen = axis.name, set()
        while name not in seen:
            seen.add(name)
            target = self.axes.get(name)
            following = target.spec.get("matches") if target is not None else None
            if not following or following not in self.axes:
                return name
            name = str(following)
        return name

    # --- legend -------------------------------------------------------------------------------------------------------
    def _legend_items(self) -> list[tuple[str, dict[str, Any], int]]:
        items = []
        for index, trace in enumerate(self.traces):
            name = trace.get("name")
            if name and trace.get("showlegend") is not False and trace.get("visible") not in (False, "legendonly"):
                items.append((str(name), trace, index))
        shown = self.layout.get("showlegend")
        # Plotly's default: a legend for two entries or more, or for one trace that asks for it
        if shown is False or (shown is None and len(items) < 2 and not any(t.get("showlegend") for _, t, _ in items)):
            return []
        return items

    def _legend_rows(self, width: float) -> list[list[tuple[str, dict[str, Any], int]]]:
        rows: list[list[tuple[str, dict[str, Any], int]]] = [[]]
        used = _width_px(self.legend_title) + 12 if self.legend_title else 0.0
        for item in self.legend:
            need = 34 + _width_px(item[0])
            if rows[-1] and used + need > width:
                rows.append([])
                used = 0.0
            rows[-1].append(item)
            used += need
        return rows if rows[0] else []

    # --- colours ------------------------------------------------------------------------------------------------------
    def color(self, trace: dict[str, Any], index: int) -> str:
        for path in (("line", "color"), ("marker", "color")):
            value = trace.get(path[0], {}).get(path[1]) if isinstance(trace.get(path[0]), dict) else None
            if isinstance(value, str):
                return value
        colorway = self.layout.get("colorway") or STREAMLIT_CHART_COLORS
        return colorway[index % len(colorway)]

    # --- layout -------------------------------------------------------------------------------------------------------
    def lay_out(self) -> None:
        self._ranges()
        title = (self.layout.get("title") or {}).get("text") if isinstance(self.layout.get("title"), dict) else None
        self.title = title
        top = 10.0 + (26 if title else 0)
        bottom = 10.0
        legend = self.layout.get("legend") or {}
        vertical = legend.get("orientation", "v") != "h" and bool(self.legend)
        title = legend.get("title")
        self.legend_title = _plain(title.get("text") if isinstance(title, dict) else title or "") if self.legend else ""
        right = 12.0
        if vertical:
            widest = max(_width_px(n) + 40 for n, _, _ in self.legend)
            right += max(widest, min(_width_px(self.legend_title), _LEGEND_TITLE_PX))
        self.legend_title_lines = _wrap(self.legend_title, max(right - 16, _LEGEND_TITLE_PX) if vertical else 1e9)
        left = 10.0
        # space for tick labels and titles of the axes at the paper's edges
        for axis in self.axes.values():
            if axis.name.startswith("y") and axis.domain[0] is not None:
                labels = [t for _, t in axis.ticks()] if axis.kind != "category" else axis.categories
                need = 8 + max((_width_px(t) for t in labels), default=0) + (20 if self._title(axis) else 0)
                if self._x_domain_of(axis)[0] <= 0.01:
                    left = max(left, 10 + need)
        xtitle = any(self._title(a) for a in self.axes.values() if a.name.startswith("x"))
        bottom += 18 + (20 if xtitle else 0)
        self.legend_rows = [] if vertical else self._legend_rows(self.width - left - right)
        legend_height = 20.0 * len(self.legend_rows)
        self.legend_above = not vertical and float(legend.get("y", 1.02 if vertical else -0.1)) > 0.5
        if self.legend_above:
            top += legend_height
        else:
            bottom += legend_height
        if any(str(a.get("yref", "")) == "paper" and (_number(a.get("y")) or 0) >= 1 for a in self._annotations()):
            top += 20  # subplot titles sit above the panels
        self.plot = (left, top, self.width - right, self.height - bottom)
        x0, y0, x1, y1 = self.plot
        for axis in self.axes.values():
            d0, d1 = axis.domain
            if axis.name.startswith("x"):
                axis.start_px, axis.end_px = x0 + d0 * (x1 - x0), x0 + d1 * (x1 - x0)
            else:
                axis.start_px, axis.end_px = y1 - d0 * (y1 - y0), y1 - d1 * (y1 - y0)
        self.vertical_legend = vertical

    def _x_domain_of(self, yaxis: _Axis) -> tuple[float, float]:
        anchor = yaxis.spec.get("anchor") or "x" + yaxis.name[1:]
        axis = self.axes.get(anchor)
        return axis.domain if axis is not None else (0.0, 1.0)

    @staticmethod
    def _title(axis: _Axis) -> str | None:
        title = axis.spec.get("title")
        text = title.get("text") if isinstance(title, dict) else title
        return str(text) if text else None

    def _annotations(self) -> list[dict[str, Any]]:
        return list(self.layout.get("annotations") or [])

    def paper_x(self, share: float) -> float:
        return self.plot[0] + share * (self.plot[2] - self.plot[0])

    def paper_y(self, share: float) -> float:
        return self.plot[3] - share * (self.plot[3] - self.plot[1])

    def ref(self, letter: str, ref: str | None, value: Any, *, log_units: bool) -> float | None:
        """A pixel ``letter`` (``"x"`` or ``"y"``) for ``value`` in the reference ``ref`` (``paper``, ``x2``,
        ``x2 domain``; None: the first axis of ``letter``)."""
        number = _number(value)
        if ref == "paper":
            return None if number is None else (self.paper_x if letter == "x" else self.paper_y)(number)
        axis = self.axes.get((ref or letter).split()[0])
        if axis is None:
            return None
        if (ref or "").endswith("domain"):
            return None if number is None else axis.start_px + number * (axis.end_px - axis.start_px)
        if log_units and axis.kind == "log":
            return None if number is None else axis.px(number)
        return axis.data_px(value)

    # --- drawing ------------------------------------------------------------------------------------------------------
    def draw(self) -> str:
        self.lay_out()
        out = self.parts
        if self.title:
            # a title wider than the drawing (a narrow column) starts at the left edge and is set smaller, down to
            # 11 px, rather than cut at the right edge
            text = _plain(self.title)
            x = self.plot[0] if self.plot[0] + _width_px(text, 16) <= self.width - 8 else 8.0
            size = max(11.0, min(16.0, 16 * (self.width - x - 8) / max(_width_px(text, 16), 1.0)))
            out.append(
                f'<text x="{x:.1f}" y="22" font-size="{size:.3g}" font-weight="600" fill="{_TEXT}">{_esc(text)}</text>'
            )
        panels = self._panels()
        for index, (xa, ya) in enumerate(panels):
            x0, x1 = sorted((xa.start_px, xa.end_px))
            y0, y1 = sorted((ya.start_px, ya.end_px))
            out.append(
                f'<clipPath id="{_ID}c{index}"><rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" '
                f'height="{y1 - y0:.1f}"/></clipPath>'
            )
            self._grid(xa, ya)
        self._shapes(below=True)
        previous: dict[tuple[str, str], list[tuple[float, float]]] = {}
        bars = [t for t in self.traces if t.get("type") == "bar"]
        stacks: dict[tuple[str, str, float], list[float]] = {}
        for index, trace in enumerate(self.traces):
            if trace.get("visible") in (False, "legendonly"):
                continue
            xa, ya = self._trace_axes(trace)
            clip = panels.index((xa, ya)) if (xa, ya) in panels else 0
            kind = trace.get("type", "scatter")
            opacity = _number(trace.get("opacity"))
            group = f'<g clip-path="url(#{_ID}c{clip})"' + (f' opacity="{opacity:g}"' if opacity is not None else "")
            out.append(group + ">")
            if kind == "bar":
                self._bar(trace, index, xa, ya, bars, stacks)
            elif kind == "box":
                self._box(trace, index, xa, ya)
            else:
                previous[(xa.name, ya.name)] = self._scatter(trace, index, xa, ya, previous.get((xa.name, ya.name)))
            out.append("</g>")
        for trace_index, trace in enumerate(self.traces):  # bar labels outside the bars may pass the panel's edge
            if trace.get("type") == "bar" and trace.get("text") is not None and trace.get("visible") is not False:
                self._bar_text(trace, *self._trace_axes(trace), trace_index)
        self._shapes(below=False)
        for xa, ya in panels:
            self._tick_labels(xa, ya)
        self._axis_titles()
        self._annotations_drawn()
        self._legend()
        body = "".join(out)
        digest = hashlib.sha1(body.encode()).hexdigest()[:10]
        body = body.replace(_ID, f"f{digest}")
        label = _esc(_plain(self.title or " · ".join(n for n, _, _ in self.legend) or "chart"))
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width:.0f} {self.height:.0f}" '
            f'width="100%" role="img" aria-label="{label}" '
            f'style="max-width:{self.width:.0f}px;height:auto;display:block;font-family:{_FONT}" '
            f'font-family="{_FONT}" font-size="12">{body}</svg>'
        )

    def _panels(self) -> list[tuple[_Axis, _Axis]]:
        panels: list[tuple[_Axis, _Axis]] = []
        for name, axis in self.axes.items():
            if name.startswith("y"):
                anchor = axis.spec.get("anchor") or "x" + name[1:]
                xa = self.axes.get(anchor) or self.axes.get("x")
                if xa is not None and (xa, axis) not in panels:
                    panels.append((xa, axis))
        return panels

    def _grid(self, xa: _Axis, ya: _Axis) -> None:
        x0, x1 = sorted((xa.start_px, xa.end_px))
        y0, y1 = sorted((ya.start_px, ya.end_px))
        for units, _ in ya.ticks() if ya.kind != "category" else []:
            y = ya.px(units)
            self.parts.append(f'<path d="M{x0:.1f},{y:.1f}H{x1:.1f}" stroke="{_GRID}" stroke-width="1"/>')
        for units, _ in xa.ticks() if xa.kind != "category" else []:
            x = xa.px(units)
            self.parts.append(f'<path d="M{x:.1f},{y0:.1f}V{y1:.1f}" stroke="{_GRID}" stroke-width="1"/>')

    def _tick_labels(self, xa: _Axis, ya: _Axis) -> None:
        y_base = max(ya.start_px, ya.end_px)
        for units, text in xa.ticks():
            if text:
                self.parts.append(
                    f'<text x="{xa.px(units):.1f}" y="{y_base + 15:.1f}" text-anchor="middle" fill="{_MUTED}">'
                    f"{_esc(text)}</text>"
                )
        x_base = min(xa.start_px, xa.end_px)
        for units, text in ya.ticks():
            if text:
                self.parts.append(
                    f'<text x="{x_base - 6:.1f}" y="{ya.px(units) + 4:.1f}" text-anchor="end" fill="{_MUTED}">'
                    f"{_esc(text)}</text>"
                )

    def _axis_titles(self) -> None:
        for axis in self.axes.values():
            title = self._title(axis)
            if not title:
                continue
            if axis.name.startswith("x"):
                ya = next((a for a in self.axes.values() if a.spec.get("anchor") == axis.name), None)
                base = max(ya.start_px, ya.end_px) if ya is not None else self.plot[3]
                x = (axis.start_px + axis.end_px) / 2
                self.parts.append(
                    f'<text x="{x:.1f}" y="{base + 34:.1f}" text-anchor="middle" fill="{_MUTED}" font-size="13">'
                    f"{_esc(_plain(title))}</text>"
                )
            else:
                xa = self.axes.get(axis.spec.get("anchor") or "x" + axis.name[1:])
                left = min(xa.start_px, xa.end_px) if xa is not None else self.plot[0]
                width = max((_width_px(t) for _, t in axis.ticks()), default=0)
                x = max(12.0, left - width - 16)
                y = (axis.start_px + axis.end_px) / 2
                self.parts.append(
                    f'<text transform="translate({x:.1f},{y:.1f}) rotate(-90)" text-anchor="middle" '
                    f'fill="{_MUTED}" font-size="13">{_esc(_plain(title))}</text>'
                )

    def _scatter(
        self,
        trace: dict[str, Any],
        index: int,
        xa: _Axis,
        ya: _Axis,
        previous: list[tuple[float, float]] | None,
    ) -> list[tuple[float, float]]:
        xs = list(trace.get("x") or range(len(trace.get("y") or [])))
        ys = list(trace.get("y") or [])
        color = self.color(trace, index)
        line = trace.get("line") or {}
        marker = trace.get("marker") or {}
        mode = trace.get("mode") or ("lines+markers" if len(ys) < 20 else "lines")
        points = [(xa.data_px(x), ya.data_px(y)) for x, y in zip(xs, ys, strict=False)]
        drawn = [(x, y) for x, y in points if x is not None and y is not None]
        fill = trace.get("fill")
        if fill in ("tonexty", "toself", "tozeroy") and drawn:
            fill_color = trace.get("fillcolor") or _with_alpha(color, 0.5)
            if fill == "tonexty" and previous:
                polygon = drawn + list(reversed(previous))
            elif fill == "tozeroy":
                zero = ya.data_px(0) if ya.kind != "log" else max(ya.start_px, ya.end_px)
                polygon = [(drawn[0][0], zero), *drawn, (drawn[-1][0], zero)]
            else:
                polygon = drawn
            path = "M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in polygon) + "Z"
            self.parts.append(f'<path d="{path}" fill="{_esc(fill_color)}" stroke="none"/>')
        width = _number(line.get("width"))
        width = 2.0 if width is None else width
        if "lines" in mode and width > 0:
            for segment in _segments(points):
                if len(segment) < 2:
                    continue
                path = _polyline(segment, hv=line.get("shape") == "hv")
                title = f"<title>{_esc(trace.get('name') or '')}</title>" if trace.get("name") else ""
                self.parts.append(
                    f'<path d="{path}" fill="none" stroke="{_esc(line.get("color") or color)}" '
                    f'stroke-width="{width:g}"{_dash(line)} stroke-linejoin="round">{title}</path>'
                )
        if "markers" in mode:
            for i, (x, y) in enumerate(points):
                if x is None or y is None:
                    continue
                tip = _esc(_hover(trace.get("hovertemplate"), _point(trace, i), str(trace.get("name") or "")))
                tag, geometry, paint = _marker(marker, i, color, x, y)
                self.parts.append(f"<{tag} {geometry}{paint}><title>{tip}</title></{tag}>")
        return drawn

    def _bar_geometry(
        self, trace: dict[str, Any], bars: list[dict[str, Any]], xa: _Axis, ya: _Axis
    ) -> tuple[bool, _Axis, _Axis, float, float]:
        """(horizontal, category axis, value axis, offset of this trace's bar from the slot's centre, bar width)."""
        horizontal = trace.get("orientation") == "h"
        cat_axis, val_axis = (ya, xa) if horizontal else (xa, ya)
        mode = self.layout.get("barmode") or "group"
        slot = 0.8  # Plotly's default bargap 0.2
        same = [b for b in bars if (b.get("orientation") == "h") == horizontal and self._trace_axes(b) == (xa, ya)]
        if mode == "group" and len(same) > 1:
            width = slot / len(same)
            return horizontal, cat_axis, val_axis, -slot / 2 + width * (same.index(trace) + 0.5), width
        return horizontal, cat_axis, val_axis, 0.0, slot

    def _bar(
        self,
        trace: dict[str, Any],
        index: int,
        xa: _Axis,
        ya: _Axis,
        bars: list[dict[str, Any]],
        stacks: dict[tuple[str, str, float], list[float]],
    ) -> None:
        horizontal, cat_axis, val_axis, offset, width = self._bar_geometry(trace, bars, xa, ya)
        lengths = list(trace.get("x") if horizontal else trace.get("y") or [])
        categories = list((trace.get("y") if horizontal else trace.get("x")) or range(len(lengths)))
        marker = trace.get("marker") or {}
        colors = marker.get("color")
        color = self.color(trace, index)
        pattern = (marker.get("pattern") or {}).get("shape")
        stacked = (self.layout.get("barmode") or "group") in ("stack", "relative")
        if pattern:
            self.parts.append(
                f'<defs><pattern id="{_ID}p{index}" width="8" height="8" patternUnits="userSpaceOnUse" '
                f'patternTransform="rotate(45)"><path d="M0,0V8" stroke="white" stroke-width="3" '
                f'stroke-opacity="0.6"/></pattern></defs>'
            )
        for i, (category, length) in enumerate(zip(categories, lengths, strict=False)):
            value = _number(length)
            position = cat_axis.to_axis(category)
            if value is None or position is None:
                continue
            key = (xa.name, ya.name, position)
            start = stacks.setdefault(key, [0.0])[0] if stacked else 0.0
            end = start + value
            if stacked:
                stacks[key][0] = end
            a0, a1 = cat_axis.px(position + offset - width / 2), cat_axis.px(position + offset + width / 2)
            v0, v1 = val_axis.data_px(start), val_axis.data_px(end)
            if v0 is None or v1 is None:
                continue
            fill = colors[i] if isinstance(colors, list) and i < len(colors) else color
            if horizontal:
                x, y, w, h = min(v0, v1), min(a0, a1), abs(v1 - v0), abs(a1 - a0)
            else:
                x, y, w, h = min(a0, a1), min(v0, v1), abs(a1 - a0), abs(v1 - v0)
            tip = _esc(_hover(trace.get("hovertemplate"), _point(trace, i), str(trace.get("name") or "")))
            rect = f'x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}"'
            self.parts.append(f'<rect {rect} fill="{_esc(fill)}"><title>{tip}</title></rect>')
            if pattern:
                self.parts.append(f'<rect {rect} fill="url(#{_ID}p{index})" pointer-events="none"/>')

    def _bar_text(self, trace: dict[str, Any], xa: _Axis, ya: _Axis, index: int) -> None:
        bars = [t for t in self.traces if t.get("type") == "bar"]
        horizontal, cat_axis, val_axis, offset, _ = self._bar_geometry(trace, bars, xa, ya)
        lengths = list(trace.get("x") if horizontal else trace.get("y") or [])
        categories = list((trace.get("y") if horizontal else trace.get("x")) or range(len(lengths)))
        texts = trace.get("text")
        texts = texts if isinstance(texts, list) else [texts] * len(lengths)
        for category, length, text in zip(categories, lengths, texts, strict=False):
            position = cat_axis.to_axis(category)
            if text is None or position is None:
                continue
            end = val_axis.data_px(_number(length) or 0.0)
            if end is None:
                continue
            centre = cat_axis.px(position + offset)
            if horizontal:
                self.parts.append(f'<text x="{end + 4:.1f}" y="{centre + 4:.1f}" fill="{_TEXT}">{_esc(text)}</text>')
            else:
                self.parts.append(
                    f'<text x="{centre:.1f}" y="{end - 5:.1f}" text-anchor="middle" fill="{_TEXT}">{_esc(text)}</text>'
                )

    def _box(self, trace: dict[str, Any], index: int, xa: _Axis, ya: _Axis) -> None:
        values = [v for v in (_number(v) for v in trace.get("y") or []) if v is not None]
        position = xa.to_axis(str(trace.get("name") or ""))
        if not values or position is None:
            return
        q1, median, q3 = (float(np.quantile(values, q)) for q in (0.25, 0.5, 0.75))
        iqr = q3 - q1
        low = min(v for v in values if v >= q1 - 1.5 * iqr)
        high = max(v for v in values if v <= q3 + 1.5 * iqr)
        color = self.color(trace, index)
        x0, x1, xc = xa.px(position - 0.3), xa.px(position + 0.3), xa.px(position)
        py = {name: ya.data_px(v) for name, v in (("q1", q1), ("m", median), ("q3", q3), ("lo", low), ("hi", high))}
        if None in py.values():
            return
        tip = _esc(
            f"{trace.get('name') or ''}\nmedian {median:.1f}\nq1 {q1:.1f}, q3 {q3:.1f}\n"
            f"whiskers {low:.1f}–{high:.1f}\nn = {len(values)}"
        )
        self.parts.append(
            f'<path d="M{xc:.1f},{py["lo"]:.1f}V{py["q1"]:.1f}M{xc:.1f},{py["q3"]:.1f}V{py["hi"]:.1f}" '
            f'stroke="{_esc(color)}" stroke-width="1.5"/>'
            f'<rect x="{x0:.1f}" y="{py["q3"]:.1f}" width="{x1 - x0:.1f}" height="{abs(py["q1"] - py["q3"]):.1f}" '
            f'fill="{_esc(_with_alpha(color, 0.35))}" stroke="{_esc(color)}" stroke-width="1.5"><title>{tip}</title>'
            f'</rect><path d="M{x0:.1f},{py["m"]:.1f}H{x1:.1f}" stroke="{_esc(color)}" stroke-width="2"/>'
        )
        for value in values:
            if value < low or value > high:
                y = ya.data_px(value)
                if y is not None:
                    self.parts.append(
                        f'<circle cx="{xc:.1f}" cy="{y:.1f}" r="2.5" fill="{_esc(color)}"><title>{value:.1f}</title>'
                        "</circle>"
                    )

    def _shapes(self, *, below: bool) -> None:
        for shape in self.layout.get("shapes") or []:
            if (shape.get("layer") == "below") != below:
                continue
            x0 = self.ref("x", shape.get("xref"), shape.get("x0"), log_units=False)
            x1 = self.ref("x", shape.get("xref"), shape.get("x1"), log_units=False)
            y0 = self.ref("y", shape.get("yref"), shape.get("y0"), log_units=False)
            y1 = self.ref("y", shape.get("yref"), shape.get("y1"), log_units=False)
            if None in (x0, x1, y0, y1):
                continue
            line = shape.get("line") or {}
            width = _number(line.get("width"))
            width = 2.0 if width is None else width
            opacity = _number(shape.get("opacity"))
            style = f' stroke="{_esc(line.get("color") or _TEXT)}" stroke-width="{width:g}"{_dash(line)}'
            style += f' opacity="{opacity:g}"' if opacity is not None else ""
            if shape.get("type") == "rect":
                fill = shape.get("fillcolor") or "none"
                self.parts.append(
                    f'<rect x="{min(x0, x1):.1f}" y="{min(y0, y1):.1f}" width="{abs(x1 - x0):.1f}" '
                    f'height="{abs(y1 - y0):.1f}" fill="{_esc(fill)}"{style}/>'
                )
            else:
                self.parts.append(f'<path d="M{x0:.1f},{y0:.1f}L{x1:.1f},{y1:.1f}"{style}/>')

    def _annotations_drawn(self) -> None:
        for note in self._annotations():
            x = self.ref("x", note.get("xref"), note.get("x", 0.5), log_units=True)
            y = self.ref("y", note.get("yref"), note.get("y", 0.5), log_units=True)
            if x is None or y is None:
                continue
            x += _number(note.get("xshift")) or 0.0
            y -= _number(note.get("yshift")) or 0.0
            font = note.get("font") or {}
            size = _number(font.get("size")) or 12.0
            color = font.get("color") or _TEXT
            lines = _text_lines(note.get("text") or "")
            width, height = _width_px(note.get("text") or "", size), size * 1.25 * len(lines)
            anchor_x = note.get("xanchor") or "center"
            anchor_y = note.get("yanchor") or "middle"
            if note.get("showarrow", True) is not False:  # an arrow's head at the point, the text above it
                head_y = y
                y -= 30
                self.parts.append(f'<path d="M{x:.1f},{head_y:.1f}V{y:.1f}" stroke="{_MUTED}" stroke-width="1"/>')
                anchor_y = "bottom"
            angle = _number(note.get("textangle")) or 0.0
            # the box's corner, in the text's own frame (before rotation)
            left = {"left": 0.0, "right": -width, "center": -width / 2, "auto": -width / 2}.get(anchor_x, -width / 2)
            top = {"top": 0.0, "bottom": -height, "middle": -height / 2, "auto": -height / 2}.get(anchor_y, -height / 2)
            if angle:
                # a vertical label: its anchor names the rotated box's sides, as Plotly reads them
                left, top = (
                    {"left": 0.0, "right": -height, "center": -height / 2}.get(anchor_x, -height / 2),
                    {"top": 0.0, "bottom": -width, "middle": -width / 2}.get(anchor_y, -width / 2),
                )
                x, y = x + left + height, y + top + width
                transform = f' transform="rotate({angle:g} {x:.1f} {y:.1f})"'
                left, top = 0.0, -height
            else:
                transform = ""
            parts = [f"<g{transform}>"]
            if note.get("bgcolor"):
                parts.append(
                    f'<rect x="{x + left - 2:.1f}" y="{y + top:.1f}" width="{width + 4:.1f}" height="{height:.1f}" '
                    f'fill="{_esc(note["bgcolor"])}"/>'
                )
            weight = ' font-weight="600"' if "<b>" in str(note.get("text") or "") else ""
            for i, text in enumerate(lines):
                baseline = y + top + size * (i + 1) * 1.25 - size * 0.3
                parts.append(
                    f'<text x="{x + left:.1f}" y="{baseline:.1f}" font-size="{size:g}" fill="{_esc(color)}"{weight}>'
                    f"{_esc(text)}</text>"
                )
            parts.append("</g>")
            self.parts.append("".join(parts))

    def _legend(self) -> None:
        if not self.legend:
            return
        if self.vertical_legend:
            x = self.plot[2] + 16
            y = self.plot[1] + 10
            for line in self.legend_title_lines:
                self.parts.append(f'<text x="{x:.1f}" y="{y + 4:.1f}" fill="{_TEXT}">{_esc(line)}</text>')
                y += 16
            for row, (name, trace, index) in enumerate(self.legend):
                self._legend_item(x, y + 4 + 20 * row, name, trace, index)
            return
        rows = self.legend_rows
        if self.legend_above:
            y = self.plot[1] - 20 * len(rows) - (20 if self._has_subplot_titles() else 0) + 6
        else:
            ticks_and_title = 18 + (20 if any(self._title(a) for a in self.axes.values() if a.name[0] == "x") else 0)
            y = self.plot[3] + ticks_and_title + 14
        for number, row in enumerate(rows):
            x = self.plot[0]
            if number == 0 and self.legend_title:
                self.parts.append(f'<text x="{x:.1f}" y="{y + 4:.1f}" fill="{_TEXT}">{_esc(self.legend_title)}</text>')
                x += _width_px(self.legend_title) + 12
            for name, trace, index in row:
                self._legend_item(x, y, name, trace, index)
                x += 34 + _width_px(name)
            y += 20

    def _has_subplot_titles(self) -> bool:
        return any(str(a.get("yref", "")) == "paper" and (_number(a.get("y")) or 0) >= 1 for a in self._annotations())

    def _legend_item(self, x: float, y: float, name: str, trace: dict[str, Any], index: int) -> None:
        color = self.color(trace, index)
        kind = trace.get("type", "scatter")
        mode = trace.get("mode") or "lines"
        marker = trace.get("marker") or {}
        if kind in ("bar", "box") or (
            trace.get("fill") and "lines" in mode and not (trace.get("line") or {}).get("width")
        ):
            fill = trace.get("fillcolor") or color
            self.parts.append(f'<rect x="{x:.1f}" y="{y - 6:.1f}" width="24" height="12" fill="{_esc(fill)}"/>')
            if (marker.get("pattern") or {}).get("shape"):
                self.parts.append(
                    f'<rect x="{x:.1f}" y="{y - 6:.1f}" width="24" height="12" fill="url(#{_ID}p{index})"/>'
                )
        else:
            line = trace.get("line") or {}
            if "lines" in mode:
                self.parts.append(
                    f'<path d="M{x:.1f},{y:.1f}H{x + 24:.1f}" stroke="{_esc(line.get("color") or color)}" '
                    f'stroke-width="2"{_dash(line)}/>'
                )
            if "markers" in mode:
                tag, geometry, paint = _marker(marker, 0, color, x + 12, y, largest=12.0)
                self.parts.append(f"<{tag} {geometry}{paint}/>")
        self.parts.append(f'<text x="{x + 30:.1f}" y="{y + 4:.1f}" fill="{_TEXT}">{_esc(name)}</text>')


def _point(trace: dict[str, Any], i: int) -> dict[str, Any]:
    """What a hovertemplate may name for point ``i``: x, y, text, customdata."""
    point: dict[str, Any] = {}
    for key in ("x", "y", "text", "customdata"):
        values = trace.get(key)
        if isinstance(values, list):
            point[key] = values[i] if i < len(values) else None
        elif values is not None and key in ("text",):
            point[key] = values
    return point


def _segments(points: Iterable[tuple[float | None, float | None]]) -> list[list[tuple[float, float]]]:
    """Runs of drawable points: a missing value breaks the line, as Plotly's ``connectgaps=False`` does."""
    segments: list[list[tuple[float, float]]] = [[]]
    for x, y in points:
        if x is None or y is None:
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append((x, y))
    return [s for s in segments if s]


def _polyline(points: Sequence[tuple[float, float]], *, hv: bool) -> str:
    """An SVG path through ``points``; ``hv``: a step, horizontal then vertical (Plotly's ``line.shape="hv"``)."""
    path = f"M{points[0][0]:.1f},{points[0][1]:.1f}"
    for x, y in points[1:]:
        path += f"H{x:.1f}V{y:.1f}" if hv else f"L{x:.1f},{y:.1f}"
    return path


def _with_alpha(color: str, alpha: float) -> str:
    """``#rrggbb`` at ``alpha``; other colour strings are returned as they are."""
    if re.fullmatch(r"#[0-9a-fA-F]{6}", color):
        r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
        return f"rgba({r}, {g}, {b}, {alpha})"
    return color


def figure_svg(fig: go.Figure, *, width_px: int = 940) -> str:
    """The figure as one line of standalone SVG markup, ``width_px`` wide at 100% (it scales to its container).

    Args:
        fig: a figure of the kinds the module docstring lists; other trace types are left out.
        width_px: the drawing's width in SVG pixels (its text is 12 px at this width); its height is the figure's
            ``layout.height`` (450 without one).

    Returns:
        ``<svg …>…</svg>`` on one line, every text escaped (labels may carry model ids a user typed), ``$`` written
        as ``&#36;`` so a markdown renderer does not read it as math. Identical figures give identical text.
    """
    return _Drawing(fig, width_px).draw()
