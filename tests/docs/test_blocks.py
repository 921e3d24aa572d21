"""Every code block of the docs and the README runs as written, or says why it cannot.

Python blocks are executed, TOML blocks load (a spec with the spec loader, a campaign with the
campaign loader), and the shell blocks of a page run in order, from a folder that sees the
repository's datasets/, tests/ and benchmarks/, against a database of the page's own. The
markers a block may carry are described in :mod:`tests.docs.fences`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import duckdb
import pytest

from karyamorph.campaign.definition import campaign_from_dict
from karyamorph.campaign.items import expand
from karyamorph.harness.pipeline import prepare_spec
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import spec_from_dict
from karyamorph.kernel.signature import prepare
from tests.docs.fences import ROOT, Block, blocks, commands, pages

LANGS = {"python", "toml", "sh", "console", "text"}
PROGRAM = re.compile(r"^(\.venv/bin/)?karyamorph(\s|$)")
SHARED = ("datasets", "tests", "benchmarks", "docs", "notebooks")
"""What the commands read from the repository; what they write lands in the temporary folder."""
VENV_BIN = Path(sys.executable).parent


def every_block() -> list[Block]:
    return [b for page in pages() for b in blocks(page)]


def runnable(lang: str) -> list[Block]:
    return [b for b in every_block() if b.lang == lang and b.not_run is None]


def shell_pages() -> list[Path]:
    return sorted({b.page for b in every_block() if b.lang in ("sh", "console") and b.not_run is None})


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    for name in SHARED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp_path


def test_every_block_is_of_a_known_kind() -> None:
    odd = [f"{b.where}: ```{b.lang}" for b in every_block() if b.lang not in LANGS]
    assert not odd, "blocks the tests do not know how to run (fence them as text):\n" + "\n".join(odd)


def test_every_shell_block_that_runs_is_karyamorph_commands() -> None:
    odd = [
        f"{b.where}: {command}"
        for b in every_block()
        if b.lang in ("sh", "console") and b.not_run is None
        for command, _ in commands(b)
        if not PROGRAM.match(command)
    ]
    assert not odd, (
        "commands other than karyamorph's in a block that runs "
        "(mark the block <!-- not run: why --> or fence it as text):\n" + "\n".join(odd)
    )


def test_a_stand_in_appears_in_its_block() -> None:
    stale = [f"{b.where}: {token}" for b in every_block() for token in b.stand_ins if token not in b.text]
    assert not stale, "stand-ins their block does not use:\n" + "\n".join(stale)


def resolve(block: Block, command: str, db: Path) -> str:
    """``command`` with each stand-in replaced by what its query finds now (the runs the block's
    earlier commands stored included)."""
    for token, sql in block.stand_ins.items():
        if not re.search(rf"\b{re.escape(token)}\b", command):
            continue
        with duckdb.connect(str(db), read_only=True) as con:
            row = con.execute(sql).fetchone()
        assert row is not None, f"{block.where}: stand-in {token}: {sql} found nothing"
        command = re.sub(rf"\b{re.escape(token)}\b", str(row[0]), command)
    return command


def run_page(page: Path, workdir: Path) -> list[str]:
    """Run the shell blocks of ``page`` in order from ``workdir``; what went wrong, if anything."""
    for name in SHARED:
        (workdir / name).symlink_to(ROOT / name, target_is_directory=True)
    db = workdir / "karyamorph.duckdb"
    env = {
        **os.environ,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "KARYAMORPH_DB": str(db),
        "COLUMNS": "120",
    }
    for block in blocks(page):
        if block.lang not in ("sh", "console") or block.not_run is not None:
            continue
        for command, want in commands(block):
            command = resolve(block, command, db).replace(".venv/bin/karyamorph", "karyamorph")
            done = subprocess.run(
                ["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True, timeout=180
            )
            if done.returncode != want:
                return [
                    f"{block.where}: `{command}` exited with {done.returncode}, not {want}",
                    done.stdout[-3000:],
                    done.stderr[-3000:],
                ]
    return []


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Future[list[str]]]:
    """Every page's shell blocks, started at once: the pages are independent (a database and a
    folder each) and their time is mostly spent waiting on ptxas, nvdisasm and start-up."""
    assert (VENV_BIN / "karyamorph").exists(), f"no karyamorph program beside {sys.executable}"
    pool = ThreadPoolExecutor(max_workers=3)
    runs = {page: pool.submit(run_page, page, tmp_path_factory.mktemp(page.stem)) for page in shell_pages()}
    pool.shutdown(wait=False)
    return runs


@pytest.mark.parametrize("page", shell_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_shell_blocks_of_a_page_run(page: Path, page_runs: dict[Path, Future[list[str]]]) -> None:
    failure = page_runs[page].result()
    assert not failure, "\n".join(failure)


@pytest.mark.parametrize("block", runnable("python"), ids=lambda b: b.where)
def test_a_python_block_runs(block: Block, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    exec(compile(block.text, block.where, "exec"), {"__name__": "__docs__"})


@pytest.mark.parametrize("block", runnable("toml"), ids=lambda b: b.where)
def test_a_toml_block_loads(block: Block) -> None:
    doc = tomllib.loads(block.text)
    if "campaign" in doc:
        # Spec paths in a campaign are relative to its file: the examples sit in datasets/campaigns.
        campaign = campaign_from_dict(doc, ROOT / "datasets" / "campaigns" / "docs.toml", block.text)
        assert expand(campaign), f"{block.where}: the campaign has no items"
    else:
        assert "kernel" in doc, f"{block.where}: neither a spec nor a campaign (mark it or fence as text)"
        spec = spec_from_dict(doc, ROOT / "datasets" / "kernels", "docs.toml")
        if spec.cuda is not None:  # CUDA source has PTX once compiled for a target
            spec = prepare_spec(spec, "sm_90").spec
        prepare(spec)
        bind(spec)
