"""The run list: runs newest first, narrowed by the filters, with each campaign's runs folded
into one row (a campaign of a thousand items would otherwise push every other run off the page).

A campaign's runs carry its ``campaign_id`` (see :mod:`karyamorph.store.schema`); the row that
stands for them counts the runs that pass the filters, and choosing the campaign lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from karyamorph.store.database import Store

PAGE = 50
"""Rows listed per page: the first paint reads these and no more."""

NO_CAMPAIGN = "none"
"""The campaign filter's value for runs that belong to no campaign (campaign ids are UUIDs)."""


@dataclass(frozen=True, slots=True)
class RunFilter:
    """What the run list shows.

    Attributes
    ----------
    text : str
        Keep runs whose id, entry, label, arch, status, device or spec path contains it
        (case-insensitive); empty: all.
    campaign : str
        A campaign's id: its runs only, unfolded; :data:`NO_CAMPAIGN`: runs of no campaign;
        empty: every run.
    label : str
        Runs with exactly this label; empty: any.
    entry : str
        Runs of this kernel entry; empty: any.
    unfold : bool
        List campaign runs one by one instead of one row per campaign.
    """

    text: str = ""
    campaign: str = ""
    label: str = ""
    entry: str = ""
    unfold: bool = False

    @property
    def narrows(self) -> bool:
        """Whether any filter leaves runs out."""
        return bool(self.text or self.campaign or self.label or self.entry)

    @property
    def folds(self) -> bool:
        """Whether campaign runs are folded: unless asked to unfold or one campaign is chosen."""
        return not self.unfold and self.campaign in ("", NO_CAMPAIGN)

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> RunFilter:
        """The filter a request's query string asks for (``q``, ``campaign``, ``label``,
        ``entry``, ``unfold``); missing fields take their defaults."""
        return cls(
            text=params.get("q", "").strip(), campaign=params.get("campaign", ""),
            label=params.get("label", ""), entry=params.get("entry", ""),
            unfold=params.get("unfold", "") not in ("", "0"),
        )  # fmt: skip

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition on ``runs r`` (joined with ``devices d``) and its parameters."""
        terms: list[str] = []
        params: list[Any] = []
        if self.text:
            terms.append(
                "concat_ws(' ', r.run_id, r.entry, r.label, r.arch, r.status, d.name, r.spec_path) ILIKE ?"
            )
            params.append(f"%{self.text}%")
        if self.campaign == NO_CAMPAIGN:
            terms.append("r.campaign_id IS NULL")
        elif self.campaign:
            terms.append("r.campaign_id = ?")
            params.append(self.campaign)
        for column, value in (("r.label", self.label), ("r.entry", self.entry)):
            if value:
                terms.append(f"{column} = ?")
                params.append(value)
        return (f"WHERE {' AND '.join(terms)}" if terms else ""), params


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run of the list."""

    kind: ClassVar[str] = "run"
    run_id: str
    created_at: datetime
    entry: str
    label: str | None
    spec_path: str | None
    arch: str
    status: str
    device: str | None


@dataclass(frozen=True, slots=True)
class CampaignRow:
    """A campaign's runs folded into one row of the list: how many pass the filters, the newest
    one's time, their kernels and archs, and how many ended in each status."""

    kind: ClassVar[str] = "campaign"
    campaign_id: str
    name: str | None
    label: str | None
    created_at: datetime
    runs: int
    entries: tuple[str, ...]
    archs: tuple[str, ...]
    statuses: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class RunPage:
    """A page of the run list, newest first: its rows, where it starts, how many rows there are
    in all and how many runs they stand for."""

    rows: tuple[RunRow | CampaignRow, ...]
    offset: int
    total: int
    runs: int
    filter: RunFilter = RunFilter()

    @property
    def next_offset(self) -> int | None:
        """Where the next page starts, or None on the last page."""
        end = self.offset + len(self.rows)
        return end if end < self.total else None

    @property
    def folded(self) -> int:
        """How many runs the folded campaign rows of this page stand for."""
        return sum(r.runs for r in self.rows if isinstance(r, CampaignRow))


