"""A damaged database is reported, never read short: truncated, bit-flipped, a block lost or zeroed.

The database is a real one, written by `karyamorph run --stages compile,sass,static` on the
example kernels. The oracle is the undamaged file's rows, read with DuckDB before any damage:
a damaged copy either reads back exactly those rows through the store, or opening it is
"database PATH is damaged" (the first header block gone: "not a DuckDB database file").
"""

from __future__ import annotations

import hashlib
import random
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.store import schema
from karyamorph.store.database import Store
from karyamorph.store.errors import DamagedDatabaseError, NotADatabaseError
from karyamorph.store.integrity import FOOTER
from karyamorph.store.pending import pending_dir
from tests.store.test_store import make_run

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"
KERNELS = ("vadd", "scale", "reduce_sum", "transpose", "sgemm")
HEADER_BYTES = 3 * 4096  # DuckDB's file header and its two database headers
BLOCK_BYTES = 256 * 1024  # DuckDB's default block size
Written = tuple[Path, dict[str, list[str]]]  # a database file and its rows, as DuckDB read them


def _rows(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    con.execute("SET TimeZone = 'UTC'")  # as the store reads instants
    names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    return {t: sorted(map(repr, con.execute(f'SELECT * FROM "{t}"').fetchall())) for t in names}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """A database of the example kernels' compile-side runs, and its rows read by DuckDB itself."""
    db = tmp_path_factory.mktemp("damage") / "k.duckdb"
    for kernel in KERNELS:
        result = CliRunner().invoke(main, ["run", str(EXAMPLES / f"{kernel}.toml"), "--arch", "sm_90",
                                           "--stages", "compile,sass,static", "--db", str(db)])  # fmt: skip
        assert result.exit_code == 0, result.output
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = _rows(con)
    finally:
        con.close()
    assert len(rows["runs"]) == len(KERNELS) and len(rows["metrics"]) > 50
    return db, rows


def _outcome(data: bytes, folder: Path, want: dict[str, list[str]]) -> str:
    """``same`` when the store reads ``data`` back as ``want``, else the error the store raised;
    any other outcome (fewer or other rows read without an error) fails the test."""
    path = folder / "copy.duckdb"
    path.write_bytes(data)
    try:
        with Store.open_to_read(path) as store:
            got = {t: sorted(map(repr, store.query(f'SELECT * FROM "{t}"').rows)) for t in want}
    except DamagedDatabaseError as exc:
        assert str(exc).startswith(f"database {path} is damaged: ")
        return "damaged"
    except NotADatabaseError:
        return "not a database"
    finally:
        path.unlink(missing_ok=True)
        path.with_name(path.name + ".wal").unlink(missing_ok=True)
    assert got == want, "the store read a damaged file without saying so"
    return "same"


def test_a_file_truncated_to_half_is_damaged(written: Written, tmp_path: Path) -> None:
    db, rows = written
    data = db.read_bytes()
    assert _outcome(data, tmp_path, rows) == "same"
    assert _outcome(data[: len(data) // 2], tmp_path, rows) == "damaged"


def test_truncation_at_any_size_reads_whole_or_is_damaged(written: Written, tmp_path: Path) -> None:
    db, rows = written
    data = db.read_bytes()
    rng = random.Random(7)
    edges = (1, 4095, 4097, HEADER_BYTES - 1, HEADER_BYTES + 1, len(data) - 1, len(data) - 4096)
    drawn = (rng.randrange(len(data)) for _ in range(12))
    sizes = sorted({*range(0, len(data), BLOCK_BYTES), *drawn, *edges})
    seen = {n: _outcome(data[:n], tmp_path, rows) for n in sizes}
    # Without DuckDB's first header block there is no telling a damaged file from another file.
    assert {seen[n] for n in sizes if n < 4096} <= {"not a database", "damaged"}
    assert {seen[n] for n in sizes if 4096 <= n <= len(data) // 2} == {"damaged"}
    assert set(seen.values()) <= {"not a database", "damaged", "same"}


def test_flipped_bytes_read_whole_or_are_damaged(written: Written, tmp_path: Path) -> None:
    db, rows = written
    data = db.read_bytes()
    rng = random.Random(13)
    offsets = [len(data) // 2, len(data) // 3, HEADER_BYTES + 100, 4096 + 100]
    offsets += [rng.randrange(len(data)) for _ in range(24)]
    seen = []
    for offset in offsets:
        flipped = bytearray(data)
        flipped[offset : offset + 8] = bytes(b ^ 0xFF for b in flipped[offset : offset + 8])
        seen.append(_outcome(bytes(flipped), tmp_path, rows))
    assert "damaged" in seen  # bytes of blocks in use were hit, and found out
    assert set(seen) <= {"same", "damaged"}


def test_a_lost_or_zeroed_block_reads_whole_or_is_damaged(written: Written, tmp_path: Path) -> None:
    db, rows = written
    data = db.read_bytes()
    seen = []
    for start in range(HEADER_BYTES, len(data), BLOCK_BYTES):
        end = start + BLOCK_BYTES
        seen.append(_outcome(data[:start] + data[end:], tmp_path, rows))  # the rest moves up
        seen.append(_outcome(data[:start] + bytes(len(data[start:end])) + data[end:], tmp_path, rows))
    assert seen.count("damaged") >= len(seen) // 2
    assert set(seen) <= {"same", "damaged"}


# --- what the commands say ---------------------------------------------------------------


def _half(written: Written, tmp_path: Path) -> Path:
    db, _ = written
    data = db.read_bytes()
    half = tmp_path / "half.duckdb"
    half.write_bytes(data[: len(data) // 2])
    return half


@pytest.mark.parametrize("command", [["runs"], ["tables"], ["query", "SELECT count(*) FROM runs"]])
def test_reading_commands_exit_2_on_a_damaged_file(
    written: Written, tmp_path: Path, command: list[str]
) -> None:
    db, _ = written
    good = CliRunner().invoke(main, [*command, "--db", str(db)])
    assert good.exit_code == 0, good.output
    half = _half(written, tmp_path)
    result = CliRunner().invoke(main, [*command, "--db", str(half)])
    assert result.exit_code == 2
    assert f"error: database {half} is damaged: " in result.output


def test_a_run_into_a_damaged_file_writes_nothing_there_and_is_kept(written: Written, tmp_path: Path) -> None:
    db, rows = written
    half = _half(written, tmp_path)
    before = hashlib.sha256(half.read_bytes()).hexdigest()
    result = CliRunner().invoke(main, ["run", str(EXAMPLES / "vadd.toml"), "--arch", "sm_90",
                                       "--stages", "compile,sass,static", "--db", str(half)])  # fmt: skip
    assert result.exit_code == 2
    assert f"database {half} is damaged: " in result.output and "karyamorph import" in result.output
    assert hashlib.sha256(half.read_bytes()).hexdigest() == before
    (parked,) = pending_dir(half).glob("*.run")
    # The damaged file set aside and a good copy in its place: import records the kept run.
    half.rename(tmp_path / "set-aside.duckdb")
    shutil.copy(db, half)
    imported = CliRunner().invoke(main, ["import", "--db", str(half)])
    assert imported.exit_code == 0, imported.output
    with Store.open_to_read(half) as store:
        ids = [r[0] for r in store.query("SELECT run_id FROM runs").rows]
    assert len(ids) == len(rows["runs"]) + 1 and parked.stem in ids and not parked.exists()


# --- the committed row counts --------------------------------------------------------------


def test_every_write_commits_the_row_counts(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    with Store.open(db) as store:
        store.record_run(make_run("a", n_samples=7))
        store.record_run(make_run("b", n_samples=3))
        store.create_campaign("c")
    con = duckdb.connect(str(db), read_only=True)
    try:
        footer = dict(con.execute(f"SELECT table_name, row_count FROM {FOOTER}").fetchall())
        actual = {t: len(r) for t, r in _rows(con).items() if t != FOOTER}
    finally:
        con.close()
    assert footer == actual
    assert (footer["runs"], footer["samples"], footer["campaigns"]) == (2, 10, 1)


def test_rows_deleted_by_another_program_are_reported(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    with Store.open(db) as store:
        run_id = store.record_run(make_run("a", n_samples=5))
        store.record_run(make_run("b", n_samples=5))
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM samples WHERE run_id = ?", [run_id])
    con.close()
    with pytest.raises(DamagedDatabaseError, match="table samples holds 5 rows where 10 were committed"):
        Store.open_to_read(db)


def test_rows_changed_through_the_store_stay_consistent(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    with Store.open(db) as store:
        run_id = store.record_run(make_run("a", n_samples=5))
        store.query("DELETE FROM samples WHERE run_id = ?", [run_id])
    with Store.open_to_read(db) as store:
        assert store.query("SELECT count(*) FROM samples").rows == [(0,)]


def test_an_older_store_gains_counts_that_match_its_rows(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    for version in (1, 2, 3):
        for statement in schema.MIGRATIONS[version].statements:
            con.execute(statement)
        con.execute("INSERT INTO schema_version VALUES (?, 'old', now())", [version])
    con.execute("INSERT INTO kernels VALUES ('h', 'k', 'ptx'), ('h2', 'k', 'ptx')")
    con.close()
    with Store.open_to_read(db) as store:
        assert store.schema_version == schema.latest_version(schema.MIGRATIONS)
        counts = dict(store.query(f"SELECT table_name, row_count FROM {FOOTER}").rows)
    latest = schema.latest_version(schema.MIGRATIONS)
    assert (counts["kernels"], counts["schema_version"], counts["runs"]) == (2, latest, 0)
