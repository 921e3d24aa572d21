"""Live campaign progress on a terminal: a bar of items settled, the rate per minute, ETA, and the
runs counted by verdict beside the items that could not run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
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
from karyamorph.campaign.verdicts import verdict_counts
from karyamorph.harness.stages.base import Status


class _PerMinute(ProgressColumn):
    """Items per minute over the last half minute (rich's own speed estimate)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("  -- /min" if speed is None else f"{60 * speed:6.1f}/min", style="cyan")


class _Tally(ProgressColumn):
    """The runs by verdict and the items that could not run; red once one fails the campaign."""

    def render(self, task: Task) -> Text:
        return Text(task.fields["tally"], style="red" if task.fields["failing"] else "green")


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
    verdicts : mapping of str to int, optional
        The runs of the items done before this run, by status.
    could_not_run : int
        Items failed (no run) before this run, and not being retried.
    """

    def __init__(self, console: Console, name: str, total: int, settled: int = 0,
                 verdicts: Mapping[str, int] | None = None, could_not_run: int = 0) -> None:  # fmt: skip
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), _PerMinute(),
            TimeRemainingColumn(), _Tally(), TextColumn("[dim]{task.fields[last]}"), console=console,
            refresh_per_second=4,
        )  # fmt: skip
        self._verdicts = Counter(verdicts or {})
        self._could_not_run = could_not_run
        tally, failing = self._tally()
        self._task = self._progress.add_task(
            name, total=total, completed=settled, last="", tally=tally, failing=failing
        )

    def _tally(self) -> tuple[str, bool]:
        """``4 pass, 2 fail, 1 could not run`` (pass and fail always, the rest where not 0), and
        whether any of it fails the campaign."""
        counts = verdict_counts(self._verdicts)
        shown = [f"{n} {v}" for v, n in counts.items() if n or v in (Status.PASS, Status.FAIL)]
        shown += [f"{self._could_not_run} could not run"] * (self._could_not_run > 0)
        failing = self._could_not_run > 0 or any(Status(v).fails() for v in +self._verdicts)
        return ", ".join(shown), failing

    def __enter__(self) -> CampaignProgress:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def __call__(self, outcome: ItemOutcome) -> None:
        """Count one settled item (its run's verdict, or that it could not run) and show its key."""
        if outcome.failed:
            self._could_not_run += 1
        else:
            self._verdicts[outcome.status] += 1
        tally, failing = self._tally()
        self._progress.update(
            self._task, advance=1, last=f"{outcome.status} {outcome.key}", tally=tally, failing=failing
        )
