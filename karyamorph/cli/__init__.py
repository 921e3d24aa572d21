"""The ``karyamorph`` command: a thin click layer that parses arguments and calls the library."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from karyamorph.cli.campaign import campaign_group, datasets_group
from karyamorph.cli.dashboard import COMMANDS as DASHBOARD_COMMANDS
from karyamorph.cli.microbench import microbench_command
from karyamorph.cli.search import search_group
from karyamorph.cli.support import (
    EXAMPLES,
    _db_path,
    _echo,
    _fail,
    _names,
    _open_existing,
    db_option,
    format_option,
    friendly_errors,
    invoked_as,
    size_option,
    spec_argument,
    timeout_option,
)
from karyamorph.model.interp.budget import MAX_BYTES, MAX_REGISTERS, MAX_THREAD_INSTRUCTIONS

if TYPE_CHECKING:
    from karyamorph.isa.ast import Module
    from karyamorph.kernel.bound import BoundKernel


@click.group()
@click.version_option(package_name="karyamorph")
def main() -> None:
    """KaryaMorph: test what PTX really does, and how fast; model it; search it."""


for _command in DASHBOARD_COMMANDS:
    main.add_command(_command)


@main.command()
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
                Path(spec_path), arch=arch, db=None if no_store else _db_path(db), timeout_s=timeout,
                sizes=size_overrides(sizes), only=_names(only), skip=_names(skip) or (), label=label,
                on_stage=progress, check_budget_s=budget_s,
            )  # fmt: skip
    except KeyboardInterrupt:
        click.echo("interrupted: the run had not finished, nothing was stored", err=True)
        sys.exit(130)
    _echo(outcome.as_json() if fmt == "json" else outcome.table())
    if outcome.bad_input:
        click.echo(f"error: {outcome.bad_input}", err=True)
        sys.exit(2)
    if outcome.result.status.fails(strict=strict):
        sys.exit(1)


@main.command()
@click.option("--arch", default=None, help="Target for every example (default: the GPU's, else sm_120).")
@db_option
@click.option("--kernels", "kernels_dir", default=None, type=click.Path(file_okay=False),
              help="Folder of *.toml specs (default: the shipped datasets/kernels).")  # fmt: skip
@timeout_option
@friendly_errors
def demo(arch: str | None, db: str | None, kernels_dir: str | None, timeout: float | None) -> None:
    """Run every example kernel through every stage this machine supports; print a summary."""
    from karyamorph.harness.session import run_demo

    folder = Path(kernels_dir) if kernels_dir else EXAMPLES
    _echo(run_demo(folder, arch=arch, db=_db_path(db), timeout_s=timeout, command=invoked_as()))


@main.command()
@db_option
@click.option("--limit", default=20, show_default=True, help="How many runs, newest first.")
@format_option("table", "csv", "json")
@friendly_errors
def runs(db: str | None, limit: int, fmt: str) -> None:
    """The latest runs: id, time, kernel, label, spec file, arch, status, device."""
    from karyamorph.render.views import runs_view
    from karyamorph.table import render

    with _open_existing(db) as store:
        result = store.runs(limit)
    columns, rows = result.columns, result.rows
    _echo(runs_view(columns, rows) if fmt == "table" else render(columns, rows, fmt))


@main.command()
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

    with _open_existing(db) as store:
        stored = load_run(store, find_run(store, run_id))
    drawn = plot_samples(stored, Path(plot)) if plot else None
    _echo(run_json(stored) if fmt == "json" else show_run(stored, stages))
    if drawn:
        click.echo(f"wrote {drawn}", err=True)


@main.command()
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

    with _open_existing(db) as store:
        d = diff_runs(load_run(store, find_run(store, run_a)), load_run(store, find_run(store, run_b)))
    _echo(d.as_json() if fmt == "json" else diff_view(d, changed_only=changed))


@main.command()
@db_option
@click.option("--columns", is_flag=True, help="List each table's columns and their types too.")
@format_option("table", "json")
@friendly_errors
def tables(db: str | None, columns: bool, fmt: str) -> None:
    """The store's tables, a line on each, and their row counts when the database exists."""
    from dataclasses import asdict

    from karyamorph.render.views import tables_view
    from karyamorph.store.database import Store
    from karyamorph.store.reading import describe_tables

    path = _db_path(db)
    exists = path.exists()
    with Store.open_to_read(path) if exists else Store.open(":memory:") as store:
        infos = describe_tables(store, count_rows=exists)
    missing = None if exists else path
    _echo([asdict(t) for t in infos] if fmt == "json" else tables_view(infos, missing, columns))


