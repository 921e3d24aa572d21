"""Plots drawn on the server as small inline SVG: a histogram and line charts, axes with round ticks.

Written by hand rather than with matplotlib: an SVG of a few hundred bytes renders with the page
(no second request, no script), works in the static report, and costs microseconds, where
importing matplotlib alone would cost a large part of the first paint's budget. Each chart
carries its points in ``data-points`` (JSON), so what it draws can be read back.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT = 420, 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 20, 12, 38
COLOURS = ("#3b6fb6", "#c0504d", "#4e9a52", "#8064a2", "#d08a2c")


@dataclass(frozen=True, slots=True)
class Series:
    """One line of a chart: its name (the legend) and its ``(x, y)`` points in order."""

    name: str
    points: tuple[tuple[float, float], ...]
    step: bool = False


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round values (1, 2 or 5 times a power of ten apart) covering ``[lo, hi]``;
    a range too narrow to divide is first widened around its value."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    lo, hi = min(lo, hi), max(lo, hi)
    if hi - lo <= max(abs(lo), abs(hi)) * 1e-9 or hi - lo < 1e-300:
        half = abs(lo) / 2 or 0.5
        lo, hi = lo - half, hi + half
    raw = (hi - lo) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-12))
    # Ticks as integer multiples of the step: adding the step up would drift.
    first, last = math.floor(lo / step), math.ceil(hi / step)
    return [k * step for k in range(first, last + 1)]


def label(value: float) -> str:
    """A tick's text: short (``250k``, ``1.5M``, ``0.0005``), four significant digits at most,
    and never in exponent form (``5e-04`` reads as a typo on an axis of times)."""
    size = abs(value)
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if size >= max(scale, 1e4):
            return f"{value / scale:.4g}{suffix}"
    if value != 0 and size < 1e-3:
        decimals = 3 - math.floor(math.log10(size))  # four significant digits
        return f"{value:.{decimals}f}".rstrip("0").rstrip(".")
    return f"{value:.4g}"


class _Frame:
    """The mapping of data coordinates onto the plot area, and the axes drawn around it."""

    def __init__(self, xs: Sequence[float], ys: Sequence[float], y_from_zero: bool) -> None:
        self.xticks = nice_ticks(min(xs), max(xs))
        lo = 0.0 if y_from_zero else min(ys)
        self.yticks = nice_ticks(min(lo, min(ys)), max(ys))
        self.x0, self.x1 = self.xticks[0], self.xticks[-1]
        self.y0, self.y1 = self.yticks[0], self.yticks[-1]

    def x(self, value: float) -> float:
        span = (self.x1 - self.x0) or 1.0
        return _LEFT + (value - self.x0) / span * (WIDTH - _LEFT - _RIGHT)

    def y(self, value: float) -> float:
        span = (self.y1 - self.y0) or 1.0
        return HEIGHT - _BOTTOM - (value - self.y0) / span * (HEIGHT - _TOP - _BOTTOM)

    def axes(self, xlabel: str, ylabel: str) -> list[str]:
        bottom, left = HEIGHT - _BOTTOM, _LEFT
        out = [f'<path class="axis" d="M{left},{_TOP} V{bottom} H{WIDTH - _RIGHT}"/>']
        for t in self.xticks:
            x = self.x(t)
            out.append(
                f'<text class="tick" x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">{label(t)}</text>'
            )
        for t in self.yticks:
            y = self.y(t)
            out.append(f'<path class="grid" d="M{left},{y:.1f} H{WIDTH - _RIGHT}"/>')
            out.append(
                f'<text class="tick" x="{left - 5}" y="{y + 4:.1f}" text-anchor="end">{label(t)}</text>'
            )
        out.append(
            f'<text class="axis-label" x="{(left + WIDTH - _RIGHT) / 2:.0f}" y="{HEIGHT - 6}" '
            f'text-anchor="middle">{escape(xlabel)}</text>'
        )
        middle = (HEIGHT - _BOTTOM + _TOP) / 2
        out.append(
            f'<text class="axis-label" transform="translate(12,{middle:.0f}) rotate(-90)" '
            f'text-anchor="middle">{escape(ylabel)}</text>'
        )
        return out


def _svg(kind: str, body: list[str], points: object, title: str) -> Markup:
    data = escape(json.dumps(points, separators=(",", ":")))
    head = (
        f'<svg class="chart {kind}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" data-points="{data}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>"
    )
    return Markup(head + "".join(body) + "</svg>")


def histogram(values: Sequence[float], *, xlabel: str, title: str, marker: float | None = None,
              marker_label: str = "") -> Markup:  # fmt: skip
    """Bars counting ``values`` in equal bins (between 10 and 60 of them), ``marker`` as a line."""
    if not values:
        return Markup("")
    lo, hi = min(values), max(values)
    bins = min(60, max(10, len(values) // 10))
    width = (hi - lo) / bins or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(int((v - lo) / width), bins - 1)] += 1
    edges = [lo + i * width for i in range(bins + 1)]
    frame = _Frame([edges[0], edges[-1]], [0.0, float(max(counts))], y_from_zero=True)
    body = frame.axes(xlabel, "samples")
    for i, n in enumerate(counts):
        if n:
            x0, x1, y = frame.x(edges[i]), frame.x(edges[i + 1]), frame.y(n)
            body.append(
                f'<rect class="bar" x="{x0:.1f}" y="{y:.1f}" width="{max(x1 - x0 - 0.5, 0.5):.1f}" '
                f'height="{frame.y(0) - y:.1f}">'
                f"<title>{label(edges[i])}-{label(edges[i + 1])}: {n}</title></rect>"
            )
    if marker is not None:
        x = frame.x(marker)
        body.append(f'<path class="marker" d="M{x:.1f},{_TOP} V{HEIGHT - _BOTTOM}"/>')
        body.append(
            f'<text class="marker-label" x="{x + 4:.1f}" y="{_TOP + 10}">{escape(marker_label)}</text>'
        )
    return _svg("histogram", body, {"edges": edges, "counts": counts}, title)


def line_chart(series: Sequence[Series], *, xlabel: str, ylabel: str, title: str,
               mark: tuple[float, float] | None = None, y_from_zero: bool = True) -> Markup:  # fmt: skip
    """Lines (or steps) through each series' points; ``mark`` circles one point (the run's own)."""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    if not xs:
        return Markup("")
    if mark is not None:
        xs.append(mark[0])
        ys.append(mark[1])
    frame = _Frame(xs, ys, y_from_zero)
    body = frame.axes(xlabel, ylabel)
    for i, s in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        path = []
        for j, (x, y) in enumerate(s.points):
            if j and s.step:
                path.append(f"H{frame.x(x):.1f}")
            path.append(f"{'L' if j else 'M'}{frame.x(x):.1f},{frame.y(y):.1f}")
        body.append(f'<path class="line" stroke="{colour}" d="{" ".join(path)}"/>')
        if len(s.points) <= 60:
            body += [
                f'<circle class="dot" fill="{colour}" cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="2.2"/>'
                for x, y in s.points
            ]
        if len(series) > 1:
            body.append(
                f'<text class="legend" fill="{colour}" x="{WIDTH - _RIGHT - 4}" y="{_TOP + 12 + 13 * i}" '
                f'text-anchor="end">{escape(s.name)}</text>'
            )
    if mark is not None:
        body.append(
            f'<circle class="mark" cx="{frame.x(mark[0]):.1f}" cy="{frame.y(mark[1]):.1f}" r="5">'
            f"<title>{label(mark[0])}, {label(mark[1])}</title></circle>"
        )
    points = {s.name: [list(p) for p in s.points] for s in series}
    return _svg("line-chart", body, points, title)