@dataclass(frozen=True, slots=True)
class CampaignChoice:
    """A campaign the campaign filter offers: its id, name, label and number of runs."""

    campaign_id: str
    name: str | None
    label: str | None
    runs: int


@dataclass(frozen=True, slots=True)
class FilterChoices:
    """What the filters offer: the campaigns that have runs (newest first), every label and
    every kernel entry (in order)."""

    campaigns: tuple[CampaignChoice, ...]
    labels: tuple[str, ...]
    entries: tuple[str, ...]


# One listed row per run, or per campaign when folding. The campaign rows aggregate the runs
# that passed the filter; the outer query pages over both kinds together, newest first.
_LISTED = """
WITH matching AS (
    SELECT r.run_id, r.created_at, r.entry, r.label, r.spec_path, r.arch, r.status, d.name AS device,
           r.campaign_id
    FROM runs r LEFT JOIN devices d USING (device_id) {where}
), listed AS (
    SELECT 'run' AS kind, run_id AS id, created_at, entry, label, spec_path, arch, status, device,
           1 AS n, NULL AS entries, NULL AS archs, NULL AS statuses
    FROM matching WHERE NOT ? OR campaign_id IS NULL
    UNION ALL
    SELECT 'campaign', campaign_id, max(created_at), NULL, NULL, NULL, NULL, NULL, NULL, count(*),
           list(DISTINCT entry ORDER BY entry), list(DISTINCT arch ORDER BY arch), histogram(status)
    FROM matching WHERE ? AND campaign_id IS NOT NULL GROUP BY campaign_id
)
"""


def run_page(store: Store, where: RunFilter = RunFilter(), *, offset: int = 0, limit: int = PAGE) -> RunPage:
    """The rows of the run list that ``where`` keeps, newest first, from ``offset`` on."""
    condition, params = where.where()
    listed = _LISTED.format(where=condition)
    params = [*params, where.folds, where.folds]
    total, runs = store.query(f"{listed} SELECT count(*), coalesce(sum(n), 0) FROM listed", params).rows[0]
    found = store.query(
        f"{listed} SELECT l.*, c.name, c.params->>'label' FROM listed l "
        "LEFT JOIN campaigns c ON l.kind = 'campaign' AND c.campaign_id = l.id "
        "ORDER BY l.created_at DESC, l.id LIMIT ? OFFSET ?",
        [*params, limit, offset],
    ).rows
    rows: list[RunRow | CampaignRow] = []
    for kind, key, created, *run, n, entries, archs, statuses, name, label in found:
        if kind == "run":
            rows.append(RunRow(key, created, *run))
        else:
            counted = sorted(dict(statuses).items(), key=lambda kv: (-kv[1], kv[0]))
            rows.append(CampaignRow(key, name, label, created, int(n), tuple(entries), tuple(archs),
                                    tuple(counted)))  # fmt: skip
    return RunPage(tuple(rows), offset, int(total), int(runs), where)


def filter_choices(store: Store) -> FilterChoices:
    """The campaigns, labels and kernel entries the run list's filters offer."""
    campaigns = store.query(
        "SELECT r.campaign_id, any_value(c.name), any_value(c.params->>'label'), count(*) "
        "FROM runs r LEFT JOIN campaigns c USING (campaign_id) WHERE r.campaign_id IS NOT NULL "
        "GROUP BY r.campaign_id ORDER BY max(r.created_at) DESC, r.campaign_id"
    ).rows
    labels = store.query("SELECT DISTINCT label FROM runs WHERE label IS NOT NULL ORDER BY label").rows
    entries = store.query("SELECT DISTINCT entry FROM runs ORDER BY entry").rows
    return FilterChoices(
        tuple(CampaignChoice(cid, name, label, int(n)) for cid, name, label, n in campaigns),
        tuple(str(r[0]) for r in labels), tuple(str(r[0]) for r in entries),
    )  # fmt: skip