@main.command("import")
@db_option
@friendly_errors
def import_command(db: str | None) -> None:
    """Merge runs parked beside the database (saved while another process held it)."""
    from karyamorph.store.pending import merge_pending, open_waiting, pending_dir

    path = _db_path(db)
    with open_waiting(path) as store:
        merged = merge_pending(store)
    click.echo(f"{len(merged)} parked run(s) merged into {path} from {pending_dir(path)}")


@main.command()
@click.argument("sql")
@db_option
@format_option("table", "csv", "json")
@friendly_errors
def query(sql: str, db: str | None, fmt: str) -> None:
    """Run SQL against the measurement database."""
    from karyamorph.table import render

    with _open_existing(db) as store:
        result = store.query(sql)
    _echo(render(result.columns, result.rows, fmt))


@main.command()
@format_option("table", "json")
@friendly_errors
def device(fmt: str) -> None:
    """The CUDA devices (or "no CUDA device") and the toolchain versions."""
    from karyamorph.harness.gpu.device import driver_problem, list_devices
    from karyamorph.harness.tools.toolchain import discover
    from karyamorph.render.views import device_view, toolchain_versions

    devices, tc = list_devices(), discover()
    problem = None if devices else driver_problem()
    if fmt == "json":
        _echo({"devices": [d.as_dict() for d in devices], "problem": problem,
               "toolchain": dict(toolchain_versions(tc))})  # fmt: skip
    else:
        _echo(device_view(devices, problem, tc))


def _require_ptxas(kernel: BoundKernel, module: Module, arch: str | None) -> None:
    """The model runs only on PTX that ptxas accepts for the target (the PTX's own ``.target``
    unless ``--arch`` says otherwise); a rejection raises PtxasError, located at the PTX line."""
    from karyamorph.harness.model_gate import require_ptxas
    from karyamorph.harness.pipeline import check_arch, default_arch

    target = check_arch(arch or default_arch(module, None))
    spec = kernel.spec
    require_ptxas(spec.ptx, target.name, filename=str(spec.ptx_path or spec.ptx_name))


def _too_large(exc: Exception) -> NoReturn:
    click.echo(f"error: {exc}\n(the budgets are options: --max-registers, --max-bytes, "
               "--max-thread-instructions; smaller --size values shrink the launch)", err=True)  # fmt: skip
    sys.exit(2)


model_arch_option = click.option(
    "--arch", default=None, help="Target ptxas must accept the PTX for (default: its .target, else sm_120)."
)


@main.command()
@spec_argument
@size_option
@click.option("--seed", default=0, show_default=True, help="Input seed (the same inputs as a GPU trial).")
@click.option("--randomize", is_flag=True, help="Randomize warp order between barriers (exposes races).")
@model_arch_option
@click.option("--max-registers", default=MAX_REGISTERS, show_default=True, type=click.IntRange(min=1),
              help="Most registers the entry may declare.")  # fmt: skip
@click.option("--max-bytes", default=MAX_BYTES, show_default=True, type=click.IntRange(min=1),
              help="Most bytes the model may allocate for the launch (registers, buffers...).")  # fmt: skip
@click.option("--max-thread-instructions", "max_work", default=MAX_THREAD_INSTRUCTIONS,
              show_default=True, type=click.FloatRange(min=1),
              help="Most thread-instructions the launch may execute.")  # fmt: skip
