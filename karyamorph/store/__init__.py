"""DuckDB store: schema, migrations, writers and queries."""

import os
from pathlib import Path

DEFAULT_FILE = "karyamorph.duckdb"
"""The store file when neither ``--db`` nor ``$KARYAMORPH_DB`` names one (in the working folder)."""


def store_path(db: str | Path | None = None) -> Path:
    """The store file: ``db`` when given, else ``$KARYAMORPH_DB``, else :data:`DEFAULT_FILE` here."""
    return Path(db or os.environ.get("KARYAMORPH_DB") or DEFAULT_FILE)
