"""A spec's ``[launch] cluster`` reaches the driver: cuda.core counts the grid in clusters when a
cluster is given, so the harness divides the spec's grid of blocks by it; on a GPU a kernel that
reads its cluster registers sees the spec's cluster."""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.launch import launch_shape
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.correctness import CorrectnessStage
from karyamorph.harness.tools.toolchain import discover
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec, SpecError

SPEC = Path(__file__).parent / "data" / "cluster_rank.toml"


def test_the_grid_is_counted_in_clusters_when_the_spec_states_one() -> None:
    spec = load_spec(SPEC)
    assert launch_shape(bind(spec, "sm_90")) == ((4, 1, 1), (2, 1, 1))
    alone = dataclasses.replace(spec, launch=dataclasses.replace(spec.launch, cluster=None))
    assert launch_shape(bind(alone, "sm_90")) == ((8, 1, 1), None)
    ones = dataclasses.replace(spec, launch=dataclasses.replace(spec.launch, cluster=(1, 1, 1)))
    assert launch_shape(bind(ones, "sm_90")) == ((8, 1, 1), None)


def test_a_grid_that_is_no_whole_number_of_clusters_is_a_spec_error() -> None:
    kernel = bind(load_spec(SPEC), "sm_90", {"blocks": 7})
    with pytest.raises(
        SpecError, match=r"cluster_rank.toml: launch.cluster: the grid \[7, 1, 1\] is not a whole"
    ):
        launch_shape(kernel)


def _correct_on_a_gpu(spec: Path) -> None:
    """Compile ``spec``'s kernel and check its output against the reference on the GPU (skipped
    where there is none, or it has no thread block clusters)."""
    device = current_device()
    if device is None:
        pytest.skip("no CUDA device")
    if device.compute_capability < (9, 0):
        pytest.skip(f"{device.name} has no thread block clusters (sm_90 and later)")
    kernel = load_spec(spec)
    result = run_pipeline(kernel, device=device, stages=[CompileStage(), CorrectnessStage()])
    compiled = result.result("compile")
    if compiled is not None and "Unsupported .version" in compiled.log:
        # A GPU host's toolkit older than the wheels that wrote the corpus: the same source
        # built by the nvcc beside its ptxas.
        kernel = dataclasses.replace(kernel, ptx=_rebuilt(kernel))
        result = run_pipeline(kernel, device=device, stages=[CompileStage(), CorrectnessStage()])
        compiled = result.result("compile")
    correctness = result.result("correctness")
    assert correctness is not None and correctness.status.value == "pass", (
        result.result("compile"),
        correctness,
    )


def _rebuilt(kernel: KernelSpec) -> str:
    """The PTX of the corpus source ``kernel``'s PTX file was built from, by the nvcc of the
    toolkit whose ptxas the harness runs, for the file's target."""
    assert kernel.ptx_path is not None
    stem, arch = kernel.ptx_path.name.split(".")[:2]  # <source>.<arch>.ptx
    source = Path(__file__).resolve().parents[2] / "corpus" / "src" / f"{stem}.cu"
    nvcc = discover().ptxas.parent / "nvcc"
    if not nvcc.exists():
        pytest.skip(f"ptxas predates the corpus PTX's .version and no nvcc is beside it ({nvcc.parent})")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"{stem}.ptx"
        cmd = [str(nvcc), "-ptx", f"-arch={arch}", "-lineinfo", str(source), "-o", str(out)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return out.read_text()


@pytest.mark.gpu
def test_the_kernel_sees_the_spec_cluster_on_a_gpu() -> None:
    _correct_on_a_gpu(SPEC)


CORPUS_SPECS = Path(__file__).resolve().parents[2] / "model" / "corpus"


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["cluster_histogram.sm_90.toml", "cluster_exchange.sm_90.toml"])
def test_nvccs_cluster_kernels_match_torch_on_a_gpu(name: str) -> None:
    # The builds the checker proves (tests/model/check/test_cluster_histogram.py): on the GPU,
    # atomicAdd into another CTA's shared memory and the partner's value read through mapa give
    # the reference's result, as the model's interpreter does.
    _correct_on_a_gpu(CORPUS_SPECS / name)
