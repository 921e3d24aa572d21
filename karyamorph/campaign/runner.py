"""Run a campaign: create or resume it in the store, run what is missing, store each outcome.

This process is the one writer of the database. Each item's run and its new state go in one
transaction (:meth:`~karyamorph.store.database.Store.record_item_run`), so a campaign killed at
any moment (SIGKILL included) leaves every item either done with exactly one run, or not done
with none; running the campaign again runs only what is not done. Ctrl-C stops it the same way,
and :class:`CampaignInterrupted` then says how far it got.
"""

from __future__ import annotations

import ctypes
import dataclasses
import time
from collections import Counter
from collections.abc import Generator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from karyamorph.campaign.definition import CampaignError, CampaignFile, load_campaign
from karyamorph.campaign.execute import Executor, ItemOutcome
from karyamorph.campaign.interrupts import CtrlC
from karyamorph.campaign.items import Item, expand
from karyamorph.campaign.local import LocalExecutor
from karyamorph.campaign.plan import Plan, definition_hash, plan_of
from karyamorph.campaign.progress import CampaignProgress
from karyamorph.campaign.verdicts import campaign_dict, verdict_counts
from karyamorph.store.campaigns import (
    CampaignInfo,
    ItemState,
    campaign_info,
    find_by_definition,
    find_campaign,
    item_states,
)
from karyamorph.store.database import Store
from karyamorph.store.pending import open_waiting


