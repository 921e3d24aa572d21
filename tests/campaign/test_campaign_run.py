"""`campaign run` end to end on the CPU: each item stored as `karyamorph run` stores it, failures
kept with their reason and retried on request, resumed rather than repeated."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console

from karyamorph.campaign.runner import run_campaign
from karyamorph.cli import main
from karyamorph.harness.session import run_spec_file
from karyamorph.store.database import Store
from tests.campaign.consistency import check_campaign

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "datasets" / "kernels"
STAGES = ("compile", "static")


def campaign_file(tmp_path: Path, sizes: str = "[1000, 4096]", name: str = "small") -> Path:
    """vadd over ``sizes`` and transpose at one size, for sm_80 and sm_90, compile side."""
    for kernel in ("vadd", "transpose"):
        for ext in ("toml", "ptx"):
            shutil.copy(KERNELS / f"{kernel}.{ext}", tmp_path / f"{kernel}.{ext}")
    path = tmp_path / f"{name}.toml"
    path.write_text(f"""[campaign]
name = "{name}"
archs = ["sm_80", "sm_90"]
stages = {json.dumps(list(STAGES))}

[[sweep]]
specs = ["vadd.toml"]
sizes.n = {sizes}

[[sweep]]
specs = ["transpose.toml"]
sizes.rows = 100
sizes.cols = 70
""")
    return path


def cli(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(main, list(args))
    return out.exit_code, out.output


def compile_figures(store: Store, where: str, params: list[object]) -> dict[str, float]:
    rows = store.query(
        "SELECT m.name, m.value FROM runs r JOIN metrics m USING (run_id) "
        f"WHERE m.stage = 'compile' AND m.unit NOT IN ('s', 'ms') AND {where}",
        params,
    ).rows
    return dict(rows)


def test_each_item_is_stored_as_a_run_of_the_spec_would_be(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    report = run_campaign(campaign_file(tmp_path), db=db)
    keys = [f"vadd.toml n={n} {a}" for n in (1000, 4096) for a in ("sm_80", "sm_90")]
    keys += ["transpose.toml rows=100 cols=70 sm_80", "transpose.toml rows=100 cols=70 sm_90"]
    assert (report.ran, report.failed, report.info.done, report.resumed) == (6, 0, 6, False)
    assert check_campaign(db, keys, STAGES) == dict.fromkeys(keys, "done")
    single = tmp_path / "single.duckdb"
    run_spec_file(tmp_path / "vadd.toml", arch="sm_80", db=single, sizes={"n": 1000}, only=list(STAGES))
    with Store.open_to_read(db) as store:
        for n in (1000, 4096):
            (launch,) = store.query(
                "SELECT launch FROM runs WHERE item = ?", [f"vadd.toml n={n} sm_80"]
            ).rows[0]
            assert json.loads(launch)["grid"][0] == -(-n // 256)  # ceildiv(n, 256), the spec's grid
        ours = compile_figures(store, "r.item = ?", ["vadd.toml n=1000 sm_80"])
        (cid,) = store.query("SELECT DISTINCT campaign_id FROM runs").rows[0]
        assert cid == report.info.campaign_id
    with Store.open_to_read(single) as store:
        assert compile_figures(store, "TRUE", []) == ours and ours["registers"] > 0


def test_failed_items_keep_their_reason_and_run_again_only_when_asked(tmp_path: Path) -> None:
    db = str(tmp_path / "c.duckdb")
    path = str(campaign_file(tmp_path, sizes="[0, 64]"))
    code, _ = cli("campaign", "run", path, "--db", db)
    assert code == 1  # an item failed
    (listed,) = json.loads(cli("campaign", "list", "--db", db, "--format", "json")[1])
    cid = listed["campaign_id"]
    status = json.loads(cli("campaign", "status", cid[:8], "--db", db, "--format", "json")[1])
    assert (status["items"], status["done"], status["failed"], status["pending"]) == (6, 4, 2, 0)
    reasons = {f["item"]: (f["attempts"], f["reason"]) for f in status["failures"]}
    assert set(reasons) == {"vadd.toml n=0 sm_80", "vadd.toml n=0 sm_90"}
    assert all(a == 1 and "launch.grid[0]: evaluates to 0" in r for a, r in reasons.values())
    again = json.loads(cli("campaign", "run", path, "--db", db, "--format", "json")[1])
    assert (again["campaign_id"], again["resumed"], again["ran"]) == (cid, True, 0)
    code, out = cli("campaign", "run", path, "--db", db, "--retry-failed", "--format", "json")
    assert code == 1 and (json.loads(out)["ran"], json.loads(out)["failed_now"]) == (2, 2)
    status = json.loads(cli("campaign", "status", cid, "--db", db, "--format", "json")[1])
    assert {f["attempts"] for f in status["failures"]} == {2}
    with Store.open_to_read(Path(db)) as store:
        assert store.query("SELECT count(*) FROM runs").rows == [(4,)]


def test_a_label_starts_another_campaign_and_resume_checks_the_definition(tmp_path: Path) -> None:
    db = str(tmp_path / "c.duckdb")
    path = str(campaign_file(tmp_path))
    first = json.loads(cli("campaign", "run", path, "--db", db, "--format", "json")[1])
    labelled = json.loads(cli("campaign", "run", path, "--db", db, "--label", "b", "--format", "json")[1])
    assert (
        labelled["campaign_id"] != first["campaign_id"] and labelled["ran"] == 6 and labelled["label"] == "b"
    )
    resumed = json.loads(cli("campaign", "run", path, "--db", db, "--resume", first["campaign_id"][:6],
                             "--format", "json")[1])  # fmt: skip
    assert (resumed["campaign_id"], resumed["ran"]) == (first["campaign_id"], 0)
    other = str(campaign_file(tmp_path, sizes="[128]", name="other"))
    code, out = cli("campaign", "run", other, "--db", db, "--resume", first["campaign_id"])
    assert code == 2 and "was made from another definition" in out
    with Store.open_to_read(Path(db)) as store:
        labels = store.query("SELECT campaign_id, label, count(*) FROM runs GROUP BY ALL ORDER BY label").rows
    assert labels == [(labelled["campaign_id"], "b", 6), (first["campaign_id"], None, 6)]


def test_status_of_a_missing_database_or_campaign_is_one_line(tmp_path: Path) -> None:
    code, out = cli("campaign", "status", "abc", "--db", str(tmp_path / "none.duckdb"))
    assert code == 2 and "does not exist yet" in out
    Store.open(tmp_path / "empty.duckdb").close()
    code, out = cli("campaign", "status", "abc", "--db", str(tmp_path / "empty.duckdb"))
    assert code == 2 and "no campaign" in out
    assert "no campaigns" in cli("campaign", "list", "--db", str(tmp_path / "empty.duckdb"))[1]
    code, out = cli("campaign", "run", str(tmp_path / "none.toml"), "--db", str(tmp_path / "x.duckdb"))
    assert code == 2 and "campaign file not found" in out and "Traceback" not in out


def test_on_a_terminal_a_bar_counts_items_and_their_rate(tmp_path: Path) -> None:
    out = io.StringIO()
    screen = Console(file=out, force_terminal=True, width=160)
    run_campaign(campaign_file(tmp_path), db=tmp_path / "c.duckdb", console=screen)
    text = out.getvalue()
    assert "small" in text and "6/6" in text and "/min" in text and "6 pass, 0 fail" in text


def test_the_command_line_starts_without_ray_or_the_harness() -> None:
    code = "import sys, karyamorph.cli; print(sorted(m for m in ('ray', 'z3', 'duckdb') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
