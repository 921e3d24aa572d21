"""``karyamorph search``: run a template search on the GPU, list and show stored searches, replay
strategies against recorded data (a Kernel Tuner cache file or a stored search)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from karyamorph.cli.support import _db_path, _echo, _open_existing, db_option, format_option, friendly_errors


@click.group("search")
def search_group() -> None:
    """Search kernel variants; replay search strategies against recorded data."""


@search_group.command("run")
@click.argument("template_name", metavar="TEMPLATE")
@click.option("--arch", required=True, help="The GPU's arch (the variants are timed on it), e.g. sm_90.")
@click.option(
    "--strategy", default="model", show_default=True, help="exhaustive, random, genetic, annealing or model."
)
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Unique evaluations (failures count).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--label", default=None, help="Stored with the search and its winner's run.")
@click.option("--resume", default=None, metavar="ID", help="Go on with a stored search (same arguments).")
@click.option("--no-model", is_flag=True, help="Skip the model's checks (bounds, race, barrier).")
@click.option("--equivalence", is_flag=True,
              help="Prove every variant equivalent to the baseline (seconds each; the winner always is).")
@click.option("--cost-prior", "cost_prior_s", type=click.FloatRange(min=0), default=60.0, show_default=True,
              help="Seconds of CPU the cost model may spend predicting configurations before a model-"
                   "guided search starts (0: none).")  # fmt: skip
@click.option(
    "--out",
    "out_dir",
    default="searches",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where the winner's spec and PTX are written.",
)
@db_option
@format_option("table", "json")
@friendly_errors
def search_run(
    template_name: str, arch: str, strategy: str, budget: int, seed: int, label: str | None,
    resume: str | None, no_model: bool, equivalence: bool, cost_prior_s: float, out_dir: str, db: str | None,
    fmt: str,
) -> None:  # fmt: skip
    """Search TEMPLATE's variants on this GPU: each built, assembled, checked by the model, run
    for correctness and timed; every evaluation stored; the winner re-checked, re-timed beside
    the torch baseline and exported so that `karyamorph run` reproduces it."""
    from karyamorph.harness.gpu.device import current_device
    from karyamorph.isa.arch import Arch
    from karyamorph.search.session import SearchRequest, SearchSetupError, run_template_search
    from karyamorph.search.strategies import UnknownStrategy, make_strategy
    from karyamorph.search.templates import UnknownTemplate, template
    from karyamorph.search.variants import SearchAborted

    try:
        make_strategy(strategy)
        request = SearchRequest(template(template_name), Arch.parse(arch), strategy, budget, seed, label,
                                check_model=not no_model, equivalence=equivalence,
                                cost_prior_s=cost_prior_s)  # fmt: skip
        progress = _ProgressLine(budget) if fmt == "table" else None
        summary = run_template_search(request, device=current_device(), db=_db_path(db),
                                      out_dir=Path(out_dir), resume=resume, progress=progress)  # fmt: skip
    except (UnknownTemplate, UnknownStrategy, SearchSetupError, SearchAborted) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if progress is not None:
        progress.close()
    _echo(summary if fmt == "json" else _summary_view(summary))


class _ProgressLine:
    """One line on stderr, rewritten after each evaluation: count, best so far, rejections."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.tty = sys.stderr.isatty()

    def __call__(self, evaluation: Any, history: Any) -> None:
        from karyamorph.search.outcome import failure_counts

        count = len(history)
        failed = failure_counts(e.outcome for e in history.evaluations)
        rejected = ", ".join(f"{k} {v}" for k, v in sorted(failed.items())) or "none"
        best_text = "-" if history.best is None else f"{history.best.outcome.cost:.4g} ms"
        line = f"evaluations {count}/{self.budget}  best {best_text}  rejected: {rejected}"
        if self.tty:
            click.echo(f"\r\033[K{line}", err=True, nl=False)
        elif count % 10 == 0 or count == self.budget:
            click.echo(line, err=True)

    def close(self) -> None:
        if self.tty:
            click.echo("", err=True)


