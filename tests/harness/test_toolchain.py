"""Toolchain discovery against the installed NVIDIA wheels and hand-built search places."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from karyamorph.harness.tools.toolchain import (
    Toolchain,
    ToolchainError,
    discover,
    discover_from,
    find_tool,
    parse_version,
)

VERSION = re.compile(r"\d+\.\d+\.\d+")


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    return discover()


def test_discover_finds_the_wheel_tools_with_versions(toolchain: Toolchain) -> None:
    assert toolchain.source == "pip wheels"
    assert toolchain.ptxas.name == "ptxas" and toolchain.ptxas.is_file()
    assert toolchain.nvdisasm is not None and toolchain.nvdisasm.is_file()
    assert toolchain.cuobjdump is not None and toolchain.cuobjdump.is_file()
    assert set(toolchain.versions) == {"ptxas", "nvdisasm", "cuobjdump"}
    assert all(VERSION.fullmatch(v) for v in toolchain.versions.values())
    assert toolchain.versions["ptxas"].startswith(toolchain.cuda_release + ".")
    assert toolchain.nvjitlink is None or re.fullmatch(r"\d+\.\d+", toolchain.nvjitlink)


def test_discover_is_cached_per_process(toolchain: Toolchain) -> None:
    assert discover() is toolchain


def test_record_dict_is_flat_and_names_every_tool(toolchain: Toolchain) -> None:
    row = toolchain.as_record_dict()
    assert row["ptxas_path"] == str(toolchain.ptxas)
    assert row["ptxas_version"] == toolchain.versions["ptxas"]
    assert row["cuda_release"] == toolchain.cuda_release
    assert row["source"] == "pip wheels"
    assert {"nvdisasm_path", "cuobjdump_version", "nvjitlink_version"} <= set(row)
    assert all(v is None or isinstance(v, str) for v in row.values())


def test_parse_version_reads_release_and_full_version() -> None:
    text = "ptxas: NVIDIA (R) Ptx optimizing assembler\nCuda compilation tools, release 13.5, V13.5.37\n"
    assert parse_version(text) == ("13.5", "13.5.37")
    with pytest.raises(ToolchainError, match=r"release X\.Y"):
        parse_version("ptxas: something else\n")


def test_missing_ptxas_says_where_it_looked_and_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError) as info:
        discover_from(use_wheels=False, cuda_home=str(tmp_path), path=str(tmp_path))
    message = str(info.value)
    assert str(tmp_path) in message
    assert "pip install nvidia-cuda-nvcc" in message
    assert "PATH" in message


def test_cuda_home_and_path_are_searched_in_order(tmp_path: Path, toolchain: Toolchain) -> None:
    home, bindir = tmp_path / "cuda", tmp_path / "bin"
    (home / "bin").mkdir(parents=True)
    bindir.mkdir()
    (home / "bin" / "ptxas").symlink_to(toolchain.ptxas)
    (bindir / "ptxas").symlink_to(toolchain.ptxas)
    (bindir / "nvdisasm").symlink_to(toolchain.nvdisasm or toolchain.ptxas)

    from_home = discover_from(use_wheels=False, cuda_home=str(home), path=str(bindir))
    assert from_home.source == "CUDA_HOME"
    assert from_home.ptxas == home / "bin" / "ptxas"
    assert from_home.nvdisasm == bindir / "nvdisasm"  # not in CUDA_HOME, so PATH supplies it
    assert from_home.cuobjdump is None
    assert from_home.versions["ptxas"] == toolchain.versions["ptxas"]

    from_path = discover_from(use_wheels=False, cuda_home=None, path=str(bindir))
    assert from_path.source == "PATH"
    assert find_tool("ptxas", use_wheels=False, cuda_home=None, path=str(bindir)) == (
        bindir / "ptxas",
        "PATH",
    )


def test_a_ptxas_that_does_not_report_a_version_is_an_error(tmp_path: Path) -> None:
    broken = tmp_path / "bin" / "ptxas"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'not a compiler' >&2\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(ToolchainError, match=r"--version exited with 3: not a compiler"):
        discover_from(use_wheels=False, cuda_home=str(tmp_path), path=None)
