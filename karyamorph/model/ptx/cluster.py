"""Thread-block clusters: their special registers, ``barrier.cluster`` and ``mapa``.

PTX ISA, "Special Registers" (``%cluster_ctarank``, ``%cluster_nctarank``, ``%clusterid``,
``%nclusterid``, ``%cluster_ctaid``, ``%cluster_nctaid``), "Parallel Synchronization and
Communication Instructions: barrier.cluster", "Data Movement and Conversion Instructions: mapa"
and "State Spaces: shared" (the ``.shared::cluster`` window holds the ``.shared::cta`` window
of every CTA of the cluster).

A launch is tiled into clusters of ``.reqnctapercluster`` CTAs (or the dimensions the launch
gives, for ``.explicitcluster``); without either every CTA is a cluster of one.
:func:`cluster_shape` reads the attribute; :data:`CLUSTER_REGISTERS` names the registers.

``.shared::cluster`` addresses, as the model lays them out: an address below
:data:`RANK_STRIDE` is the executing CTA's own ``.shared::cta`` address (the cta window is part
of the cluster window); ``(rank + 1) * RANK_STRIDE + offset`` is byte ``offset`` of the shared
memory of the CTA ``rank`` of the cluster. ``mapa{.shared::cluster}.type d, a, b`` keeps the
offset of ``a`` (a shared address, or a generic one: the window bits above 32 stay) and sets the
rank field to ``b``; a driver that knows the cluster checks ``b`` (hook ``cluster_rank``).

``barrier.cluster.arrive{.release|.relaxed}{.aligned}`` marks the thread as arrived;
``barrier.cluster.wait{.acquire}{.aligned}`` waits until every non-exited thread of the cluster
has arrived. The defaults (``.release`` and ``.acquire``) make the stores before the arrival
visible after the wait; ``.relaxed`` drops that ordering, which the model, whose stores are
visible at once, cannot show. A driver that tracks arrivals (hook ``cluster_barrier``) runs both
and returns True from ``wait``; one without it takes the wait for a CTA barrier, which is exact
for clusters of one CTA whose threads arrive right before they wait.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karyamorph.isa import ast
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Law, LawDomain, LawRun, LawSides, Slot

if TYPE_CHECKING:
    from karyamorph.model.semantics.symbolic import BitVec

RANK_SHIFT = 24
RANK_STRIDE = 1 << RANK_SHIFT
"""Bytes of the cluster window per CTA: more than any CTA's shared memory (228 KiB on sm_90)."""
MAX_CLUSTER_CTAS = 16
"""The largest cluster (non-portable size, PTX ISA .reqnctapercluster / CUDA's limit of 16)."""

CLUSTER_REGISTERS = (
    "%cluster_ctarank", "%cluster_nctarank",
    *(f"%{r}.{a}" for r in ("clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid") for a in "xyz"),
)  # fmt: skip
"""The cluster special registers (their values: :mod:`karyamorph.model.interp.geometry`)."""

Dim3 = tuple[int, int, int]


def cluster_shape(fn: ast.Function, given: Dim3 | None = None) -> Dim3 | None:
    """The cluster dimensions ``fn`` is launched with: ``.reqnctapercluster``, else ``given``
    (the launch's); ``(1, 1, 1)`` for a kernel with neither attribute; None for an
    ``.explicitcluster`` kernel whose launch gives none."""
    dims = fn.attribute("reqnctapercluster")
    if dims is not None:
        x, y, z = (*dims, 1, 1)[:3]
        return (x, y, z)
    if given is not None:
        return given
    return None if fn.attribute("explicitcluster") is not None else (1, 1, 1)


def _arrive(x: Exec[V, B]) -> None:
    hook = getattr(x, "cluster_barrier", None)  # optional: drivers that track arrivals
    if hook is not None:
        hook("arrive")


def _wait(x: Exec[V, B]) -> None:
    hook = getattr(x, "cluster_barrier", None)
    if hook is None or not hook("wait"):
        x.barrier(x.D.const(0, 32), None)


def _mapa(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    rank = x.read("b", t)  # a 32-bit operand, read at the address width (zero-extended)
    hook = getattr(x, "cluster_rank", None)  # optional: drivers that know the cluster size
    if hook is not None:
        hook(rank)
    offset = d.and_(x.read("a", t), d.const(RANK_STRIDE - 1, t.bits), t.bits)
    window = d.and_(x.read("a", t), d.const(((1 << t.bits) - 1) ^ 0xFFFFFFFF, t.bits), t.bits)
    # The rank field is the 8 bits [24, 32): a rank of 255 or more (out of range, which drivers
    # that know the cluster report) wraps there rather than reaching a generic window's bits.
    plus_one = d.and_(d.add(rank, d.const(1, t.bits), t.bits), d.const(0xFF, t.bits), t.bits)
    field = d.shl(plus_one, d.const(RANK_SHIFT, t.bits), t.bits)
    x.write("d", d.or_(window, d.or_(field, offset, t.bits), t.bits), t)


def _mapa_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    if types[0] == "u32" and "space" not in mods:
        return (
            "mapa.u32 of generic addresses is for .address_size 32 (the model's generic addresses are 64-bit)"
        )
    return None


def _remap(t: str) -> Law:
    """Mapping twice is mapping once to the last rank: the offset in the window is kept."""

    def fn(run: LawRun, D: LawDomain, _t: str, a: BitVec, b: BitVec, c: BitVec) -> LawSides:
        form = f"mapa.shared::cluster.{t}"
        return run(form, run(form, a, b), c), run(form, a, c)

    return Law(f"mapa(mapa(a, b), c) == mapa(a, c) (.{t})", (t,), 3, fn)


def _offset(t: str) -> Law:
    """The mapped address keeps the byte offset of a shared address in its CTA's window."""

    def fn(run: LawRun, D: LawDomain, _t: str, a: BitVec, b: BitVec) -> LawSides:
        bits = 32 if t == "u32" else 64
        mask = D.const(RANK_STRIDE - 1, bits)
        return D.and_(run(f"mapa.shared::cluster.{t}", a, b), mask, bits), D.and_(a, mask, bits)

    return Law(f"mapa(a, b) & (RANK_STRIDE - 1) == a & (RANK_STRIDE - 1) (.{t})", (t,), 2, fn)


CLUSTER: tuple[Instr, ...] = (
    Instr("barrier", (), (), _arrive, fixed=("cluster", "arrive"), ntypes=0, kind="barrier", min_ptx="7.8",
          min_target="sm_90", doc="arrive at the cluster barrier"),
    Instr("barrier", (), (), _wait, fixed=("cluster", "wait"), ntypes=0, kind="barrier", min_ptx="7.8",
          min_target="sm_90", doc="wait until every non-exited thread of the cluster has arrived"),
    Instr("mapa", ("u32", "u64"), (Slot("d", dest=True), Slot("a"), Slot("b")), _mapa,
          {"space": ("shared::cluster",)}, min_ptx="7.8", min_target="sm_90", type_rule=_mapa_rule,
          laws=(_remap("u32"), _remap("u64"), _offset("u32"), _offset("u64")), kind="memory",
          doc="the address in the cluster's CTA b of the shared address a"),
)  # fmt: skip