@format_option("table", "json")
@friendly_errors
def interp(spec_path: str, sizes: tuple[str, ...], seed: int, randomize: bool, arch: str | None,
           max_registers: int, max_bytes: int, max_work: float, fmt: str) -> None:  # fmt: skip
    """Run a kernel spec on the CPU model and compare it with the spec's reference.

    Only PTX that ptxas accepts runs; a kernel or launch over a budget is refused up front
    ("too large for the model"), exit status 2 for both."""
    from karyamorph.harness.model_run import interpret_spec_file
    from karyamorph.harness.session import load_bound
    from karyamorph.model.interp.budget import ModelBudget, TooLargeError
    from karyamorph.model.interp.errors import ExecutionError
    from karyamorph.model.semantics.decode import UnmodeledError
    from karyamorph.render.views import interp_view

    kernel, module = load_bound(Path(spec_path), sizes)
    _require_ptxas(kernel, module, arch)
    budget = ModelBudget(max_registers=max_registers, max_bytes=max_bytes, max_thread_instructions=max_work)
    try:
        report = interpret_spec_file(kernel, seed=seed, randomize_order=randomize, budget=budget)
    except TooLargeError as exc:
        _too_large(exc)
    except (UnmodeledError, ExecutionError) as exc:
        _fail(exc, fmt)
    _echo(report.as_json() if fmt == "json" else interp_view(kernel.spec.name, report))
    if not report.match:
        sys.exit(1)


@main.command()
@spec_argument
@click.option("--property", "props", default="bounds,race,barrier", show_default=True,
              help="Comma-separated properties to check.")  # fmt: skip
@click.option("--scheduling", type=click.Choice(["its", "lockstep"]), default="its", show_default=True,
              help="its: lanes of a warp are unordered (sm_70+); lockstep: a warp runs in step.")  # fmt: skip
