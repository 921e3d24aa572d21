"""The coordinates of a launch: per-thread special registers, and the CTAs of each cluster."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from karyamorph.model.interp.errors import LaunchError
from karyamorph.model.ptx.cluster import MAX_CLUSTER_CTAS

Dim3 = tuple[int, int, int]


@dataclass(slots=True)
class Geometry:
    """Per-thread coordinates of a launch, as flat arrays over the linear thread index.

    ``cluster`` is the cluster shape in CTAs; ``cluster_blocks[b, r]`` is the linear index of
    the CTA of rank ``r`` in the cluster of CTA ``b``.
    """

    grid: Dim3
    block: Dim3
    warp_size: int
    n_threads: int
    block_threads: int
    specials: dict[str, np.ndarray]
    block_index: np.ndarray
    cluster: Dim3 = (1, 1, 1)
    cluster_blocks: np.ndarray | None = None

    def describe(self, t: int) -> str:
        b, r = divmod(int(t), self.block_threads)
        bx, by = self.block[0], self.block[1]
        gx, gy = self.grid[0], self.grid[1]
        tid = (r % bx, r // bx % by, r // (bx * by))
        cta = (b % gx, b // gx % gy, b // (gx * gy))
        return f"block ({cta[0]},{cta[1]},{cta[2]}) thread ({tid[0]},{tid[1]},{tid[2]})"

    @property
    def cluster_size(self) -> int:
        return self.cluster[0] * self.cluster[1] * self.cluster[2]


def _xyz(idx: np.ndarray, dims: Dim3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return idx % dims[0], idx // dims[0] % dims[1], idx // (dims[0] * dims[1])


def make_geometry(grid: Dim3, block: Dim3, warp_size: int, cluster: Dim3 = (1, 1, 1)) -> Geometry:
    """The coordinates of a launch of ``grid`` CTAs of ``block`` threads in clusters of
    ``cluster`` CTAs (which must tile the grid: CUDA refuses the launch otherwise)."""
    if min(cluster) < 1 or any(g % c for g, c in zip(grid, cluster, strict=True)):
        raise LaunchError(f"a grid of {grid} CTAs is not a whole number of clusters of {cluster}")
    if cluster[0] * cluster[1] * cluster[2] > MAX_CLUSTER_CTAS:
        raise LaunchError(f"clusters of {cluster} CTAs exceed the {MAX_CLUSTER_CTAS} a cluster may have")
    bt = block[0] * block[1] * block[2]
    nb = grid[0] * grid[1] * grid[2]
    t = np.arange(nb * bt, dtype=np.int64)
    b, r = t // bt, t % bt
    sp: dict[str, np.ndarray] = {}
    for name, idx, dims in (("%tid", r, block), ("%ctaid", b, grid)):
        for axis, v in zip("xyz", _xyz(idx, dims), strict=True):
            sp[f"{name}.{axis}"] = v.astype(np.uint32)
    for name, dims in (("%ntid", block), ("%nctaid", grid), ("%cluster_nctaid", cluster)):
        for k, axis in enumerate("xyz"):
            sp[f"{name}.{axis}"] = np.broadcast_to(np.uint32(dims[k]), t.shape)
    for k, axis in enumerate("xyz"):
        cta = sp[f"%ctaid.{axis}"]
        sp[f"%cluster_ctaid.{axis}"] = cta % np.uint32(cluster[k])
        sp[f"%clusterid.{axis}"] = cta // np.uint32(cluster[k])
        sp[f"%nclusterid.{axis}"] = np.broadcast_to(np.uint32(grid[k] // cluster[k]), t.shape)
    cx, cy = cluster[0], cluster[1]
    # %cluster_ctarank counts the CTAs of a cluster x fastest, as %ctaid numbers the grid's.
    x, y, z = (sp[f"%cluster_ctaid.{a}"] for a in "xyz")
    sp["%cluster_ctarank"] = (x + np.uint32(cx) * (y + np.uint32(cy) * z)).astype(np.uint32)
    sp["%cluster_nctarank"] = np.broadcast_to(np.uint32(cx * cy * cluster[2]), t.shape)
    sp["%laneid"] = (r % warp_size).astype(np.uint32)
    sp["%warpid"] = (r // warp_size).astype(np.uint32)
    sp["%nwarpid"] = np.broadcast_to(np.uint32(-(-bt // warp_size)), t.shape)
    return Geometry(grid, block, warp_size, nb * bt, bt, sp, b, cluster, _cluster_blocks(grid, cluster))


def _cluster_blocks(grid: Dim3, cluster: Dim3) -> np.ndarray:
    """``[b, r]``: the linear index of the CTA of rank ``r`` in the cluster of CTA ``b``."""
    nb = grid[0] * grid[1] * grid[2]
    bx, by, bz = _xyz(np.arange(nb, dtype=np.int64), grid)
    rx, ry, rz = _xyz(np.arange(cluster[0] * cluster[1] * cluster[2], dtype=np.int64), cluster)
    # The cluster's first CTA, then each rank's offset from it.
    x0 = (bx // cluster[0] * cluster[0])[:, None] + rx[None, :]
    y0 = (by // cluster[1] * cluster[1])[:, None] + ry[None, :]
    z0 = (bz // cluster[2] * cluster[2])[:, None] + rz[None, :]
    blocks: np.ndarray = x0 + grid[0] * (y0 + grid[1] * z0)
    return blocks


def as_dim3(v: Dim3 | tuple[int, ...] | int) -> Dim3:
    """Launch dimensions given as an int or 1-3 positive ints, as three (missing ones are 1)."""
    t = (v,) if isinstance(v, int) else tuple(int(x) for x in v)
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise LaunchError(f"launch dimensions must be 1-3 positive integers, got {v!r}")
    t = (*t, 1, 1)[:3]
    return (t[0], t[1], t[2])
