"""Short read-only visits to the store: opened for one request, closed before the reply is sent.

DuckDB lets one process write a file, and a writer cannot open it while a reader holds it. The
page therefore never keeps the file open: each request opens it read-only, reads, and closes,
so that ``karyamorph run`` in a terminal (or a run started from the page) can write between two
requests. A writer holds the file only for the moment of its transaction; a request that finds
it busy retries for :data:`WAIT_S` seconds before it says so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from karyamorph.store.database import Store
from karyamorph.store.errors import DatabaseInUseError, StoreError

WAIT_S = 5.0
"""How long a request waits for a writer to let go of the database."""


class NoDatabaseError(StoreError):
    """The database file does not exist yet (nothing has been run with it)."""


@dataclass(frozen=True, slots=True)
class Database:
    """The store file the page reads, by path; it is opened only inside :meth:`reading`."""

    path: Path

    @property
    def exists(self) -> bool:
        """Whether the file exists (a page on a new database shows no runs, not an error)."""
        return self.path.is_file()

    @contextmanager
    def reading(self, wait_s: float = WAIT_S) -> Iterator[Store]:
        """The store, opened read-only for the ``with`` block and closed at its end.

        Raises
        ------
        NoDatabaseError
            The file does not exist.
        DatabaseInUseError
            A writer held it for all of ``wait_s`` seconds.
        StoreError
            Any other failure to open (damaged file, newer schema).
        """
        if not self.exists:
            raise NoDatabaseError(f"database {self.path} does not exist yet: run a kernel to create it")
        deadline = time.monotonic() + wait_s
        delay = 0.02
        while True:
            try:
                store = Store.open_to_read(self.path)
                break
            except DatabaseInUseError:
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.25)
        with store:
            yield store
