"""What ``campaign run``, ``campaign status`` and ``campaign list`` print as tables.

The words keep two things apart: an item that *ran* (its run is stored, whatever the run's
verdict: pass, fail, error, unknown, skip) and one that *could not run* (no run: the store's
``failed`` state, with the reason).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Group, RenderableType
from rich.text import Text

from karyamorph.campaign.runner import CampaignReport
from karyamorph.campaign.verdicts import counts_text, not_passed, runs_text, verdict_counts
from karyamorph.store.campaigns import CampaignInfo, ItemState
from karyamorph.table import status_text, table

MAX_FAILURES_SHOWN = 20


def _head(info: CampaignInfo) -> str:
    label = f" [{info.label}]" if info.label else ""
    counts = counts_text(info.done, info.failed, info.pending, info.verdicts)
    return f"campaign {info.campaign_id}  {info.name}{label}\n{info.items} items: {counts}"


def _this_run(report: CampaignReport) -> str:
    """``this run settled 6 item(s): 6 ran (4 pass, 2 fail, 0 error, 0 unknown), 0 could not run``."""
    ran = report.ran - report.failed
    return (
        f"this run settled {report.ran} item(s): {ran} ran ({runs_text(report.verdicts)}), "
        f"{report.failed} could not run"
    )


def _shown(rows: list[tuple[object, ...]], title: str) -> str:
    more = f" (the first {MAX_FAILURES_SHOWN} of {len(rows)})" if len(rows) > MAX_FAILURES_SHOWN else ""
    return title + more


def _could_not_run(states: Sequence[ItemState]) -> RenderableType | None:
    rows: list[tuple[object, ...]] = [
        (s.item, s.attempts, s.reason or "") for s in states if s.state == "failed"
    ]
    if not rows:
        return None
    title = _shown(rows, "items that could not run (no run stored)")
    return table(["item", "attempts", "reason"], rows[:MAX_FAILURES_SHOWN], title=title)


def _not_passed(states: Sequence[ItemState]) -> RenderableType | None:
    rows: list[tuple[object, ...]] = [
        (s.item, status_text(s.verdict or ""), ", ".join(f"{n} {v}" for n, v in s.failing_stages),
         (s.run_id or "")[:8])
        for s in states if not_passed(s.verdict)
    ]  # fmt: skip
    if not rows:
        return None
    title = _shown(rows, "runs that did not pass")
    return table(
        ["item", "verdict", "stages", "run"], rows[:MAX_FAILURES_SHOWN], title=title, no_wrap=["run"]
    )


def _tables(states: Sequence[ItemState]) -> list[RenderableType]:
    return [t for t in (_not_passed(states), _could_not_run(states)) if t is not None]


def report_view(
    report: CampaignReport, states: Sequence[ItemState], db: Path | None = None, program: str = "karyamorph"
) -> RenderableType:
    """The end of ``campaign run``: the campaign, this run's figures, the runs that did not pass,
    the items that could not run, what to try next (``program``: how to type the command)."""
    info = report.info
    verb = "resumed" if report.resumed else "started"
    rate = f" ({report.items_per_minute:.1f} items/min)" if report.ran else ""
    parts: list[RenderableType] = [
        Text(
            f"{_head(info)}\n{verb}; {_this_run(report)}; in {report.seconds:.1f} s{rate}; {report.executor}"
        )
    ]
    parts.extend(_tables(states))
    flag = f" --db {db}" if db is not None else ""
    query = (
        "SELECT r.item, r.status, m.name, m.value, m.unit FROM runs r JOIN metrics m USING (run_id) "
        f"WHERE r.campaign_id = '{info.campaign_id}' AND m.stage = 'compile' ORDER BY r.item"
    )
    tail = f"Try next:\n  {program} campaign status {info.campaign_id[:8]}{flag}"
    tail += f'\n  {program} query "{query}"{flag}'
    shown = next((s.run_id for s in states if not_passed(s.verdict) and s.run_id), None)
    if shown is not None:
        tail += f"\n  {program} show {shown[:8]}{flag}"
    if info.failed:
        tail += f"\n  {program} campaign run {info.params.get('file', 'CAMPAIGN.toml')} --retry-failed{flag}"
    parts.append(Text(tail))
    return Group(*parts)


def interrupted_view(report: CampaignReport, command: str) -> str:
    """What ``campaign run`` says when Ctrl-C stops it: this run's items, the campaign's totals,
    and ``command``, the command line that resumes it."""
    return (
        f"interrupted: {_this_run(report)}; the items in flight were not stored\n"
        f"{_head(report.info)}\nresume with:\n  {command}"
    )


def status_view(info: CampaignInfo, states: Sequence[ItemState]) -> RenderableType:
    """``campaign status``: the campaign, its counts, its stages, the runs that did not pass and
    the items that could not run."""
    stages = ", ".join(info.params.get("stages") or [])
    lines = f"{_head(info)}\nfile: {info.params.get('file', '')}\nstages: {stages}"
    return Group(Text(lines), *_tables(states))


def list_view(infos: Sequence[CampaignInfo]) -> RenderableType:
    """``campaign list``: one row per campaign, newest first; its items that ran, by their run's
    verdict, those that could not run, those pending."""
    if not infos:
        return Text("no campaigns in the database yet")
    skips = any(i.verdicts.get("skip") for i in infos)
    verdicts = ["pass", "fail", "error", "unknown", *(["skip"] * skips)]
    rows = []
    for i in infos:
        counts = verdict_counts(i.verdicts)
        cells = [Text(str(counts[v]), style="bold red") if counts[v] and v in ("fail", "error")
                 else counts[v] for v in verdicts]  # fmt: skip
        could_not = Text(str(i.failed), style="bold red") if i.failed else i.failed
        head = (i.campaign_id[:8], i.name, i.label or "", i.created_at, i.items, i.done)
        rows.append((*head, *cells, could_not, i.pending))
    columns = ["id", "name", "label", "created", "items", "ran", *verdicts, "could not run", "pending"]
    return table(columns, rows, no_wrap=["id"])
