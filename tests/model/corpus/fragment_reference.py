"""References for the corpus kernels that hand warp fragments in or out as raw registers
(``mma_m16n8k32_s8``, ``mma_e4m3``, ``mma_f8f6f4_e2m1_e4m3``, ``ldmatrix_x4``): the fragment
layouts written from the PTX ISA's figures ("Matrix Fragments for mma.m16n8k32", 8-bit types;
"ldmatrix": thread ``4 r + c / 2`` gets row ``r``, columns ``c, c + 1`` of each 8x8 matrix),
with ``g = lane / 4`` and ``t = lane % 4``; fp8 values decoded by torch's ``float8_e4m3fn``, fp4
(e2m1, in bits 5..2 of its byte: PTX ISA, "mma", "central 4 bits of the 8-bit container") by
ml_dtypes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

LANES = 32


def _unpack_16832(abytes: np.ndarray, bbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A (16x32) and B (32x8) from each lane's 16 and 8 bytes (byte i % 4 of register i / 4)."""
    a = np.zeros((16, 32), abytes.dtype)
    b = np.zeros((32, 8), bbytes.dtype)
    for lane in range(LANES):
        g, t = lane // 4, lane % 4
        for i in range(16):  # byte i % 4 of register i / 4 (little-endian)
            a[g + 8 * ((i // 4) % 2), 4 * t + i % 4 + 16 * (i // 8)] = abytes[lane, i]
        for i in range(8):
            b[4 * t + i % 4 + 16 * (i // 4), g] = bbytes[lane, i]
    return a, b


def _pack_d(d: np.ndarray) -> np.ndarray:
    """Each lane's four elements of D (16x8): row g + 8 (i / 2), column 2 t + i % 2."""
    out = np.zeros((LANES, 4), d.dtype)
    for lane in range(LANES):
        g, t = lane // 4, lane % 4
        for i in range(4):
            out[lane, i] = d[g + 8 * (i // 2), 2 * t + i % 2]
    return out


def mma_s8(afrag: torch.Tensor, bfrag: torch.Tensor) -> torch.Tensor:
    """``mma_m16n8k32_s8``: unpack A (16x32) and B (32x8) from the lanes' byte fragments,
    multiply exactly, pack D (16x8, four s32 per lane)."""
    abytes = afrag.cpu().numpy().astype(np.int32).view(np.int8).reshape(LANES, 16).astype(np.int64)
    bbytes = bfrag.cpu().numpy().astype(np.int32).view(np.int8).reshape(LANES, 8).astype(np.int64)
    a, b = _unpack_16832(abytes, bbytes)
    return torch.from_numpy(_pack_d(a @ b).astype(np.int32))


def mma_e4m3(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``mma_e4m3``: A and B fragments as bytes of e4m3 values, D = A B in float64."""

    def values(t: torch.Tensor, n: int) -> np.ndarray:
        return t.reshape(LANES, n).view(torch.float8_e4m3fn).double().cpu().numpy()

    av, bv = _unpack_16832(values(a, 16), values(b, 8))
    return torch.from_numpy(_pack_d(av @ bv))


def mma_f8f6f4_e2m1_e4m3(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``mma_f8f6f4_e2m1_e4m3`` (``.kind::f8f6f4.f32.e2m1.e4m3.f32``, C = 0): D = A B rounded
    once to .f32, as docs/model.md states the model computes it. The float64 sum is exact here
    (every product a multiple of 2**-10, e2m1's 0.5 times e4m3's least subnormal 2**-9, and each
    partial sum below 32 * 6 * 448 < 2**17), so casting it to float32 is the one rounding."""
    abytes = a.cpu().numpy().reshape(LANES, 16).astype(np.uint8)
    fp4 = ((abytes >> 2) & 0xF).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    fp8 = b.cpu().numpy().reshape(LANES, 8).astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    av, bv = _unpack_16832(fp4, fp8)
    return torch.from_numpy(_pack_d(av @ bv).astype(np.float32))


def _ldmatrix_x4(tile: torch.Tensor, trans: bool) -> torch.Tensor:
    t16 = tile.cpu().numpy().astype(np.int64) & 0xFFFF
    out = np.zeros((LANES, 4), np.int64)
    for m in range(4):  # the source's order: (rows 0-7 | 8-15) x (cols 0-7 | 8-15)
        sub = t16[8 * (m % 2) : 8 * (m % 2) + 8, 8 * (m // 2) : 8 * (m // 2) + 8]
        sub = sub.T if trans else sub
        for lane in range(LANES):
            r, c = lane // 4, 2 * (lane % 4)
            out[lane, m] = sub[r, c] | sub[r, c + 1] << 16
    return torch.from_numpy(out.astype(np.uint32).view(np.int32))


def ldmatrix_x4(tile: torch.Tensor) -> torch.Tensor:
    """``ldmatrix_x4<false>``: the four 8x8 matrices of a 16x16 tile as each lane receives them."""
    return _ldmatrix_x4(tile, trans=False)


def ldmatrix_x4_trans(tile: torch.Tensor) -> torch.Tensor:
    """``ldmatrix_x4<true>``: as :func:`ldmatrix_x4` with each 8x8 matrix transposed."""
    return _ldmatrix_x4(tile, trans=True)
