"""The same by hand, with cuda.core and torch: nvcc, compute-sanitizer, ncu and cuobjdump run as
programs, the script re-running itself under the sanitizer and the profiler for one launch."""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import nvidia.cu13
import torch
from cuda.core import Device, LaunchConfig, ObjectCode, launch

SRC = r"""
extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""
N, BLOCK = 1 << 24, 256


def tool(name: str) -> str:
    # The pip wheels' nvcc and cuobjdump are not on PATH; the sanitizer and ncu come with a toolkit.
    return shutil.which(name) or str(Path(nvidia.cu13.__path__[0], "bin", name))


if not torch.cuda.is_available():
    sys.exit("by_hand.py: no CUDA device")
device = Device()
device.set_current()
work = Path(tempfile.mkdtemp())
(work / "vadd.cu").write_text(SRC)
cubin = work / "vadd.cubin"
nvcc = [tool("nvcc"), "-cubin", f"-arch=sm_{device.arch}", "-o", str(cubin), str(work / "vadd.cu")]
subprocess.run(nvcc, check=True)
kernel = ObjectCode.from_cubin(cubin.read_bytes()).get_kernel("vadd")
a, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
c = torch.full_like(a, float("nan"))  # poisoned: a kernel that writes nothing fails the check
config = LaunchConfig(grid=(N + BLOCK - 1) // BLOCK, block=BLOCK)
args = (a.data_ptr(), b.data_ptr(), c.data_ptr(), np.int32(N))
launch(device.default_stream, config, kernel, *args)
device.sync()
if os.environ.get("BY_HAND_ONE_LAUNCH"):  # under compute-sanitizer or ncu: that launch is all
    sys.exit(0)
torch.testing.assert_close(c, a + b, rtol=0, atol=0)

flush = torch.empty(torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
times_us = []
for _ in range(100):
    flush.zero_()  # a cold L2 before every sample
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    launch(device.default_stream, config, kernel, *args)
    end.record()
    end.synchronize()
    times_us.append(start.elapsed_time(end) * 1e3)
print(f"{statistics.median(times_us):.1f} us median")

# Each buffer its own allocation, or memcheck cannot see past torch's pool.
env = {**os.environ, "BY_HAND_ONE_LAUNCH": "1", "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
for check in ("memcheck", "racecheck", "synccheck", "initcheck"):
    sanitizer = [tool("compute-sanitizer"), f"--tool={check}", "--report-api-errors=no", "--error-exitcode=1"]
    done = subprocess.run([*sanitizer, sys.executable, __file__], env=env, capture_output=True, text=True)
    print(check, "clean" if done.returncode == 0 else done.stdout[-2000:])
ncu = [tool("ncu"), "--csv", "--kernel-name", "vadd", "--section", "SpeedOfLight", "--clock-control", "none"]
profile = subprocess.run([*ncu, sys.executable, __file__], env=env, capture_output=True, text=True)
print(profile.stdout)
print(subprocess.run([tool("cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True).stdout)
