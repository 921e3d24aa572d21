"""Finding the one row of a table whose id the user gave only the first characters of."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from karyamorph.store.database import Store
from karyamorph.store.errors import StoreError

SHOWN = 10
"""How many matches an ambiguous prefix lists (the newest first)."""


def find_by_prefix(
    store: Store,
    prefix: str,
    *,
    noun: str,
    table: str,
    columns: Sequence[str],
    describe: Callable[[tuple[Any, ...]], str],
    error: type[StoreError],
) -> str:
    """The full id of the one row of ``table`` whose id (``columns[0]``) is ``prefix`` or starts with it.

    Parameters
    ----------
    store : Store
        Where to look.
    prefix : str
        The id or its first characters (surrounding blanks ignored).
    noun : str
        What a row is (``run``, ``campaign``), for the messages.
    table, columns : str, sequence of str
        The table and the columns read of each match: its id first, then what ``describe`` shows.
    describe : callable
        One match's line in the list an ambiguous prefix raises with (``columns``' values).
    error : type of StoreError
        What is raised.

    Raises
    ------
    StoreError
        ``error``: the prefix is empty, no row matches, or several do (the message lists the
        newest :data:`SHOWN`, and says when there are more).
    """
    wanted = prefix.strip()
    if not wanted:
        raise error(f"an empty {noun} id matches every {noun}; give at least its first characters")
    # One more than shown: enough to tell "these" from "these and more".
    hits = store.query(
        f"SELECT {', '.join(columns)} FROM {table} WHERE starts_with({columns[0]}, ?) "
        f"ORDER BY created_at DESC LIMIT {SHOWN + 1}",
        [wanted],
    ).rows
    if len(hits) == 1:
        return str(hits[0][0])
    if not hits:
        raise error(f"no {noun} in {store.path} has an id starting with {prefix!r}")
    listed = "\n".join(f"  {describe(tuple(row))}" for row in hits[:SHOWN])
    more = " (and more)" if len(hits) > SHOWN else ""
    raise error(f"{noun} id {prefix!r} matches several {noun}s{more}; give more characters:\n{listed}")
