"""PTX ISA version / CUDA release / sm target tables and the compatibility explanations."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from karyamorph.isa import versions as v
from karyamorph.isa.versions import (
    KNOWN_TARGETS,
    NEWEST_PTX,
    PTX_RELEASES,
    TARGETS,
    arch_from_compute_capability,
    assembles_for,
    compatibility,
    cuda_release_for_ptx,
    max_ptx_for_cuda,
    min_ptx_for_target,
    parse_release,
    parse_target,
    parse_version,
    target_supports,
)
from karyamorph.isa.versions import (
    Arch as Target,
)


def _tool(name: str) -> str | None:
    """The NVIDIA wheel's (or CUDA_HOME's / PATH's) tool, or None where there is none."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
    except ImportError:
        return None
    found: str | None = find_nvidia_binary_utility(name)
    return found


def _tool_release(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    assert m, out
    return m.group(1)


# ----------------------------------------------------------------------------------------------
# Tables


def test_ptx_table_is_strictly_increasing_in_both_columns() -> None:
    ptx = [parse_version(p) for p, _ in PTX_RELEASES]
    cuda = [parse_release(c) for _, c in PTX_RELEASES]
    assert ptx == sorted(set(ptx))
    assert cuda == sorted(set(cuda))
    assert PTX_RELEASES[-1][0] == NEWEST_PTX


@pytest.mark.parametrize(("ptx", "cuda"), [
    ("7.0", "11.0"), ("7.8", "11.8"), ("8.0", "12.0"), ("8.5", "12.5"), ("8.6", "12.7"),
    ("8.7", "12.8"), ("8.8", "12.9"), ("9.0", "13.0"), ("9.1", "13.1"), ("9.5", "13.5"),
])  # fmt: skip
def test_known_ptx_to_cuda_pairs(ptx: str, cuda: str) -> None:
    assert cuda_release_for_ptx(ptx) == cuda
    assert max_ptx_for_cuda(cuda) == ptx


def test_max_ptx_for_cuda_between_and_beyond_the_table() -> None:
    assert max_ptx_for_cuda("12.6") == "8.5"  # 12.6 shipped no new PTX ISA
    assert max_ptx_for_cuda("12.9.1") == "8.8"
    assert max_ptx_for_cuda("13") == "9.0"
    assert max_ptx_for_cuda("99.0") == NEWEST_PTX
    with pytest.raises(ValueError, match="predates"):
        max_ptx_for_cuda("0.9")


def test_every_table_version_round_trips_through_its_release() -> None:
    for ptx, _ in PTX_RELEASES:
        assert max_ptx_for_cuda(cuda_release_for_ptx(ptx)) == ptx


def test_unknown_ptx_version_is_refused_with_the_known_range() -> None:
    with pytest.raises(ValueError, match=r"unknown PTX ISA version 7\.9 .*1\.0 to"):
        cuda_release_for_ptx("7.9")


@pytest.mark.parametrize(("target", "ptx"), [
    ("sm_75", "6.3"), ("sm_80", "7.0"), ("sm_86", "7.1"), ("sm_87", "7.4"), ("sm_89", "7.8"),
    ("sm_90", "7.8"), ("sm_90a", "8.0"), ("sm_100", "8.6"), ("sm_100a", "8.6"),
    ("sm_100f", "8.8"), ("sm_101", "8.6"), ("sm_103", "8.8"), ("sm_107", "9.4"),
    ("sm_110", "9.0"), ("sm_120", "8.7"), ("sm_120a", "8.7"), ("sm_120f", "8.8"),
    ("sm_121", "8.8"), ("compute_90a", "8.0"),
])  # fmt: skip
def test_min_ptx_for_target(target: str, ptx: str) -> None:
    assert min_ptx_for_target(target) == ptx


def test_target_table_is_consistent() -> None:
    known = {p for p, _ in PTX_RELEASES}
    for name, info in TARGETS.items():
        assert parse_target(name).name == name == info.name
        assert info.min_ptx in known, name
        assert info.removed_in is None or parse_release(info.removed_in) > (0, 0)
    # an 'a' or 'f' variant never predates its base target
    for name in KNOWN_TARGETS:
        t = parse_target(name)
        base = f"sm_{t.major}{t.minor}"
        assert parse_version(min_ptx_for_target(name)) >= parse_version(min_ptx_for_target(base))
    for wanted in (
        "sm_80",
        "sm_86",
        "sm_89",
        "sm_90",
        "sm_90a",
        "sm_100",
        "sm_100a",
        "sm_103",
        "sm_110",
        "sm_120",
        "sm_120a",
        "sm_121",
    ):
        assert wanted in KNOWN_TARGETS
    with pytest.raises(ValueError, match="unknown target 'sm_99'"):
        min_ptx_for_target("sm_99")


# ----------------------------------------------------------------------------------------------
# Parsing


def test_parse_target_and_compute_capability() -> None:
    assert parse_target("sm_120a") == Target(12, 0, "a")
    assert parse_target("sm_120a").compute_capability == (12, 0)
    assert parse_target("sm_90") == Target(9, 0, "")
    assert parse_target(" SM_103F ") == Target(10, 3, "f")
    assert parse_target("compute_100").name == "sm_100"
    assert str(parse_target("sm_86")) == "sm_86"


@pytest.mark.parametrize("bad", ["", "sm_", "sm_9", "gfx90a", "sm_90b", "sm_90aa", "90", "sm90"])
def test_parse_target_rejects_garbage_with_the_text(bad: str) -> None:
    with pytest.raises(ValueError, match="not an sm target") as err:
        parse_target(bad)
    assert repr(bad) in str(err.value)


@pytest.mark.parametrize("bad", ["", "8", "v8.7", "8.7.1", "8,7", "eight"])
def test_parse_version_rejects_garbage(bad: str) -> None:
    with pytest.raises(ValueError, match="not a PTX ISA version"):
        parse_version(bad)


def test_parse_release_forms() -> None:
    assert parse_release("13.0") == (13, 0)
    assert parse_release("13") == (13, 0)
    assert parse_release("12.9.1") == (12, 9)
    with pytest.raises(ValueError, match="not a CUDA release"):
        parse_release("CUDA 13")


def test_arch_from_compute_capability() -> None:
    assert arch_from_compute_capability(12, 0) == "sm_120"
    assert arch_from_compute_capability(9, 0) == "sm_90"
    assert arch_from_compute_capability(10, 3) == "sm_103"
    for name in KNOWN_TARGETS:
        t = parse_target(name)
        if t.suffix == "":
            assert arch_from_compute_capability(*t.compute_capability) == name
    with pytest.raises(ValueError, match="not a compute capability"):
        arch_from_compute_capability(12, 10)


# ----------------------------------------------------------------------------------------------
# The target lattice


@pytest.mark.parametrize(("target", "required", "expected"), [
    ("sm_120", "sm_90", True), ("sm_90a", "sm_90", True), ("sm_80", "sm_90", False),
    ("sm_100f", "sm_100", True), ("sm_120a", "sm_89", True),
    # arch-specific: exactly that architecture
    ("sm_90a", "sm_90a", True), ("sm_90", "sm_90a", False), ("sm_100a", "sm_90a", False),
    ("sm_100", "sm_90a", False), ("sm_120", "sm_90a", False), ("sm_120a", "sm_90a", False),
    ("sm_103a", "sm_100a", False),
    # family: later 'f' or 'a' members of the same family only
    ("sm_103a", "sm_100f", True), ("sm_103f", "sm_100f", True), ("sm_107a", "sm_100f", True),
    ("sm_103", "sm_100f", False), ("sm_100f", "sm_103f", False), ("sm_120f", "sm_100f", False),
    ("sm_121a", "sm_120f", True), ("sm_110f", "sm_100f", False),
    # sm_101 is the old name of sm_110
    ("sm_110f", "sm_101f", True), ("sm_110a", "sm_101a", True), ("sm_110", "sm_103", True),
])  # fmt: skip
def test_target_supports(target: str, required: str, expected: bool) -> None:
    assert target_supports(target, required) is expected


# (PTX .target, --arch, what ptxas 13.5 does)
ASSEMBLY_CASES = [
    ("sm_100f", "sm_103", True), ("sm_100f", "sm_103a", True), ("sm_100f", "sm_100", True),
    ("sm_103f", "sm_100f", False), ("sm_120f", "sm_121", True), ("sm_120f", "sm_100f", False),
    ("sm_90a", "sm_90", False), ("sm_90a", "sm_100a", False), ("sm_100a", "sm_103a", False),
    ("sm_100a", "sm_100f", False), ("sm_120a", "sm_120", False), ("sm_120", "sm_120a", True),
    ("sm_80", "sm_90a", True), ("sm_90", "sm_80", False), ("sm_100", "sm_120", True),
    ("sm_90a", "sm_90a", True),
]  # fmt: skip


@pytest.mark.parametrize(("ptx_target", "arch", "expected"), ASSEMBLY_CASES)
def test_assembles_for(ptx_target: str, arch: str, expected: bool) -> None:
    assert assembles_for(ptx_target, arch) is expected


def _assemble(ptxas: str, tmp_path: Path, version: str, target: str, arch: str) -> bool:
    src = tmp_path / f"k_{version}_{target}_{arch}.ptx"
    src.write_text(
        f".version {version}\n.target {target}\n.address_size 64\n.visible .entry k() {{ ret; }}\n"
    )
    done = subprocess.run(
        [ptxas, "-arch", arch, str(src), "-o", str(src.with_suffix(".cubin"))], capture_output=True, text=True
    )
    return done.returncode == 0


def test_assembles_for_agrees_with_ptxas(tmp_path: Path) -> None:
    ptxas = _tool("ptxas")
    if ptxas is None:
        pytest.skip("no ptxas found")
    version = max_ptx_for_cuda(_tool_release(ptxas))
    for target, arch, expected in ASSEMBLY_CASES:
        assert _assemble(ptxas, tmp_path, version, target, arch) is expected, (target, arch)


def test_target_min_ptx_agrees_with_ptxas(tmp_path: Path) -> None:
    """ptxas accepts each target at its table version and refuses it one version earlier."""
    ptxas = _tool("ptxas")
    if ptxas is None:
        pytest.skip("no ptxas found")
    tool = parse_release(_tool_release(ptxas))
    newest = parse_version(max_ptx_for_cuda(_tool_release(ptxas)))
    ordered = [p for p, _ in PTX_RELEASES]
    checked = 0
    for name, info in TARGETS.items():
        t = parse_target(name)
        if (
            t.compute_capability < (7, 5)
            or parse_version(info.min_ptx) > newest
            or (info.removed_in and tool >= parse_release(info.removed_in))
        ):
            continue
        assert _assemble(ptxas, tmp_path, info.min_ptx, name, name), name
        earlier = ordered[ordered.index(info.min_ptx) - 1]
        assert not _assemble(ptxas, tmp_path, earlier, name, name), name
        checked += 1
    assert checked >= 25


def test_installed_nvcc_emits_a_ptx_version_of_its_release(tmp_path: Path) -> None:
    nvcc = _tool("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc found")
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* a) { a[threadIdx.x] += 1.0f; }\n")
    out = tmp_path / "k.ptx"
    subprocess.run([nvcc, "-ptx", str(src), "-o", str(out)], check=True, capture_output=True)
    m = re.search(r"^\.version\s+(\d+\.\d+)", out.read_text(), re.MULTILINE)
    assert m is not None
    emitted, release = m.group(1), _tool_release(nvcc)
    assert emitted in {p for p, _ in PTX_RELEASES}
    assert cuda_release_for_ptx(emitted) == release
    assert max_ptx_for_cuda(release) == emitted


