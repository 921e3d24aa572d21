"""The tool-output cache: the same cubin is disassembled once; off means off; bad entries heal."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from karyamorph.harness.tools import nvdisasm
from karyamorph.harness.tools.cache import cache_key, cached_text
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import discover

EXAMPLES = Path(__file__).resolve().parents[3] / "datasets" / "kernels"


def test_keys_do_not_collide_across_part_boundaries() -> None:
    assert cache_key(["ab", "c"]) != cache_key(["a", "bc"])
    assert cache_key([b"x"]) == cache_key(["x"])


def test_second_disassembly_comes_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KARYAMORPH_CACHE", str(tmp_path))
    tc = discover()
    cubin = assemble((EXAMPLES / "vadd.ptx").read_text(), "sm_90", tc, filename="vadd.ptx").cubin
    first = nvdisasm.disassemble(cubin, tc)
    assert list((tmp_path / "sass").glob("*.txt"))
    calls: list[Any] = []
    real = subprocess.run

    def counting(*args: Any, **kw: Any) -> Any:
        calls.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(subprocess, "run", counting)
    again = nvdisasm.disassemble(cubin, tc)
    assert again == first and calls == []
    # Another cubin (another arch) is not served from the first one's entry.
    other = assemble((EXAMPLES / "vadd.ptx").read_text(), "sm_120", tc, filename="vadd.ptx").cubin
    assert nvdisasm.disassemble(other, tc).text != first.text


def test_cache_off_and_unwritable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KARYAMORPH_CACHE", "off")
    calls = []
    assert cached_text("k", ["a"], lambda: calls.append(1) or "x") == "x"
    assert cached_text("k", ["a"], lambda: calls.append(1) or "x") == "x"
    assert len(calls) == 2
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("KARYAMORPH_CACHE", str(blocker))
    assert cached_text("k", ["a"], lambda: "y") == "y"
