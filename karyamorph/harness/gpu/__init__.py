"""The GPU runtime: device, buffers, launch, timing, the worker (the only torch/cuda code)."""
