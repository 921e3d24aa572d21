"""Thread-block clusters as the model launches them: each CTA its own 1x1x1 cluster.

PTX ISA, "Special Registers" (``%cluster_ctarank``, ``%cluster_nctarank``, ``%clusterid``,
``%nclusterid``, ``%cluster_ctaid``, ``%cluster_nctaid``) and "Parallel Synchronization and
Communication Instructions: barrier.cluster". A launch without a cluster attribute (all the model
runs) makes every CTA a cluster of one: its rank in the cluster is 0 of 1, its cluster id is its
CTA id, and the grid of clusters is the grid of CTAs. :data:`CLUSTER_REGISTERS` gives each
register's value under that default from the CTA coordinates.

``barrier.cluster.arrive{.release|.relaxed}{.aligned}`` marks the thread as arrived;
``barrier.cluster.wait{.acquire}{.aligned}`` waits until every non-exited thread of the cluster
has arrived: here, of the CTA, so the wait is a CTA barrier. A thread that waits without having
arrived waits for itself: drivers that track arrivals (hook ``cluster_barrier``) report it.
"""

from __future__ import annotations

from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr

# register -> ("ctaid"/"nctaid": the CTA register of the same axis, or a constant)
CLUSTER_REGISTERS: dict[str, str | int] = {
    "%cluster_ctarank": 0,
    "%cluster_nctarank": 1,
    **{f"%clusterid.{a}": f"%ctaid.{a}" for a in "xyz"},
    **{f"%nclusterid.{a}": f"%nctaid.{a}" for a in "xyz"},
    **{f"%cluster_ctaid.{a}": 0 for a in "xyz"},
    **{f"%cluster_nctaid.{a}": 1 for a in "xyz"},
}
"""Each cluster special register under the 1x1x1 default: a CTA register's name, or a value."""


def _arrive(x: Exec[V, B]) -> None:
    hook = getattr(x, "cluster_barrier", None)  # optional: drivers that track arrivals
    if hook is not None:
        hook("arrive")


def _wait(x: Exec[V, B]) -> None:
    hook = getattr(x, "cluster_barrier", None)
    if hook is not None:
        hook("wait")
    x.barrier(x.D.const(0, 32), None)


CLUSTER: tuple[Instr, ...] = (
    Instr("barrier", (), (), _arrive, fixed=("cluster", "arrive"), ntypes=0, kind="barrier", min_ptx="7.8",
          min_target="sm_90", doc="arrive at the cluster barrier (a 1x1x1 cluster: the CTA's)"),
    Instr("barrier", (), (), _wait, fixed=("cluster", "wait"), ntypes=0, kind="barrier", min_ptx="7.8",
          min_target="sm_90", doc="wait until every thread of the cluster has arrived"),
)  # fmt: skip