# ----------------------------------------------------------------------------------------------
# Compatibility


def _kinds(problems: list[v.Problem]) -> list[tuple[str, str]]:
    return [(p.severity, p.kind) for p in problems]


def test_all_fine_gives_no_problems() -> None:
    assert compatibility("9.5", "sm_120", "sm_120", "13.5", "13.5") == []
    assert compatibility("8.7", "sm_120a", "sm_120a", "12.8", "12.8") == []
    assert compatibility("8.0", "sm_90a", "sm_90a", None, None) == []
    # forward JIT: PTX of an older target and version assembles for a newer arch (ptxas agrees)
    assert compatibility("8.5", "sm_80", "sm_120") == []
    assert compatibility("9.0", "", "sm_120", "", "") == []


def test_ptx_newer_than_driver() -> None:
    problems = compatibility("9.1", "sm_80", "sm_80", None, "13.0")
    assert _kinds(problems) == [("error", "driver-too-old-for-ptx")]
    assert problems[0].message == (
        "PTX ISA 9.1 needs CUDA 13.1 or newer; this driver supports CUDA 13.0 (the driver JIT "
        "cannot load it; compile to a cubin with a newer ptxas, which runs on this driver if the "
        "arch matches)"
    )
    # ... only a warning when a ptxas of the driver's major release compiles it ahead of time
    problems = compatibility("9.1", "sm_80", "sm_80", "13.5", "13.0")
    assert _kinds(problems) == [("warning", "driver-too-old-for-ptx")]


