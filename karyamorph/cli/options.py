"""The options the commands share and what their values mean: the database ``--db`` names, the
output ``--format``, GPU timeouts, size overrides, comma-separated names, the example kernels."""

from __future__ import annotations

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
