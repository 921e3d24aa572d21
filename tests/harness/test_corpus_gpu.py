"""Real compiler kernels on the GPU: every spec of the model's corpus (nvcc 13 and Triton 3.9
builds in tests/corpus, nobody's code here) whose target this GPU runs is assembled, run for
correctness against its reference in one persistent worker, timed with the timing stage's checks
of what the timed launches wrote (no false alarm), and its first trial's outputs are
compared with the model interpreter's on the same seeded inputs: bit for bit where the model is
exact (:func:`inexact_reasons` finds nothing), else within the spec's tolerance.

Marked ``gpu``; skipped only when no CUDA device exists (and, per spec, when the PTX's target
cannot run on this GPU, e.g. sm_120a code on an H200). The corpus is PTX 9.4/9.5 (nvcc 13.5,
Triton 3.9): an older ptxas on the GPU machine refuses its ``.version``, and then the cubins come
from ``$KARYAMORPH_CORPUS_CUBINS``, built by a newer ptxas anywhere with
``python tests/harness/corpus_cubins.py DIR --arch sm_90`` (the driver loads them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from karyamorph.harness.gpu.compare import compare, tolerance_for
from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.inputs import as_tensor, host_bits
from karyamorph.harness.gpu.jobs import CorrectnessReport
from karyamorph.harness.gpu.measurement import Timing, TimingOptions
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.model_run import run_model
from karyamorph.harness.tools.ptxas import PtxasError, assemble
from karyamorph.harness.tools.toolchain import discover
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.model.ptx.exactness import inexact_reasons
from tests.harness.corpus_cubins import cubin_name, runnable_target

SPECS = sorted((Path(__file__).resolve().parents[1] / "model" / "corpus").glob("*.toml"))
DEVICE = current_device()
SEED = 5
TIMED = TimingOptions(max_wall_seconds=0.5, max_samples=100)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]


@pytest.fixture(scope="module")
def worker() -> Iterator[GpuWorker]:
    assert DEVICE is not None
    with GpuWorker(DEVICE.ordinal) as w:
        yield w


def corpus_cubin(ptx: str, stem: str, target: str) -> bytes:
    """The cubin of a corpus spec's PTX: this toolchain's ptxas, or the prebuilt one when this
    ptxas is too old for the PTX's ``.version``."""
    try:
        return assemble(ptx, target, discover()).cubin
    except PtxasError as exc:
        if "Unsupported .version" not in str(exc):
            raise
        built = Path(os.environ.get("KARYAMORPH_CORPUS_CUBINS", "")) / cubin_name(stem, target)
        if not os.environ.get("KARYAMORPH_CORPUS_CUBINS") or not built.is_file():
            pytest.skip(f"{exc.args[0]}: no prebuilt {built.name} (see this module's docstring)")
        return built.read_bytes()


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_corpus_kernel_is_correct_on_the_gpu_and_agrees_with_the_model(worker: GpuWorker, path: Path) -> None:
    assert DEVICE is not None
    spec = load_spec(path)
    target = runnable_target(prepare(spec).arch, DEVICE.arch)
    if target is None:
        pytest.skip(f"{prepare(spec).arch} code cannot run on {DEVICE.arch}")
    if spec.reference.torch is None and spec.reference.python is None:
        pytest.skip("the spec has no reference (the model corpus checks it for its verdicts only)")
    kernel = bind(spec, target)
    cubin = corpus_cubin(spec.ptx, path.stem, target.name)
    report = worker.correctness(kernel, cubin, SEED, trials=2, keep_first_outputs=True)
    assert isinstance(report, CorrectnessReport), report
    assert report.passed, [t for t in report.trials if not t.passed]
    # Timed with every check of the timing stage: no false alarm on code nobody here wrote.
    timing = worker.timing(kernel, cubin, SEED + 2, options=TIMED)
    assert isinstance(timing, Timing) and timing.check is not None, timing
    assert timing.check.passed, timing.check.problems()
    model = run_model(kernel, seed=SEED)
    exact = not inexact_reasons(prepare(spec))
    for arg in kernel.args:
        if arg.role not in ("out", "inout"):
            continue
        if exact:  # no approximation, float atomic, tensor-core float math or clock: same bits
            bits = host_bits(model.outputs[arg.name], arg.dtype)
            assert report.first_outputs[arg.name].tobytes() == bits.tobytes(), arg.name
            continue
        tol = tolerance_for(arg.dtype, spec.atol, spec.rtol)
        gpu = as_tensor(report.first_outputs[arg.name], arg.dtype)
        c = compare(arg.name, gpu, model.outputs[arg.name], tol)
        assert c.passed, (arg.name, c.as_dict())
