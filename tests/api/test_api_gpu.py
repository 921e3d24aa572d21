"""On a GPU: ``Kernel.launch`` against torch's own result, and ``bench`` against CUDA events."""

from __future__ import annotations

from pathlib import Path

import pytest

import karyamorph as km
from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.measurement import TimingOptions

KERNELS = Path(__file__).resolve().parents[2] / "datasets" / "kernels"
AXPY = """extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"""

SCALARS = """extern "C" __global__ void scalars(double *out, short s, double d, unsigned char u, float f,
                                            unsigned long long w) {
    out[0] = s; out[1] = d; out[2] = u; out[3] = f; out[4] = (double)(w >> 40);
}
"""


@pytest.fixture
def torch_cuda():  # type: ignore[no-untyped-def]
    if current_device() is None:
        pytest.skip("no CUDA device")
    import torch

    return torch


@pytest.mark.gpu
def test_launch_of_ptx_on_torch_tensors_matches_torch(torch_cuda) -> None:  # type: ignore[no-untyped-def]
    torch = torch_cuda
    n = 4099  # not a multiple of the block: the guard matters
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.full_like(a, float("nan"))
    km.Kernel.from_ptx(KERNELS / "vadd.ptx", "vadd").launch(
        grid=(n + 255) // 256, block=256, args=(a, b, c, n)
    )
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)


@pytest.mark.gpu
def test_launch_of_cuda_source_with_a_float_scalar(torch_cuda) -> None:  # type: ignore[no-untyped-def]
    torch = torch_cuda
    n = 1000
    y, x = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    want = y + 0.5 * x
    km.Kernel.from_cuda(AXPY, "axpy").launch(grid=4, block=256, args=(y, x, 0.5, n))
    torch.cuda.synchronize()
    assert torch.allclose(y, want, rtol=0, atol=1e-6)


@pytest.mark.gpu
def test_launch_on_a_torch_stream(torch_cuda) -> None:  # type: ignore[no-untyped-def]
    torch = torch_cuda
    n = 512
    a, b = torch.ones(n, device="cuda"), torch.ones(n, device="cuda")
    c = torch.zeros(n, device="cuda")
    stream = torch.cuda.Stream()
    km.load(KERNELS / "vadd.toml").launch(grid=2, block=256, args=(a, b, c, n), stream=stream)
    stream.synchronize()
    assert torch.equal(c, torch.full_like(c, 2.0))


@pytest.mark.gpu
def test_scalars_of_every_width_reach_the_kernel_as_passed(torch_cuda) -> None:  # type: ignore[no-untyped-def]
    torch = torch_cuda
    import numpy as np

    out = torch.zeros(5, dtype=torch.float64, device="cuda")
    k = km.Kernel.from_cuda(SCALARS, "scalars")
    k.launch(1, 1, (out, np.int16(-3), 2.5, 200, 0.25, 7 << 40))
    torch.cuda.synchronize()
    assert out.tolist() == [-3.0, 2.5, 200.0, 0.25, 7.0]
    k.launch(1, 1, (out, np.int16(12), -1.0, 0, 1.5, 1 << 40))  # the next launch's own values
    torch.cuda.synchronize()
    assert out.tolist() == [12.0, -1.0, 0.0, 1.5, 1.0]


@pytest.mark.gpu
def test_threads_launching_one_kernel_keep_their_own_arguments(torch_cuda) -> None:  # type: ignore[no-untyped-def]
    torch = torch_cuda
    import threading

    n = 1 << 16
    k = km.Kernel.from_ptx(KERNELS / "vadd.ptx", "vadd")
    a = torch.randn(n, device="cuda")
    outs = [torch.zeros(n, device="cuda") for _ in range(4)]
    addends = [torch.full((n,), float(i), device="cuda") for i in range(4)]
    torch.cuda.synchronize()

    def work(i: int) -> None:
        stream = torch.cuda.Stream()
        for _ in range(200):
            k.launch((n + 255) // 256, 256, (a, addends[i], outs[i], n), stream=stream)
        stream.synchronize()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert torch.equal(outs[i], a + float(i))


@pytest.mark.gpu
def test_launch_on_cupy_arrays_and_a_cupy_stream(torch_cuda) -> None:  # type: ignore[no-untyped-def]
    cupy = pytest.importorskip("cupy")
    n = 3000
    a = cupy.arange(n, dtype=cupy.float32)
    c = cupy.zeros(n, dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    km.Kernel.from_ptx(KERNELS / "vadd.ptx", "vadd").launch(
        (n + 255) // 256, 256, (a, a, c, n), stream=stream
    )
    stream.synchronize()
    assert bool(cupy.all(c == 2 * a))


@pytest.mark.gpu
def test_a_cpu_tensor_is_refused_naming_the_parameter(torch_cuda) -> None:  # type: ignore[no-untyped-def]
    torch = torch_cuda
    a = torch.zeros(256, device="cuda")
    with pytest.raises(km.LaunchArgumentError, match=r"argument 1 \(b\).*needs a device pointer"):
        km.Kernel.from_ptx(KERNELS / "vadd.ptx", "vadd").launch(1, 256, (a, torch.zeros(256), a, 256))


@pytest.mark.gpu
def test_bench_agrees_with_cuda_events(torch_cuda) -> None:  # type: ignore[no-untyped-def]
    torch = torch_cuda
    n = 1 << 24
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    k = km.Kernel.from_ptx(KERNELS / "vadd.ptx", "vadd")

    def go() -> None:
        k.launch(grid=(n + 255) // 256, block=256, args=(a, b, c, n))

    t = km.bench(go, options=TimingOptions(max_wall_seconds=2.0))
    assert t.samples >= 10 and t.min_ns <= t.q1_ns <= t.median_ns <= t.q3_ns <= t.max_ns
    assert t.iqr_ns == pytest.approx(t.q3_ns - t.q1_ns)
    assert t.to_dict()["median_ns"] == t.median_ns and len(t.to_dict()["samples_ns"]) >= t.samples
    # The reference: plain CUDA events around the same launches (warm L2, so no slower).
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(20):
        start.record()
        go()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e6)
    events = sorted(times)[len(times) // 2]
    assert 0.5 * events <= t.median_ns <= 2.0 * events
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)


def test_bench_without_the_device_is_a_no_device_error() -> None:
    with pytest.raises(km.NoDeviceError, match="no CUDA device 99"):
        km.bench(lambda: None, device=99)


@pytest.mark.gpu
def test_search_on_the_gpu_stores_a_leaderboard(torch_cuda, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = km.search("vadd", budget=4, seed=2, db=tmp_path / "s.duckdb", out_dir=tmp_path / "out")
    times = [e.outcome.time_ms for e in result.evaluations if e.outcome.ok]
    assert len(result.evaluations) == 4 and times
    assert result.winner is not None and min(times) == result.summary["best"]["time_ms"]
    with km.db(tmp_path / "s.duckdb", read_only=True) as con:
        (count,) = con.execute(
            "SELECT count(*) FROM search_evaluations WHERE search_id = ?", [result.search_id]
        ).fetchone()
    assert count == 4
