"""The store commands: its ``tables``, ``import`` of runs parked beside it, and SQL ``query``."""

from __future__ import annotations

import click

from karyamorph.cli.options import db_option, db_path, format_option, open_existing
from karyamorph.cli.output import echo, friendly_errors


@click.command()
@db_option
@click.option("--columns", is_flag=True, help="List each table's columns and their types too.")
@format_option("table", "json")
@friendly_errors
def tables(db: str | None, columns: bool, fmt: str) -> None:
    """The store's tables, a line on each, and their row counts when the database exists."""
    from dataclasses import asdict

    from karyamorph.render.views import tables_view
    from karyamorph.store.database import Store
    from karyamorph.store.reading import describe_tables

    path = db_path(db)
    exists = path.exists()
    with Store.open_to_read(path) if exists else Store.open(":memory:") as store:
        infos = describe_tables(store, count_rows=exists)
    missing = None if exists else path
    echo([asdict(t) for t in infos] if fmt == "json" else tables_view(infos, missing, columns))


@click.command("import")
@db_option
@friendly_errors
def import_command(db: str | None) -> None:
    """Merge runs parked beside the database (saved while another process held it)."""
    from karyamorph.store.pending import merge_pending, open_waiting, pending_dir

    path = db_path(db)
    with open_waiting(path) as store:
        merged = merge_pending(store)
    click.echo(f"{len(merged)} parked run(s) merged into {path} from {pending_dir(path)}")


@click.command()
@click.argument("sql")
@db_option
@format_option("table", "csv", "json")
@friendly_errors
def query(sql: str, db: str | None, fmt: str) -> None:
    """Run SQL against the measurement database."""
    from karyamorph.table import render

    with open_existing(db) as store:
        result = store.query(sql)
    echo(render(result.columns, result.rows, fmt))


COMMANDS: tuple[click.Command, ...] = (tables, import_command, query)
