"""Reading campaigns back: find one by id prefix or definition, its items' states, the list."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from karyamorph.store.database import Store
from karyamorph.store.errors import StoreError
from karyamorph.store.id_prefix import find_by_prefix
from karyamorph.store.items import STATES


class CampaignNotFoundError(StoreError):
    """No campaign, or more than one, has the id (or id prefix) asked for."""


@dataclass(frozen=True, slots=True)
class ItemState:
    """Where one item of a campaign stands: its state, attempts, failure reason and run.

    ``verdict`` is the status of its run (``runs.status``: pass, fail, error, unknown or skip;
    None while it has no run); ``failing_stages`` names each stage of that run that ended fail,
    error or unknown, with that status, in the run's order.
    """

    item: str
    position: int
    state: str
    attempts: int
    reason: str | None
    run_id: str | None
    verdict: str | None = None
    failing_stages: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CampaignInfo:
    """One campaign: its row, how many of its items are pending, done (they ran: their run is
    stored) and failed (they could not run: no run), and its runs counted by status.

    ``verdicts`` maps each status its runs ended with (``runs.status``, as ``karyamorph run``
    states it: pass, fail, error, unknown, skip) to how many did; a status no run has is absent.
    """

    campaign_id: str
    name: str
    created_at: datetime
    params: dict[str, Any]
    pending: int
    done: int
    failed: int
    verdicts: dict[str, int] = field(default_factory=dict)

    @property
    def items(self) -> int:
        """How many items the campaign has."""
        return self.pending + self.done + self.failed

    @property
    def label(self) -> str | None:
        """The label the campaign was started with (``--label``), if any."""
        value = self.params.get("label")
        return str(value) if value is not None else None

    def as_dict(self) -> dict[str, Any]:
        """The campaign as a JSON-ready dict (what ``campaign status --format json`` prints)."""
        return {
            "campaign_id": self.campaign_id, "name": self.name, "label": self.label,
            "created_at": self.created_at.isoformat(), "file": self.params.get("file"),
            "stages": self.params.get("stages"), "items": self.items, "done": self.done,
            "failed": self.failed, "pending": self.pending, "verdicts": dict(sorted(self.verdicts.items())),
        }  # fmt: skip


# A done item's run_id names its run (one transaction writes both), so the join finds the
# status of each run of the campaign's items and of nothing else.
_INFO = (
    "SELECT c.campaign_id, c.name, c.created_at, c.params, "
    "count(i.item) FILTER (WHERE i.state = 'pending'), count(i.item) FILTER (WHERE i.state = 'done'), "
    "count(i.item) FILTER (WHERE i.state = 'failed'), "
    "histogram(r.status) FILTER (WHERE r.status IS NOT NULL) "
    "FROM campaigns c LEFT JOIN campaign_items i USING (campaign_id) "
    "LEFT JOIN runs r ON r.run_id = i.run_id "
)
_GROUP = "GROUP BY c.campaign_id, c.name, c.created_at, c.params ORDER BY c.created_at DESC, c.campaign_id"


def _info(row: tuple[Any, ...]) -> CampaignInfo:
    campaign_id, name, created_at, params, pending, done, failed, verdicts = row
    loaded = json.loads(params) if isinstance(params, str) else params
    counts = {str(k): int(v) for k, v in (verdicts or {}).items()}
    return CampaignInfo(campaign_id, name, created_at, loaded, int(pending), int(done), int(failed), counts)


def list_campaigns(store: Store) -> list[CampaignInfo]:
    """Every campaign with its item counts, newest first."""
    return [_info(r) for r in store.query(_INFO + _GROUP).rows]


def campaign_info(store: Store, campaign_id: str) -> CampaignInfo:
    """The campaign ``campaign_id`` (a full id) with its item counts.

    Raises
    ------
    CampaignNotFoundError
        No such campaign.
    """
    rows = store.query(_INFO + "WHERE c.campaign_id = ? " + _GROUP, [campaign_id]).rows
    if not rows:
        raise CampaignNotFoundError(f"no campaign {campaign_id} in {store.path}")
    return _info(rows[0])


def find_campaign(store: Store, prefix: str) -> str:
    """The full id of the one campaign whose id is ``prefix`` or starts with it.

    Raises
    ------
    CampaignNotFoundError
        No campaign matches, or several do (the message lists them: see
        :func:`~karyamorph.store.id_prefix.find_by_prefix`).
    """
    return find_by_prefix(
        store,
        prefix,
        noun="campaign",
        table="campaigns",
        columns=("campaign_id", "name"),
        describe=lambda row: f"{row[0]}  {row[1]}",
        error=CampaignNotFoundError,
    )


def find_by_definition(store: Store, definition: str, label: str | None) -> str | None:
    """The newest campaign made from the definition hash ``definition`` with ``label``, or None."""
    rows = store.query(
        "SELECT campaign_id FROM campaigns WHERE params->>'definition' = ? "
        "AND (params->>'label') IS NOT DISTINCT FROM ? ORDER BY created_at DESC LIMIT 1",
        [definition, label],
    ).rows
    return str(rows[0][0]) if rows else None


def item_states(store: Store, campaign_id: str) -> list[ItemState]:
    """Every item of the campaign in its order, with its state (and its run's verdict)."""
    rows = store.query(
        "SELECT i.item, i.position, i.state, i.attempts, i.reason, i.run_id, any_value(r.status), "
        "list((s.stage, s.status) ORDER BY s.position) "
        "FILTER (WHERE s.status IN ('fail', 'error', 'unknown')) "
        "FROM campaign_items i LEFT JOIN runs r ON r.run_id = i.run_id "
        "LEFT JOIN stages s ON s.run_id = i.run_id "
        "WHERE i.campaign_id = ? GROUP BY ALL ORDER BY i.position",
        [campaign_id],
    ).rows
    states = [
        ItemState(item, position, state, attempts, reason, run_id, verdict,
                  tuple((str(stage), str(status)) for stage, status in stages or ()))
        for item, position, state, attempts, reason, run_id, verdict, stages in rows
    ]  # fmt: skip
    odd = {s.state for s in states} - set(STATES)
    if odd:
        raise StoreError(f"campaign {campaign_id} in {store.path} has items in unknown states {sorted(odd)}")
    return states
