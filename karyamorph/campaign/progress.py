"""Live campaign progress on a terminal: a bar of items settled, the rate per minute, ETA, failures."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from karyamorph.campaign.execute import ItemOutcome


class _PerMinute(ProgressColumn):
    """Items per minute over the last half minute (rich's own speed estimate)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("  -- /min" if speed is None else f"{60 * speed:6.1f}/min", style="cyan")


class CampaignProgress:
    """A bar for one campaign: call it with each :class:`ItemOutcome` as it is stored.

    Parameters
    ----------
    console : Console
        Where to draw (a terminal; elsewhere rich draws nothing live).
    name : str
        The campaign's name, at the start of the line.
    total : int
        Items in the campaign.
    settled : int
        Items done or failed before this run started (the bar starts there; the rate and ETA
        count only this run's items).
    failed : int
        Items failed before this run (and not being retried).
    """

    def __init__(self, console: Console, name: str, total: int, settled: int = 0, failed: int = 0) -> None:
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), _PerMinute(),
            TimeRemainingColumn(), TextColumn("[red]{task.fields[failed]} failed"),
            TextColumn("[dim]{task.fields[last]}"), console=console, refresh_per_second=4,
        )  # fmt: skip
        self._failed = failed
        self._task = self._progress.add_task(name, total=total, completed=settled, failed=failed, last="")

    def __enter__(self) -> CampaignProgress:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def __call__(self, outcome: ItemOutcome) -> None:
        """Count one settled item (a failure in red) and show its key."""
        self._failed += outcome.failed
        self._progress.update(
            self._task, advance=1, failed=self._failed, last=f"{outcome.status} {outcome.key}"
        )
