"""The ``karyamorph`` command: a thin click layer that parses arguments and calls the library."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from karyamorph.harness.session import DEFAULT_DB
from karyamorph.table import render

F = TypeVar("F", bound=Callable[..., Any])
EXAMPLES = Path(__file__).resolve().parent.parent / "datasets" / "kernels"


def _known_errors() -> tuple[type[BaseException], ...]:
    from karyamorph.harness.expressions import ExpressionError
    from karyamorph.harness.pipeline import ArchError
    from karyamorph.harness.spec import SpecError
    from karyamorph.harness.toolchain import ToolchainError
    from karyamorph.isa.errors import PtxError
    from karyamorph.store.database import StoreError

    return (PtxError, SpecError, ArchError, ToolchainError, StoreError, ExpressionError)


def friendly_errors(fn: F) -> F:
    """Print known errors as one paragraph on stderr and exit with status 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except _known_errors() as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


def _db_path(db: str | None) -> Path:
    return Path(db or os.environ.get("KARYAMORPH_DB") or DEFAULT_DB)


db_option = click.option(
    "--db", default=None, help=f"DuckDB file (default ${{KARYAMORPH_DB}} or ./{DEFAULT_DB})."
)


timeout_option = click.option(
    "--timeout",
    type=float,
    default=None,
    help="Seconds a GPU launch may run before it is killed (default: each stage's own).",
)


@click.group()
@click.version_option(package_name="karyamorph")
def main() -> None:
    """KaryaMorph: test what PTX really does, and how fast; model it; search it."""


# ---------------------------------------------------------------------------------------------
# run / demo


@main.command()
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False))
@click.option(
    "--arch", default=None, help="Target (sm_120, sm_90a, ...); default: the GPU's, else the PTX .target."
)
@db_option
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option("--no-store", is_flag=True, help="Do not write the run to the database.")
@timeout_option
@friendly_errors
def run(
    spec_path: str, arch: str | None, db: str | None, fmt: str, no_store: bool, timeout: float | None
) -> None:
    """Run a kernel spec through every stage and store the results."""
    from karyamorph.harness.session import run_spec_file

    outcome = run_spec_file(
        Path(spec_path), arch=arch, db=None if no_store else _db_path(db), timeout_s=timeout
    )
    if fmt == "json":
        click.echo(json.dumps(outcome.as_json(), indent=2, default=str))
    else:
        click.echo(outcome.table())
    if outcome.bad_input:
        click.echo(f"error: {outcome.bad_input}", err=True)
        sys.exit(2)
    if outcome.result.status in ("fail", "error"):
        sys.exit(1)


@main.command()
@click.option("--arch", default=None, help="Target for every example (default: the GPU's, else sm_120).")
@db_option
@click.option(
    "--kernels",
    "kernels_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Folder of *.toml specs (default: the shipped datasets/kernels).",
)
@timeout_option
@friendly_errors
def demo(arch: str | None, db: str | None, kernels_dir: str | None, timeout: float | None) -> None:
    """Run every example kernel through every stage this machine supports; print a summary."""
    from karyamorph.harness.session import run_demo

    folder = Path(kernels_dir) if kernels_dir else EXAMPLES
    report = run_demo(folder, arch=arch, db=_db_path(db), timeout_s=timeout)
    click.echo(report)


# ---------------------------------------------------------------------------------------------
# query / device


@main.command()
@click.argument("sql")
@db_option
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table")
@friendly_errors
def query(sql: str, db: str | None, fmt: str) -> None:
    """Run SQL against the measurement database."""
    from karyamorph.store.database import Store, StoreError

    path = _db_path(db)
    if not path.exists():
        raise StoreError(
            f"database {path} does not exist yet: run `karyamorph demo` or `karyamorph run` first"
        )
    with Store.open(path, read_only=True) as store:
        result = store.query(sql)
    click.echo(render(result.columns, result.rows, fmt))


@main.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@friendly_errors
def device(fmt: str) -> None:
    """The CUDA devices (or "no CUDA device") and the toolchain versions."""
    from karyamorph.harness.device import driver_problem, list_devices
    from karyamorph.harness.toolchain import discover

    devices = list_devices()
    tc = discover()
    if fmt == "json":
        out = {
            "devices": [d.as_dict() for d in devices],
            "problem": driver_problem() if not devices else None,
            "toolchain": {"cuda_release": tc.cuda_release, "source": tc.source, **tc.versions},
        }
        click.echo(json.dumps(out, indent=2))
        return
    if devices:
        for d in devices:
            rows = list(d.as_dict().items())
            click.echo(render(["property", f"device {d.ordinal}"], rows))
            click.echo()
    else:
        click.echo(driver_problem() or "no CUDA device")
        click.echo()
    rows = [("cuda_release", tc.cuda_release), ("source", tc.source), *sorted(tc.versions.items())]
    click.echo(render(["toolchain", "version"], rows))


