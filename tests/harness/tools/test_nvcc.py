"""CUDA source to PTX with the real nvcc: the PTX has the entry and the source's lines, a second
compile comes from the cache, errors are located at the source line, a C++ kernel is found by
its plain name, and the one seam (:func:`lower`) feeds the pipeline's CPU stages."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from karyamorph.harness.pipeline import default_stages, run_pipeline
from karyamorph.harness.stages.base import Status
from karyamorph.harness.tools import nvcc
from karyamorph.harness.tools.nvcc import CACHE_KIND, compile_cuda, lower, parse_diagnostics
from karyamorph.harness.tools.toolchain import ToolchainError
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.loader import load_spec, spec_from_dict
from karyamorph.kernel.spec import CudaSource, KernelSpec, SpecError
from tests.harness.tools.nvcc_probe import require_nvcc

EXAMPLES = Path(__file__).resolve().parents[3] / "datasets" / "kernels"
SM90 = Arch(9, 0)

AXPY = """\
__global__ void axpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(autouse=True)
def _nvcc() -> None:
    require_nvcc()


def counted_runs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every subprocess the code under test starts from now on (it still runs)."""
    calls: list[Any] = []
    real = subprocess.run

    def counting(*args: Any, **kw: Any) -> Any:
        calls.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(subprocess, "run", counting)
    return calls


def axpy_spec(
    folder: Path, cuda: str = AXPY, entry: str = "axpy", options: list[str] | None = None
) -> KernelSpec:
    kernel: dict[str, Any] = {"cuda": cuda, "entry": entry}
    if options is not None:
        kernel["options"] = options
    doc = {
        "kernel": kernel,
        "sizes": {"n": 1000},
        "launch": {"grid": ["ceildiv(n, 128)"], "block": [128]},
        "args": [
            {"name": "a", "role": "scalar", "dtype": "f32", "value": "1.5"},
            {"name": "x", "role": "in", "dtype": "f32", "shape": ["n"]},
            {"name": "y", "role": "inout", "dtype": "f32", "shape": ["n"]},
            {"name": "n", "role": "scalar", "dtype": "u32", "value": "n"},
        ],
        "reference": {"torch": "a * x + y"},
    }
    return spec_from_dict(doc, folder, "axpy.toml")


def test_the_example_compiles_to_ptx_with_its_entry_and_source_lines() -> None:
    spec = load_spec(EXAMPLES / "softmax_cu.toml")
    assert spec.cuda is not None and spec.ptx == ""
    ptx = compile_cuda(spec.cuda, SM90)
    module = parse(ptx, "softmax_cu.ptx")
    assert [f.name for f in module.entries] == ["softmax"]
    assert ".target sm_90\n" in ptx
    locs = [line for line in ptx.splitlines() if line.strip().startswith(".loc\t1 ")]
    assert locs, "no .loc lines: -lineinfo was not passed"
    # The .file names the source as the spec does, not the folder it was compiled in.
    assert '.file\t1 "softmax_cu.cu"' in ptx and "karyamorph-nvcc-" not in ptx
    # -DBLOCK=256 reached the preprocessor: the loops stride by 256 (nothing else compiles).
    assert "256" in ptx


def test_a_second_compile_comes_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KARYAMORPH_CACHE", str(tmp_path / "cache"))
    source = CudaSource(AXPY, options=("-DUNUSED=1",))
    calls = counted_runs(monkeypatch)
    first = compile_cuda(source, SM90)
    assert len(calls) == 1 and list((tmp_path / "cache" / CACHE_KIND).glob("*.txt"))
    assert compile_cuda(source, SM90) == first
    assert len(calls) == 1  # served from the cache: nvcc did not run again
    # Another option or another arch is another key.
    compile_cuda(CudaSource(AXPY, options=("-DUNUSED=2",)), SM90)
    other = compile_cuda(source, Arch(12, 0))
    assert len(calls) == 3 and ".target sm_120" in other


def test_an_edited_local_header_compiles_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KARYAMORPH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "scale.cuh").write_text("#define SCALE 3.0f\n")
    text = '#include "scale.cuh"\nextern "C" __global__ void k(float* y) { y[threadIdx.x] *= SCALE; }\n'
    source = CudaSource(text, folder=tmp_path)
    first = compile_cuda(source, SM90)
    assert "0f40400000" in first  # 3.0f
    (tmp_path / "scale.cuh").write_text("#define SCALE 5.0f\n")
    assert "0f40A00000" in compile_cuda(source, SM90)  # 5.0f, not the cached 3.0f


def test_a_compile_error_is_located_at_the_source_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KARYAMORPH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "bad.cu").write_text(AXPY.replace("a * x[i] + y[i]", "a * x[i] + bias"))
    toml = tmp_path / "bad.toml"
    toml.write_text((EXAMPLES / "softmax_cu.toml").read_text().replace("softmax_cu.cu", "bad.cu"))
    spec = load_spec(toml)
    with pytest.raises(SpecError) as info:
        lower(spec, SM90)
    assert info.value.where == "bad.toml: kernel.cu"
    lines = info.value.message.splitlines()
    assert lines[0] == f"nvcc {nvcc.find_nvcc().version} rejected bad.cu for sm_90 (1 error(s))"
    assert lines[1] == 'bad.cu:3:34: error: identifier "bias" is undefined'
    assert lines[2] == "     3 |     if (i < n) y[i] = a * x[i] + bias;"
    assert lines[3] == "       |" + " " * 34 + "^"  # under the b of bias
    assert not list((tmp_path / "cache").rglob("*.txt"))  # a failure is not cached


def test_a_preprocessor_error_is_located_too(tmp_path: Path) -> None:
    text = '#ifndef BLOCK\n#error "give -DBLOCK=..."\n#endif\nextern "C" __global__ void k() {}\n'
    with pytest.raises(SpecError) as info:
        compile_cuda(CudaSource(text), SM90, where="k.toml")
    assert info.value.where == "k.toml: kernel.cuda"
    assert '<kernel.cuda>:2:2: error: #error "give -DBLOCK=..."' in info.value.message
    assert compile_cuda(CudaSource(text, options=("-DBLOCK=64",)), SM90)  # with it, it compiles


def test_an_option_nvcc_does_not_know_names_the_options(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as info:
        lower(axpy_spec(tmp_path, options=["--no-such-option"]), SM90)
    assert info.value.where == "axpy.toml: kernel.options"
    assert "Unknown option '--no-such-option'" in info.value.message


def test_a_cpp_kernel_is_found_by_its_plain_name(tmp_path: Path) -> None:
    spec = axpy_spec(tmp_path)
    lowered = lower(spec, SM90)
    assert lowered.entry == "_Z4axpyfPKfPfj" and lowered.cuda == spec.cuda
    # The mangled name itself works as well, and lowering twice changes nothing.
    assert lower(axpy_spec(tmp_path, entry="_Z4axpyfPKfPfj"), SM90).entry == "_Z4axpyfPKfPfj"
    assert lower(lowered, SM90) == lowered


def test_several_kernels_of_one_name_are_listed(tmp_path: Path) -> None:
    text = (
        "template <int S> __global__ void axpy(float a, const float* x, float* y, unsigned n) {}\n"
        "template __global__ void axpy<1>(float, const float*, float*, unsigned);\n"
        "template __global__ void axpy<2>(float, const float*, float*, unsigned);\n"
    )
    with pytest.raises(SpecError) as info:
        lower(axpy_spec(tmp_path, text), SM90)
    assert info.value.where == "axpy.toml: kernel.entry"
    assert "'axpy' names 2 kernels of <kernel.cuda> (_Z4axpyILi1EEvfPKfPfj, _Z4axpyILi2EEvfPKfPfj)" in str(
        info.value
    )
    with pytest.raises(SpecError, match=r"no \.entry named 'saxpy' in the PTX of <kernel\.cuda>"):
        lower(axpy_spec(tmp_path, entry="saxpy"), SM90)


def test_the_pipeline_runs_a_spec_of_cuda_source_on_the_cpu(tmp_path: Path) -> None:
    stages = [s for s in default_stages() if s.name in ("compile", "sass", "static", "model")]
    result = run_pipeline(axpy_spec(tmp_path), arch="sm_90", stages=stages)
    assert result.spec.entry == "_Z4axpyfPKfPfj" and result.arch == SM90
    assert {name: r.status for name, r in result.stages} == dict.fromkeys(
        ("compile", "sass", "static", "model"), Status.PASS
    )
    model = result.result("model")
    assert model is not None and model.data["interp"]["status"] == "pass"  # the reference agrees


def test_a_missing_nvcc_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvcc, "find_in_environment", lambda name: None)
    with pytest.raises(ToolchainError, match=r"nvcc was not found.*pip install nvidia-cuda-nvcc"):
        compile_cuda(CudaSource(AXPY), SM90)


def test_recorded_messages_parse_at_their_lines() -> None:
    # nvcc 13.5.37: the front end (a tab printed as one space) and the host preprocessor.
    source = CudaSource('#include <cuda.h>\n\tint q = "s";\n', name="k.cu")
    log = (
        'kernel.cu(2): error: a value of type "const char *" cannot be used to initialize an entity '
        'of type "int"\n'
        '   int q = "s";\n'
        "           ^\n"
        "\n"
        "kernel.cu:1:10: fatal error: cuda.h: No such file or directory\n"
        "nvcc fatal   : Unknown option '--x'\n"
    )
    found = parse_diagnostics(log, source, "kernel.cu")
    assert [(d.file, d.line, d.column, d.severity) for d in found] == [
        ("k.cu", 2, 10, "error"),
        ("k.cu", 1, 10, "error"),
        ("nvcc", None, None, "fatal"),
    ]
