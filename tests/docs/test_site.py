"""The docs site builds with no warning, and the README stays a front door that links to it."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.fences import DOCS, ROOT

README = ROOT / "README.md"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs-material is not installed: pip install -e '.[dev]'")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", "mkdocs.yml", "-d", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    assert (tmp_path / "index.html").exists()
    assert (tmp_path / "store" / "index.html").exists()


def nav_pages(entries: list[object]) -> list[str]:
    out: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        out += nav_pages(value) if isinstance(value, list) else [str(value)]
    return out


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with mkdocs: pip install -e '.[dev]'")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    listed = nav_pages(config["nav"])
    on_disk = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(listed) == on_disk


def test_the_readme_is_a_front_door() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    # The two commands come first, before any other block.
    first = re.search(r"```\w*\n(.*?)```", text, re.S)
    assert first is not None
    assert [line.split()[:2] for line in first.group(1).splitlines()] == [["make", "demo"], ["make", "test"]]


def test_every_relative_link_of_the_readme_and_the_pages_names_a_file() -> None:
    broken = []
    for page in [README, *DOCS.rglob("*.md")]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.partition("#")[0]).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "\n".join(broken)
