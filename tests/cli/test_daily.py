"""The daily-use commands: run's stage selection, label and progress; runs, show, diff, tables."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from karyamorph import table as table_module
from karyamorph.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"
COMPILE_SIDE = "compile,sass,static"
ANSI = "\x1b["


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def run_json(*args: str) -> dict:  # type: ignore[type-arg]
    result = invoke("run", *args, "--arch", "sm_120", "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def sql(db: Path, query: str, params: list[object] | None = None) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(query, params).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def two_vadds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A store with two kernels of one entry name, `vadd`: the example, and a copy in another
    folder whose add is a multiply then an add. Returns (db, first run id, second run id)."""
    root = tmp_path_factory.mktemp("vadds")
    other = root / "other"
    other.mkdir()
    shutil.copy(EXAMPLES / "vadd.toml", other / "vadd.toml")
    ptx = (EXAMPLES / "vadd.ptx").read_text()
    old = "add.rn.f32          %sum, %x, %y;"
    assert old in ptx
    new = "mul.rn.f32 %sum, %x, %y;\n\tadd.rn.f32 %sum, %sum, %y;"
    (other / "vadd.ptx").write_text(ptx.replace(old, new))
    db = root / "k.duckdb"
    a = run_json(str(EXAMPLES / "vadd.toml"), "--db", str(db), "--stages", COMPILE_SIDE, "--label", "base")
    b = run_json(str(other / "vadd.toml"), "--db", str(db), "--stages", COMPILE_SIDE, "--label", "mul+add")
    return db, a["run_id"], b["run_id"]


