"""``karyamorph search``: run a template search on the GPU, list and show stored searches, replay
strategies against recorded data (a Kernel Tuner cache file or a stored search)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from karyamorph.cli.support import (
    _db_path,
    _echo,
    _open_existing,
    db_option,
    format_option,
    friendly_errors,
    invoked_as,
)


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
@click.option(
    "--equivalence",
    is_flag=True,
    help="Prove every variant equivalent to the baseline (seconds each; the winner always is).",
)
@click.option("--cost-prior", "cost_prior_s", type=click.FloatRange(min=0), default=60.0, show_default=True,
              help="Seconds of CPU the cost model may spend predicting configurations before a model-"
                   "guided search starts (0: none).")  # fmt: skip
@click.option(
    "--out",
    "out_dir",
    default="searches",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where the winner's spec and PTX are also written (they are stored with the search).",
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
    the torch baseline and stored as the spec and PTX that `karyamorph search export` writes.
    Ctrl-C stops it with every finished evaluation stored, and prints the command that goes on."""
    from karyamorph.harness.gpu.device import current_device
    from karyamorph.isa.arch import Arch
    from karyamorph.search.session import (
        SearchInterrupted,
        SearchRequest,
        SearchSetupError,
        run_template_search,
    )
    from karyamorph.search.strategies import UnknownStrategy, make_strategy
    from karyamorph.search.templates import UnknownTemplate, template
    from karyamorph.search.variants import SearchAborted

    progress = None
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
    except KeyboardInterrupt as exc:
        if progress is not None:
            progress.close()
        if not isinstance(exc, SearchInterrupted):
            click.echo("interrupted before the search started: nothing new was stored", err=True)
            sys.exit(130)
        command = _resume_command(click.get_current_context(), exc.search_id[:8])
        click.echo(f"interrupted: search {exc.search_id[:8]} has {exc.evaluations} evaluation(s) stored; "
                   f"go on with it:\n  {command}", err=True)  # fmt: skip
        sys.exit(130)
    if progress is not None:
        progress.close()
    if fmt == "json":
        _echo(summary)
        return
    winner = summary.get("winner")
    if not winner:
        _echo(_summary_view(summary, []))
        return
    search_id, spec_file = summary["search_id"], winner["spec_file"]
    reproduce = _reproduce(search_id, spec_file, winner.get("run_id"), db)
    written = Path(out_dir) / search_id[:8] / spec_file
    _echo(_summary_view(summary, [*reproduce, f"written here too: {written}"]))


def _resume_command(ctx: click.Context, search_id: str) -> str:
    """The command line of this ``search run`` with ``--resume search_id``: every argument the
    user gave (the ones that define the search always), as typed at a shell."""
    names: list[str] = []  # "search run", whatever the program was called as
    at = ctx
    while at.parent is not None:
        names.insert(0, at.info_name or "")
        at = at.parent
    words = [invoked_as(), *names]
    always = {"arch", "strategy", "seed"}
    for param in ctx.command.params:
        name, value = param.name, ctx.params.get(param.name or "")
        if isinstance(param, click.Argument):
            words.append(str(value))
        elif isinstance(param, click.Option) and name != "resume":
            flag = param.opts[0]
            if param.is_flag:
                words += [flag] if value else []
            elif value is not None and (value != param.default or name in always):
                words += [flag, str(value)]
    return shlex.join([*words, "--resume", search_id])


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


def _summary_view(summary: dict[str, Any], reproduce: list[str]) -> str:
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
    if "correctness" in winner:
        lines.append(f"  re-checked on fresh inputs: correctness {winner['correctness']}, "
                     f"median {_us(winner.get('median_ns'))}")  # fmt: skip
    else:
        lines.append("  not re-checked on fresh inputs")
    torch = summary.get("torch") or {}
    if winner.get("equivalence"):
        lines.append(f"  against the baseline: {winner['equivalence']}")
    if torch:
        lines.append(f"  torch `{torch.get('expression')}`: median {_us(torch.get('median_ns'))}")
    if "ratio_vs_torch" in summary:
        rate = ("tb_per_s", "TB/s") if "tb_per_s" in winner else ("tflop_per_s", "TFLOP/s")
        ours, theirs = winner.get(rate[0]), torch.get(rate[0])
        extra = f" ({ours:.3g} vs {theirs:.3g} {rate[1]})" if ours and theirs else ""
        lines.append(f"  speed-up over torch: {summary['ratio_vs_torch']:.3f}x{extra}")
    lines += [f"  {line}" for line in reproduce]
    return "\n".join(lines)


