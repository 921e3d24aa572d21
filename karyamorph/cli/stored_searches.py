"""The stored searches' commands (``search list``, ``search show``, ``search export``) and a
search's summary as text, which ``search run`` prints too."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import click

from karyamorph.cli.options import db_option, format_option, open_existing
from karyamorph.cli.output import echo, friendly_errors, invoked_as


def summary_view(summary: dict[str, Any], reproduce: list[str]) -> str:
    """A search's summary as lines of text: evaluations, rejections, the winner against torch.

    Parameters
    ----------
    summary
        The summary a search stores (``search_id`` added), as ``search run --format json`` prints it.
    reproduce
        Lines that say how to reproduce the winner (:func:`reproduce_lines`), indented under it.
    """
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
    lines += _baseline_lines(summary.get("baseline"))
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


def _baseline_lines(baseline: dict[str, Any] | None) -> list[str]:
    """The baseline configuration's line: its time and the winner's speed-up over it."""
    if not baseline:  # a search stored before the baseline was raced
        return []
    if "time_ms" not in baseline:
        return [f"  baseline {baseline['config']}: {baseline.get('failure')}"]
    when = "in the search" if baseline.get("in_search") else "measured after the search"
    speedup = f"; the winner is {baseline['speedup']:.3f}x faster" if "speedup" in baseline else ""
    return [f"  baseline {baseline['config']}: {baseline['time_ms']:.4g} ms ({when}){speedup}"]


def reproduce_lines(
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


@click.command("list")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@db_option
@format_option("table", "json")
@friendly_errors
def search_list(limit: int, db: str | None, fmt: str) -> None:
    """The stored searches, newest first."""
    from karyamorph.search import stored
    from karyamorph.table import table

    with open_existing(db) as store:
        rows = stored.listing(store, limit)
    if fmt == "json":
        echo([{**r, "created_at": str(r["created_at"])} for r in rows])
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
    echo(table(["id", *cols[1:]], [[str(r["search_id"])[:8], *(r[c] for c in cols[1:])] for r in rows],
                title=f"{len(rows)} searches"))  # fmt: skip


@click.command("show")
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
    with open_existing(db) as store:
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
        echo(out)
        return
    names = list(search.evaluations[0].config) if search.evaluations else []
    rows = [[rank, e.seq, *(e.config[n] for n in names), e.outcome.time_ms, e.gates.get("registers")]
            for rank, e in enumerate(timed, 1)]  # fmt: skip
    p = search.params
    title = (f"search {search.search_id[:8]}: {search.name} on {p.get('device')} ({p.get('arch')}), "
             f"{p.get('strategy')}, {len(search.evaluations)}/{p.get('budget')} evaluations")  # fmt: skip
    echo(table(["rank", "seq", *names, "time_ms", "regs"], rows, title=title))
    for e in rejected[:top]:
        click.echo(
            f"rejected #{e.seq} {e.outcome.failure}: {e.config}: {e.outcome.detail.splitlines()[0][:160]}"
        )
    if summary and winner:
        if isinstance(files, WinnerFiles):
            note = None if files.origin == STORED else files.origin
            reproduce = reproduce_lines(search.search_id, files.spec_file, winner.get("run_id"), db, note)
        else:
            reproduce = [f"reproduce: not possible: {files}"]
        click.echo(summary_view({"search_id": search.search_id, **summary}, reproduce))


def _without_paths(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored summary without the winner's spec path, which searches stored before their
    winners were held: a path of the machine that ran them."""
    if not summary or not isinstance(summary.get("winner"), dict):
        return summary
    return {**summary, "winner": {k: v for k, v in summary["winner"].items() if k != "spec"}}


@click.command("export")
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

    with open_existing(db) as store:
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


COMMANDS: tuple[click.Command, ...] = (search_list, search_show, search_export)