def test_stages_runs_only_the_stages_asked_for(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    out = run_json(str(EXAMPLES / "scale.toml"), "--db", str(db), "--stages", "compile,sass")
    assert [s["name"] for s in out["stages"]] == ["compile", "sass"]
    assert sql(db, "SELECT stage FROM stages ORDER BY position") == [("compile",), ("sass",)]
    gpu_side = "model,predict,sanitize,correctness,timing,metrics"
    skipped = run_json(str(EXAMPLES / "scale.toml"), "--no-store", "--skip", gpu_side)
    assert [s["name"] for s in skipped["stages"]] == ["compile", "sass", "static"]


def test_a_stage_whose_input_was_not_made_skips_with_the_reason() -> None:
    out = run_json(str(EXAMPLES / "scale.toml"), "--no-store", "--stages", "sass,static")
    (sass, static) = out["stages"]
    assert (sass["status"], sass["data"]["reason"]) == ("skip", "compile did not pass")
    assert static["status"] == "pass" and static["data"]["occupancy"] is None


@pytest.mark.parametrize(
    ("option", "words"),
    [
        (["--stages", "compile,bogus"], "unknown stage 'bogus' (stages: compile, sass, static, model,"),
        (["--skip", "sanitise"], "unknown stage 'sanitise'"),
        (["--stages", "compile", "--skip", "compile"], "leaves no stage to run"),
    ],
)
def test_bad_stage_selection_is_bad_input(tmp_path: Path, option: list[str], words: str) -> None:
    db = tmp_path / "k.duckdb"
    result = CliRunner().invoke(main, ["run", str(EXAMPLES / "vadd.toml"), "--db", str(db), *option])
    assert result.exit_code == 2 and words in result.output
    assert not db.exists()


def test_runs_remember_path_and_label_and_tell_one_entry_name_apart(two_vadds: tuple[Path, str, str]) -> None:
    db, a, b = two_vadds
    rows = sql(db, "SELECT run_id, entry, label, spec_path FROM runs ORDER BY label")
    assert [(r[0], r[1], r[2]) for r in rows] == [(a, "vadd", "base"), (b, "vadd", "mul+add")]
    assert rows[0][3] == str((EXAMPLES / "vadd.toml").resolve()) and rows[1][3].endswith("other/vadd.toml")
    q = invoke("query", "SELECT label FROM runs ORDER BY label", "--db", str(db), "--format", "json")
    assert [r["label"] for r in json.loads(q.output)] == ["base", "mul+add"]
    listed = invoke("runs", "--db", str(db))
    assert listed.exit_code == 0 and ANSI not in listed.output
    lines = {line.split()[0]: line for line in listed.output.splitlines() if line.startswith((a, b))}
    assert " base " in lines[a] and " mul+add " in lines[b]
    assert "other/vadd.toml" in re.sub(r"\s+", "", listed.output)  # the spec path, wrapped in its cell
    csv = invoke("runs", "--db", str(db), "--format", "csv").output.splitlines()
    assert csv[0].startswith("run_id,created_at,entry,label,spec_path,arch,status,device,kernel_hash")
    assert len(csv) == 3


def test_run_table_is_plain_when_piped_and_shows_the_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(EXAMPLES.parents[1])
    result = invoke("run", str(EXAMPLES / "vadd.toml"), "--arch", "sm_90", "--db", str(tmp_path / "k.duckdb"),
                    "--stages", COMPILE_SIDE, "--label", "tile 8x8")  # fmt: skip
    assert result.exit_code == 0 and ANSI not in result.output
    head, columns, rule, *rows = result.output.splitlines()
    assert head.startswith("vadd (vadd) [tile 8x8] from ") and "datasets/kernels/vadd.toml for sm_90" in head
    assert columns.split() == ["stage", "status", "seconds", "figures"] and set(rule) == {"─"}
    assert [r.split()[:2] for r in rows] == [["compile", "pass"], ["sass", "pass"], ["static", "pass"]]


def test_progress_is_drawn_on_a_terminal_and_quiet_for_json(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    monkeypatch.setattr(table_module, "console", lambda: Console(file=screen, force_terminal=True, width=100))
    args = ["run", str(EXAMPLES / "scale.toml"), "--arch", "sm_120", "--no-store", "--stages", COMPILE_SIDE]
    result = invoke(*args)
    assert result.exit_code == 0
    drawn = screen.getvalue()
    assert ANSI in drawn  # colour and cursor movement: the live lines
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn)
    for stage in ("compile", "sass", "static"):
        assert re.search(rf"pass\s+{stage}\s+\d+\.\d s", plain), stage
    screen.truncate(0)
    screen.seek(0)
    quiet = invoke(*args, "--format", "json")
    assert screen.getvalue() == "" and json.loads(quiet.output)["status"] == "pass"


def _sass_lines_by_comment(sass: str) -> dict[int, int]:
    """SASS offset -> PTX line, read straight from nvdisasm's `//## File ".nv_debug_ptx_txt"` comments."""
    out, line = {}, None
    for text in sass.splitlines():
        if m := re.match(r'\s*//## File "\.nv_debug_ptx_txt", line (\d+)', text):
            line = int(m[1])
        elif (m := re.match(r"\s*/\*([0-9a-f]{4,})\*/", text)) and line is not None:
            out[int(m[1], 16)] = line
    return out


def test_show_puts_each_sass_instruction_beside_its_ptx_line(two_vadds: tuple[Path, str, str]) -> None:
    db, a, _ = two_vadds
    out = json.loads(invoke("show", a[:8], "--db", str(db), "--format", "json").output)
    assert out["run"]["run_id"] == a and out["run"]["label"] == "base"
    assert [s["name"] for s in out["stages"]] == ["compile", "sass", "static"]
    assert out["stages"][0]["summary"].endswith("0 B smem")
    assert {f["name"] for f in out["stages"][0]["figures"]} >= {"registers", "seconds"}
    ptx = (EXAMPLES / "vadd.ptx").read_text().splitlines()
    oracle = _sass_lines_by_comment(out["sass"]["sm_120"])
    mapped = {off: row["line"] for row in out["source_map"] if row["line"] for off, _ in row["sass"]}
    assert mapped and all(oracle[off] == line for off, line in mapped.items())
    for row in out["source_map"]:
        if row["line"]:
            assert row["ptx"] == ptx[row["line"] - 1]
    store_line = next(row for row in out["source_map"] if "st.global.f32" in row["ptx"])
    assert [text.split()[0] for _, text in store_line["sass"]] == ["STG.E"]
    text = invoke("show", a, "--db", str(db))
    assert text.exit_code == 0 and ANSI not in text.output
    assert "SASS beside PTX" in text.output and "STG.E desc[UR4]" in text.output
    assert re.search(r"st\.global\.f32\s+\[%c\], %sum;\s+/\*[0-9a-f]{4}\*/ STG\.E", text.output)
    only = invoke("show", a, "--db", str(db), "--stage", "compile").output
    assert "ptxas info" in only and "SASS beside PTX" not in only and "\nstatic " not in only
    absent = CliRunner().invoke(main, ["show", a, "--db", str(db), "--stage", "timing"])
    assert absent.exit_code == 2
    assert "has no stage timing (its stages: compile, sass, static)" in absent.output


def test_show_refuses_unknown_and_ambiguous_ids(two_vadds: tuple[Path, str, str], tmp_path: Path) -> None:
    db, _, _ = two_vadds
    unknown = CliRunner().invoke(main, ["show", "zzzz", "--db", str(db)])
    assert unknown.exit_code == 2 and "no run in" in unknown.output
    ambiguous = CliRunner().invoke(main, ["show", "", "--db", str(db)])
    assert ambiguous.exit_code == 2 and "empty run id" in ambiguous.output
    missing = CliRunner().invoke(main, ["show", "ab", "--db", str(tmp_path / "none.duckdb")])
    assert missing.exit_code == 2 and "does not exist yet" in missing.output


def instructions(db: Path, run_id: str) -> int:
    """The run's SASS instructions counted in its stored text: each `/*offset*/ ... ;` line, less the
    NOP padding and the branch-to-self that ends the section."""
    query = "SELECT s.text FROM run_sass l JOIN sass s USING (sass_hash) WHERE run_id = ?"
    (text,) = sql(db, query, [run_id])[0]
    found = [t for t in re.findall(r"/\*[0-9a-f]{4}\*/\s+([^;]*?)\s*;", str(text)) if t != "NOP"]
    return len(found) - (1 if found[-1].startswith("BRA") else 0)


def test_diff_compares_figures_statuses_and_sass(two_vadds: tuple[Path, str, str]) -> None:
    db, a, b = two_vadds
    out = json.loads(invoke("diff", a[:8], b[:8], "--db", str(db), "--format", "json").output)
    assert (out["a"]["label"], out["b"]["label"], out["same_ptx"]) == ("base", "mul+add", False)
    assert out["stages"] == [{"stage": s, "a": "pass", "b": "pass"} for s in ("compile", "sass", "static")]
    figures = {(m["stage"], m["name"]): m for m in out["metrics"]}
    n = figures[("sass", "sass_instructions")]
    assert [n["a"], n["b"]] == [instructions(db, a), instructions(db, b)] and n["b"] - n["a"] == 1
    assert n["ratio"] == pytest.approx(n["b"] / n["a"])
    fmul = figures[("sass", "sass_op_FMUL")]
    assert fmul["a"] is None and fmul["b"] == 1 and fmul["ratio"] is None
    diff = out["sass_diff"].splitlines()
    assert diff[0].startswith(f"--- {a[:8]} vadd [base]")
    assert diff[1].startswith(f"+++ {b[:8]} vadd [mul+add]")
    added = [line for line in diff if line.startswith("+") and not line.startswith("+++")]
    assert any("FMUL" in line for line in added) and not any("/*" in line for line in diff)
    text = invoke("diff", a, b, "--db", str(db))
    assert text.exit_code == 0 and ANSI not in text.output
    assert "b/a" in text.output and "+    FMUL" in text.output
    changed = invoke("diff", a, b, "--db", str(db), "--changed").output.splitlines()
    assert any(line.startswith("sass ") and "sass_instructions" in line for line in changed)
    assert not any(line.startswith("compile ") and "registers" in line for line in changed)


def test_tables_lists_the_schema_with_row_counts(two_vadds: tuple[Path, str, str], tmp_path: Path) -> None:
    db, _, _ = two_vadds
    out = json.loads(invoke("tables", "--db", str(db), "--format", "json").output)
    counts = {t["name"]: t["rows"] for t in out}
    assert counts["runs"] == 2 and counts == {n: sql(db, f'SELECT count(*) FROM "{n}"')[0][0] for n in counts}
    assert all(t["description"] for t in out)
    text = invoke("tables", "--db", str(db)).output.splitlines()
    runs_line = next(line for line in text if line.startswith("runs "))
    assert runs_line.split()[1] == "2" and "label" in runs_line
    fresh = invoke("tables", "--db", str(tmp_path / "none.duckdb"), "--columns")
    assert fresh.exit_code == 0 and "does not exist yet" in fresh.output
    assert "label VARCHAR" in " ".join(fresh.output.split()) and not (tmp_path / "none.duckdb").exists()


def test_long_cells_wrap_instead_of_being_cut(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    run_json(str(EXAMPLES / "scale.toml"), "--db", str(db), "--stages", "compile")
    word = "x" * 150 + "END"
    out = invoke("query", f"SELECT '{word}' AS long, 1 AS n", "--db", str(db)).output
    assert "…" not in out and "END" in out and "".join(out.split()).count("x") == 150


def test_diff_shows_the_sizes_launch_and_label_that_differ(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    vadd = str(EXAMPLES / "vadd.toml")
    big = run_json(vadd, "--db", str(db), "--stages", "compile", "--size", "n=16777219")
    small = run_json(vadd, "--db", str(db), "--stages", "compile", "--size", "n=4096", "--label", "small")
    pair = (big["run_id"], small["run_id"])
    out = json.loads(invoke("diff", *pair, "--db", str(db), "--format", "json").output)
    assert out["same_ptx"] and not out["same_launch"]
    assert (out["a"]["sizes"], out["b"]["sizes"]) == ({"n": 16777219}, {"n": 4096})
    assert (out["a"]["grid"], out["b"]["grid"]) == ([65537, 1, 1], [16, 1, 1])
    assert out["a"]["block"] == out["b"]["block"] == [256, 1, 1]
    assert out["a"]["shared_bytes"] == 0 and (out["a"]["label"], out["b"]["label"]) == (None, "small")
    lines = invoke("diff", *pair, "--db", str(db)).output.splitlines()
    a_line = next(line for line in lines if line.startswith("a "))
    b_line = next(line for line in lines if line.startswith("b "))
    assert "n=16777219" in a_line and "65537x1x1" in a_line and "256x1x1" in a_line
    assert "n=4096" in b_line and "16x1x1" in b_line and "small" in b_line


def test_piped_tables_keep_each_row_on_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # grep and awk read piped output: a row split over lines, or a word split inside ("reduce_su"
    # then "m"), breaks them.
    monkeypatch.delenv("COLUMNS", raising=False)
    db = tmp_path / "k.duckdb"
    label = "block size sweep, 512 threads, second try of the morning"
    reduce_sum = str(EXAMPLES / "reduce_sum.toml")
    first = run_json(reduce_sum, "--db", str(db), "--stages", "compile", "--label", label)
    second = run_json(str(EXAMPLES / "vadd.toml"), "--db", str(db), "--stages", "compile")
    lines = invoke("runs", "--db", str(db)).output.splitlines()
    assert len(lines) == 4  # head, rule, two runs
    row = next(line for line in lines if line.startswith(first["run_id"]))
    assert " reduce_sum " in row and label in row and "reduce_sum.toml" in row
    assert any(line.startswith(second["run_id"]) and " vadd " in line for line in lines)
    monkeypatch.setenv("COLUMNS", "100")
    narrow = invoke("runs", "--db", str(db)).output.splitlines()
    assert len(narrow) > 4 and max(len(line) for line in narrow) <= 100
