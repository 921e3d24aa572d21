"""Run a campaign: create or resume it in the store, run what is missing, store each outcome.

This process is the one writer of the database. Each item's run and its new state go in one
transaction (:meth:`~karyamorph.store.database.Store.record_item_run`), so a campaign killed at
any moment (SIGKILL included) leaves every item either done with exactly one run, or not done
with none; running the campaign again runs only what is not done.
"""

from __future__ import annotations

import dataclasses
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from karyamorph.campaign.definition import CampaignError, CampaignFile, load_campaign
from karyamorph.campaign.execute import Executor, ItemOutcome
from karyamorph.campaign.items import Item, expand
from karyamorph.campaign.local import LocalExecutor
from karyamorph.campaign.plan import Plan, definition_hash, plan_of
from karyamorph.campaign.progress import CampaignProgress
from karyamorph.store.campaigns import (
    CampaignInfo,
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
        Items this run settled, and how many of those failed.
    seconds : float
        Wall time from the first item submitted to the last one stored.
    executor : str
        What ran where.
    """

    info: CampaignInfo
    resumed: bool
    ran: int
    failed: int
    seconds: float
    executor: str

    @property
    def items_per_minute(self) -> float:
        """Items settled per minute of this run (0 when it ran none)."""
        return 60.0 * self.ran / self.seconds if self.ran and self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict: the campaign's status plus this run's figures."""
        return {
            **self.info.as_dict(), "resumed": self.resumed, "ran": self.ran, "failed_now": self.failed,
            "seconds": self.seconds, "items_per_minute": self.items_per_minute, "executor": self.executor,
        }  # fmt: skip


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
        Where items run (default :class:`LocalExecutor`; :class:`RayExecutor` for a cluster).
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
    """
    campaign = load_campaign(path)
    items = expand(campaign)
    plan = plan_of(campaign)
    executor = executor or LocalExecutor()
    with open_waiting(Path(db)) as store:
        campaign_id, resumed = open_campaign(store, campaign, items, plan, label=label, resume=resume)
        states = {s.item: s.state for s in item_states(store, campaign_id)}
        missing = [i.key for i in items if i.key not in states]
        if missing:
            raise CampaignError(
                campaign.path.name, f"campaign {campaign_id} in {db} lacks item {missing[0]!r}"
            )
        wanted = ("pending", "failed") if retry_failed else ("pending",)
        todo = [i for i in items if states[i.key] in wanted]
        settled = len(items) - len(todo)
        kept_failures = sum(1 for s in states.values() if s == "failed") if not retry_failed else 0
        live = console is not None and console.is_terminal and bool(todo)
        bar = CampaignProgress(console, campaign.name, len(items), settled, kept_failures) if live else None  # type: ignore[arg-type]
        ran = failed = 0
        t0 = time.perf_counter()
        with bar or nullcontext():
            for outcome in executor.run(todo, plan):
                store_outcome(store, campaign_id, outcome, label)
                ran, failed = ran + 1, failed + outcome.failed
                if bar is not None:
                    bar(outcome)
        seconds = time.perf_counter() - t0
        info = campaign_info(store, campaign_id)
    return CampaignReport(info, resumed, ran, failed, seconds, executor.summary or executor.name)
