"""The ``campaign`` and ``datasets`` commands: thin click commands over the campaign package.

Like the rest of ``karyamorph.cli``, this module imports click alone at load time
(``karyamorph --help`` stays free of z3, duckdb and Ray); each command imports what it needs
when it runs.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import NoReturn

import click

from karyamorph.cli.options import db_option, db_path, gpu_option, open_existing
from karyamorph.cli.output import echo, friendly_errors, invoked_as

INTERRUPTED = 130
"""The exit status after Ctrl-C (128 + SIGINT, as a shell reports it)."""

# What a missing database's error tells to run: these commands read what campaigns stored.
_MADE_BY = "`karyamorph campaign run`"


@click.group("campaign")
def campaign_group() -> None:
    """Sweep kernel specs over sizes and archs; resumable; local or on a Ray cluster."""


@campaign_group.command("run")
@click.argument("campaign_path", metavar="CAMPAIGN.toml", type=click.Path(dir_okay=False))
@db_option
@click.option("--label", help="Stored with the campaign and its runs; another label is another campaign.")
@click.option("--resume", "resume", metavar="ID", help="Resume this campaign (its id or first characters).")
@click.option("--retry-failed", is_flag=True, help="Run the items that could not run again too.")
@click.option("--ray", "ray_address", metavar="auto|local|ADDRESS", default=None,
              help="Run on Ray: auto (the cluster `ray start --head` made here), local (a Ray instance "
                   "for this campaign alone) or a cluster address. One worker per GPU; compile-side "
                   "items as CPU tasks.")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@friendly_errors
@gpu_option
def campaign_run(campaign_path: str, db: str | None, label: str | None, resume: str | None,
                 retry_failed: bool, ray_address: str | None, fmt: str) -> None:  # fmt: skip
    """Run the items of CAMPAIGN.toml not done yet in the database. Exit 1 if an item's run failed
    or errored (as `karyamorph run` would) or an item could not run; 130 on Ctrl-C, saying how far
    it got and how to resume."""
    # The command as typed (the same file, --db and other options): run again, it resumes the
    # campaign this one made or resumed, running only what is not done.
    again = [invoked_as(), "campaign", "run", campaign_path, *_flags(db=db, label=label, resume=resume,
             retry_failed=retry_failed, ray=ray_address, format=None if fmt == "table" else fmt)]  # fmt: skip
    try:
        _run(Path(campaign_path), db, label, resume, retry_failed, ray_address, fmt)
    except KeyboardInterrupt as stop:
        _interrupted(stop, fmt, shlex.join(again))


def _run(campaign_path: Path, db: str | None, label: str | None, resume: str | None, retry_failed: bool,
         ray_address: str | None, fmt: str) -> None:  # fmt: skip
    from karyamorph.campaign.execute import Executor
    from karyamorph.campaign.local import LocalExecutor
    from karyamorph.campaign.runner import run_campaign
    from karyamorph.campaign.verdicts import failing
    from karyamorph.campaign.views import report_view
    from karyamorph.harness.gpu.host import gpu_host
    from karyamorph.store.campaigns import item_states
    from karyamorph.store.database import Store
    from karyamorph.table import console

    executor: Executor = LocalExecutor()
    host = gpu_host()
    if ray_address is not None and host is not None:
        # Ray's workers are processes of their own, on this machine or a cluster's: their GPU is theirs.
        click.echo(f"error: --gpu {host.url} does not combine with --ray", err=True)
        sys.exit(2)
    if ray_address is not None:
        try:
            from karyamorph.campaign.distributed import RayExecutor
        except ImportError as exc:
            click.echo(f"error: --ray needs Ray (pip install 'karyamorph[ray]'): {exc}", err=True)
            sys.exit(2)
        executor = RayExecutor(ray_address)
    path = db_path(db)
    screen = console() if fmt == "table" else None
    report = run_campaign(campaign_path, db=path, executor=executor, label=label, resume=resume,
                          retry_failed=retry_failed, console=screen)  # fmt: skip
    if fmt == "json":
        echo(report.as_dict())
    else:
        with Store.open_to_read(path) as store:
            states = item_states(store, report.info.campaign_id)
        echo(report_view(report, states, None if db is None else path, invoked_as()))
    if failing(report.info):
        sys.exit(1)


def _interrupted(stop: KeyboardInterrupt, fmt: str, again: str) -> NoReturn:
    """Say how far an interrupted ``campaign run`` got and how to resume it; exit 130."""
    # Only the runner raises CampaignInterrupted (once the items started), so it is loaded then;
    # an interrupt while the command still imported it finds it absent, and nothing stored.
    if "karyamorph.campaign.runner" in sys.modules:
        from karyamorph.campaign.runner import CampaignInterrupted
        from karyamorph.campaign.views import interrupted_view

        if isinstance(stop, CampaignInterrupted):
            if fmt == "json":
                echo({**stop.report.as_dict(), "interrupted": True})
            click.echo(interrupted_view(stop.report, again), err=True)
            sys.exit(INTERRUPTED)
    # Before the items ran (loading the specs, opening the database) or after they all had.
    click.echo(f"interrupted; nothing is half written. Run it again with:\n  {again}", err=True)
    sys.exit(INTERRUPTED)


def _flags(**values: str | bool | None) -> list[str]:
    """``--name value`` for each value given (``--name`` alone for True), in order."""
    out: list[str] = []
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, str):
            out += [flag, value]
    return out


@campaign_group.command("status")
@click.argument("campaign_id", metavar="ID")
@db_option
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@friendly_errors
def campaign_status(campaign_id: str, db: str | None, fmt: str) -> None:
    """Items of a campaign that ran (with their runs' verdicts), could not run, or are pending
    (ID: its id or first characters)."""
    from karyamorph.campaign.verdicts import campaign_dict, not_passed
    from karyamorph.campaign.views import status_view
    from karyamorph.store.campaigns import campaign_info, find_campaign, item_states

    with open_existing(db, made_by=_MADE_BY) as store:
        info = campaign_info(store, find_campaign(store, campaign_id))
        states = item_states(store, info.campaign_id)
    if fmt == "json":
        failures = [{"item": s.item, "attempts": s.attempts, "reason": s.reason}
                    for s in states if s.state == "failed"]  # fmt: skip
        not_passing = [
            {"item": s.item, "run_id": s.run_id, "verdict": s.verdict, "stages": dict(s.failing_stages)}
            for s in states
            if not_passed(s.verdict)
        ]
        echo({**campaign_dict(info), "failures": failures, "runs_not_passed": not_passing})
    else:
        echo(status_view(info, states))


@campaign_group.command("list")
@db_option
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@friendly_errors
def campaign_list(db: str | None, fmt: str) -> None:
    """Every campaign in the database with its item counts and runs by verdict, newest first."""
    from karyamorph.campaign.verdicts import campaign_dict
    from karyamorph.campaign.views import list_view
    from karyamorph.store.campaigns import list_campaigns

    with open_existing(db, made_by=_MADE_BY) as store:
        infos = list_campaigns(store)
    echo([campaign_dict(i) for i in infos] if fmt == "json" else list_view(infos))


@click.group("datasets")
def datasets_group() -> None:
    """Recorded results as Parquet with provenance: load them into a database, or write them."""


@datasets_group.command("import")
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@db_option
@friendly_errors
def datasets_import(path: str, db: str | None) -> None:
    """Add the rows of the dataset at PATH (a folder with provenance.json, or a folder of such
    folders) that the database lacks."""
    from karyamorph.store.exchange import PROVENANCE
    from karyamorph.store.pending import open_waiting

    root = Path(path)
    folders = (
        [root] if (root / PROVENANCE).exists() else sorted(p.parent for p in root.glob(f"*/{PROVENANCE}"))
    )
    if not folders:
        click.echo(f"error: {root} holds no dataset (no {PROVENANCE} in it or in its folders)", err=True)
        sys.exit(2)
    target = db_path(db)
    with open_waiting(target) as store:
        for folder in folders:
            added = store.import_dataset(folder)
            click.echo(
                f"{folder}: {added.get('runs', 0)} run(s), {sum(added.values())} row(s) added to {target}"
            )


@datasets_group.command("export")
@click.argument("folder", type=click.Path(file_okay=False))
@db_option
@click.option(
    "--campaign",
    "campaigns",
    multiple=True,
    metavar="ID",
    help="Only this campaign's rows and what they link to (repeatable; default: every table).",
)
@click.option("--note", default="", help="A line of provenance (what was run, why).")
@click.option(
    "--relative-to",
    "relative_to",
    type=click.Path(file_okay=False),
    default=None,
    help="Cut this folder (e.g. the repository) from the paths the rows hold.",
)
@friendly_errors
def datasets_export(folder: str, db: str | None, campaigns: tuple[str, ...], note: str,
                    relative_to: str | None) -> None:  # fmt: skip
    """Write the database's tables to FOLDER as Parquet files with a provenance.json."""
    from karyamorph.store.campaigns import find_campaign

    with open_existing(db, made_by=_MADE_BY) as store:
        ids = [find_campaign(store, c) for c in campaigns] or None
        counts = store.export_dataset(folder, campaign_ids=ids, note=note, relative_to=relative_to)
    click.echo(f"wrote {sum(counts.values())} row(s) of {len(counts)} table(s) to {folder}")


COMMANDS: tuple[click.Command, ...] = (campaign_group, datasets_group)
