"""The run commands: ``run`` a spec through the stages, the ``demo``, and the stored runs
(``runs``, ``show``, ``diff``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from karyamorph.cli.options import (
    EXAMPLES,
    db_option,
    db_path,
    format_option,
    gpu_option,
    open_existing,
    size_option,
    spec_argument,
    split_names,
    timeout_option,
)
from karyamorph.cli.output import echo, friendly_errors, invoked_as


@click.command()
@spec_argument
@click.option("--arch", help="Target (sm_120, sm_90a, ...); default: the GPU's, else the PTX .target.")
@db_option
@format_option("table", "json")
@click.option("--no-store", is_flag=True, help="Do not write the run to the database.")
@timeout_option
@size_option
@click.option("--stages", "only", metavar="A,B,..", help="Run only these stages (e.g. compile,sass,static).")
@click.option("--skip", metavar="A,B,..", help="Do not run these stages (e.g. sanitize,metrics).")
@click.option("--label", help="A name stored with the run (tells kernels with one entry name apart).")
@click.option("--strict", is_flag=True, help="Exit 1 on an unknown model verdict too (else only on fail).")
@click.option("--budget", "budget_s", default=None, type=click.FloatRange(min=0),
              help="Seconds the model stage's checks may take (default 30); what is undecided then "
                   "is unknown.")  # fmt: skip
@friendly_errors
@gpu_option
def run(spec_path: str, arch: str | None, db: str | None, fmt: str, no_store: bool, timeout: float | None,
        sizes: tuple[str, ...], only: str | None, skip: str | None, label: str | None,
        strict: bool, budget_s: float | None) -> None:  # fmt: skip
    """Run a kernel spec through the stages and store the results."""
    from contextlib import nullcontext

    from karyamorph.harness.session import run_spec_file, size_overrides
    from karyamorph.render.progress import StageProgress
    from karyamorph.table import console

    out = console()
    live = out.is_terminal and fmt != "json"
    try:
        with StageProgress(out) if live else nullcontext() as progress:
            outcome = run_spec_file(
                Path(spec_path), arch=arch, db=None if no_store else db_path(db), timeout_s=timeout,
                sizes=size_overrides(sizes), only=split_names(only), skip=split_names(skip) or (),
                label=label, on_stage=progress, check_budget_s=budget_s,
            )  # fmt: skip
    except KeyboardInterrupt:
        click.echo("interrupted: the run had not finished, nothing was stored", err=True)
        sys.exit(130)
    echo(outcome.as_json() if fmt == "json" else outcome.table())
    if outcome.bad_input:
        click.echo(f"error: {outcome.bad_input}", err=True)
        sys.exit(2)
    if outcome.result.status.fails(strict=strict):
        sys.exit(1)


@click.command()
@click.option("--arch", default=None, help="Target for every example (default: the GPU's, else sm_120).")
@db_option
@click.option("--kernels", "kernels_dir", default=None, type=click.Path(file_okay=False),
              help="Folder of *.toml specs (default: the shipped datasets/kernels).")  # fmt: skip
@timeout_option
@friendly_errors
@gpu_option
def demo(arch: str | None, db: str | None, kernels_dir: str | None, timeout: float | None) -> None:
    """Run every example kernel through every stage this machine supports; print a summary."""
    from karyamorph.harness.session import run_demo

    folder = Path(kernels_dir) if kernels_dir else EXAMPLES
    echo(run_demo(folder, arch=arch, db=db_path(db), timeout_s=timeout, command=invoked_as()))


@click.command()
@db_option
@click.option("--limit", default=20, show_default=True, help="How many runs, newest first.")
@format_option("table", "csv", "json")
@friendly_errors
def runs(db: str | None, limit: int, fmt: str) -> None:
    """The latest runs: id, time, kernel, label, spec file, arch, status, device."""
    from karyamorph.render.views import runs_view
    from karyamorph.table import render

    with open_existing(db) as store:
        result = store.runs(limit)
    columns, rows = result.columns, result.rows
    echo(runs_view(columns, rows) if fmt == "table" else render(columns, rows, fmt))


@click.command()
@click.argument("run_id")
@db_option
@click.option("--stage", "stages", multiple=True, help="Show only this stage (repeatable).")
@click.option("--plot", type=click.Path(dir_okay=False), help="Draw the timing samples' histogram to a PNG.")
@format_option("table", "json")
@friendly_errors
def show(run_id: str, db: str | None, stages: tuple[str, ...], plot: str | None, fmt: str) -> None:
    """Every stage of a stored run and its SASS beside its PTX (RUN_ID: the id or its start)."""
    from karyamorph.render.report import plot_samples, run_json
    from karyamorph.render.report import show as show_run
    from karyamorph.store.reading import find_run, load_run

    with open_existing(db) as store:
        stored = load_run(store, find_run(store, run_id))
    drawn = plot_samples(stored, Path(plot)) if plot else None
    echo(run_json(stored) if fmt == "json" else show_run(stored, stages))
    if drawn:
        click.echo(f"wrote {drawn}", err=True)


@click.command()
@click.argument("run_a")
@click.argument("run_b")
@db_option
@click.option("--changed", is_flag=True, help="List only the figures that differ.")
@format_option("table", "json")
@friendly_errors
def diff(run_a: str, run_b: str, db: str | None, changed: bool, fmt: str) -> None:
    """Two stored runs side by side: stage statuses, figures with their ratio b/a, SASS diff."""
    from karyamorph.render.run_diff import diff_runs, diff_view
    from karyamorph.store.reading import find_run, load_run

    with open_existing(db) as store:
        d = diff_runs(load_run(store, find_run(store, run_a)), load_run(store, find_run(store, run_b)))
    echo(d.as_json() if fmt == "json" else diff_view(d, changed_only=changed))


COMMANDS: tuple[click.Command, ...] = (run, demo, runs, show, diff)
