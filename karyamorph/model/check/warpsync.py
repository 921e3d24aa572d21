"""How ``bar.warp.sync`` orders the lanes of a warp, for the two-thread race encoding.

PTX ISA, "Parallel Synchronization and Communication Instructions: bar.warp.sync": the executing
thread waits until every thread of ``membermask`` has executed a ``bar.warp.sync`` (with the same
mask), and the instruction orders memory among the participating threads, as ``bar.sync`` does
for a block. On targets from sm_70 on the waiting lanes need not be at the same instruction.

When every ``bar.warp.sync`` of the kernel names the whole warp, the ``n``-th one a lane passes
meets the ``n``-th of every other lane of its warp, so two lanes of one warp that have passed
different numbers of them are ordered: what the one did before its ``n``-th comes before what the
other does after its ``n``-th. Each thread counts the warp barriers it passes
(:data:`karyamorph.model.check.syncstate.WARP_EPOCH`), and two accesses of two threads of one warp
with different counts are ordered. Threads of different warps are not ordered by it. A mask that
is not a constant naming every lane (a half-warp's barrier) breaks the counting argument, so a
kernel with one keeps the caveat of :mod:`karyamorph.model.check.caveats` instead. Accesses of
copies still in flight (``cp.async``) are not ordered by it here.
"""

from __future__ import annotations

import z3

from karyamorph.isa import ast
from karyamorph.model.check.accesses import Access, Trace
from karyamorph.model.check.encoding import Encoding
from karyamorph.model.interp.program import Program
from karyamorph.model.interp.simt import immediate_bits
from karyamorph.model.semantics.symbolic import Bool
from karyamorph.model.semantics.types import U32

NAME = "bar.warp.sync"


def full_warp_masks(program: Program, warp_size: int) -> bool:
    """Whether every ``bar.warp.sync`` of ``program`` has a constant mask naming all lanes."""
    lanes = (1 << warp_size) - 1
    for d in program.decoded:
        if d.instr.name != NAME:
            continue
        mask = d.source.operands[0] if d.source.operands else None
        if not isinstance(mask, ast.Immediate) or immediate_bits(mask.text, U32) & lanes != lanes:
            return False
    return True


def track_warp_barriers(trace: Trace, program: Program, warp_size: int) -> bool:
    """Whether the race encoding orders the lanes of a warp by the kernel's ``bar.warp.sync``
    barriers (the kernel has some, all name the whole warp, every access counts them); where it
    does not, the counts are dropped from the accesses."""
    accesses = [e for e in trace.events if isinstance(e, Access)]
    used = any(d.instr.name == NAME for d in program.decoded)
    exact = used and full_warp_masks(program, warp_size)
    exact = exact and all(a.warp_epoch is not None for a in accesses)
    if not exact:
        for a in accesses:
            a.warp_epoch = None
    return exact


def ordered(enc: Encoding, a: Access, c: Access) -> Bool | None:
    """The condition under which ``bar.warp.sync`` orders ``a`` of thread ``A`` and ``c`` of
    thread ``B``: one warp, different counts of warp barriers passed. None when it never does
    (counts not tracked, or an access of a copy in flight)."""
    if a.warp_epoch is None or c.warp_epoch is None or a.group is not None or c.group is not None:
        return None
    return z3.And(enc.same_warp(), a.warp_epoch != enc.b(c.warp_epoch))
