"""``karyamorph report RUN -o run.html``: one run's tiles as a single HTML file with nothing
outside it (stylesheet inline, plots inline SVG, no script), to attach to a paper or an issue."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from karyamorph.dashboard.access import Database
from karyamorph.dashboard.render import render
from karyamorph.dashboard.run_view import load_view
from karyamorph.store.reading import find_run


def report_html(db: Database, run_id: str, baseline: str | None = None) -> str:
    """The report of the run whose id is (or starts with) ``run_id``; ``baseline`` (an id or its
    start) fills the comparison tile.

    Raises
    ------
    StoreError
        The database cannot be read, or no run (or several) match an id.
    """
    with db.reading() as store:
        full = find_run(store, run_id)
        pinned = find_run(store, baseline) if baseline else None
        view = load_view(store, full, pinned)
    written = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return render("report.html", view=view, live=False, written=written, db_path=db.path.name, static="")


def write_report(db: Path, run_id: str, out: Path, baseline: str | None = None) -> Path:
    """Write :func:`report_html` to ``out`` and return the path."""
    out.write_text(report_html(Database(db), run_id, baseline))
    return out
