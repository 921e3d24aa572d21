"""The options the commands share and what their values mean: the database ``--db`` names, the
output ``--format``, GPU timeouts, the GPU's place (``--gpu``), size overrides, comma-separated
names, the example kernels."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from karyamorph.store import DEFAULT_FILE, store_path

if TYPE_CHECKING:
    from karyamorph.store.database import Store


F = TypeVar("F", bound=Callable[..., Any])

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"
"""The shipped example kernels' specs: what ``demo`` runs and the dashboard offers by default."""

db_option = click.option(
    "--db", default=None, help=f"DuckDB file (default ${{KARYAMORPH_DB}} or ./{DEFAULT_FILE})."
)
timeout_option = click.option(
    "--timeout", type=float, default=None,
    help="Seconds a GPU launch may run before it is killed (default: each stage's own).",
)  # fmt: skip
size_option = click.option(
    "--size", "sizes", multiple=True, metavar="NAME=N", help="Override a [sizes] entry (repeatable)."
)
spec_argument = click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False))


def format_option(*choices: str) -> Callable[[F], F]:
    """``--format`` (read as ``fmt``) limited to ``choices``; the first is the default.

    Parameters
    ----------
    *choices
        The output formats the command can write, its default first (``"table", "json"``).
    """
    return click.option("--format", "fmt", type=click.Choice(choices), default=choices[0])


def db_path(db: str | None) -> Path:
    """The database file: ``--db`` when given, else ``$KARYAMORPH_DB``, else the default file here."""
    return store_path(db)


def open_existing(db: str | None, *, made_by: str = "`karyamorph demo` or `karyamorph run`") -> Store:
    """The database :func:`db_path` names, opened to read.

    Parameters
    ----------
    db
        The value of ``--db`` (None: not given).
    made_by
        The commands that create the database, named in the error when it does not exist yet.

    Raises
    ------
    StoreError
        There is no database file yet (reading must not create an empty one).
    """
    from karyamorph.store.database import Store
    from karyamorph.store.errors import StoreError

    path = db_path(db)
    if not path.exists():
        raise StoreError(f"database {path} does not exist yet: run {made_by} first")
    return Store.open_to_read(path)


def split_names(value: str | None) -> list[str] | None:
    """The names of a comma-separated option (``compile,sass``), blanks dropped; None when not given."""
    return None if value is None else [n.strip() for n in value.split(",") if n.strip()]


def gpu_option(command: F) -> F:
    """``--gpu ssh://[USER@]HOST[:PORT]`` (default ``$KARYAMORPH_GPU``): the decorated command
    runs inside :func:`gpu_place` of its value, so its GPU work goes to that host. Put it below
    ``@friendly_errors``, which then reports a host that cannot be used."""

    @functools.wraps(command)
    def in_place(*args: Any, gpu: str | None = None, **kwargs: Any) -> Any:
        with gpu_place(gpu):
            return command(*args, **kwargs)

    option = click.option(
        "--gpu", envvar="KARYAMORPH_GPU", default=None, metavar="ssh://[USER@]HOST[:PORT]",
        help="Run the GPU work on this host over SSH (see `karyamorph remote setup`); compiling, "
             "the model and the database stay here. Default $KARYAMORPH_GPU, else this machine's "
             "GPU; `local` means this machine.",
    )  # fmt: skip
    return option(in_place)  # type: ignore[return-value]


def gpu_place(gpu: str | None) -> contextlib.AbstractContextManager[None]:
    """Where the command's GPU work goes while the ``with`` body runs: the host ``--gpu`` names,
    or this machine (not given, or ``local``); a host without a GPU is said on stderr
    (:func:`karyamorph.remote.place.gpu_place`).

    Raises
    ------
    RemoteError
        ``gpu`` is not an ``ssh://`` address, or the host cannot be used.
    """
    from karyamorph.remote.place import gpu_place as place

    return place(gpu, lambda line: click.echo(line, err=True))
