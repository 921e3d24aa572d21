"""Live per-stage progress on a terminal: the stage, a spinner, seconds so far, its status when done."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import Progress, ProgressColumn, SpinnerColumn, Task, TaskID, TextColumn
from rich.text import Text

from karyamorph.harness.stages.base import StageResult
from karyamorph.table import STATUS_STYLES


class _Mark(SpinnerColumn):
    """A spinner while the stage runs; its status, coloured, once it has ended."""

    def render(self, task: Task) -> Text:
        status = task.fields.get("status")
        if task.finished and status:
            return Text(f"{status:<5}", style=STATUS_STYLES.get(status, ""))
        return super().render(task)  # type: ignore[return-value]


class _Seconds(ProgressColumn):
    """Seconds since the stage started (its own measured seconds once it has ended)."""

    def render(self, task: Task) -> Text:
        seconds = task.fields.get("seconds")
        if seconds is None:
            seconds = task.elapsed or 0.0
        return Text(f"{seconds:6.1f} s", style="cyan")


class StageProgress:
    """A :data:`karyamorph.harness.pipeline.StageHook` that draws one line per stage.

    Use as a context manager around the pipeline run; the lines are cleared at the end (the
    run's table follows them). Pass a console that is a terminal: on anything else rich draws
    nothing live, and callers stay quiet by not passing a hook at all.

    Parameters
    ----------
    console : Console
        Where to draw.
    transient : bool
        Clear the lines when the run ends (default True).
    """

    def __init__(self, console: Console, *, transient: bool = True) -> None:
        self._progress = Progress(
            _Mark(), TextColumn("{task.description:<12}"), _Seconds(), TextColumn("{task.fields[note]}"),
            console=console, transient=transient, refresh_per_second=10,
        )  # fmt: skip
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> StageProgress:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def __call__(self, name: str, result: StageResult | None) -> None:
        """Start the line of stage ``name`` (``result`` None), or end it with its status."""
        if result is None:
            self._tasks[name] = self._progress.add_task(name, total=1, status=None, seconds=None, note="")
            return
        task = self._tasks.get(name)
        if task is None:
            task = self._progress.add_task(name, total=1)
        note = str(result.data.get("reason", "")) if result.status == "skip" else ""
        self._progress.update(task, completed=1, status=str(result.status), seconds=result.seconds, note=note)
