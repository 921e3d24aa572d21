"""The model commands: ``interp`` a spec on the CPU model, ``check`` its properties (z3), and the
``model`` group that checks the instruction set itself (``check-isa``, ``validate`` on the GPU)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import NoReturn

import click

from karyamorph.cli.options import (
    db_option,
    db_path,
    format_option,
    gpu_option,
    size_option,
    spec_argument,
    split_names,
    timeout_option,
)
from karyamorph.cli.output import echo, friendly_errors
from karyamorph.cli.rewrites import rewrites_command
from karyamorph.model.interp.budget import MAX_BYTES, MAX_REGISTERS, MAX_THREAD_INSTRUCTIONS


def _too_large(exc: Exception) -> NoReturn:
    click.echo(f"error: {exc}\n(the budgets are options: --max-registers, --max-bytes, "
               "--max-thread-instructions; smaller --size values shrink the launch)", err=True)  # fmt: skip
    sys.exit(2)


def _fail(exc: Exception, fmt: str) -> NoReturn:
    """The model could not run the kernel: say why (as JSON when asked) and exit with status 1."""
    if fmt == "json":
        echo({"status": "error", "match": False, "error": str(exc)})
    else:
        click.echo(f"error: {exc}", err=True)
    sys.exit(1)


model_arch_option = click.option(
    "--arch", default=None, help="Target ptxas must accept the PTX for (default: its .target, else sm_120)."
)


@click.command()
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
    from karyamorph.harness.session import load_bound, require_ptxas_accepts
    from karyamorph.model.interp.budget import ModelBudget, TooLargeError
    from karyamorph.model.interp.errors import ExecutionError
    from karyamorph.model.semantics.decode import UnmodeledError
    from karyamorph.render.views import interp_view

    kernel, module = load_bound(Path(spec_path), sizes, arch)
    require_ptxas_accepts(kernel, module, arch)
    budget = ModelBudget(max_registers=max_registers, max_bytes=max_bytes, max_thread_instructions=max_work)
    try:
        report = interpret_spec_file(kernel, seed=seed, randomize_order=randomize, budget=budget)
    except TooLargeError as exc:
        _too_large(exc)
    except (UnmodeledError, ExecutionError) as exc:
        _fail(exc, fmt)
    echo(report.as_json() if fmt == "json" else interp_view(kernel.spec.name, report))
    if not report.match:
        sys.exit(1)


@click.command()
@spec_argument
@click.option("--property", "props", default="bounds,race,barrier", show_default=True,
              help="Comma-separated properties to check.")  # fmt: skip
@click.option("--scheduling", type=click.Choice(["its", "lockstep"]), default="its", show_default=True,
              help="its: lanes of a warp are unordered (sm_70+); lockstep: a warp runs in step.")  # fmt: skip
@click.option("--unroll", default=8, show_default=True, help="Iterations explored of loops not proved whole.")
@click.option("--budget", "budget_s", default=30.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds the checks may take; what is undecided then is unknown.")  # fmt: skip
@click.option("--strict", is_flag=True,
              help="Count stores of one value to one address by two threads as races.")  # fmt: skip
@click.option("--any-launch", is_flag=True,
              help="Prove for every block and grid of [check] (default 1..1024 x 1..65535).")  # fmt: skip
@size_option
@model_arch_option
@format_option("table", "json")
@friendly_errors
def check(
    spec_path: str, props: str, scheduling: str, unroll: int, budget_s: float, strict: bool,
    any_launch: bool, sizes: tuple[str, ...], arch: str | None, fmt: str,
) -> None:  # fmt: skip
    """Prove or refute bounds, race and barrier properties of a kernel for the spec's launch (z3).

    With --any-launch (or ``[check] launch = "any"`` in the spec), for every launch of the
    spec's ``[check]`` ranges; a refutation then names the launch that breaks the kernel.

    Only PTX that ptxas accepts is checked (exit status 2 with ptxas's error otherwise)."""
    from karyamorph.harness.session import load_bound, require_ptxas_accepts
    from karyamorph.harness.stages.model import PROPERTIES, check_spec
    from karyamorph.kernel.spec import SpecError
    from karyamorph.model.semantics.decode import UnmodeledError
    from karyamorph.render.views import check_view

    kernel, module = load_bound(Path(spec_path), sizes, arch)
    wanted = tuple(split_names(props) or ())
    unknown = [p for p in wanted if p not in PROPERTIES]
    if unknown:
        raise SpecError("--property", f"unknown {', '.join(unknown)} (choose from {', '.join(PROPERTIES)})")
    require_ptxas_accepts(kernel, module, arch)
    ranges = kernel.spec.check_launch
    if any_launch:
        ranges = dataclasses.replace(ranges, mode="any")
    try:
        verdicts = check_spec(
            kernel, module, properties=wanted, scheduling=scheduling, unroll=unroll, deadline_s=budget_s,
            strict=strict, ranges=ranges,
        )  # fmt: skip
    except UnmodeledError as exc:
        _fail(exc, "table")
    echo({"properties": [v.as_dict() for v in verdicts]} if fmt == "json" else check_view(verdicts))
    if any(v.verdict not in ("proved", "proved-up-to-k") for v in verdicts):
        sys.exit(1)


@click.group("model")
def model_group() -> None:
    """The machine model: check the instruction set itself."""


@model_group.command("check-isa")
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
        echo([dataclasses.asdict(r) for r in results])
    else:
        echo(isa_check_view(results, all_rows=all_rows))
    if any(r.status == "fail" for r in results):
        sys.exit(1)


@model_group.command("validate")
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
@click.option(
    "--arch",
    default=None,
    help="Target (default: the GPU's; with --compile-only: sm_120). mma.sync tile kernels are built from "
    "sm_100 on; sm_120a adds .kind::f8f6f4 and the block-scaled kinds.",
)
@click.option(
    "--compile-only",
    is_flag=True,
    help="Build and assemble every kernel with ptxas (mma.sync: a row per kind); run nothing.",
)
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
@gpu_option
def validate_command(
    pattern: str | None, samples: int, cross_limit: int, seed: int, arch: str | None, compile_only: bool,
    record_dir: str | None, db: str | None, no_store: bool, fmt: str, all_rows: bool, timeout: float | None,
) -> None:  # fmt: skip
    """Run every modeled instruction form on the GPU and compare its bits with the model's."""
    from karyamorph.validation.command import ValidateOptions, run_validate

    out = run_validate(ValidateOptions(
        pattern, samples, cross_limit, seed, arch, compile_only, Path(record_dir) if record_dir else None,
        None if no_store else db_path(db), fmt, all_rows, timeout or 600.0,
    ))  # fmt: skip
    if out.note:
        click.echo(out.note, err=True)
    echo(out.output)
    if out.failed:
        sys.exit(1)


model_group.add_command(rewrites_command)

COMMANDS: tuple[click.Command, ...] = (interp, check, model_group)
