"""The best-so-far curve of a search as a PNG or SVG (matplotlib, no display needed)."""

from __future__ import annotations

import math
from pathlib import Path

from karyamorph.search.stored import StoredSearch


class PlotFormatError(ValueError):
    """A plot path whose suffix is neither .png nor .svg."""


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
        ax.set_ylabel("time (ms)")
        ax.set_yscale("log")
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
