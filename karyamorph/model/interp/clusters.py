"""Clusters of CTAs in the interpreter: ``barrier.cluster`` arrivals and waits, and ``mapa``'s
target rank (the hooks of :mod:`karyamorph.model.ptx.cluster`).

A thread's k-th ``barrier.cluster.wait`` passes once every non-exited thread of its cluster has
arrived k times (PTX ISA, barrier.cluster: the barrier completes when all non-exited threads of
the cluster have arrived). In the randomized order a warp whose wait cannot pass yet hands over
and runs the wait again later (``ctl = ("cluster_wait",)``), so that the CTAs of a cluster meet
however their warps are ordered; run as one group (lockstep), every thread of the launch is at
the same instruction, so a wait that cannot pass means threads of the cluster are on another
path: a :class:`~karyamorph.model.interp.errors.ModelLimitError` names one of them.

Faults: a wait without the thread's own arrival (it would wait for itself), and ``mapa`` to a
rank at or above the cluster's size (PTX ISA, mapa: the target CTA must be in the cluster).
Accesses of the cluster's shared window resolve in
:meth:`~karyamorph.model.interp.memory.Memory.resolve`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from karyamorph.isa import ast
from karyamorph.model.interp.errors import (
    DivergentBarrierError,
    LaunchError,
    MemoryAccessError,
    ModelLimitError,
)
from karyamorph.model.interp.geometry import Dim3, Geometry
from karyamorph.model.ptx.cluster import cluster_shape
from karyamorph.model.semantics.concrete import UIntArray
from karyamorph.model.semantics.decode import Decoded


class BarrierCounter(Protocol):
    """The launch counter a passed cluster wait adds to (:class:`~karyamorph.model.interp.simt.Stats`)."""

    barriers: int


class ClusterState:
    """Arrivals and passed waits per thread, and which threads have not exited."""

    def __init__(self, geo: Geometry, alive: np.ndarray) -> None:
        self.geo = geo
        self.alive = alive  # the launch's, updated in place as threads exit
        self.arrivals = np.zeros(geo.n_threads, np.int64)
        self.waits = np.zeros(geo.n_threads, np.int64)
        assert geo.cluster_blocks is not None
        self.opened = np.zeros(len(geo.cluster_blocks), np.int64)  # per CTA: waits passed, for Stats
        bt = geo.block_threads
        # [block, k]: the threads of each block's cluster, block after block.
        per_block = geo.cluster_blocks[:, :, None] * bt + np.arange(bt)[None, None, :]
        self.members = per_block.reshape(per_block.shape[0], -1)

    @classmethod
    def of(cls, decoded: list[Decoded], geo: Geometry, alive: np.ndarray) -> ClusterState | None:
        """The state of a launch of a kernel with cluster barriers (None without: it costs a few
        words per thread)."""
        if any(d.source.opcode == "barrier" and d.source.modifiers[:1] == ("cluster",) for d in decoded):
            return cls(geo, alive)
        return None

    def ready(self, threads: np.ndarray) -> bool:
        """Whether the next wait of each of ``threads`` can pass."""
        blocks = np.unique(self.geo.block_index[threads])
        for b in blocks:
            mine = threads[self.geo.block_index[threads] == b]
            phase = int(self.waits[mine].max()) + 1
            others = self.members[b]
            if (self.alive[others] & (self.arrivals[others] < phase)).any():
                return False
        return True

    def straggler(self, threads: np.ndarray) -> int:
        """A non-exited thread of the cluster of ``threads[0]`` that has not arrived yet."""
        others = self.members[self.geo.block_index[threads[0]]]
        phase = int(self.waits[threads[0]]) + 1
        late = others[self.alive[others] & (self.arrivals[others] < phase)]
        return int(late[0])


def launch_cluster(fn: ast.Function, given: Dim3 | None) -> Dim3:
    """The cluster shape of a launch of ``fn`` (``.reqnctapercluster``, else ``given``).

    Raises
    ------
    LaunchError
        ``given`` differs from ``.reqnctapercluster`` (CUDA refuses such a launch).
    ModelLimitError
        An ``.explicitcluster`` kernel launched without cluster dimensions.
    """
    shape = cluster_shape(fn, given)
    if given is not None and shape != given:
        raise LaunchError(
            f"line {fn.loc.line}: {fn.name}: launched in clusters of {given} CTAs, but its "
            f".reqnctapercluster is {shape}"
        )
    if shape is None:
        raise ModelLimitError(
            f"line {fn.loc.line}: {fn.name}: .explicitcluster without .reqnctapercluster: the launch "
            "must give the cluster dimensions (a spec's [launch] cluster)"
        )
    return shape


class ClusterHooks:
    """The hooks of the cluster instructions (mixed into
    :class:`~karyamorph.model.interp.simt.GroupExec`, which sets these attributes)."""

    n: int
    lo: int
    dec: Decoded
    geo: Geometry
    ctl: tuple[str, ...] | None
    cluster: ClusterState | None
    phase: int  # barriers passed, which a passed cluster wait is one of
    stats: BarrierCounter
    can_suspend: bool  # in the randomized order: a wait that cannot pass hands over

    if TYPE_CHECKING:

        def _active(self) -> np.ndarray: ...

    def _here(self, t: int) -> str:
        return f"line {self.dec.line}: {self.dec.source.full_opcode} ({self.geo.describe(t)})"

    def cluster_barrier(self, op: str) -> bool:
        state = self.cluster
        if state is None:
            return False  # a driver without clusters: the wait is the CTA's barrier
        t = self._active() + self.lo
        if op == "arrive":
            state.arrivals[t] += 1
            return True
        missing = t[state.arrivals[t] <= state.waits[t]]
        if missing.size:
            raise DivergentBarrierError(
                f"{self._here(int(missing[0]))}: waits at the cluster barrier without having "
                "arrived (barrier.cluster.arrive), so it waits for itself"
            )
        if not state.ready(t):
            if not self.can_suspend:
                late = state.straggler(t)
                raise ModelLimitError(
                    f"{self._here(int(t[0]))}: waits at the cluster barrier while "
                    f"{self.geo.describe(late)} of its cluster, on another path, has not arrived "
                    "(the lockstep order runs one path at a time; the randomized order runs it)"
                )
            self.ctl = ("cluster_wait",)
            return True
        state.waits[t] += 1
        self.phase += 1
        # Stats count a barrier once per CTA, as a CTA barrier counts: at its first thread through.
        blocks = np.unique(self.geo.block_index[t])
        phase = state.waits[t].max()
        first = blocks[state.opened[blocks] < phase]
        state.opened[first] = phase
        self.stats.barriers += int(first.size)
        return True

    def cluster_rank(self, rank: UIntArray) -> None:
        idx = self._active()
        size = self.geo.cluster_size
        r = np.broadcast_to(np.asarray(rank), (self.n,))[idx].astype(np.int64)
        bad = r >= size
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryAccessError(
                f"{self._here(int(idx[i]) + self.lo)}: mapa to rank {int(r[i])}, outside the cluster "
                f"of {size} CTA(s) {self.geo.cluster}"
            )