@dataclass(frozen=True, slots=True)
class CampaignReport:
    """One ``campaign run``: which campaign, whether it resumed, what this run did, where it stands.

    Attributes
    ----------
    info : CampaignInfo
        The campaign and its item counts after this run.
    resumed : bool
        The campaign existed before this run.
    ran, failed : int
        Items this run settled, and how many of those could not run (no run stored).
    verdicts : dict of str to int
        The runs this run stored, by status (every status, 0 where none).
    seconds : float
        Wall time from the first item submitted to the last one stored.
    executor : str
        What ran where.
    """

    info: CampaignInfo
    resumed: bool
    ran: int
    failed: int
    verdicts: dict[str, int]
    seconds: float
    executor: str

    @property
    def items_per_minute(self) -> float:
        """Items settled per minute of this run (0 when it ran none)."""
        return 60.0 * self.ran / self.seconds if self.ran and self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict: the campaign's status plus this run's figures
        (``ran``: items settled, ``failed_now``: of those, could not run; ``verdicts_now``)."""
        return {
            **campaign_dict(self.info), "resumed": self.resumed, "ran": self.ran, "failed_now": self.failed,
            "verdicts_now": self.verdicts, "seconds": self.seconds, "items_per_minute": self.items_per_minute,
            "executor": self.executor,
        }  # fmt: skip


class CampaignInterrupted(KeyboardInterrupt):
    """Ctrl-C (KeyboardInterrupt) stopped :func:`run_campaign` while its items ran.

    Every item stored before is stored whole; the items in flight are not stored (still
    pending, or failed as before when retried), so running the campaign again runs them.

    Attributes
    ----------
    report : CampaignReport
        What this run stored before it stopped, and where the campaign stands.
    """

    def __init__(self, report: CampaignReport) -> None:
        super().__init__(f"campaign {report.info.campaign_id} interrupted after {report.ran} item(s)")
        self.report = report


def open_campaign(
    store: Store, campaign: CampaignFile, items: tuple[Item, ...], plan: Plan, *, label: str | None = None,
    resume: str | None = None,
) -> tuple[str, bool]:  # fmt: skip
    """The campaign's id in ``store`` and whether it existed: ``resume`` (an id or its start), else
    the newest campaign with this definition and label, else a new one with every item pending.

    Raises
    ------
    CampaignError
        ``resume`` names a campaign made from another definition (other items or stages).
    StoreError
        ``resume`` matches no campaign, or several.
    """
    definition = definition_hash(campaign, items, plan)
    if resume is not None:
        campaign_id = find_campaign(store, resume)
        if campaign_info(store, campaign_id).params.get("definition") != definition:
            raise CampaignError(
                campaign.path.name,
                f"campaign {campaign_id} was made from another definition (other items or stages); "
                "run without --resume to start a campaign of this file",
            )
        return campaign_id, True
    found = find_by_definition(store, definition, label)
    if found is not None:
        return found, True
    params = {
        "file": str(campaign.path.resolve()), "definition": definition, "label": label,
        "description": campaign.description, "stages": list(plan.names), "items": len(items),
        "text": campaign.text,
    }  # fmt: skip
    return store.create_campaign(campaign.name, params, [i.record() for i in items]), False


def store_outcome(store: Store, campaign_id: str, outcome: ItemOutcome, label: str | None = None) -> None:
    """Write one item's outcome: its run (with ``label``) and state ``done``, or state ``failed``
    with the reason; one transaction either way."""
    if outcome.run is not None:
        store.record_item_run(campaign_id, outcome.key, dataclasses.replace(outcome.run, label=label))
    else:
        store.record_item_failure(campaign_id, outcome.key, outcome.reason or "no reason given")


def run_campaign(
    path: str | Path,
    *,
    db: str | Path,
    executor: Executor | None = None,
    label: str | None = None,
    resume: str | None = None,
    retry_failed: bool = False,
    console: Console | None = None,
) -> CampaignReport:
    """Run the campaign file at ``path`` into the database ``db``: only its items not done yet
    (and, with ``retry_failed``, its failed ones again).

    Parameters
    ----------
    path : str or Path
        The campaign file.
    db : str or Path
        The DuckDB file (created if missing). This process holds it until the campaign ends.
    executor : Executor, optional
        Where items run (default :class:`LocalExecutor`; :class:`~karyamorph.campaign.distributed.RayExecutor`
        for a cluster).
    label : str, optional
        Stored with the campaign and each of its runs; a campaign of the same file with another
        label is another campaign.
    resume : str, optional
        The id (or its start) of the campaign to resume; it must come from the same definition.
    retry_failed : bool
        Run the failed items again too.
    console : Console, optional
        A terminal to draw progress on.

    Raises
    ------
    CampaignError
        The campaign file (or a spec it names) cannot be used.
    StoreError
        The database cannot be opened or written (another process holds it, damage).
    CampaignInterrupted
        Ctrl-C came while the items ran (a KeyboardInterrupt: its report says how far it got).
    """
    campaign = load_campaign(path)
    items = expand(campaign)
    plan = plan_of(campaign)
    executor = executor or LocalExecutor()
    with open_waiting(Path(db)) as store:
        campaign_id, resumed = open_campaign(store, campaign, items, plan, label=label, resume=resume)
        before = {s.item: s for s in item_states(store, campaign_id)}
        missing = [i.key for i in items if i.key not in before]
        if missing:
            raise CampaignError(
                campaign.path.name, f"campaign {campaign_id} in {db} lacks item {missing[0]!r}"
            )
        wanted = ("pending", "failed") if retry_failed else ("pending",)
        todo = [i for i in items if before[i.key].state in wanted]
        bar = None
        if console is not None and console.is_terminal and todo:
            bar = _bar(console, campaign.name, list(before.values()), len(items) - len(todo), retry_failed)
        interrupted = False
        t0 = time.perf_counter()
        ctrl_c: CtrlC | None = None
        try:
            with CtrlC() as ctrl_c, bar or nullcontext():
                outcomes = executor.run(todo, plan)
                try:
                    for outcome in outcomes:
                        if ctrl_c.seen:  # its KeyboardInterrupt was dropped in a finalizer
                            raise KeyboardInterrupt
                        store_outcome(store, campaign_id, outcome, label)
                        if bar is not None:
                            bar(outcome)
                finally:
                    # Stop the executor's workers now (a Ray instance of its own, a GPU worker),
                    # not whenever the generator is collected.
                    if isinstance(outcomes, Generator):
                        outcomes.close()
                if ctrl_c.seen:
                    raise KeyboardInterrupt
        except KeyboardInterrupt:
            # The transaction of an item being stored rolled back; the items in flight stay
            # as they were (an outcome that came after Ctrl-C is not stored either). What this
            # run did is read back from the store below.
            interrupted = True
        except ctypes.ArgumentError:
            # ctypes wraps what is raised while it converts a call's arguments, and z3 converts
            # its arguments in Python: a Ctrl-C that lands there arrives as this error.
            if ctrl_c is None or not ctrl_c.seen:
                raise
            interrupted = True
        seconds = time.perf_counter() - t0
        info = campaign_info(store, campaign_id)
        now = item_states(store, campaign_id)
    ran, failed, verdicts = _this_run(before, now)
    report = CampaignReport(info, resumed, ran, failed, verdicts, seconds, executor.summary or executor.name)
    if interrupted:
        raise CampaignInterrupted(report)
    return report


def _bar(
    console: Console, name: str, before: Sequence[ItemState], settled: int, retry_failed: bool
) -> CampaignProgress:
    """The progress bar, starting from the items settled before this run."""
    verdicts = Counter(s.verdict for s in before if s.verdict is not None)
    kept = 0 if retry_failed else sum(1 for s in before if s.state == "failed")
    return CampaignProgress(console, name, len(before), settled, verdicts, kept)


def _this_run(before: dict[str, ItemState], now: Sequence[ItemState]) -> tuple[int, int, dict[str, int]]:
    """Items this run settled (each settling counts an attempt), how many of those could not
    run, and its runs by status: read from the store, so an item whose transaction committed just
    as Ctrl-C came counts, and one rolled back does not."""
    settled = [s for s in now if s.attempts > before[s.item].attempts]
    verdicts = Counter(s.verdict for s in settled if s.verdict is not None)
    return len(settled), sum(1 for s in settled if s.state == "failed"), verdict_counts(verdicts)
