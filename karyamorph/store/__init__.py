"""DuckDB store: schema, migrations, writers and queries."""

DEFAULT_FILE = "karyamorph.duckdb"
"""The store file when neither ``--db`` nor ``$KARYAMORPH_DB`` names one (in the working folder)."""
