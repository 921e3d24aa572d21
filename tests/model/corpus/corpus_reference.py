"""References for the corpus specs that one torch expression cannot state: segmented scans,
layer norm with its statistics, Welford row statistics and a blockwise flash-attention forward.
Each is written from what the kernel's source says it computes, in float64 where the kernel
rounds to float32 (the spec's tolerance covers the difference)."""

from __future__ import annotations

import numpy as np
import torch


def segmented_inclusive_scan(x: torch.Tensor, segment: int) -> torch.Tensor:
    """Inclusive prefix sums restarting every ``segment`` elements (one per block)."""
    v = x.cpu().numpy().astype(np.int64)
    out = np.zeros_like(v)
    for start in range(0, v.size, segment):
        out[start : start + segment] = np.cumsum(v[start : start + segment])
    return torch.from_numpy(out.astype(np.int32))


def hillis_steele(x: torch.Tensor, block: int) -> torch.Tensor:
    """``scan_hillis_steele``: each block's inclusive scan of its ``block`` elements."""
    return segmented_inclusive_scan(x, block)


def blelloch(data: torch.Tensor, block: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``scan_blelloch``: each block's exclusive scan of its ``2 * block`` elements, in place,
    and each block's total in ``block_sums``."""
    v = data.cpu().numpy().astype(np.float64)
    m = 2 * block
    out = v.copy()
    sums = np.zeros(-(-n // m))
    for b, start in enumerate(range(0, n, m)):
        seg = v[start : start + m]
        out[start : start + m] = np.concatenate(([0.0], np.cumsum(seg)[:-1]))
        sums[b] = seg.sum()
    return torch.from_numpy(out), torch.from_numpy(sums)


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float):  # type: ignore[no-untyped-def]
    """``layernorm_fwd``: y = (x - mean) * rstd * w + b per row, with mean and rstd (biased
    variance) as outputs."""
    xd = x.double()
    mean = xd.mean(dim=1)
    var = ((xd - mean[:, None]) ** 2).mean(dim=1)
    rstd = 1.0 / torch.sqrt(var + eps)
    y = (xd - mean[:, None]) * rstd[:, None] * w.double() + b.double()
    return y, mean, rstd


def row_stats(x: torch.Tensor, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``row_stats``: each row's mean and unbiased variance (0 for a row of one element)."""
    xd = x.double().reshape(rows, -1)
    var = xd.var(dim=1, unbiased=True) if xd.shape[1] > 1 else torch.zeros(rows, dtype=torch.float64)
    return xd.mean(dim=1), var


def flash_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: float, block_n: int
) -> torch.Tensor:
    """``attention_fwd`` key block by key block: the online softmax in float64, with the
    probabilities rounded to float16 before they multiply V, as the kernel's ``p.to(float16)``
    does. Mathematically ``softmax(q k^T * sm_scale) v`` up to that rounding."""
    qd, kd, vd = (t.cpu().numpy().astype(np.float64) for t in (q, k, v))
    heads, seq, dim = qd.shape
    out = np.zeros_like(qd)
    scale = float(np.float32(sm_scale) * np.float32(1.4426950408889634))
    for h in range(heads):
        m = np.full(seq, -np.inf)
        denom = np.zeros(seq)
        acc = np.zeros((seq, dim))
        for start in range(0, seq, block_n):
            kb, vb = kd[h, start : start + block_n], vd[h, start : start + block_n]
            s = qd[h] @ kb.T * scale
            m_new = np.maximum(m, s.max(axis=1))
            p = np.exp2(s - m_new[:, None])
            alpha = np.exp2(m - m_new)
            denom = denom * alpha + p.sum(axis=1)
            acc = acc * alpha[:, None] + p.astype(np.float16).astype(np.float64) @ vb
            m = m_new
        out[h] = acc / denom[:, None]
    return torch.from_numpy(out)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: float) -> torch.Tensor:
    """The corpus's ``attention_fwd`` spec: :func:`flash_attention` with its 32-key blocks."""
    return flash_attention(q, k, v, sm_scale, block_n=32)
