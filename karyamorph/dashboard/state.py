"""What one dashboard server keeps between requests: the database's path (never an open
connection), the runs it started, the pinned baseline, and where example kernels are."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl

from starlette.requests import Request

from karyamorph.dashboard.access import Database
from karyamorph.dashboard.jobs import Jobs
from karyamorph.dashboard.machine import MachineProbe


@dataclass(slots=True)
class State:
    """The server's state; ``pinned`` is the run the comparison tile compares with."""

    db: Database
    jobs: Jobs
    examples: Path | None = None
    spec: Path | None = None
    pinned: str | None = None
    machine: MachineProbe = field(default_factory=MachineProbe)

    @classmethod
    def create(cls, db: Path, *, workspace: Path | None = None, examples: Path | None = None,
               spec: Path | None = None, gpu: str | None = None) -> State:  # fmt: skip
        """State for a server on ``db``; runs started from the page write their spec and PTX
        under ``workspace`` (default: a new temporary folder) and send their GPU work to ``gpu``
        (an ``ssh://`` host; None: this machine). Every path is kept absolute, so that it names
        the same file from the runners' folders and after a change of directory."""
        folder = (workspace or Path(tempfile.mkdtemp(prefix="karyamorph-dashboard-"))).absolute()
        examples = examples.absolute() if examples and examples.is_dir() else None
        return cls(Database(db.absolute()), Jobs(folder, db.absolute(), gpu), examples,
                   spec.absolute() if spec else None)  # fmt: skip

    def example_names(self) -> list[str]:
        """The ``*.toml`` specs of the examples folder, by stem."""
        return sorted(p.stem for p in self.examples.glob("*.toml")) if self.examples else []


def state_of(request: Request) -> State:
    """The server's :class:`State` (kept on the app)."""
    state: State = request.app.state.dashboard
    return state


async def form_fields(request: Request) -> dict[str, str]:
    """The request's ``application/x-www-form-urlencoded`` body as a dict (last value wins) with
    the query string's fields under it."""
    body = (await request.body()).decode()
    fields = dict(request.query_params)
    fields.update(parse_qsl(body, keep_blank_values=True))
    return fields
