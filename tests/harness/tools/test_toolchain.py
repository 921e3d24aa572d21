"""Tool discovery and versions against the installed NVIDIA wheels, hand-built search places and
the version outputs recorded with the GPU tools' golden files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from karyamorph.harness.stages.base import Context, StageResult, Status
from karyamorph.harness.tool_inputs import tool_stage_inputs
from karyamorph.harness.tools.toolchain import (
    GPU_TOOLS,
    INSTALL,
    TOOLS,
    Tool,
    Toolchain,
    ToolchainError,
    discover,
    discover_from,
    find_tool,
    locate,
    not_found,
    parse_version,
)
from karyamorph.isa.arch import Arch

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


# -- one helper for every tool -------------------------------------------------------------------

GOLDEN = Path(__file__).parents[2] / "golden"


def recorded_version_output(tool: str) -> tuple[str, str]:
    """The ``--version`` text and version recorded with a GPU tool's golden files."""
    meta = json.loads((GOLDEN / tool / "meta.json").read_text())
    return meta["version_output"], meta["version"]


@pytest.mark.parametrize("tool", ["compute-sanitizer", "ncu"])
def test_gpu_tools_versions_are_read_by_the_same_helper(tool: str) -> None:
    text, version = recorded_version_output(tool)
    assert parse_version(text) == (".".join(version.split(".")[:2]), version)


@pytest.mark.parametrize("tool", ["compute-sanitizer", "ncu"])
def test_a_gpu_tool_is_located_with_its_version(tmp_path: Path, tool: str) -> None:
    text, version = recorded_version_output(tool)
    fake = tmp_path / "bin" / tool
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ncat <<'END'\n{text}\nEND\n")
    fake.chmod(0o755)
    found = locate(tool, use_wheels=False, cuda_home=str(tmp_path))
    assert found == Tool(tool, fake, version, "CUDA_HOME", ".".join(version.split(".")[:2]))
    assert found is not None and found.as_dict()["version"] == version
    assert locate(tool, use_wheels=False, cuda_home=None, path=str(tmp_path / "none")) is None


@pytest.mark.parametrize(
    ("tool", "install"),
    [
        ("ptxas", "pip install nvidia-cuda-nvcc"),
        ("nvdisasm", "pip install nvidia-cuda-nvdisasm"),
        ("cuobjdump", "pip install nvidia-cuda-cuobjdump"),
        ("compute-sanitizer", "pip install nvidia-cuda-sanitizer-api"),
        ("ncu", "Nsight Compute"),
    ],
)
def test_a_missing_tool_is_named_with_how_to_install_it(tool: str, install: str) -> None:
    message = not_found(tool, "PATH")
    assert message.startswith(f"{tool} was not found; searched PATH.")
    assert install in message and "CUDA_HOME" in message
    assert set(INSTALL) == set(TOOLS) | set(GPU_TOOLS)


def test_a_gpu_stage_without_its_tool_skips_saying_how_to_install_it() -> None:
    context = Context(kernel=None, arch=Arch.parse("sm_90"), toolchain=None, cubin=b"\x7fELF")
    context.device = object()  # type: ignore[assignment]
    result = tool_stage_inputs(context, None, lambda: None, "compute-sanitizer")
    assert isinstance(result, StageResult) and result.status == Status.SKIP
    assert "compute-sanitizer was not found" in result.log
    assert "pip install nvidia-cuda-sanitizer-api" in result.log


def test_a_gpu_tool_that_does_not_run_is_a_stage_error() -> None:
    def broken() -> Tool | None:
        raise ToolchainError("ncu --version exited with 1: no")

    context = Context(kernel=None, arch=Arch.parse("sm_90"), toolchain=None, cubin=b"\x7fELF")
    context.device = object()  # type: ignore[assignment]
    result = tool_stage_inputs(context, None, broken, "ncu")
    assert isinstance(result, StageResult) and result.status == Status.ERROR
    assert "ncu --version exited with 1" in result.log
