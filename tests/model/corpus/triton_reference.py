"""References for the Triton corpus specs that one torch expression cannot state: layer norm
backward's first stage (dx and the per-program partial dw, db) and split-K's per-slice partial
products. Written from what the kernels' comments state, in float64 (the spec's tolerance covers
the kernels' float32)."""

from __future__ import annotations

import torch


def layernorm_bwd_dx(
    x: torch.Tensor,
    dy: torch.Tensor,
    w: torch.Tensor,
    mean: torch.Tensor,
    rstd: torch.Tensor,
    programs: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``layernorm_bwd_dx``: for y = xhat * w + b with xhat = (x - mean) * rstd,
    dx = rstd * (w dy - mean(xhat * w dy) xhat - mean(w dy)) per row; program p's partial dw and
    db sum dy * xhat and dy over the rows p, p + programs, p + 2 programs, ...

    Returns
    -------
    tuple of Tensor
        dx [rows, cols], dw_partial [programs, cols], db_partial [programs, cols].
    """
    xd, dyd, wd = x.double(), dy.double(), w.double()
    xhat = (xd - mean.double()[:, None]) * rstd.double()[:, None]
    wdy = wd * dyd
    c1 = (xhat * wdy).mean(dim=1, keepdim=True)
    c2 = wdy.mean(dim=1, keepdim=True)
    dx = (wdy - (xhat * c1 + c2)) * rstd.double()[:, None]
    owner = torch.arange(x.shape[0]) % programs
    dw = torch.zeros(programs, x.shape[1], dtype=torch.float64)
    db = torch.zeros(programs, x.shape[1], dtype=torch.float64)
    dw.index_add_(0, owner, dyd * xhat)
    db.index_add_(0, owner, dyd)
    return dx, dw, db


def splitk_partials(a: torch.Tensor, b: torch.Tensor, split: int, block_k: int) -> torch.Tensor:
    """``matmul_splitk_partials``: slice s of the workspace is the product over the K blocks
    s, s + split, s + 2 split, ... (``block_k`` wide), so the slices sum to A B.

    Returns
    -------
    Tensor
        The workspace, [split, M, N].
    """
    ad, bd = a.double(), b.double()
    k = a.shape[1]
    out = torch.zeros(split, a.shape[0], b.shape[1], dtype=torch.float64)
    for block, start in enumerate(range(0, k, block_k)):
        out[block % split] += ad[:, start : start + block_k] @ bd[start : start + block_k]
    return out