# ---------------------------------------------------------------------------------------------
# model: interp, check-isa


def _with_sizes(spec: Any, sizes: tuple[str, ...]) -> Any:
    """The spec with ``name=value`` size overrides applied (and every expression re-checked)."""
    import dataclasses

    from karyamorph.harness.spec import SpecError

    where = spec.source_path.name if spec.source_path else "<spec>"
    changed = dict(spec.sizes)
    for item in sizes:
        name, _, value = item.partition("=")
        if name not in changed or not value.strip().lstrip("-").isdigit():
            known = ", ".join(sorted(changed)) or "none"
            raise SpecError(f"{where}: --size {item}", f"expected NAME=INTEGER with a known size ({known})")
        changed[name] = int(value)
    new = dataclasses.replace(spec, sizes=changed)
    new.grid(), new.block(), new.shared_bytes()
    return new


size_option = click.option(
    "--size", "sizes", multiple=True, metavar="NAME=N", help="Override a [sizes] entry (repeatable)."
)


@main.command()
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False))
@size_option
@click.option("--seed", default=0, show_default=True, help="Input seed (the same inputs as a GPU trial).")
@click.option("--randomize", is_flag=True, help="Randomize warp order between barriers (exposes races).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@friendly_errors
def interp(spec_path: str, sizes: tuple[str, ...], seed: int, randomize: bool, fmt: str) -> None:
    """Run a kernel spec on the CPU model and compare it with the spec's reference."""
    from karyamorph.harness.model_run import interpret_spec_file
    from karyamorph.harness.pipeline import prepare
    from karyamorph.harness.spec import load_spec
    from karyamorph.model.interp.errors import ExecutionError
    from karyamorph.model.semantics.decode import UnmodeledError

    spec = _with_sizes(load_spec(spec_path), sizes)
    prepare(spec)
    try:
        report = interpret_spec_file(spec, seed=seed, randomize_order=randomize)
    except (UnmodeledError, ExecutionError) as exc:
        if fmt == "json":
            click.echo(json.dumps({"status": "error", "match": False, "error": str(exc)}, indent=2))
        else:
            click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    if fmt == "json":
        click.echo(json.dumps(report.as_json(), indent=2, default=str))
    else:
        rows = [(name, "pass" if o["passed"] else "fail", o["message"]) for name, o in report.outputs.items()]
        click.echo(f"{spec.name}: {report.status} in {report.seconds:.3f} s (seed {seed})")
        if rows:
            click.echo(render(["output", "status", "detail"], rows))
        stats = report.stats
        counts = [(k, v) for k, v in stats.items() if not isinstance(v, dict)]
        click.echo(render(["statistic", "value"], counts))
    if not report.match:
        sys.exit(1)


@main.command()
@click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False))
@click.option(
    "--property", "props", default="bounds,race,barrier", show_default=True,
    help="Comma-separated properties to check.",
)  # fmt: skip
@click.option("--scheduling", type=click.Choice(["its", "lockstep"]), default="its", show_default=True,
              help="its: lanes of a warp are unordered (sm_70+); lockstep: a warp runs in step.")  # fmt: skip
