"""``karyamorph microbench``: measure what instructions and memory levels cost on this GPU, store the
figures, export ``datasets/microbench/<arch>/`` with plots, print a summary."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from karyamorph.cli.options import db_option, db_path, format_option, gpu_option, timeout_option
from karyamorph.cli.output import echo, friendly_errors


def _warps(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(w) for w in text.split(",") if w.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of warp counts") from None


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(n.strip() for n in (text or "").split(",") if n.strip())


def _bad_stride(value: int) -> int:
    raise click.BadParameter(f"{value} is not a multiple of 8 (each entry is an 8-byte address)")


def _tables(items: list[dict[str, Any]]) -> str:
    from karyamorph.microbench.summary import session_tables
    from karyamorph.table import render, to_text

    parts = []
    for title, columns, rows in session_tables(items):
        parts += [f"== {title}", to_text(render(columns, rows))]
    return "\n".join(parts)


def _command(params: dict[str, Any]) -> str:
    """The options a session ran with, as a command line (no paths: the dataset travels)."""
    words = ["karyamorph microbench", f"--repeats {params.get('repeats', 3)}"]
    if params.get("only"):
        words.append(f"--only {','.join(params['only'])}")
    if params.get("instr"):
        words.append(f"--instr '{params['instr']}'")
    if params.get("memory") and params.get("instr"):
        words.append("--memory")
    if not params.get("instructions", True):
        words.append("--memory")
    words += ["--quick"] if params.get("quick") else []
    words += [f"--warps {','.join(map(str, params['warps']))}"] if params.get("warps") else []
    words += [f"--stride {params['stride']}"] if params.get("stride", 64) != 64 else []
    return " ".join(words)


def _export(items: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    from karyamorph.microbench import write_dataset, write_plots

    written: list[Path] = []
    for arch in dict.fromkeys(i["arch"] for i in items):
        mine = [i for i in items if i["arch"] == arch]
        folder = out_dir / arch
        command = _command(mine[-1].get("params") or {})
        written += write_dataset(mine, folder, command=command) + write_plots(mine, folder)
    return written


def _stored(db: Path, arch: str | None) -> list[dict[str, Any]]:
    from karyamorph.store.database import Store
    from karyamorph.store.errors import StoreError

    if not db.exists():
        raise StoreError(f"database {db} does not exist yet: run `karyamorph microbench` first")
    with Store.open_to_read(db) as store:
        return store.microbench_figures(arch)


@click.command("microbench")
@click.option(
    "--instr",
    "pattern",
    default=None,
    metavar="PATTERN",
    help="Measure the forms matching this glob (an instruction, or a form with a dot: 'cvt.*.f16'); "
    "default: a representative set. Alone, it leaves the memory benchmarks out.",
)
@click.option(
    "--memory", is_flag=True, help="Run the memory benchmarks (alone: only them; with --instr: both)."
)
@click.option(
    "--only",
    default=None,
    metavar="NAME,..",
    help="Run only these benchmarks: instr, tensor, chase, bandwidth, banks, atomics, barriers, "
    "flight, turnover, bulk (instr takes --instr's forms).",
)
@click.option(
    "--arch", default=None, help="Target to assemble for (default: the GPU's; sm_90 for a dry run)."
)
@db_option
@click.option("--no-store", is_flag=True, help="Do not write the figures to the database.")
@click.option(
    "--out",
    "out_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Export the arch's stored sessions to OUT/<arch>/ (CSV with provenance, README, plots).",
)
@click.option(
    "--repeats",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Measured launches per configuration (median and spread over them).",
)
@click.option("--quick", is_flag=True, help="Smaller sweeps: fewer working sets, warp counts and strides.")
@click.option(
    "--warps", default=None, metavar="W,W,..", help="Warps per SM for throughput (default 1,2,4,..,max)."
)
@click.option(
    "--stride",
    default=64,
    show_default=True,
    type=click.IntRange(min=8),
    callback=lambda _ctx, _param, v: v if v % 8 == 0 else _bad_stride(v),
    help="Pointer-chase entry stride in bytes (a multiple of 8: each entry is an 8-byte address).",
)
@click.option(
    "--jobs", default=None, type=click.IntRange(min=1), help="ptxas processes at a time (default: CPUs)."
)
@click.option(
    "--dry-run", is_flag=True, help="Assemble every kernel and plan the launches; run nothing (no GPU)."
)
@click.option("--export-only", is_flag=True, help="Measure nothing: export and summarize what --db holds.")
@click.option(
    "--summary",
    "summary_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="Also write the markdown summary (published figures, spread over sessions) here.",
)
@format_option("table", "json")
@timeout_option
@friendly_errors
@gpu_option
def microbench_command(
    pattern: str | None,
    memory: bool,
    only: str | None,
    arch: str | None,
    db: str | None,
    no_store: bool,
    out_dir: str | None,
    repeats: int,
    quick: bool,
    warps: str | None,
    stride: int,
    jobs: int | None,
    dry_run: bool,
    export_only: bool,
    summary_path: str | None,
    fmt: str,
    timeout: float | None,
) -> None:
    """Instruction latency and throughput (for the model's forms), tensor-core throughput (wgmma and
    mma.sync), and memory latency, bandwidth, bank conflicts, atomics, barriers and bulk (TMA)
    copies, measured on this GPU. Without a GPU it exits with status 2 (--dry-run assembles every
    kernel and reports what would run)."""
    from karyamorph.microbench import MicrobenchError, MicrobenchOptions, run_session, store_report
    from karyamorph.microbench.export import report_items
    from karyamorph.microbench.summary import summary_markdown
    from karyamorph.table import render

    path = db_path(db)
    if export_only:
        items = _stored(path, arch)
        if not items:
            click.echo(
                f"error: {path} holds no microbenchmark sessions{f' for {arch}' if arch else ''}", err=True
            )
            sys.exit(2)
    else:
        options = MicrobenchOptions(
            instr=pattern,
            instructions=pattern is not None or not memory,
            memory=memory or pattern is None,
            arch=arch,
            repeats=repeats,
            quick=quick,
            warps=_warps(warps),
            stride=stride,
            timeout_s=timeout or 120.0,
            jobs=jobs,
            dry_run=dry_run,
            only=_names(only),
        )
        try:
            report = run_session(options, progress=lambda line: click.echo(line, err=True))
        except MicrobenchError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        if report.dry_run:
            echo(
                render(["module", "entry", "registers", "timed SASS (per region)"], list(report.kernels), fmt)
            )
            click.echo(f"{report.launches} launches planned for {report.arch}; nothing was run", err=True)
            return
        items = report_items(
            report.arch, report.figures, report.environment, report.params, "this session", ""
        )
        if not no_store:
            session = store_report(report, path)
            click.echo(f"stored session {session} in {path}", err=True)
            items = _stored(path, report.arch) if out_dir or summary_path else items
        latest = [i for i in items if i["microbench_id"] == items[-1]["microbench_id"]] if items else []
        if fmt == "json":
            echo([{k: v for k, v in i.items() if k not in ("environment", "params")} for i in latest])
        else:
            echo(_tables(latest))
    if out_dir:
        for p in _export(items, Path(out_dir)):
            click.echo(f"wrote {p}", err=True)
    text = summary_markdown(items)
    if summary_path:
        Path(summary_path).parent.mkdir(parents=True, exist_ok=True)
        Path(summary_path).write_text(text)
    if export_only or summary_path:
        click.echo(text)


COMMANDS: tuple[click.Command, ...] = (microbench_command,)
