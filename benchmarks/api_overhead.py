"""The Python API against its anchors on one GPU (needs a GPU, torch, triton and cupy).

1. ``km.bench`` against ``triton.testing.do_bench`` timing the same launch (a vector add of
   2^24 floats through ``Kernel.launch``): the median of each, five runs alternating.
2. Host time of an in-process ``Kernel.launch`` against a cupy ``RawKernel`` launch of the same
   CUDA C source, on the same cupy arrays, at a size where the kernel takes about 10 us: the
   time to issue a batch of launches (the GPU keeps up, so this is the host's cost), per launch.

    python benchmarks/api_overhead.py [--runs 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import karyamorph as km

VADD = """extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def bench_against_do_bench(runs: int) -> dict[str, Any]:
    import torch
    import triton.testing

    n = 1 << 24
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    k = km.Kernel.from_cuda(VADD, "vadd")

    def go() -> None:
        k.launch(grid=(n + 255) // 256, block=256, args=(a, b, c, n))

    ours, theirs = [], []
    for _ in range(runs):
        ours.append(km.bench(go).median_ns)
        theirs.append(float(triton.testing.do_bench(go, return_mode="median")) * 1e6)
    torch.cuda.synchronize()
    assert torch.equal(c, a + b), "the timed launches did not compute a + b"
    km_median, triton_median = statistics.median(ours), statistics.median(theirs)
    return {
        "n": n,
        "km_bench_median_ns": ours,
        "do_bench_median_ns": theirs,
        "ratio": km_median / triton_median,
    }


def host_time_per_launch(launch: Callable[[], None], sync: Callable[[], None], batch: int) -> float:
    """Seconds of host time per launch, the median over ten batches (each synchronised after)."""
    per = []
    for _ in range(10):
        sync()
        t0 = time.perf_counter()
        for _ in range(batch):
            launch()
        per.append((time.perf_counter() - t0) / batch)
        sync()
    return statistics.median(per)


def launch_overhead(batch: int) -> dict[str, Any]:
    import cupy

    n = 1 << 22  # about 10 us of vector add on an H100/H200
    a = cupy.random.standard_normal(n, dtype=cupy.float32)
    b = cupy.random.standard_normal(n, dtype=cupy.float32)
    c = cupy.empty_like(a)
    grid, block = (n + 255) // 256, 256
    ours = km.Kernel.from_cuda(VADD, "vadd")
    theirs = cupy.RawKernel(VADD, "vadd")
    n32 = cupy.int32(n)

    def km_launch() -> None:
        ours.launch(grid=grid, block=block, args=(a, b, c, n))

    def cupy_launch() -> None:
        theirs((grid,), (block,), (a, b, c, n32))

    sync = cupy.cuda.Device().synchronize
    for f in (km_launch, cupy_launch):  # compile and load before timing
        f()
    sync()
    kernel_ns = km.bench(km_launch).median_ns
    rounds = []
    for _ in range(5):
        rounds.append(
            (host_time_per_launch(km_launch, sync, batch), host_time_per_launch(cupy_launch, sync, batch))
        )
    assert bool(cupy.all(c == a + b)), "the launches did not compute a + b"
    km_us = statistics.median(r[0] for r in rounds) * 1e6
    cupy_us = statistics.median(r[1] for r in rounds) * 1e6
    return {
        "n": n,
        "kernel_median_us": kernel_ns / 1e3,
        "batch": batch,
        "km_launch_host_us": km_us,
        "cupy_rawkernel_host_us": cupy_us,
        "overhead_us": km_us - cupy_us,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import torch

    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    result = {"bench": bench_against_do_bench(args.runs), "launch": launch_overhead(args.batch)}
    b, lo = result["bench"], result["launch"]
    km_median = statistics.median(b["km_bench_median_ns"]) / 1e3
    print(f"km.bench median of medians {km_median:.2f} us, do_bench "
          f"{statistics.median(b['do_bench_median_ns']) / 1e3:.2f} us, ratio {b['ratio']:.4f}")  # fmt: skip
    print(f"kernel {lo['kernel_median_us']:.2f} us; host per launch: Kernel.launch "
          f"{lo['km_launch_host_us']:.2f} us, cupy RawKernel {lo['cupy_rawkernel_host_us']:.2f} us, "
          f"overhead {lo['overhead_us']:.2f} us")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
