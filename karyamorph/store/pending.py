"""Finished runs are never lost: wait for a busy database, else park the run beside it.

DuckDB lets one process at a time open a file for writing. A run that finds the database busy
retries for a bounded time; if the file is still taken, the run is written to a side folder
(``karyamorph.duckdb.pending/``, one file per run) and merged into the database by the next
writer that gets in, or by ``karyamorph import``. A side file is removed only after its run is
committed, so a crash at any moment leaves each run in exactly one of the two places (or both,
and then the merge skips the one already recorded).
"""

from __future__ import annotations

import dataclasses
import math
import os
import pickle
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from karyamorph.store.database import Store
from karyamorph.store.errors import DamagedDatabaseError, DatabaseInUseError, StoreError
from karyamorph.store.records import RunRecord

WAIT_S = 10.0
"""How long a writer waits for a busy database before parking its run (``KARYAMORPH_DB_WAIT_S``
changes it)."""
WAIT_ENV = "KARYAMORPH_DB_WAIT_S"

_FORMAT = "karyamorph-pending-run/1"


@dataclass(frozen=True, slots=True)
class Stored:
    """Where a run went: its id, and the side file when the database was busy (else None)."""

    run_id: str
    parked: Path | None = None


def pending_dir(db: Path) -> Path:
    """The side folder of the database file ``db``."""
    return db.with_name(db.name + ".pending")


def wait_seconds() -> float:
    """How long a writer waits for a busy database: ``$KARYAMORPH_DB_WAIT_S``, else :data:`WAIT_S`.

    Raises
    ------
    StoreError
        The variable is not a number of seconds >= 0.
    """
    text = os.environ.get(WAIT_ENV, "").strip()
    if not text:
        return WAIT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds < math.inf:
        raise StoreError(f"{WAIT_ENV}={text!r} is not a number of seconds >= 0")
    return seconds


def open_waiting(db: Path, wait_s: float | None = None) -> Store:
    """Open ``db`` for writing, retrying with backoff while another process holds it for up to
    ``wait_s`` seconds (default :func:`wait_seconds`).

    Raises
    ------
    DatabaseInUseError
        Still busy after ``wait_s`` seconds.
    StoreError
        Any other failure to open.
    """
    deadline = time.monotonic() + (wait_seconds() if wait_s is None else wait_s)
    delay = 0.05
    while True:
        try:
            return Store.open(db)
        except DatabaseInUseError:
            if time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def park(run: RunRecord, db: Path) -> Stored:
    """Write ``run`` (with its id and time fixed now) to the side folder of ``db``, atomically."""
    run = dataclasses.replace(
        run, run_id=run.run_id or str(uuid.uuid4()), created_at=run.created_at or datetime.now(UTC)
    )
    assert run.run_id is not None
    folder = pending_dir(db)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run.run_id}.run"
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        pickle.dump((_FORMAT, run), f)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    return Stored(run.run_id, path)


def merge_pending(store: Store) -> list[str]:
    """Record every parked run of ``store``'s file, oldest first; return their ids.

    A parked run already in the database (a crash between commit and removal) is dropped.
    A side file that cannot be read is left in place and named in the error.

    Raises
    ------
    StoreError
        A side file is not a parked run of this format.
    """
    merged = []
    for path in sorted(pending_dir(store.path).glob("*.run"), key=lambda p: p.stat().st_mtime):
        try:
            with open(path, "rb") as f:
                tag, run = pickle.load(f)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError) as exc:
            raise StoreError(f"cannot read the parked run {path}: {exc}") from None
        if tag != _FORMAT or not isinstance(run, RunRecord):
            raise StoreError(f"{path} is not a parked run of this version ({tag!r})")
        known = store.query("SELECT 1 FROM runs WHERE run_id = ?", [run.run_id]).rows
        if not known:
            store.record_run(run)
            merged.append(str(run.run_id))
        path.unlink()
    return merged


def record_or_park(run: RunRecord, db: Path, wait_s: float | None = None) -> Stored:
    """Record ``run`` in ``db`` (merging parked runs first), or park it if ``db`` stays busy.

    Raises
    ------
    DamagedDatabaseError
        ``db`` is damaged: nothing was written to it, the run is parked, and the message says
        where.
    """
    try:
        store = open_waiting(db, wait_s)
    except DatabaseInUseError:
        return park(run, db)
    except DamagedDatabaseError as exc:
        raise _parked_beside(exc, run, db) from exc
    with store:
        try:
            merge_pending(store)
            return Stored(store.record_run(run))
        except DamagedDatabaseError as exc:
            raise _parked_beside(exc, run, db) from exc


def _parked_beside(exc: DamagedDatabaseError, run: RunRecord, db: Path) -> DamagedDatabaseError:
    parked = park(run, db)
    return DamagedDatabaseError(
        f"{exc}\nThe run was not lost: it is saved as {parked.parked}. Move the damaged file aside "
        f"(or restore it from a copy), then `karyamorph import --db {db}` records the saved runs."
    )
