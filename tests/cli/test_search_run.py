"""`karyamorph search run` of a spec or a Python file: the arch is the GPU's unless given; a search
the spec declares runs to its end with a Kernel Tuner cache written (its GPU gates stood in for:
tests/search/standin_cli.py); what cannot be searched is one located line, exit status 2, and
nothing is stored."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import karyamorph.harness.gpu.device
from karyamorph.cli import main
from karyamorph.search import read_cache, stored
from karyamorph.store.database import Store
from tests.docs.fences import blocks

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "datasets" / "searches" / "examples"
STANDIN = [sys.executable, "-m", "tests.search.standin_cli"]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["search", "run", *args])


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(karyamorph.harness.gpu.device, "current_device", lambda: None)


def test_a_spec_search_takes_the_gpu_s_arch_and_writes_a_kernel_tuner_cache(tmp_path: Path) -> None:
    db, cache = tmp_path / "s.duckdb", tmp_path / "kt.json"
    args = ["search", "run", str(EXAMPLES / "saxpy_stride.toml"), "--strategy", "random", "--budget", "4",
            "--cost-prior", "0", "--kt-cache", str(cache), "--out", str(tmp_path / "w"), "--db", str(db),
            "--format", "json"]  # fmt: skip
    done = subprocess.run(
        [*STANDIN, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["evaluations"] == 4 and summary["baseline"]["config"]["block_size_x"] == 256
    with Store.open_to_read(db) as store:
        search = stored.load(store, summary["search_id"])
    assert search.params["arch"] == "sm_90" and search.params["template"] == "saxpy_stride.toml"
    assert search.params["parameters"]["REGS"] == [0, 32]
    assert read_cache(cache).space.size == 4
    assert (tmp_path / "w" / summary["search_id"][:8] / "saxpy_stride.ptx").exists()


def test_with_no_gpu_and_no_arch_it_says_to_pass_arch(tmp_path: Path, no_gpu: None) -> None:
    result = invoke("vadd", "--db", str(tmp_path / "s.duckdb"))
    assert result.exit_code == 2 and not (tmp_path / "s.duckdb").exists()
    assert result.output.startswith("error: no GPU was found to take the arch from: pass --arch (sm_90")
    given = invoke("vadd", "--arch", "sm_90", "--db", str(tmp_path / "s.duckdb"))
    assert given.exit_code == 2 and "this machine has none" in given.output


def _docs_errors() -> list[str]:
    """The errors docs/search.md shows for a [search] table gone wrong."""
    [text] = [b.text for b in blocks(ROOT / "docs" / "search.md") if b.lang == "text"]
    return text.splitlines()


# Each error of the page, made by one change to an example (its kernel file named by its path).
BROKEN = {
    "softmax_search.toml": ('constraints = ["BLOCK <= cols"]', 'constraints = ["BLOCK <= COLS"]'),
    "sgemm_tiled.toml": (re.compile(r"constraints = \[\n.*?\n\]", re.S), '["BM <= 64", "BM > 64"]'),
    "saxpy_stride.toml": ("REGS = [0, 32]", "REGS = []"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_search_is_the_error_the_page_shows(tmp_path: Path, name: str, no_gpu: None) -> None:
    text = (EXAMPLES / name).read_text()
    for kernel in re.findall(r'^(?:cu|ptx) = "(.+)"$', text, re.M):
        text = text.replace(f'"{kernel}"', f'"{(EXAMPLES / kernel).resolve()}"')
    old, new = BROKEN[name]
    text = old.sub(f"constraints = {new}", text) if isinstance(old, re.Pattern) else text.replace(old, new)
    (tmp_path / name).write_text(text)
    result = invoke(str(tmp_path / name), "--arch", "sm_90", "--db", str(tmp_path / "s.duckdb"))
    assert result.exit_code == 2 and not (tmp_path / "s.duckdb").exists(), result.output
    assert result.output.strip() in _docs_errors(), result.output


def test_a_python_file_without_template_is_named(tmp_path: Path, no_gpu: None) -> None:
    (tmp_path / "mine.py").write_text("SCALE = 2\n")
    result = invoke(str(tmp_path / "mine.py"), "--arch", "sm_90", "--db", str(tmp_path / "s.duckdb"))
    assert result.exit_code == 2 and not (tmp_path / "s.duckdb").exists()
    assert result.output.startswith(f"error: {tmp_path / 'mine.py'}: defines no TEMPLATE")
