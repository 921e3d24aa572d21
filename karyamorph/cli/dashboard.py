"""``karyamorph dashboard`` and ``karyamorph report``.

Like the rest of the CLI, they import the server and the store inside the command, so
``karyamorph --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from karyamorph.cli.options import EXAMPLES, db_option, db_path, gpu_place
from karyamorph.cli.output import friendly_errors


@click.command("dashboard")
@click.argument("spec_path", metavar="[SPEC.toml]", required=False, type=click.Path(dir_okay=False))
@db_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: a free one).")  # fmt: skip
@click.option("--no-browser", is_flag=True, help="Do not open a browser; just print the URL.")
@click.option(
    "--workspace",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder for the spec and PTX of runs started from the page (default: a temporary one).",
)
@click.option(
    "--gpu", envvar="KARYAMORPH_GPU", default=None, metavar="ssh://[USER@]HOST[:PORT]",
    help="Run the page's runs' GPU work on this host over SSH (see `karyamorph remote setup`); the "
         "server, compiling, the model and the database stay here. Default $KARYAMORPH_GPU, else "
         "this machine's GPU; `local` means this machine.",
)  # fmt: skip
@friendly_errors
def dashboard(spec_path: str | None, db: str | None, host: str, port: int, no_browser: bool,
              workspace: str | None, gpu: str | None) -> None:  # fmt: skip
    """Serve a local page: edit PTX, run it, and see every result tile (Ctrl-C stops it).

    The URL carries a random access token; requests without it are refused. The page opens the
    database only for the moment of each request, so `karyamorph run` keeps working beside it."""
    from karyamorph.dashboard.server import Served, Server, open_browser
    from karyamorph.dashboard.state import State
    from karyamorph.dashboard.workbench import from_spec_file
    from karyamorph.remote.place import is_local

    spec = Path(spec_path) if spec_path else None
    if spec is not None:
        from_spec_file(spec)  # a bad spec is an error now, not a surprise on the page
    with gpu_place(gpu):  # an unreachable host, or one not set up, stops the command here
        pass
    state = State.create(db_path(db), workspace=Path(workspace) if workspace else None, examples=EXAMPLES,
                         spec=spec, gpu=None if is_local(gpu) else gpu)  # fmt: skip
    server = Server(state, host, port)

    def ready(served: Served) -> None:
        click.echo(f"KaryaMorph dashboard on {state.db.path}:\n    {served.url}\n(Ctrl-C stops it)", err=True)
        if not no_browser:
            open_browser(served.url)

    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.run(on_ready=ready)
    except OSError as exc:  # the address is taken or not ours to bind
        click.echo(f"error: cannot serve on {host}:{port}: {exc}", err=True)
        sys.exit(2)


@click.command("report")
@click.argument("run_id")
@db_option
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="The HTML file to write.")  # fmt: skip
@click.option("--baseline", default=None, metavar="RUN_ID", help="A run to compare with.")
@friendly_errors
def report(run_id: str, db: str | None, output: str, baseline: str | None) -> None:
    """Write one run's tiles as a self-contained HTML file (RUN_ID: the id or its start)."""
    from karyamorph.dashboard.report import write_report

    try:
        path = write_report(db_path(db), run_id, Path(output), baseline)
    except OSError as exc:
        click.echo(f"error: cannot write {output}: {exc}", err=True)
        sys.exit(2)
    click.echo(f"wrote {path}", err=True)


COMMANDS: tuple[click.Command, ...] = (dashboard, report)
"""The commands the main CLI adds."""
