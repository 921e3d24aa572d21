"""Hopper's tensor copies (TMA): ``cp.async.bulk.tensor`` in tile mode through a tensor map.

PTX ISA, "Data Movement and Conversion Instructions: cp.async.bulk.tensor" (PTX 8.0, sm_90)::

    cp.async.bulk.tensor.Nd.dst.global{.tile}.mbarrier::complete_tx::bytes{.L2::cache_hint}
        [dstMem], [tensorMap, {c0, ..., cN-1}], [mbar]{, policy};      dst: .shared::cluster, .shared::cta
    cp.async.bulk.tensor.Nd.global.shared::cta{.tile}.bulk_group{.L2::cache_hint}
        [tensorMap, {c0, ..., cN-1}], [srcMem]{, policy};

``N`` (1 to 5) is the tensor map's rank and the coordinates are signed 32-bit element indices,
innermost dimension first. The tensor map (:class:`karyamorph.kernel.tensormap.TensorMap`:
the global tensor's dims and strides, the box, element strides, swizzle and out-of-bounds
fill) is an opaque object at a generic, ``.param``, ``.const`` or ``.global`` address; the
model keeps its fields beside the kernel parameter that holds it, never its bytes.

A load moves the box whose first element sits at the coordinates into shared memory at
``dstMem`` (128-byte aligned): its elements in row-major order of the box, the innermost
dimension contiguous (with a swizzle, each row of the box starts a whole swizzle span after the
last where the row is narrower; measured on an H100), each element the tensor holds at
``c + i * elementStride`` along every dimension; an element outside the tensor (an index below 0
or past the dimension) is filled with zero, or NaN with the map's NaN fill. It then performs
complete-tx of the whole box's bytes (filled ones included) on ``mbar``. A store writes the box
read from shared ``srcMem`` back to the tensor, skipping the elements outside it, in the
thread's next bulk async-group (``cp.async.bulk.commit_group``/``wait_group``, as in
:mod:`karyamorph.model.ptx.bulk_copy`).

Swizzling (CUDA Programming Guide, "Tensor Memory Access", swizzle modes): with an S-byte
swizzle the 16-byte chunk index of a shared address (bits 4 up) is XORed with the bits above
the S-byte row (bits 7 up): three bits for 128 bytes, two for 64, one for 32, the pattern
repeating every 1024, 512 and 256 bytes of the shared address, as ``wgmma``'s descriptors
read it (:mod:`karyamorph.model.ptx.wgmma`). The box's inner dimension is at most S bytes. The
innermost coordinate times the element size is a multiple of 16 (the rows start 16-byte aligned
in global memory; an H100 raises an illegal instruction otherwise): the model refuses it as a
fault. Measured on an H100 (tests/harness/gpu/test_tensor_copy_gpu.py): boxes inside, over and
before the tensor's edges, every swizzle, element strides and rank 3 land as the model says,
and a box at a 128- or 512-byte offset from a 1024-byte boundary is swizzled on the shared
address's own bits.

A load with ``.multicast::cluster`` takes a 16-bit ``ctaMask`` after ``[mbar]``: the box lands
at the same CTA-relative offset ``dstMem`` in the shared memory of every CTA of the cluster whose
rank's bit is set, and each of those CTAs' mbarrier at the offset of ``mbar`` gets the box's
complete-tx (PTX ISA: "the mbarrier signal is also multicast to the same CTA-relative offset as
dstMem"). Its destination and mbarrier name the issuing CTA's window.

Not modeled (refused when decoded): ``.im2col`` and the other load modes, ``.cta_group``, and
``cp.reduce.async.bulk.tensor``. A copy whose map the model does not hold
(a map built or changed in device memory with ``tensormap.replace``) is refused when it runs.

Drivers perform copies through the optional hook ``tensor_copy`` (a load names its mbarrier, so
that the interpreter can hold reads of the box until a wait on it passed; the interpreter,
:mod:`karyamorph.model.interp.tensorcopy`); a driver without it refuses the copy as an operand
it cannot run.
"""

from __future__ import annotations

from karyamorph.model.ptx.cluster import MAX_CLUSTER_CTAS, RANK_SHIFT, RANK_STRIDE
from karyamorph.model.ptx.mbarrier import complete_tx, track
from karyamorph.model.semantics.domain import B, V, ne
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import S32, TYPES

DIMS = ("1d", "2d", "3d", "4d", "5d")


