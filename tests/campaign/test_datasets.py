"""Datasets: a campaign written as Parquet with provenance and imported back row for row; a second
import adds nothing; a damaged dataset is refused whole."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from karyamorph.campaign.runner import run_campaign
from karyamorph.cli import main
from karyamorph.store import schema
from karyamorph.store.database import Store
from karyamorph.store.exchange import PROVENANCE, DatasetError
from tests.campaign.test_campaign_run import campaign_file

COMPARED = (
    "runs",
    "stages",
    "metrics",
    "kernels",
    "sass",
    "run_sass",
    "campaigns",
    "campaign_items",
    "toolchains",
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A database with one small compile-side campaign, and the campaign's id."""
    folder = tmp_path_factory.mktemp("recorded")
    db = folder / "c.duckdb"
    report = run_campaign(campaign_file(folder), db=db)
    return db, report.info.campaign_id


def table_rows(db: Path, table: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sorted(con.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
    finally:
        con.close()


def test_a_campaign_goes_out_and_comes_back_row_for_row(recorded: tuple[Path, str], tmp_path: Path) -> None:
    db, cid = recorded
    out = tmp_path / "dataset"
    with Store.open_to_read(db) as store:
        counts = store.export_dataset(out, campaign_ids=[cid], note="a test")
    provenance = json.loads((out / PROVENANCE).read_text())
    assert (
        provenance["tables"] == counts and provenance["note"] == "a test" and provenance["campaigns"] == [cid]
    )
    latest = schema.latest_version(schema.MIGRATIONS)
    assert counts["runs"] == 6 and counts["stages"] == 12 and provenance["schema_version"] == latest
    fresh = tmp_path / "fresh.duckdb"
    result = CliRunner().invoke(main, ["datasets", "import", str(out), "--db", str(fresh)])
    assert result.exit_code == 0 and "6 run(s)" in result.output
    for table in COMPARED:
        assert table_rows(fresh, table) == table_rows(db, table), table
    with Store.open(fresh) as store:
        assert sum(store.import_dataset(out).values()) == 0  # everything is there already


def test_paths_of_the_recording_machine_can_be_cut(recorded: tuple[Path, str], tmp_path: Path) -> None:
    db, _ = recorded
    with Store.open_to_read(db) as store:
        store.export_dataset(tmp_path / "d", relative_to=db.parent)
    con = duckdb.connect()
    (spec_path,) = {r[0] for r in con.execute(f"SELECT spec_path FROM '{tmp_path}/d/runs.parquet' "
                                               "WHERE spec_path LIKE '%vadd%'").fetchall()}  # fmt: skip
    assert spec_path == "vadd.toml"
    (file,) = con.execute(f"SELECT params->>'file' FROM '{tmp_path}/d/campaigns.parquet'").fetchone() or (
        None,
    )
    assert file == "small.toml"
    (paths,) = con.execute(f"SELECT paths::VARCHAR FROM '{tmp_path}/d/toolchains.parquet'").fetchone() or (
        None,
    )
    tools = {k: v for k, v in json.loads(paths).items() if k.endswith("_path")}
    assert tools and not any(v.startswith("/") for v in tools.values()), tools


def test_a_damaged_dataset_is_refused_and_nothing_is_written(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    db, cid = recorded
    out = tmp_path / "dataset"
    with Store.open_to_read(db) as store:
        store.export_dataset(out, campaign_ids=[cid])
    shutil.copy(out / "stages.parquet", tmp_path / "stages.parquet")
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * FROM '{tmp_path}/stages.parquet' LIMIT 3) TO '{out}/stages.parquet' (FORMAT parquet)"
    )
    target = tmp_path / "t.duckdb"
    with Store.open(target) as store, pytest.raises(DatasetError, match=r"stages\.parquet holds 3 rows"):
        store.import_dataset(out)
    with Store.open(target) as store:
        assert store.query("SELECT count(*) FROM runs UNION ALL SELECT count(*) FROM campaigns").rows == [
            (0,),
            (0,),
        ]
    (out / PROVENANCE).unlink()
    result = CliRunner().invoke(main, ["datasets", "import", str(out), "--db", str(target)])
    assert result.exit_code == 2 and "holds no dataset" in result.output