def test_toolchain_of_a_newer_major_than_the_driver() -> None:
    problems = compatibility("8.7", "sm_120", "sm_120", "13.5", "12.8")
    assert ("error", "driver-older-major") in _kinds(problems)
    msg = next(p.message for p in problems if p.kind == "driver-older-major")
    assert "CUDA 13.5 toolchain need a driver for CUDA 13.0 or newer" in msg


def test_arch_specific_target_on_another_architecture() -> None:
    problems = compatibility("8.7", "sm_90a", "sm_120")
    assert _kinds(problems) == [("error", "target-arch-mismatch")]
    assert problems[0].message == (
        ".target sm_90a code cannot run on sm_120: arch-specific 'a' targets run only on exactly "
        "that architecture"
    )
    same_gpu = compatibility("8.7", "sm_90a", "sm_90")
    assert "assembles only with --arch sm_90a, not sm_90" in same_gpu[0].message


def test_newer_base_target_for_an_older_arch() -> None:
    problems = compatibility("8.0", "sm_90", "sm_80")
    assert _kinds(problems) == [("error", "target-arch-mismatch")]
    assert problems[0].message == (
        "PTX .target sm_90 cannot be assembled for --arch sm_80 (a newer target's PTX only "
        "assembles for that target or newer)"
    )