def _coords(x: Exec[V, B]) -> list[V]:
    rank = int((x.mod("dim") or "1d")[0])
    if x.count("coords") != rank:
        raise x.operand_error(f"a .{rank}d tensor copy takes {rank} coordinates, not {x.count('coords')}")
    return [x.read("coords", S32, i) for i in range(rank)]


def _hook(x: Exec[V, B]):  # type: ignore[no-untyped-def]  # a driver's optional hook
    hook = getattr(x, "tensor_copy", None)
    if hook is None:
        raise x.operand_error("tensor copies through a tensor map are run by the interpreter only")
    return hook


def _load(x: Exec[V, B]) -> None:
    dst, dst_bits = x.address("dst")
    tmap, tmap_bits = x.address("tmap")
    mbar, bits = x.address("mbar")
    nbytes = _hook(x)("load", dst, dst_bits, tmap, tmap_bits, _coords(x), (mbar, bits))
    track(x, "complete_tx", mbar, bits)
    complete_tx(x, mbar, bits, nbytes)


def _load_multicast(x: Exec[V, B]) -> None:
    d = x.D
    dst, dst_bits = x.address("dst")
    tmap, tmap_bits = x.address("tmap")
    mbar, bits = x.address("mbar")
    mask = d.zext(x.read("mask", TYPES["b16"]), 16, bits)
    nbytes = _hook(x)("load", dst, dst_bits, tmap, tmap_bits, _coords(x), (mbar, bits), mask)
    offset = d.and_(mbar, d.const(RANK_STRIDE - 1, bits), bits)
    zero = d.const(0, 32)
    for rank in range(MAX_CLUSTER_CTAS):
        # Rank ``rank``'s object at the offset of ``mbar`` (mapa's address), where its bit is set;
        # elsewhere the issuing CTA's own, lowered by nothing.
        named = ne(d, d.and_(mask, d.const(1 << rank, bits), bits), d.const(0, bits), bits)
        remote = d.or_(offset, d.const((rank + 1) << RANK_SHIFT, bits), bits)
        at = d.ite(named, remote, mbar, bits)
        track(x, "complete_tx", at, bits)
        complete_tx(x, at, bits, d.ite(named, nbytes, zero, 32), "shared::cluster")


def _store(x: Exec[V, B]) -> None:
    src, src_bits = x.address("src")
    tmap, tmap_bits = x.address("tmap")
    _hook(x)("store", src, src_bits, tmap, tmap_bits, _coords(x))


_COMMON = {"dim": DIMS, "load_mode": ("tile",), "hint": ("L2::cache_hint",)}

TENSOR_COPY: tuple[Instr, ...] = (
    Instr("cp", (), (Slot("dst", "addr"), Slot("tmap", "tensor", pair="coords"), Slot("mbar", "addr"),
                     Slot("policy", optional=True)), _load,
          {**_COMMON, "dst_space": ("shared::cluster", "shared"), "src_space": ("global",),
           "completion": ("mbarrier::complete_tx::bytes",)},
          required=("dim", "dst_space", "src_space", "completion"), fixed=("async", "bulk", "tensor"),
          ntypes=0, kind="memory", min_ptx="8.0", min_target="sm_90",
          doc="copy a tensor map's box global -> shared, then complete-tx its bytes on an mbarrier"),
    Instr("cp", (), (Slot("dst", "addr"), Slot("tmap", "tensor", pair="coords"), Slot("mbar", "addr"),
                     Slot("mask"), Slot("policy", optional=True)), _load_multicast,
          {**_COMMON, "dst_space": ("shared::cluster",), "src_space": ("global",),
           "completion": ("mbarrier::complete_tx::bytes",)},
          required=("dim", "dst_space", "src_space", "completion"),
          fixed=("async", "bulk", "tensor", "multicast::cluster"), ntypes=0, kind="memory", min_ptx="8.0",
          min_target="sm_90", doc="copy a tensor map's box global -> the shared memory of the cluster's CTAs "
          "in a mask, complete-tx on each one's mbarrier"),
    Instr("cp", (), (Slot("tmap", "tensor", pair="coords"), Slot("src", "addr"),
                     Slot("policy", optional=True)), _store,
          {**_COMMON, "dst_space": ("global",), "src_space": ("shared",), "completion": ("bulk_group",)},
          required=("dim", "dst_space", "src_space", "completion"), fixed=("async", "bulk", "tensor"),
          ntypes=0, kind="memory", min_ptx="8.0", min_target="sm_90",
          doc="copy a box shared -> a tensor map's tensor in the thread's next bulk async-group"),
)  # fmt: skip
