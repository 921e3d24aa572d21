"""``karyamorph search``: run a template search on the GPU, and replay strategies against recorded
data (a Kernel Tuner cache file or a stored search); the stored searches' commands are in
:mod:`karyamorph.cli.stored_searches`."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from karyamorph.cli.options import db_option, db_path, format_option, gpu_option, open_existing
from karyamorph.cli.output import echo, friendly_errors, invoked_as
from karyamorph.cli.stored_searches import COMMANDS as STORED_COMMANDS
from karyamorph.cli.stored_searches import reproduce_lines, summary_view


@click.group("search")
def search_group() -> None:
    """Search kernel variants; replay search strategies against recorded data."""


@click.command("run")
@click.argument("template_name", metavar="TEMPLATE")
@click.option("--arch", default=None, help="The GPU's arch (the variants are timed on it), e.g. sm_90 "
              "[default: the GPU's].")  # fmt: skip
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
@click.option("--rewrites", is_flag=True, help="Also search the model's proved rewrites of the spec's "
              "PTX (cache operators, directives, pragmas, block size: docs/rewrites.md).")  # fmt: skip
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
@click.option("--kt-cache", "kt_cache", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the evaluations as a Kernel Tuner cache file (.json or .json.gz), which "
                   "Kernel Tuner replays and `search replay` reads.")  # fmt: skip
@db_option
@format_option("table", "json")
@friendly_errors
@gpu_option
def search_run(
    template_name: str, arch: str | None, strategy: str, budget: int, seed: int, label: str | None,
    resume: str | None, no_model: bool, equivalence: bool, rewrites: bool, cost_prior_s: float, out_dir: str,
    kt_cache: str | None, db: str | None, fmt: str,
) -> None:  # fmt: skip
    """Search TEMPLATE's variants on this GPU: each built, assembled, checked by the model, run
    for correctness and timed; every evaluation stored; the winner raced against the baseline
    configuration, re-checked, re-timed beside the torch baseline and stored as the spec and PTX
    that `karyamorph search export` writes. TEMPLATE is a shipped template's name, a spec with a
    [search] table (.toml) or a Python file that defines TEMPLATE (.py). With --rewrites, TEMPLATE
    is a spec (.toml, a [search] table or none) and the model's proved rewrites of its PTX are
    one more parameter. Ctrl-C stops it with every finished evaluation stored, and prints the
    command that goes on."""
    from karyamorph.search.run import device_sizes, search_setup
    from karyamorph.search.session import (
        SearchInterrupted,
        SearchRequest,
        SearchSetupError,
        run_template_search,
    )
    from karyamorph.search.strategies import UnknownStrategy
    from karyamorph.search.templates import TemplateFileError, UnknownTemplate
    from karyamorph.search.variants import SearchAborted

    progress = None
    try:
        device, target, found = search_setup(template_name, arch=arch, strategy=strategy, rewrites=rewrites)
        if rewrites:  # the rejected rewrites are printed at the end
            click.echo(f"rewrites, each proved by the model before any GPU time: "
                       f"{', '.join(found.rewrites) or 'none'}", err=True)  # fmt: skip
        request = SearchRequest(found.template, target, strategy, budget, seed, label,
                                sizes=device_sizes(found.template, device), check_model=not no_model,
                                equivalence=equivalence, cost_prior_s=cost_prior_s)  # fmt: skip
        progress = _ProgressLine(budget) if fmt == "table" else None
        summary = run_template_search(request, device=device, db=db_path(db), out_dir=Path(out_dir),
                                      resume=resume, progress=progress, gate=found.gate,
                                      kt_cache=Path(kt_cache) if kt_cache else None)  # fmt: skip
    except (UnknownTemplate, TemplateFileError, UnknownStrategy, SearchSetupError, SearchAborted) as exc:
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
    for rejected in found.rejected():
        click.echo(f"rewrite {rejected}", err=True)
    if fmt == "json":
        echo(summary)
        return
    winner = summary.get("winner")
    if not winner:
        echo(summary_view(summary, []))
        return
    search_id, spec_file = summary["search_id"], winner["spec_file"]
    reproduce = reproduce_lines(search_id, spec_file, winner.get("run_id"), db)
    written = Path(out_dir) / search_id[:8] / spec_file
    echo(summary_view(summary, [*reproduce, f"written here too: {written}"]))


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


@click.command("replay")
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
        echo([s.as_dict() for s in out] if strategy == "all" else out[0].as_dict())
        return
    points = sorted({max(1, budget // 4), max(1, budget // 2), budget})
    rows = [[s.strategy, s.repeats, *(s.at(p) for p in points), s.p_within_5pct] for s in out]
    title = (f"{recording.name}: {recording.space.size} configurations, optimum {out[0].optimum:.4g} ms; "
             f"mean fraction of the optimum after N evaluations")  # fmt: skip
    echo(table(["strategy", "repeats", *(f"N={p}" for p in points), "p within 5%"], rows, title=title))


def _stored_recording(search_id: str, db: str | None) -> Any:
    """A stored search as replay data (CACHE names no file: it is a search id)."""
    from karyamorph.search import RecordingError, stored
    from karyamorph.store.errors import StoreError

    path = db_path(db)
    if not path.exists():
        raise RecordingError(f"{search_id} is neither a cache file nor a search (no database at {path})")
    try:
        with open_existing(db) as store:
            return stored.recording(stored.load(store, stored.find(store, search_id)))
    except StoreError as exc:
        raise RecordingError(f"{search_id} is not a cache file, and {exc}") from None


for _command in (search_run, *STORED_COMMANDS, search_replay):
    search_group.add_command(_command)

COMMANDS: tuple[click.Command, ...] = (search_group,)
