"""DuckDB store: schema, migrations, writers and queries."""
