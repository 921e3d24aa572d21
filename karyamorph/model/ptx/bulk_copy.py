"""Hopper's bulk asynchronous copies (non-tensor ``cp.async.bulk``) and ``fence.proxy.async``.

PTX ISA, "Data Movement and Conversion Instructions: cp.async.bulk", ``cp.async.bulk.commit_group``,
``cp.async.bulk.wait_group`` and "Parallel Synchronization and Communication Instructions:
membar/fence":

- ``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]``
  copies ``size`` bytes (a multiple of 16; both addresses 16-byte aligned) from global ``src`` to
  shared ``dst`` and, once they are written, performs complete-tx of ``size`` bytes on the
  mbarrier ``mbar`` (:mod:`karyamorph.model.ptx.mbarrier`); the destination is the executing
  CTA's shared memory (the interpreter refuses one mapped into another CTA of the cluster);
- ``cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size`` copies shared to global and
  joins the thread's next bulk async-group; ``cp.async.bulk.commit_group`` closes the group and
  ``cp.async.bulk.wait_group{.read} N`` waits until at most ``N`` of the most recent groups are
  pending (``.read``: until their sources are read; the interpreter completes them whole, and
  the hook is told ``wait.read`` so that a check orders nothing more by it);
- ``fence.proxy.async{.space}`` orders the thread's generic-proxy accesses with its later
  async-proxy ones (the bulk copies). Values do not change with it in the model, which runs each
  access when it is issued, but drivers record it (hook ``proxy_fence``) so that a check can
  require it.

A copy of a register-sized ``size`` is no single access: drivers perform copies through the
optional hooks ``bulk_copy`` and ``bulk_group`` (the interpreter,
:mod:`karyamorph.model.interp.asyncproxy`); a driver without them refuses the copy as an
operand it cannot run.
"""

from __future__ import annotations

from karyamorph.model.ptx.mbarrier import complete_tx, track
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import U32

ALIGN_BYTES = 16
"""Alignment of both addresses and granule of ``size`` (PTX ISA, cp.async.bulk)."""


def _hook(x: Exec[V, B], name: str):  # type: ignore[no-untyped-def]  # a driver's optional hook
    hook = getattr(x, name, None)
    if hook is None:
        raise x.operand_error("bulk asynchronous copies are run by the interpreter only")
    return hook


def _copy(x: Exec[V, B], dst_space: str, src_space: str, mbar: tuple[V, int] | None = None) -> V:
    dst, dst_bits = x.address("dst")
    src, src_bits = x.address("src")
    size = x.read("size", U32)
    grouped = dst_space == "global"
    _hook(x, "bulk_copy")(dst_space, dst, dst_bits, src_space, src, src_bits, size, grouped, mbar)
    return size


def _load(x: Exec[V, B]) -> None:
    mbar, bits = x.address("mbar")
    size = _copy(x, "shared", "global", (mbar, bits))
    track(x, "complete_tx", mbar, bits)
    complete_tx(x, mbar, bits, size)


def _store(x: Exec[V, B]) -> None:
    _copy(x, "global", "shared")


def _commit(x: Exec[V, B]) -> None:
    _hook(x, "bulk_group")("commit", 0)


def _wait(x: Exec[V, B]) -> None:
    # .read: only the groups' sources are read when it returns; their writes may be in flight
    _hook(x, "bulk_group")("wait.read" if x.mod("read") else "wait", x.imm("n"))


def _fence(x: Exec[V, B]) -> None:
    hook = getattr(x, "proxy_fence", None)  # optional: drivers that record fences
    if hook is not None:
        hook(x.mod("space") or "all")


BULK_COPY: tuple[Instr, ...] = (
    Instr("cp", (), (Slot("dst", "addr"), Slot("src", "addr"), Slot("size"), Slot("mbar", "addr")), _load,
          {"dst_space": ("shared::cluster", "shared"), "src_space": ("global",),
           "completion": ("mbarrier::complete_tx::bytes",)},
          required=("dst_space", "src_space", "completion"), fixed=("async", "bulk"), ntypes=0,
          kind="memory", min_ptx="8.0", min_target="sm_90",
          doc="copy size bytes global -> shared, then complete-tx them on an mbarrier"),
    Instr("cp", (), (Slot("dst", "addr"), Slot("src", "addr"), Slot("size")), _store,
          {"dst_space": ("global",), "src_space": ("shared",), "completion": ("bulk_group",)},
          required=("dst_space", "src_space", "completion"), fixed=("async", "bulk"), ntypes=0,
          kind="memory", min_ptx="8.0", min_target="sm_90",
          doc="copy size bytes shared -> global in the thread's next bulk async-group"),
    Instr("cp", (), (), _commit, fixed=("async", "bulk", "commit_group"), ntypes=0, kind="memory",
          min_ptx="8.0", min_target="sm_90", doc="close the started bulk copies into a group"),
    Instr("cp", (), (Slot("n", "imm"),), _wait, {"read": ("read",)}, fixed=("async", "bulk", "wait_group"),
          ntypes=0, kind="memory", min_ptx="8.0", min_target="sm_90",
          doc="wait until at most N bulk async-groups are pending"),
    Instr("fence", (), (), _fence, {"space": ("shared", "global", "shared::cluster")},
          fixed=("proxy", "async"), ntypes=0, kind="memory", min_ptx="8.0", min_target="sm_90",
          doc="order generic-proxy accesses before the async proxy's (recorded, no value changes)"),
)  # fmt: skip