def test_family_target_outside_its_family() -> None:
    problems = compatibility("9.4", "sm_100f", "sm_120")
    assert _kinds(problems) == [("error", "target-arch-mismatch")]
    assert "sm_10x family" in problems[0].message
    assert "(sm_100, sm_103, sm_107)" in problems[0].message
    assert compatibility("9.4", "sm_100f", "sm_107a") == []


def test_target_newer_than_the_declared_version() -> None:
    problems = compatibility("8.5", "sm_120", "sm_120")
    assert _kinds(problems) == [("error", "target-needs-newer-ptx")]
    assert problems[0].message == (".target sm_120 needs PTX ISA >= 8.7 but the file declares .version 8.5")


def test_toolchain_too_old() -> None:
    problems = compatibility("9.5", "sm_80", "sm_80", "13.0", None)
    assert _kinds(problems) == [("error", "toolchain-too-old-for-ptx")]
    assert "PTX ISA 9.5 needs CUDA 13.5 or newer; this toolchain is CUDA 13.0" in problems[0].message
    problems = compatibility("8.0", "sm_80", "sm_120", "12.4", None)
    assert _kinds(problems) == [("error", "toolchain-too-old-for-arch")]
    assert "--arch sm_120 needs a CUDA 12.8 or newer toolchain" in problems[0].message


def test_arch_dropped_from_the_toolchain() -> None:
    problems = compatibility("7.0", "sm_70", "sm_70", "13.5", None)
    assert _kinds(problems) == [("error", "toolchain-dropped-arch")]
    assert compatibility("7.0", "sm_70", "sm_70", "12.9", None) == []


def test_driver_too_old_for_the_arch() -> None:
    problems = compatibility("8.0", "sm_80", "sm_120", None, "12.4")
    assert _kinds(problems) == [("error", "driver-too-old-for-arch")]
    assert "sm_120 needs a driver for CUDA 12.8 or newer" in problems[0].message


def test_unknown_version_and_arch_are_warnings_not_crashes() -> None:
    assert _kinds(compatibility("9.9", "sm_80", "sm_80")) == [("warning", "unknown-ptx-version")]
    # a driver newer than the table is not blamed for a version the table does not know
    assert _kinds(compatibility("9.9", "sm_80", "sm_80", None, "14.0")) == [
        ("warning", "unknown-ptx-version")
    ]
    assert ("warning", "unknown-arch") in _kinds(compatibility("9.0", "sm_80", "sm_130"))


def test_garbage_inputs_raise() -> None:
    with pytest.raises(ValueError, match="not a PTX ISA version"):
        compatibility("nine", "sm_80", "sm_80")
    with pytest.raises(ValueError, match="not an sm target"):
        compatibility("9.0", "sm_80", "gfx942")
    with pytest.raises(ValueError, match="not a CUDA release"):
        compatibility("9.0", "sm_80", "sm_80", "latest", None)
