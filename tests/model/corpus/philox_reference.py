"""Triton's ``tl.rand`` in numpy, written from the algorithm's description: Philox 4x32-10.

Philox 4x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) maps a
128-bit counter and a 64-bit key to 128 random bits in 10 rounds. A round multiplies two
counter words by the round multipliers, takes both halves of the 64-bit products and mixes them
with the other two words and the key; the key grows by the Weyl increments between rounds.

``tl.rand(seed, offsets)`` (Triton's ``language/random.py``) runs it on the counter
``(offset, 0, 0, 0)`` (an offset of 32 bits has no high word) with the key ``(seed low 32
bits, seed high 32 bits)`` of the seed widened to 64 bits, keeps the first output word, reads
it as a signed 32-bit integer ``x``, folds negatives with ``~x`` and scales by the float32
constant ``4.6566127342e-10`` (the largest such that ``(2**31 - 1) * scale < 1``).
"""

from __future__ import annotations

import numpy as np
import torch

MASK32 = 0xFFFFFFFF
ROUND_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
KEY_INCREMENTS = (0x9E3779B9, 0xBB67AE85)
UNIFORM_SCALE = np.float32(4.6566127342e-10)


def philox4x32(counter: np.ndarray, key: tuple[int, int], rounds: int = 10) -> np.ndarray:
    """Philox 4x32 of ``counter`` (shape ``(4, n)``, uint32) under ``key``; shape ``(4, n)``."""
    c0, c1, c2, c3 = (np.asarray(w, dtype=np.uint64) for w in counter)
    k0, k1 = key[0] & MASK32, key[1] & MASK32
    m0, m1 = (np.uint64(m) for m in ROUND_MULTIPLIERS)
    low = np.uint64(MASK32)
    for _ in range(rounds):
        p0 = m0 * c0  # a 32 x 32-bit product fits in 64 bits: no wrap in uint64
        p1 = m1 * c2
        c0, c1, c2, c3 = (
            (p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0),
            p1 & low,
            (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1),
            p0 & low,
        )
        k0 = (k0 + KEY_INCREMENTS[0]) & MASK32
        k1 = (k1 + KEY_INCREMENTS[1]) & MASK32
    return np.stack([c0, c1, c2, c3]).astype(np.uint32)


def uniform(seed: int, offsets: np.ndarray) -> np.ndarray:
    """``tl.rand(seed, offsets)`` for int32 offsets: float32 values in [0, 1)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    zero = np.zeros_like(offsets, dtype=np.uint32)
    counter = np.stack([(offsets & MASK32).astype(np.uint32), zero, zero, zero])
    wide = seed & 0xFFFFFFFFFFFFFFFF  # an int32 seed is sign-extended to 64 bits
    bits = philox4x32(counter, (wide & MASK32, wide >> 32))[0]
    signed = bits.view(np.int32)
    folded = np.where(signed < 0, ~signed, signed)
    return folded.astype(np.float32) * UNIFORM_SCALE


def dropout(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    """The corpus's Triton ``dropout``: ``x / (1 - p)`` where ``tl.rand(seed, i) > p``, else 0."""
    xs = x.cpu().numpy().reshape(-1)
    p32 = np.float32(p)
    keep = uniform(seed, np.arange(xs.size)) > p32
    kept = xs / (np.float32(1.0) - p32)
    return torch.from_numpy(np.where(keep, kept, np.float32(0.0)).astype(np.float32))
