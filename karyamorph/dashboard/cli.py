"""``karyamorph dashboard`` and ``karyamorph report``: click commands, registered by the main CLI.

Like the main CLI, they import the server and the store inside the command, so ``karyamorph
--help`` stays fast.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

import karyamorph
from karyamorph.store import DEFAULT_FILE

F = TypeVar("F", bound=Callable[..., Any])
# The example kernels of a source checkout (datasets/ does not ship in the wheel).
EXAMPLES = Path(karyamorph.__file__).resolve().parent.parent / "datasets" / "kernels"


def _db_path(db: str | None) -> Path:
    return Path(db or os.environ.get("KARYAMORPH_DB") or DEFAULT_FILE)


def _friendly(fn: F) -> F:
    """Known errors as one line on stderr and exit status 2, as the main CLI does."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from karyamorph.kernel.spec import SpecError
        from karyamorph.store.database import StoreError

        try:
            return fn(*args, **kwargs)
        except (StoreError, SpecError, OSError) as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


db_option = click.option(
    "--db", default=None, help=f"DuckDB file (default ${{KARYAMORPH_DB}} or ./{DEFAULT_FILE})."
)


@click.command("dashboard")
@click.argument("spec_path", metavar="[SPEC.toml]", required=False, type=click.Path(dir_okay=False))
@db_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: a free one).")  # fmt: skip
@click.option("--no-browser", is_flag=True, help="Do not open a browser; just print the URL.")
@click.option("--workspace", type=click.Path(file_okay=False), default=None,
              help="Folder for the spec and PTX of runs started from the page (default: a temporary one).")
@_friendly
def dashboard(spec_path: str | None, db: str | None, host: str, port: int, no_browser: bool,
              workspace: str | None) -> None:  # fmt: skip
    """Serve a local page: edit PTX, run it, and see every result tile (Ctrl-C stops it).

    The URL carries a random access token; requests without it are refused. The page opens the
    database only for the moment of each request, so `karyamorph run` keeps working beside it."""
    from karyamorph.dashboard.server import Served, Server, open_browser
    from karyamorph.dashboard.state import State
    from karyamorph.dashboard.workbench import from_spec_file

    spec = Path(spec_path) if spec_path else None
    if spec is not None:
        from_spec_file(spec)  # a bad spec is an error now, not a surprise on the page
    state = State.create(_db_path(db), workspace=Path(workspace) if workspace else None, examples=EXAMPLES,
                         spec=spec)  # fmt: skip
    server = Server(state, host, port)

    def ready(served: Served) -> None:
        click.echo(f"KaryaMorph dashboard on {state.db.path}:\n    {served.url}\n(Ctrl-C stops it)", err=True)
        if not no_browser:
            open_browser(served.url)

    with contextlib.suppress(KeyboardInterrupt):
        server.run(on_ready=ready)


@click.command("report")
@click.argument("run_id")
@db_option
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="The HTML file to write.")  # fmt: skip
@click.option("--baseline", default=None, metavar="RUN_ID", help="A run to compare with.")
@_friendly
def report(run_id: str, db: str | None, output: str, baseline: str | None) -> None:
    """Write one run's tiles as a self-contained HTML file (RUN_ID: the id or its start)."""
    from karyamorph.dashboard.report import write_report

    path = write_report(_db_path(db), run_id, Path(output), baseline)
    click.echo(f"wrote {path}", err=True)


COMMANDS = (dashboard, report)
"""The commands the main CLI adds."""