def _summary_view(summary: dict[str, Any]) -> str:
    lines = [f"search {summary['search_id']}: {summary['evaluations']} evaluations "
             f"({summary['measured']} measured), stopped: {summary['stopped']}"]  # fmt: skip
    failures = summary.get("failures") or {}
    lines.append("rejected: " + (", ".join(f"{k} {v}" for k, v in sorted(failures.items())) or "none"))
    prior = summary.get("cost_prior")
    if prior:
        lines.append(f"cost prior: {prior['predicted']} of {prior['configurations']} configurations "
                     f"predicted in {prior['seconds']:.1f} s ({prior['refused']} refused)")  # fmt: skip
    winner = summary.get("winner")
    if winner is None:
        lines.append("no variant passed every gate")
        return "\n".join(lines)
    lines.append(f"winner: {winner['config']}  ({summary['best']['time_ms']:.4g} ms in the search)")
    lines.append(f"  re-checked on fresh inputs: correctness {winner['correctness']}, "
                 f"median {_us(winner.get('median_ns'))}")  # fmt: skip
    torch = summary.get("torch") or {}
    if winner.get("equivalence"):
        lines.append(f"  against the baseline: {winner['equivalence']}")
    lines.append(f"  torch `{torch.get('expression')}`: median {_us(torch.get('median_ns'))}")
    if "ratio_vs_torch" in summary:
        rate = ("tb_per_s", "TB/s") if "tb_per_s" in winner else ("tflop_per_s", "TFLOP/s")
        ours, theirs = winner.get(rate[0]), torch.get(rate[0])
        extra = f" ({ours:.3g} vs {theirs:.3g} {rate[1]})" if ours and theirs else ""
        lines.append(f"  speed-up over torch: {summary['ratio_vs_torch']:.3f}x{extra}")
    lines.append(f"  reproduce: karyamorph run {winner['spec']}   (stored as run {winner['run_id']})")
    return "\n".join(lines)


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:.2f} us"


@search_group.command("list")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@db_option
@format_option("table", "json")
@friendly_errors
def search_list(limit: int, db: str | None, fmt: str) -> None:
    """The stored searches, newest first."""
    from karyamorph.search import stored
    from karyamorph.table import table

    with _open_existing(db) as store:
        rows = stored.listing(store, limit)
    if fmt == "json":
        _echo([{**r, "created_at": str(r["created_at"])} for r in rows])
        return
    cols = [
        "search_id",
        "template",
        "arch",
        "strategy",
        "budget",
        "evaluations",
        "failed",
        "best_ms",
        "label",
    ]
    _echo(table(["id", *cols[1:]], [[str(r["search_id"])[:8], *(r[c] for c in cols[1:])] for r in rows],
                title=f"{len(rows)} searches"))  # fmt: skip