@click.option("--unroll", default=8, show_default=True, help="Iterations explored of loops not proved whole.")
@click.option("--budget", "budget_s", default=30.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds the checks may take; what is undecided then is unknown.")  # fmt: skip
@click.option("--strict", is_flag=True,
              help="Count stores of one value by the lanes of one warp to one address as races.")  # fmt: skip
@size_option
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@friendly_errors
def check(
    spec_path: str, props: str, scheduling: str, unroll: int, budget_s: float, strict: bool,
    sizes: tuple[str, ...], fmt: str,
) -> None:  # fmt: skip
    """Prove or refute bounds, race and barrier properties of a kernel for the spec's launch (z3)."""
    from karyamorph.harness.model_stage import check_spec
    from karyamorph.harness.pipeline import prepare
    from karyamorph.harness.spec import SpecError, load_spec
    from karyamorph.model.semantics.decode import UnmodeledError

    spec = _with_sizes(load_spec(spec_path), sizes)
    module = prepare(spec)
    wanted = tuple(p.strip() for p in props.split(",") if p.strip())
    unknown = [p for p in wanted if p not in ("bounds", "race", "barrier")]
    if unknown:
        raise SpecError("--property", f"unknown {', '.join(unknown)} (choose from bounds, race, barrier)")
    try:
        verdicts = check_spec(
            spec, module, properties=wanted, scheduling=scheduling, unroll=unroll, deadline_s=budget_s,
            strict=strict,
        )  # fmt: skip
    except UnmodeledError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    if fmt == "json":
        click.echo(json.dumps({"properties": [v.as_dict() for v in verdicts]}, indent=2, default=str))
    else:
        rows = [
            (v.property, v.verdict, "" if v.k is None else v.k, f"{v.seconds:.3f}", v.reason)
            for v in verdicts
        ]
        click.echo(render(["property", "verdict", "k", "seconds", "reason"], rows))
        for v in verdicts:
            if v.witness is not None:
                click.echo(f"{v.property} witness: {v.witness}")
                if v.replay is not None:
                    click.echo(f"  replay: {v.replay}")
    if any(v.verdict != "proved" and v.verdict != "proved-up-to-k" for v in verdicts):
        sys.exit(1)


@main.group()
def model() -> None:
    """The machine model: check the instruction set itself."""


@model.command("check-isa")
@click.option("--only", multiple=True, help="Check only these opcodes (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option("--all-rows", is_flag=True, help="Show every check, not just a summary per check kind.")
def check_isa_command(only: tuple[str, ...], fmt: str, all_rows: bool) -> None:
    """Frame condition, stated laws and concrete == symbolic agreement for every instruction."""
    from karyamorph.model.check.isa_check import check_isa
    from karyamorph.model.ptx.machine import ptx_machine

    results = check_isa(ptx_machine(), only=only or None)
    failed = [r for r in results if r.status == "fail"]
    if fmt == "json":
        click.echo(json.dumps([_as_dict(r) for r in results], indent=2))
    elif all_rows:
        click.echo(
            render(
                ["form", "check", "status", "detail"],
                [(r.form, r.check, r.status, r.detail) for r in results],
            )
        )
    else:
        summary: Counter[tuple[str, str]] = Counter((r.check, r.status) for r in results)
        click.echo(
            render(["check", "status", "count"], [(c, st, n) for (c, st), n in sorted(summary.items())])
        )
        for r in failed:
            click.echo(f"FAIL {r.form} {r.check}: {r.detail}")
    if failed:
        sys.exit(1)


def _as_dict(obj: Any) -> dict[str, Any]:
    import dataclasses

    return dataclasses.asdict(obj)


# ---------------------------------------------------------------------------------------------
# ptx


@main.group()
def ptx() -> None:
    """Look at PTX files: re-print them, summarise them."""


@ptx.command("format")
@click.argument("file", type=click.Path(dir_okay=False))
@friendly_errors
def ptx_format(file: str) -> None:
    """Print FILE re-printed from its parsed form."""
    from karyamorph.isa.parser import parse_file
    from karyamorph.isa.printer import format_module

    click.echo(format_module(parse_file(_existing(file))), nl=False)


@ptx.command("info")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@friendly_errors
def ptx_info(file: str, fmt: str) -> None:
    """Version, target, entries and their parameters, registers, instruction histogram."""
    from karyamorph.isa.parser import parse_file

    module = parse_file(_existing(file))
    info = _module_info(module)
    if fmt == "json":
        click.echo(json.dumps(info, indent=2))
        return
    click.echo(render(["field", "value"], [
        ("version", info["version"]), ("target", ", ".join(info["target"])),
        ("address_size", info["address_size"]),
    ]))  # fmt: skip
    for f in info["functions"]:
        click.echo(f"\n.{f['kind']} {f['name']}  ({f['instructions']} instructions)")
        if f["params"]:
            click.echo(
                render(
                    ["param", "type", "pointer"], [(p["name"], p["type"], p["pointer"]) for p in f["params"]]
                )
            )
        if f["registers"]:
            click.echo(
                render(
                    ["registers", "type", "count"],
                    [(r["name"], r["type"], r["count"]) for r in f["registers"]],
                )
            )
        if f["attributes"]:
            click.echo("attributes: " + ", ".join(f"{k} {v}" for k, v in f["attributes"].items()))
    hist = info["histogram"]
    click.echo()
    click.echo(render(["opcode", "count"], sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))))


def _existing(file: str) -> str:
    from karyamorph.isa.errors import PtxError

    if not Path(file).is_file():
        raise PtxError("file not found", file, 0, None)
    return file


def _module_info(module: Any) -> dict[str, Any]:
    from karyamorph.isa import ast

    functions = []
    hist: Counter[str] = Counter()
    for f in module.functions:
        regs = []
        for s in f.body or ():
            if isinstance(s, ast.VarDecl) and s.space == "reg":
                for n in s.names:
                    regs.append({"name": n, "type": s.type, "count": s.count or 1})
        count = 0
        for ins in f.instructions():
            hist[ins.opcode] += 1
            count += 1
        functions.append({
            "kind": f.kind, "name": f.name, "linkage": list(f.linkage), "instructions": count,
            "params": [{"name": p.name, "type": p.type, "pointer": p.is_ptr} for p in f.params],
            "registers": regs, "attributes": {k: list(v) for k, v in f.attributes},
        })  # fmt: skip
    return {
        "version": module.version,
        "target": list(module.target),
        "address_size": module.address_size,
        "functions": functions,
        "histogram": dict(hist),
    }


if __name__ == "__main__":
    main()
