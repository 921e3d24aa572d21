"""Everything the page shows about one run, read in one visit to the store: the run's tiles, its
source with SASS, where it ran, the kernel's history, and the comparison with a pinned run."""

from __future__ import annotations

import re
from dataclasses import dataclass

from markupsafe import Markup

from karyamorph.dashboard import plots
from karyamorph.dashboard.queries import HistoryRow, Setting, history, setting
from karyamorph.dashboard.source import SourceView, source_view
from karyamorph.dashboard.tiles import RunTiles, run_tiles
from karyamorph.render.run_diff import MetricPair, RunDiff, diff_runs
from karyamorph.store.database import Store
from karyamorph.store.reading import RunNotFoundError, StoredRun, load_run

_DIRECTIVE = re.compile(r"^\s*\.(version|target|address_size)\s+([^\s/;]+(?:\s*,\s*[^\s/;]+)*)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Comparison:
    """The run against the pinned baseline: stage statuses, the figures that changed, SASS diff."""

    diff: RunDiff
    changed: tuple[MetricPair, ...]
    unchanged: int


@dataclass(frozen=True, slots=True)
class RunView:
    """One run with every tile's data; ``baseline`` is the pinned run (None when none is pinned,
    or when this run is the pinned one)."""

    run: StoredRun
    tiles: RunTiles
    source: SourceView
    setting: Setting
    ptx_header: tuple[tuple[str, str], ...]
    compatibility: tuple[tuple[str, str], ...]
    history: tuple[HistoryRow, ...]
    history_chart: Markup
    comparison: Comparison | None
    pinned: str | None


def ptx_header(ptx: str) -> tuple[tuple[str, str], ...]:
    """The module's ``.version``, ``.target`` and ``.address_size`` as written (first of each)."""
    seen: dict[str, str] = {}
    for key, value in _DIRECTIVE.findall(ptx):
        seen.setdefault(key, value)
    return tuple(seen.items())


def history_chart(rows: tuple[HistoryRow, ...]) -> Markup:
    """Median kernel time over the kernel's runs when any was timed, else registers per thread."""
    timed = [(i + 1, r.median_ns / 1e3) for i, r in enumerate(rows) if r.median_ns is not None]
    if timed:
        return plots.line_chart([plots.Series("median", tuple(timed))], xlabel="run (oldest first)",
                                ylabel="median (us)", title="median kernel time over runs")  # fmt: skip
    regs = [(i + 1, r.registers) for i, r in enumerate(rows) if r.registers is not None]
    if len(regs) > 1:
        return plots.line_chart([plots.Series("registers", tuple(regs))], xlabel="run (oldest first)",
                                ylabel="registers per thread", title="registers over runs")  # fmt: skip
    return Markup("")


def compare(baseline: StoredRun, run: StoredRun) -> Comparison:
    """``run`` against ``baseline``, the figures that differ first."""
    diff = diff_runs(baseline, run)
    changed = tuple(m for m in diff.metrics if m.changed and m.name != "seconds")
    return Comparison(diff, changed, len(diff.metrics) - len(changed))


def load_view(store: Store, run_id: str, pinned: str | None = None) -> RunView:
    """Read ``run_id`` and what its tiles need from ``store``.

    Raises
    ------
    RunNotFoundError
        No run has that id.
    """
    run = load_run(store, run_id)
    rows = history(store, run.entry)
    baseline = None
    if pinned and pinned != run.run_id:
        try:
            baseline = load_run(store, pinned)
        except RunNotFoundError:
            pinned = None
    static = run.stage("static")
    notes = static.data.get("compatibility", []) if static is not None else []
    return RunView(
        run=run,
        tiles=run_tiles(run),
        source=source_view(run),
        setting=setting(store, run.run_id),
        ptx_header=ptx_header(run.ptx),
        compatibility=tuple((str(n.get("severity")), str(n.get("message"))) for n in notes),
        history=rows,
        history_chart=history_chart(rows),
        comparison=compare(baseline, run) if baseline is not None else None,
        pinned=pinned,
    )