@search_group.command("show")
@click.argument("search_id", metavar="ID")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True, help="Leaderboard rows.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the best-so-far curve here (.png or .svg).",
)
@db_option
@format_option("table", "json")
@friendly_errors
def search_show(search_id: str, top: int, plot: str | None, db: str | None, fmt: str) -> None:
    """A stored search: its leaderboard (fastest variants and their parameters), its rejections
    by reason, its summary; with --plot, the best-so-far curve."""
    from karyamorph.search import stored
    from karyamorph.search.plot import PlotFormatError, best_so_far
    from karyamorph.table import table

    with _open_existing(db) as store:
        search = stored.load(store, stored.find(store, search_id))
    if plot is not None:
        try:
            best_so_far(search, Path(plot))
        except PlotFormatError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
    timed = sorted((e for e in search.evaluations if e.outcome.ok), key=lambda e: e.outcome.cost)[:top]
    rejected = [e for e in search.evaluations if not e.outcome.ok]
    if fmt == "json":
        curve = [None if c == float("inf") else c for c in search.curve_ms()]
        _echo({"search_id": search.search_id, "template": search.name, "params": search.params,
               "summary": search.summary, "curve_ms": curve,
               "leaderboard": [{"seq": e.seq, "config": e.config, "time_ms": e.outcome.time_ms,
                                "gates": e.gates} for e in timed],
               "rejected": [{"seq": e.seq, "config": e.config, "failure": str(e.outcome.failure),
                             "detail": e.outcome.detail} for e in rejected]})  # fmt: skip
        return
    names = list(search.evaluations[0].config) if search.evaluations else []
    rows = [[rank, e.seq, *(e.config[n] for n in names), e.outcome.time_ms, e.gates.get("registers")]
            for rank, e in enumerate(timed, 1)]  # fmt: skip
    p = search.params
    title = (f"search {search.search_id[:8]}: {search.name} on {p.get('device')} ({p.get('arch')}), "
             f"{p.get('strategy')}, {len(search.evaluations)}/{p.get('budget')} evaluations")  # fmt: skip
    _echo(table(["rank", "seq", *names, "time_ms", "regs"], rows, title=title))
    for e in rejected[:top]:
        click.echo(
            f"rejected #{e.seq} {e.outcome.failure}: {e.config}: {e.outcome.detail.splitlines()[0][:160]}"
        )
    if search.summary and search.summary.get("winner"):
        click.echo(_summary_view({"search_id": search.search_id, **search.summary}))


@search_group.command("replay")
@click.argument("cache")
@click.option(
    "--strategy",
    default="model",
    show_default=True,
    help="exhaustive, random, genetic, annealing, model, or all.",
)
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Unique evaluations per search.",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=25,
    show_default=True,
    help="Searches per strategy (seeds SEED, SEED+1, ...).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@db_option
@format_option("table", "json")
@friendly_errors
def search_replay(
    cache: str, strategy: str, budget: int, repeats: int, seed: int, db: str | None, fmt: str
) -> None:
    """Score a strategy against recorded data: CACHE is a Kernel Tuner cache file (.json or
    .json.gz) or the id of a search stored in --db. The figure is the fraction of the optimum
    reached within the budget, over repeated searches."""
    # The surrogate's matrices have a few hundred rows: BLAS threads only fight over the cores.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from karyamorph.search import STRATEGIES, RecordingError, UnknownStrategy, make_strategy, read_cache
    from karyamorph.search.replay import replay
    from karyamorph.table import table

    try:
        recording = read_cache(cache) if Path(cache).exists() else _stored_recording(cache, db)
        names = list(STRATEGIES) if strategy == "all" else [strategy]
        chosen = [make_strategy(n) for n in names]
    except (RecordingError, UnknownStrategy) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    out = [replay(recording, s, budget=budget, repeats=repeats, seed=seed) for s in chosen]
    if fmt == "json":
        _echo([s.as_dict() for s in out] if strategy == "all" else out[0].as_dict())
        return
    points = sorted({max(1, budget // 4), max(1, budget // 2), budget})
    rows = [[s.strategy, s.repeats, *(s.at(p) for p in points), s.p_within_5pct] for s in out]
    title = (f"{recording.name}: {recording.space.size} configurations, optimum {out[0].optimum:.4g} ms; "
             f"mean fraction of the optimum after N evaluations")  # fmt: skip
    _echo(table(["strategy", "repeats", *(f"N={p}" for p in points), "p within 5%"], rows, title=title))


def _stored_recording(search_id: str, db: str | None) -> Any:
    """A stored search as replay data (CACHE names no file: it is a search id)."""
    from karyamorph.search import RecordingError, stored
    from karyamorph.store.database import StoreError

    path = _db_path(db)
    if not path.exists():
        raise RecordingError(f"{search_id} is neither a cache file nor a search (no database at {path})")
    try:
        with _open_existing(db) as store:
            return stored.recording(stored.load(store, stored.find(store, search_id)))
    except StoreError as exc:
        raise RecordingError(f"{search_id} is not a cache file, and {exc}") from None
