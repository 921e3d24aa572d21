"""Tests that compile CUDA source need nvcc and the host compiler it preprocesses with: they
skip, saying why, on a machine without them (a setup gap, not a failure of the code)."""

from __future__ import annotations

import functools

import pytest

from karyamorph.harness.tools.nvcc import compile_cuda
from karyamorph.harness.tools.toolchain import ToolchainError
from karyamorph.isa.arch import Arch
from karyamorph.kernel.spec import CudaSource


@functools.cache
def _missing() -> str | None:
    try:
        compile_cuda(CudaSource('extern "C" __global__ void probe() {}\n'), Arch(9, 0))
    except ToolchainError as exc:
        return str(exc)
    return None


def require_nvcc() -> None:
    """Skip the calling test when nvcc, or the host compiler it needs, is not installed."""
    missing = _missing()
    if missing is not None:
        pytest.skip(missing)
