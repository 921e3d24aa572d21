"""Campaign items as rows: insert a campaign with its items, and settle one item (done or failed).

The functions here only execute statements on a connection whose transaction the caller owns
(:class:`~karyamorph.store.database.Store` opens it), so an item's new state commits together
with its run, or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from karyamorph.store.records import canonical_json

STATES = ("pending", "done", "failed")
"""What an item can be: not run yet, run (its run is stored), or tried and failed (no run)."""


@dataclass(frozen=True, slots=True)
class ItemRecord:
    """One item of a campaign as the store keeps it.

    Parameters
    ----------
    item : str
        The item's key, unique in its campaign (``"../kernels/vadd.toml n=4096 sm_90"``).
    position : int
        Its place in the campaign's order.
    spec_path : str
        The spec file, as the campaign file names it.
    arch : str or None
        The target, or None for the GPU's own (else the PTX's ``.target``).
    sizes : dict
        Every size of the spec at this item (the spec's own values with the sweep's over them).
    """

    item: str
    position: int
    spec_path: str
    arch: str | None
    sizes: dict[str, int] = field(default_factory=dict)


class ItemStateError(ValueError):
    """An item that is not in its campaign, or is settled already, was asked to be settled."""


def insert_campaign(
    con: duckdb.DuckDBPyConnection, campaign_id: str, name: str, params: Mapping[str, Any],
    items: Sequence[ItemRecord], now: datetime,
) -> None:  # fmt: skip
    """Insert the campaign row and every item as ``pending``, in the caller's transaction."""
    con.execute(
        "INSERT INTO campaigns VALUES (?, ?, ?, ?)",
        [campaign_id, name, now, canonical_json(dict(params), "params")],
    )
    if not items:
        return
    con.execute(
        "INSERT INTO campaign_items SELECT ?, unnest(?::VARCHAR[]), unnest(?::INTEGER[]), "
        "unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), unnest(?::JSON[]), 'pending', 0, NULL, NULL, ?",
        [campaign_id, [i.item for i in items], [i.position for i in items], [i.spec_path for i in items],
         [i.arch for i in items], [canonical_json(i.sizes, f"sizes of {i.item}") for i in items], now],
    )  # fmt: skip


def settle_item(
    con: duckdb.DuckDBPyConnection, campaign_id: str, item: str, now: datetime, *,
    run_id: str | None = None, reason: str | None = None,
) -> None:  # fmt: skip
    """Mark ``item`` done (with ``run_id``) or failed (with ``reason``), counting the attempt.

    Raises
    ------
    ItemStateError
        The campaign has no such item, or it is done already (a second run of a done item
        would store it twice, so its transaction must not commit).
    """
    if (run_id is None) == (reason is None):
        raise ValueError("settle an item with either a run id (done) or a reason (failed)")
    state = "done" if run_id is not None else "failed"
    hit = con.execute(
        "UPDATE campaign_items SET state = ?, run_id = ?, reason = ?, attempts = attempts + 1, "
        "updated_at = ? WHERE campaign_id = ? AND item = ? AND state <> 'done' RETURNING item",
        [state, run_id, reason, now, campaign_id, item],
    ).fetchall()
    if not hit:
        known = con.execute(
            "SELECT state FROM campaign_items WHERE campaign_id = ? AND item = ?", [campaign_id, item]
        ).fetchall()
        what = "is done already" if known else "is not an item of it"
        raise ItemStateError(f"campaign {campaign_id}: item {item!r} {what}")
