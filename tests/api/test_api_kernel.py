"""``km.Kernel`` on the CPU: made from PTX, CUDA source and specs; params, ptxas figures, SASS,
and a launch whose arguments are refused before any CUDA call."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import karyamorph as km
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import discover

KERNELS = Path(__file__).resolve().parents[2] / "datasets" / "kernels"
VADD = KERNELS / "vadd.ptx"
AXPY = """extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"""


def test_from_ptx_reads_a_file_a_path_name_or_the_text() -> None:
    by_path = km.Kernel.from_ptx(VADD, "vadd")
    by_name = km.Kernel.from_ptx(str(VADD), "vadd")
    by_text = km.Kernel.from_ptx(VADD.read_text(), "vadd")
    assert by_path.ptx == by_name.ptx == by_text.ptx == VADD.read_text()
    assert (by_path.filename, by_text.filename) == ("vadd.ptx", "kernel.ptx")


def test_params_are_the_entry_signature() -> None:
    k = km.Kernel.from_ptx(VADD, "vadd")
    assert [(p.name, p.type, p.is_ptr) for p in k.params] == [
        ("a", "u64", True), ("b", "u64", True), ("c", "u64", True), ("n", "u32", False),
    ]  # fmt: skip


def test_an_entry_the_ptx_lacks_is_a_spec_error_listing_those_it_has() -> None:
    with pytest.raises(km.SpecError, match=r"vadd\.ptx: entry: .*no \.entry named 'vdd' \(entries: vadd\)"):
        km.Kernel.from_ptx(VADD, "vdd")


def test_ptx_that_does_not_parse_is_a_ptx_error() -> None:
    with pytest.raises(km.PtxError):
        km.Kernel.from_ptx(".version 8.0\n.target sm_80\n.entry k( { ret; }\n", "k")


def test_compile_reports_what_ptxas_reports() -> None:
    k = km.Kernel.from_ptx(VADD, "vadd")
    compiled = k.compile("sm_90")
    direct = assemble(VADD.read_text(), "sm_90", discover(), filename="vadd.ptx").functions["vadd"]
    assert compiled.arch == "sm_90"
    assert compiled.registers == direct.registers and compiled.registers is not None
    assert (compiled.spill_stores_bytes, compiled.spill_loads_bytes, compiled.shared_bytes) == (0, 0, 0)
    assert compiled.cubin[:4] == b"\x7fELF"
    assert k.compile("sm_90") is compiled  # cached per target
    assert compiled.to_dict()["cubin_bytes"] == len(compiled.cubin) and "cubin" not in compiled.to_dict()


def test_compile_defaults_to_the_ptx_target() -> None:
    assert km.Kernel.from_ptx(VADD, "vadd").compile().arch == "sm_80"  # vadd.ptx: .target sm_80


def test_a_bad_target_is_an_arch_error() -> None:
    with pytest.raises(km.ArchError):
        km.Kernel.from_ptx(VADD, "vadd").compile("sm_7")


def test_sass_is_the_disassembled_cubin() -> None:
    sass = km.Kernel.from_ptx(VADD, "vadd").sass("sm_90")
    assert ".text.vadd" in sass and "FADD" in sass and "sm_90" in sass


def test_from_cuda_compiles_with_nvcc_for_the_target() -> None:
    k = km.Kernel.from_cuda(AXPY, "axpy", options=["-DUNUSED=1"], arch="sm_90")
    assert k.entry == "axpy" and k.module.arch == "sm_90"
    assert [p.type for p in k.params] == ["u64", "u64", "f32", "u32"]
    assert k.compile().arch == "sm_90"


def test_from_cuda_finds_a_cpp_kernel_by_its_mangled_name(tmp_path: Path) -> None:
    source = tmp_path / "twice.cu"
    source.write_text("__global__ void twice(float *y) { y[threadIdx.x] *= 2.0f; }\n")
    k = km.Kernel.from_cuda(source, "twice", arch="sm_90")
    assert k.entry == "_Z5twicePf" and k.filename == "twice.ptx"


def test_from_cuda_reports_nvcc_errors_at_their_line() -> None:
    with pytest.raises(km.SpecError, match=r"line 2|:2"):
        km.Kernel.from_cuda(
            'extern "C" __global__ void k(float *y) {\n    y[0] = undefined_name;\n}\n', "k", arch="sm_90"
        )


def test_load_takes_the_spec_kernel() -> None:
    k = km.load(KERNELS / "vadd.toml")
    assert k.entry == "vadd" and k.ptx == VADD.read_text()
    assert k.spec is not None and k.spec.name
    cuda = km.Kernel.load(KERNELS / "softmax_cu.toml", arch="sm_90")
    assert cuda.module.arch == "sm_90" and cuda.spec is not None and cuda.spec.cuda is not None


def test_launch_refuses_bad_arguments_before_any_cuda_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # With cuda.core unimportable, only a check made before any CUDA call can answer.
    monkeypatch.setitem(sys.modules, "cuda.core", None)
    k = km.Kernel.from_ptx(VADD, "vadd")
    with pytest.raises(km.LaunchArgumentError, match=r"takes 4 argument"):
        k.launch(grid=(1,), block=(256,), args=(1, 2, 3))
    import numpy as np

    host = np.zeros(256, np.float32)
    with pytest.raises(km.LaunchArgumentError, match=r"argument 0 \(a\).*needs a device pointer"):
        k.launch(grid=1, block=256, args=(host, host, host, 256))
    with pytest.raises(ImportError):  # good arguments do reach CUDA
        k.launch(grid=1, block=256, args=(0x1000, 0x2000, 0x3000, 256))


def test_launch_refuses_a_bad_grid_before_any_cuda_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cuda.core", None)
    k = km.Kernel.from_ptx(VADD, "vadd")
    with pytest.raises(km.LaunchArgumentError, match=r"launch block: expected 1 to 3 positive integers"):
        k.launch(grid=1, block=(0,), args=(0x1000, 0x2000, 0x3000, 256))
    for grid in (5.0, [[1]], "16", True, (True, 1)):  # no dimensions: the same error, no TypeError
        with pytest.raises(km.LaunchArgumentError, match=r"launch grid: expected 1 to 3 positive integers"):
            k.launch(grid=grid, block=256, args=(0x1000, 0x2000, 0x3000, 256))  # type: ignore[arg-type]
