"""What ``campaign run``, ``campaign status`` and ``campaign list`` print as tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Group, RenderableType
from rich.text import Text

from karyamorph.campaign.runner import CampaignReport
from karyamorph.store.campaigns import CampaignInfo, ItemState
from karyamorph.table import table

MAX_FAILURES_SHOWN = 20


def _counts(info: CampaignInfo) -> str:
    return f"{info.items} items: {info.done} done, {info.failed} failed, {info.pending} pending"


def _head(info: CampaignInfo) -> str:
    label = f" [{info.label}]" if info.label else ""
    return f"campaign {info.campaign_id}  {info.name}{label}\n{_counts(info)}"


def _failures(states: Sequence[ItemState]) -> RenderableType | None:
    failed = [s for s in states if s.state == "failed"]
    if not failed:
        return None
    rows = [(s.item, s.attempts, s.reason or "") for s in failed[:MAX_FAILURES_SHOWN]]
    more = f" (the first {MAX_FAILURES_SHOWN} of {len(failed)})" if len(failed) > MAX_FAILURES_SHOWN else ""
    return table(["failed item", "attempts", "reason"], rows, title=f"failed items{more}")


def report_view(
    report: CampaignReport, states: Sequence[ItemState], db: Path | None = None
) -> RenderableType:
    """The end of ``campaign run``: the campaign, this run's figures, failures, what to try next."""
    info = report.info
    verb = "resumed" if report.resumed else "started"
    rate = f" ({report.items_per_minute:.1f} items/min)" if report.ran else ""
    parts: list[RenderableType] = [
        Text(
            f"{_head(info)}\n{verb}; this run settled {report.ran} item(s), {report.failed} failed, "
            f"in {report.seconds:.1f} s{rate}; {report.executor}"
        )
    ]
    failures = _failures(states)
    if failures is not None:
        parts.append(failures)
    flag = f" --db {db}" if db is not None else ""
    query = (
        "SELECT r.item, r.status, m.name, m.value, m.unit FROM runs r JOIN metrics m USING (run_id) "
        f"WHERE r.campaign_id = '{info.campaign_id}' AND m.stage = 'compile' ORDER BY r.item"
    )
    tail = f"Try next:\n  karyamorph campaign status {info.campaign_id[:8]}{flag}"
    tail += f'\n  karyamorph query "{query}"{flag}'
    if info.failed:
        tail += f"\n  karyamorph campaign run {info.params.get('file', 'CAMPAIGN.toml')} --retry-failed{flag}"
    parts.append(Text(tail))
    return Group(*parts)


def status_view(info: CampaignInfo, states: Sequence[ItemState]) -> RenderableType:
    """``campaign status``: the campaign, its counts, its stages, and its failed items."""
    stages = ", ".join(info.params.get("stages") or [])
    lines = f"{_head(info)}\nfile: {info.params.get('file', '')}\nstages: {stages}"
    parts: list[RenderableType] = [Text(lines)]
    failures = _failures(states)
    if failures is not None:
        parts.append(failures)
    return Group(*parts)


def list_view(infos: Sequence[CampaignInfo]) -> RenderableType:
    """``campaign list``: one row per campaign, newest first."""
    if not infos:
        return Text("no campaigns in the database yet")
    rows = [
        (
            i.campaign_id[:8],
            i.name,
            i.label or "",
            i.created_at,
            i.items,
            i.done,
            Text(str(i.failed), style="bold red") if i.failed else i.failed,
            i.pending,
        )
        for i in infos
    ]
    return table(
        ["id", "name", "label", "created", "items", "done", "failed", "pending"], rows, no_wrap=["id"]
    )
