"""The best-so-far curve of a search as a PNG or SVG (matplotlib, no display needed)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from karyamorph.search.stored import StoredSearch


class PlotFormatError(ValueError):
    """A plot path whose suffix is neither .png nor .svg."""


def time_text(ms: float) -> str:
    """A time in milliseconds as a tick reads it: ``0.03`` -> ``"30 µs"``, ``1.0`` -> ``"1 ms"``."""
    ms = float(f"{ms:.3g}")  # rounded first, so that 999.9 ms is "1 s", not "1e+03 ms"
    for scale, unit in ((1e3, "s"), (1.0, "ms"), (1e-3, "µs")):
        if abs(ms) >= scale:
            return f"{ms / scale:.3g} {unit}"
    return f"{ms * 1e6:.3g} ns"


def _plain_log_ticks(axis: Any) -> None:
    """Label the log time ``axis`` as plain times ("300 µs") instead of matplotlib's "3x10^-1";
    which ticks carry a label is still matplotlib's choice (every decade, and some of the ticks
    between them on a short axis)."""
    from matplotlib.ticker import Formatter, LogFormatter

    class PlainTimes(Formatter):
        def __init__(self, picks: LogFormatter) -> None:
            self.picks = picks

        def set_axis(self, axis: Any) -> None:
            super().set_axis(axis)
            self.picks.set_axis(axis)

        def set_locs(self, locs: Any) -> None:
            self.picks.set_locs(locs)

        def __call__(self, x: float, pos: int | None = None) -> str:
            return time_text(x) if self.picks(x, pos) else ""

    axis.set_major_formatter(PlainTimes(LogFormatter()))
    axis.set_minor_formatter(PlainTimes(LogFormatter(labelOnlyBase=False)))


def best_so_far(search: StoredSearch, path: Path) -> Path:
    """Draw every evaluation's time (failures on the top edge) and the best so far; write ``path``.

    Raises
    ------
    PlotFormatError
        ``path`` does not end in ``.png`` or ``.svg``.
    """
    if path.suffix.lower() not in (".png", ".svg"):
        raise PlotFormatError(f"{path}: the plot is written as .png or .svg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = [e.outcome.time_ms for e in search.evaluations]
    curve = search.curve_ms()
    xs = range(1, len(times) + 1)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    try:
        ok = [(x, t) for x, t in zip(xs, times, strict=True) if t is not None]
        if ok:
            ax.scatter([x for x, _ in ok], [t for _, t in ok], s=10, alpha=0.5, label="evaluation")
            top = max(t for _, t in ok)
            failed = [x for x, t in zip(xs, times, strict=True) if t is None]
            if failed:
                ax.scatter(failed, [top] * len(failed), marker="x", s=14, color="tab:red", label="failed")
        finite = [(x, c) for x, c in zip(xs, curve, strict=True) if not math.isinf(c)]
        if finite:
            ax.step(
                [x for x, _ in finite],
                [c for _, c in finite],
                where="post",
                color="black",
                label="best so far",
            )
        ax.set_xlabel("evaluation")
        ax.set_ylabel("time")  # each tick carries its unit
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
        params = search.params
        ax.set_title(f"{search.name} on {params.get('device', params.get('arch'))}: "
                     f"{params.get('strategy')}, budget {params.get('budget')}")  # fmt: skip
        ax.legend(loc="upper right")
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path