def _reproduce(
    search_id: str, spec_file: str, run_id: str | None, db: str | None, note: str | None = None
) -> list[str]:
    """How to get the winner's files onto this machine and run them: out of the database, so no
    path of the machine that recorded the search is named."""
    option = f" --db {shlex.quote(db)}" if db else ""
    me = invoked_as()
    line = f"reproduce: {me} search export {search_id[:8]} DIR{option}, then {me} run DIR/{spec_file}"
    if run_id:
        line += f"   (re-checked as run {run_id})"
    return [line] if note is None else [line, f"  ({note})"]


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
    by reason, its summary and how to reproduce its winner; with --plot, the best-so-far curve."""
    from karyamorph.search import stored
    from karyamorph.search.plot import PlotFormatError, best_so_far
    from karyamorph.search.winner import STORED, WinnerFiles, WinnerUnavailable
    from karyamorph.table import table

    files: WinnerFiles | str | None = None
    with _open_existing(db) as store:
        search = stored.load(store, stored.find(store, search_id))
        winner = (search.summary or {}).get("winner")
        if winner:
            try:
                files = stored.winner_files(store, search)
            except WinnerUnavailable as exc:
                files = str(exc)
    if plot is not None:
        try:
            best_so_far(search, Path(plot))
        except PlotFormatError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
    timed = sorted((e for e in search.evaluations if e.outcome.ok), key=lambda e: e.outcome.cost)[:top]
    rejected = [e for e in search.evaluations if not e.outcome.ok]
    summary = _without_paths(search.summary)
    if fmt == "json":
        curve = [None if c == float("inf") else c for c in search.curve_ms()]
        out: dict[str, Any] = {
            "search_id": search.search_id, "template": search.name, "params": search.params,
            "summary": summary, "curve_ms": curve,
            "leaderboard": [{"seq": e.seq, "config": e.config, "time_ms": e.outcome.time_ms,
                             "gates": e.gates} for e in timed],
            "rejected": [{"seq": e.seq, "config": e.config, "failure": str(e.outcome.failure),
                          "detail": e.outcome.detail} for e in rejected],
        }  # fmt: skip
        if isinstance(files, WinnerFiles):
            out["winner_files"] = {"spec": files.spec_file, "ptx": files.ptx_file, "origin": files.origin}
        elif files is not None:
            out["winner_files"] = {"unavailable": files}
        _echo(out)
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
    if summary and winner:
        if isinstance(files, WinnerFiles):
            note = None if files.origin == STORED else files.origin
            reproduce = _reproduce(search.search_id, files.spec_file, winner.get("run_id"), db, note)
        else:
            reproduce = [f"reproduce: not possible: {files}"]
        click.echo(_summary_view({"search_id": search.search_id, **summary}, reproduce))


def _without_paths(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored summary without the winner's spec path, which searches stored before their
    winners were held: a path of the machine that ran them."""
    if not summary or not isinstance(summary.get("winner"), dict):
        return summary
    return {**summary, "winner": {k: v for k, v in summary["winner"].items() if k != "spec"}}


@search_group.command("export")
@click.argument("search_id", metavar="ID")
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False))
@db_option
@friendly_errors
def search_export(search_id: str, folder: str, db: str | None) -> None:
    """Write the winner of the stored search ID into DIR as its spec and PTX (NAME.toml and
    NAME.ptx, replacing files of those names), so that `karyamorph run DIR/NAME.toml` reproduces
    it. A search stored before winners were gets its winner rendered again from its template,
    which must give the PTX that was timed."""
    from karyamorph.search import stored
    from karyamorph.search.winner import STORED, WinnerUnavailable

    with _open_existing(db) as store:
        search = stored.load(store, stored.find(store, search_id))
        try:
            files = stored.winner_files(store, search)
        except WinnerUnavailable as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
    try:
        spec_path, ptx_path = files.write(Path(folder))
    except (WinnerUnavailable, OSError) as exc:
        click.echo(f"error: writing the winner of search {search.search_id[:8]} to {folder}: {exc}", err=True)
        sys.exit(2)
    if files.origin != STORED:
        click.echo(f"note: {files.origin}", err=True)
    click.echo(
        f"wrote {spec_path} and {ptx_path.name} beside it; run it with: {invoked_as()} run {spec_path}"
    )


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
