"""References for the corpus kernels that hand warp fragments in or out as raw registers
(``mma_m16n8k32_s8``, ``ldmatrix_x4``): the fragment layouts written from the PTX ISA's figures
("Matrix Fragments for mma.m16n8k32" with integer type; "ldmatrix": thread ``4 r + c / 2`` gets
row ``r``, columns ``c, c + 1`` of each 8x8 matrix), with ``g = lane / 4`` and ``t = lane % 4``."""

from __future__ import annotations

import numpy as np
import torch

LANES = 32


def mma_s8(afrag: torch.Tensor, bfrag: torch.Tensor) -> torch.Tensor:
    """``mma_m16n8k32_s8``: unpack A (16x32) and B (32x8) from the lanes' byte fragments,
    multiply exactly, pack D (16x8, four s32 per lane)."""
    abytes = afrag.numpy().astype(np.int32).view(np.int8).reshape(LANES, 16)
    bbytes = bfrag.numpy().astype(np.int32).view(np.int8).reshape(LANES, 8)
    a = np.zeros((16, 32), np.int64)
    b = np.zeros((32, 8), np.int64)
    for lane in range(LANES):
        g, t = lane // 4, lane % 4
        for i in range(16):  # byte i % 4 of register i / 4 (little-endian)
            a[g + 8 * ((i // 4) % 2), 4 * t + i % 4 + 16 * (i // 8)] = abytes[lane, i]
        for i in range(8):
            b[4 * t + i % 4 + 16 * (i // 4), g] = bbytes[lane, i]
    d = a @ b
    out = np.zeros((LANES, 4), np.int64)
    for lane in range(LANES):
        g, t = lane // 4, lane % 4
        for i in range(4):
            out[lane, i] = d[g + 8 * (i // 2), 2 * t + i % 2]
    return torch.from_numpy(out.astype(np.int32))


def _ldmatrix_x4(tile: torch.Tensor, trans: bool) -> torch.Tensor:
    t16 = tile.numpy().astype(np.int64) & 0xFFFF
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
