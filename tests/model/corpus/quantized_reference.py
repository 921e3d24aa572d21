"""References for the corpus's narrow-float GEMMs (Triton's ``matmul_fp8`` and ``matmul_mxfp4``):
the operands' bytes decoded by libraries that know the formats, not by the model (e4m3 by torch's
``float8_e4m3fn``; e2m1 by ml_dtypes' ``float4_e2m1fn``, two codes to a byte, the low nibble first,
as ``tl.dot_scaled`` packs them; ue8m0 scales as ``2^(s - 127)``, the OCP MX specification's
E8M0), then multiplied in float64."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

MX_BLOCK = 32  # elements of K that share one scale (OCP MX)


def matmul_fp8(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """C = A @ B for A (M x K) and B (K x N) given as e4m3 bytes."""
    return a.cpu().view(torch.float8_e4m3fn).double() @ b.cpu().view(torch.float8_e4m3fn).double()


def _e2m1(packed: torch.Tensor) -> np.ndarray:
    """Rows of bytes -> rows of twice as many e2m1 values, the low nibble first."""
    raw = packed.cpu().numpy().astype(np.uint8)
    codes = np.stack([raw & 0xF, raw >> 4], axis=-1).reshape(raw.shape[0], -1)
    return codes.view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def _ue8m0(scales: torch.Tensor) -> np.ndarray:
    s = scales.cpu().numpy().astype(np.float64)
    return np.where(s == 255, np.nan, np.exp2(s - 127))


def matmul_mxfp4(
    a: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor, b_scale: torch.Tensor
) -> torch.Tensor:
    """C = (A * 2^sa) @ (B * 2^sb)^T: A (M x K) and B (N x K) as packed e2m1 codes, one ue8m0 scale
    per row and block of 32 elements of K."""
    av = _e2m1(a) * np.repeat(_ue8m0(a_scale), MX_BLOCK, axis=1)
    bv = _e2m1(b) * np.repeat(_ue8m0(b_scale), MX_BLOCK, axis=1)
    return torch.from_numpy(av @ bv.T)