@click.option("--unroll", default=8, show_default=True, help="Iterations explored of loops not proved whole.")
@click.option("--budget", "budget_s", default=30.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds the checks may take; what is undecided then is unknown.")  # fmt: skip
@click.option("--strict", is_flag=True,
              help="Count stores of one value by the lanes of one warp to one address as races.")  # fmt: skip
@size_option
@model_arch_option
@format_option("table", "json")
@friendly_errors
def check(
    spec_path: str, props: str, scheduling: str, unroll: int, budget_s: float, strict: bool,
    sizes: tuple[str, ...], arch: str | None, fmt: str,
) -> None:  # fmt: skip
    """Prove or refute bounds, race and barrier properties of a kernel for the spec's launch (z3).

    Only PTX that ptxas accepts is checked (exit status 2 with ptxas's error otherwise)."""
    from karyamorph.harness.session import load_bound
    from karyamorph.harness.stages.model import PROPERTIES, check_spec
    from karyamorph.kernel.spec import SpecError
    from karyamorph.model.semantics.decode import UnmodeledError
    from karyamorph.render.views import check_view

    kernel, module = load_bound(Path(spec_path), sizes)
    wanted = tuple(_names(props) or ())
    unknown = [p for p in wanted if p not in PROPERTIES]
    if unknown:
        raise SpecError("--property", f"unknown {', '.join(unknown)} (choose from {', '.join(PROPERTIES)})")
    _require_ptxas(kernel, module, arch)
    try:
        verdicts = check_spec(
            kernel, module, properties=wanted, scheduling=scheduling, unroll=unroll, deadline_s=budget_s,
            strict=strict,
        )  # fmt: skip
    except UnmodeledError as exc:
        _fail(exc, "table")
    _echo({"properties": [v.as_dict() for v in verdicts]} if fmt == "json" else check_view(verdicts))
    if any(v.verdict not in ("proved", "proved-up-to-k") for v in verdicts):
        sys.exit(1)


@main.group()
def model() -> None:
    """The machine model: check the instruction set itself."""


@model.command("check-isa")
@click.option("--only", multiple=True, help="Check only these opcodes (repeatable).")
@format_option("table", "json")
@click.option("--all-rows", is_flag=True, help="Show every check, not just a summary per check kind.")
def check_isa_command(only: tuple[str, ...], fmt: str, all_rows: bool) -> None:
    """Frame condition, stated laws and concrete == symbolic agreement for every instruction."""
    import dataclasses

    from karyamorph.model.check.isa_check import check_isa
    from karyamorph.model.ptx.ptx_machine import ptx_machine
    from karyamorph.render.views import isa_check_view

    results = check_isa(ptx_machine(), only=only or None)
    if fmt == "json":
        _echo([dataclasses.asdict(r) for r in results])
    else:
        _echo(isa_check_view(results, all_rows=all_rows))
    if any(r.status == "fail" for r in results):
        sys.exit(1)


@model.command("validate")
@click.option(
    "--instr",
    "pattern",
    default=None,
    metavar="PATTERN",
    help="Only instructions matching this glob (max, 'm*'); with a dot, forms ('cvt.*.f16').",
)
@click.option("--samples", default=128, show_default=True, help="Random operand rows per operand signature.")
@click.option("--cross-limit", default=2048, show_default=True, help="Most edge-case rows per signature.")
@click.option("--seed", default=0, show_default=True, help="Seed of the random rows.")
@click.option("--arch", default=None, help="Target (default: the GPU's; with --compile-only: sm_120).")
@click.option("--compile-only", is_flag=True, help="Build and assemble every kernel with ptxas; run nothing.")
@click.option(
    "--record",
    "record_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Also write the cases and GPU results here (datasets/validation/<arch>).",
)
@db_option
@click.option("--no-store", is_flag=True, help="Do not write the results to the database.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option("--all-rows", is_flag=True, help="One row per form instead of one per instruction.")
@timeout_option
@friendly_errors
def validate_command(
    pattern: str | None, samples: int, cross_limit: int, seed: int, arch: str | None, compile_only: bool,
    record_dir: str | None, db: str | None, no_store: bool, fmt: str, all_rows: bool, timeout: float | None,
) -> None:  # fmt: skip
    """Run every modeled instruction form on the GPU and compare its bits with the model's."""
    from karyamorph.validation.command import ValidateOptions, run_validate

    out = run_validate(ValidateOptions(
        pattern, samples, cross_limit, seed, arch, compile_only, Path(record_dir) if record_dir else None,
        None if no_store else _db_path(db), fmt, all_rows, timeout or 600.0,
    ))  # fmt: skip
    if out.note:
        click.echo(out.note, err=True)
    _echo(out.output)
    if out.failed:
        sys.exit(1)


@main.group()
def ptx() -> None:
    """Look at PTX files: re-print them, summarise them."""


def _existing(file: str) -> str:
    from karyamorph.isa.errors import PtxError

    if not Path(file).is_file():
        raise PtxError("file not found", file, 0, None)
    return file


@ptx.command("format")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--keep-comments/--no-comments", default=True, show_default=True,
              help="Keep the comments of FILE, each by the statement it stood with.")  # fmt: skip
@friendly_errors
def ptx_format(file: str, keep_comments: bool) -> None:
    """Print FILE re-printed from its parsed form."""
    from karyamorph.isa.comments import format_source
    from karyamorph.isa.parser import decode

    text = decode(Path(_existing(file)).read_bytes(), file)
    click.echo(format_source(text, file, keep_comments=keep_comments), nl=False)


@ptx.command("info")
@click.argument("file", type=click.Path(dir_okay=False))
@format_option("table", "json")
@friendly_errors
def ptx_info(file: str, fmt: str) -> None:
    """Version, target, entries and their parameters, registers, instruction histogram."""
    from karyamorph.isa.info import module_info
    from karyamorph.isa.parser import parse_file
    from karyamorph.render.views import ptx_info_view

    info = module_info(parse_file(_existing(file)))
    _echo(info if fmt == "json" else ptx_info_view(info))


main.add_command(search_group)
main.add_command(microbench_command)


# The campaign and datasets groups live with the campaign package (which only the CLI imports).
main.add_command(campaign_group)
main.add_command(datasets_group)

if __name__ == "__main__":
    main()
