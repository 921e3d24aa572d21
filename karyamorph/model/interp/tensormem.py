"""Tensor memory in the interpreter: each CTA's TMEM, its allocations, and the tcgen05 hooks.

The optional hooks of :mod:`karyamorph.model.ptx.tcgen05`, mixed into
:class:`~karyamorph.model.interp.simt.GroupExec`. The PTX ISA calls undefined what a kernel
does with TMEM outside these rules, so the interpreter refuses it, naming the line, warp and
address (:class:`TensorMemoryError`):

- a load, store or dealloc of columns that are not allocated (before ``alloc``, after
  ``dealloc``, or past the allocated columns), or of lanes past 127;
- a warp touching lanes outside its quarter (warp ``w % 4`` of the CTA: lanes ``32 (w % 4)``
  to ``32 (w % 4) + 31``), or lanes of one warp giving different addresses;
- ``alloc`` with a column count that is not a power of 2 in 32 .. 512, or after the CTA gave up
  its permit (``relinquish_alloc_permit``); ``dealloc`` of anything but a whole allocation;
- columns still allocated when the launch ends (:meth:`TensorMemory.finish`);
- a warp-collective tcgen05 instruction reached by part of a warp;
- a ``tcgen05.mma`` whose instruction descriptor the PTX ISA does not allow, or whose D is not
  in one allocation (valid forms the model does not run are ModelLimitError; its arithmetic is
  :mod:`karyamorph.model.interp.tensormem_mma`);
- TMEM columns an MMA still writes (in flight until its commit's mbarrier phase completes)
  loaded, stored, freed or used by another thread's MMA, and a ``tcgen05.ld`` destination read
  before the thread's ``tcgen05.wait::ld`` (:mod:`karyamorph.model.interp.tensormem_order`).

An MMA's operand reads go through the async proxy: shared bytes written through the generic
proxy with no ``fence.proxy.async`` since are refused by :mod:`karyamorph.model.interp.proxyorder`.
``tcgen05.cp`` and the block-scaled MMA build on these hooks in
:mod:`karyamorph.model.interp.tensormem_scaled`.

Where the allocation lands is the model's choice (the PTX ISA leaves it open): the lowest free
run of columns aligned to its own size. An ``alloc`` that finds no such run would wait on the
GPU for a ``dealloc`` of another warp; the model, which performs each instruction when it is
issued, stops there with ModelLimitError.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from karyamorph.isa import ast

# Through its module, so that a deliberate slip in the arithmetic reaches the hooks.
from karyamorph.model.interp import tensormem_mma as arith
from karyamorph.model.interp.asynccopy import LaunchShape
from karyamorph.model.interp.errors import ExecutionError, ModelLimitError
from karyamorph.model.interp.memory import Memory, MemoryFault
from karyamorph.model.interp.proxyorder import ProxyOrder
from karyamorph.model.interp.tensormem_order import BarrierKey, Flight, TmemOrder
from karyamorph.model.ptx.mbarrier import PHASE
from karyamorph.model.ptx.tcgen05 import LANE_SHIFT, MIN_COLUMNS, TMEM_COLUMNS, TMEM_LANES
from karyamorph.model.ptx.tcgen05_kinds import Kind
from karyamorph.model.ptx.tcgen05_mma import InstrDesc, SmemDesc
from karyamorph.model.semantics.concrete import BoolArray, UIntArray
from karyamorph.model.semantics.decode import Decoded

WARP_LANES = 32  # TMEM lanes a warp reaches: its quarter of the 128


class TmemShape(LaunchShape, Protocol):
    """What the hooks read of a launch's geometry: CTA size and warp size too."""

    block_threads: int
    warp_size: int


class TensorMemoryError(ExecutionError):
    """Tensor memory used against the PTX ISA's rules (see :mod:`karyamorph.model.interp.tensormem`)."""


class SyncCounters(Protocol):
    """The counter of a launch (:class:`~karyamorph.model.interp.simt.Stats`) the waits and
    fences add to."""

    tmem_syncs: dict[str, int]


class TensorMemory:
    """The TMEM of every CTA of one launch: cells, allocated columns, relinquished permits."""

    def __init__(self, n_blocks: int, geometry: TmemShape) -> None:
        self.geo = geometry
        self.n_blocks = n_blocks
        self.cells: dict[int, np.ndarray] = {}  # block -> (lanes, columns) uint32, once allocated
        self.owner = np.full((n_blocks, TMEM_COLUMNS), -1, np.int64)  # allocation start, or -1
        self.sizes: dict[tuple[int, int], int] = {}  # (block, start column) -> columns
        self.relinquished = np.zeros(n_blocks, bool)
        self.order = TmemOrder(n_blocks * geometry.block_threads)
        # register -> threads whose tcgen05.ld of it is not waited for (read by GroupExec.read)
        self.pending = self.order.pending

    def block_cells(self, block: int) -> np.ndarray:
        cells = self.cells.get(block)
        if cells is None:
            cells = self.cells[block] = np.zeros((TMEM_LANES, TMEM_COLUMNS), np.uint32)
        return cells

    def allocate(self, block: int, ncols: int) -> int | None:
        """The first column of ``ncols`` newly allocated columns, or None when none are free."""
        free = self.owner[block] < 0
        for start in range(0, TMEM_COLUMNS, ncols):
            if free[start : start + ncols].all():
                self.owner[block, start : start + ncols] = start
                self.sizes[(block, start)] = ncols
                self.block_cells(block)
                return start
        return None

    def release(self, block: int, start: int) -> None:
        ncols = self.sizes.pop((block, start))
        self.owner[block, start : start + ncols] = -1

    def finish(self) -> None:
        """Raise TensorMemoryError if a CTA ends with columns still allocated."""
        if not self.sizes:
            return
        (block, start), ncols = min(self.sizes.items())
        who = self.geo.describe(block * self.geo.block_threads).split(" thread")[0]
        raise TensorMemoryError(
            f"{who}: {ncols} columns of tensor memory (from column {start}) are still allocated "
            "when the kernel exits (the PTX ISA requires tcgen05.dealloc of every allocation)"
        )


class TensorMemHooks:
    """The tcgen05 hooks over the warps of a group (attributes set by the group)."""

    n: int
    lo: int
    mask: np.ndarray
    full: bool
    dec: Decoded
    geo: TmemShape
    lane_ids: np.ndarray
    warp_starts: np.ndarray
    warp_index: np.ndarray
    warp_len: np.ndarray
    tensormem: TensorMemory | None
    stats: SyncCounters
    memory: Memory
    proxies: ProxyOrder | None  # generic writes to shared memory, for the operands' async reads

    if TYPE_CHECKING:

        def _error(self, message: str, thread: int | None = None) -> Exception: ...

    def _tmem(self) -> TensorMemory:
        if self.tensormem is None:
            raise self._error("tensor memory needs the interpreter's launch state")
        return self.tensormem

    def _fail(self, message: str, i: int) -> TensorMemoryError:
        t = int(i) + self.lo
        return TensorMemoryError(
            f"line {self.dec.line}: {self.dec.source.full_opcode} ({self.geo.describe(t)}): {message}"
        )

    def _warps(self, value: UIntArray | None = None) -> list[np.ndarray]:
        """The executing warps, each as its group-local threads, after checking that every lane
        of each executes (and, with ``value``, that they all give the same one)."""
        act = np.ones(self.n, bool) if self.full else self.mask
        ran = np.bincount(self.warp_index, weights=act, minlength=len(self.warp_starts))
        part = act & (ran[self.warp_index] != self.warp_len)
        if part.any():
            i = int(np.flatnonzero(part)[0])
            have = int(ran[self.warp_index[i]])
            raise self._fail(f"warp-collective, but {have} of {int(self.warp_len[i])} lanes execute it", i)
        out = []
        for w in np.unique(self.warp_index[act]):
            lanes = np.flatnonzero(self.warp_index == w)
            if value is not None:
                v = np.broadcast_to(np.asarray(value), (self.n,))[lanes]
                if (v != v[0]).any():
                    k = int(lanes[int(np.argmax(v != v[0]))])
                    raise self._fail(f"lanes of the warp give different values ({int(v[0]):#x}, "
                                     f"{int(v[k - lanes[0]]):#x})", k)  # fmt: skip
            out.append(lanes)
        return out

    def _at(self, value: UIntArray | BoolArray, i: int) -> int:
        """Thread ``i``'s element of a per-thread (or uniform) value."""
        return int(np.broadcast_to(np.asarray(value), (self.n,))[i])

    def _block(self, i: int) -> int:
        return int(self.geo.block_index[i + self.lo])

    def _quarter(self, i: int) -> int:
        """The warp's quarter of the TMEM lanes: its warp rank in the CTA, modulo 4."""
        return (i + self.lo) % self.geo.block_threads // self.geo.warp_size % 4

    def tmem_alloc(self, ncols: UIntArray) -> UIntArray:
        tmem = self._tmem()
        out = np.zeros(self.n, np.uint32)
        for lanes in self._warps(ncols):
            i = int(lanes[0])
            n = int(np.broadcast_to(np.asarray(ncols), (self.n,))[i])
            if n < MIN_COLUMNS or n > TMEM_COLUMNS or n & (n - 1):
                raise self._fail(f"nCols {n} is not a power of 2 in {MIN_COLUMNS} .. {TMEM_COLUMNS}", i)
            block = self._block(i)
            if tmem.relinquished[block]:
                raise self._fail("the CTA gave up its permit to allocate (relinquish_alloc_permit)", i)
            start = tmem.allocate(block, n)
            if start is None:
                raise ModelLimitError(
                    f"line {self.dec.line}: {self.dec.source.full_opcode}: no {n} free columns of "
                    "tensor memory: on the GPU the warp waits for a dealloc, which the model, "
                    "running each instruction when it is issued, cannot schedule"
                )
            out[lanes] = start
        return out

    def tmem_dealloc(self, taddr: UIntArray, ncols: UIntArray) -> None:
        tmem = self._tmem()
        for lanes in self._warps(taddr):
            i = int(lanes[0])
            a = int(np.broadcast_to(np.asarray(taddr), (self.n,))[i])
            n = int(np.broadcast_to(np.asarray(ncols), (self.n,))[i])
            block, start = self._block(i), a & 0xFFFF
            have = tmem.sizes.get((block, start))
            if a >> LANE_SHIFT or have is None or have != n:
                what = "nothing" if have is None else f"{have} columns"
                raise self._fail(f"dealloc of {n} columns at {a:#010x}, where {what} was allocated", i)
            self._settle()
            flight = tmem.order.conflict(block, start, n)
            if flight is not None:
                raise self._fail(f"dealloc while {flight.describe()}", i)
            tmem.release(block, start)

    def tmem_relinquish(self) -> None:
        tmem = self._tmem()
        for lanes in self._warps():
            tmem.relinquished[self._block(int(lanes[0]))] = True

    def _cells(self, taddr: UIntArray, ncols: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, int]]:
        """Per warp: its threads, the TMEM lane of each, the first column, and the CTA's cells."""
        tmem = self._tmem()
        out = []
        for lanes in self._warps(taddr):
            i = int(lanes[0])
            a = int(np.broadcast_to(np.asarray(taddr), (self.n,))[i])
            lane0, col0 = a >> LANE_SHIFT, a & 0xFFFF
            rows = lane0 + self.lane_ids[lanes]
            q = self._quarter(i)
            outside = (rows < WARP_LANES * q) | (rows >= WARP_LANES * (q + 1))
            if outside.any():
                k = int(lanes[int(np.argmax(outside))])
                raise self._fail(
                    f"TMEM lane {int(rows[k - i])} (address {a:#010x}) is outside the warp's quarter, "
                    f"lanes {WARP_LANES * q} .. {WARP_LANES * q + WARP_LANES - 1} (warp rank % 4 = {q})",
                    k,
                )
            block = self._block(i)
            owned = tmem.owner[block, col0 : col0 + ncols] if col0 < TMEM_COLUMNS else np.zeros(0)
            if owned.size < ncols or (owned < 0).any() or (owned != owned[0]).any():
                raise self._fail(
                    f"columns {col0} .. {col0 + ncols - 1} (address {a:#010x}) are not all in one "
                    "allocation of tensor memory (tcgen05.alloc them first)",
                    i,
                )
            flight = tmem.order.conflict(block, col0, ncols)
            if flight is not None:
                raise self._fail(flight.describe(), i)
            out.append((lanes, rows, np.arange(col0, col0 + ncols), block))
        return out

    def tmem_load(self, taddr: UIntArray, ncols: int) -> list[UIntArray]:
        tmem = self._tmem()
        self._settle()
        values = np.zeros((ncols, self.n), np.uint32)
        for lanes, rows, cols, block in self._cells(taddr, ncols):
            values[:, lanes] = tmem.block_cells(block)[np.ix_(rows, cols)].T
        # The registers are undefined until the thread's wait::ld (tensormem_order).
        dest = self.dec.operands["d"]
        regs = dest.elements if isinstance(dest, ast.Vector) else (dest,)
        names = [r.name for r in regs if isinstance(r, ast.Register)]
        tmem.order.loaded(names, np.flatnonzero(np.ones(self.n, bool) if self.full else self.mask) + self.lo)
        return list(values)

    def tmem_store(self, taddr: UIntArray, values: Sequence[UIntArray]) -> None:
        tmem = self._tmem()
        self._settle()
        for lanes, rows, cols, block in self._cells(taddr, len(values)):
            for j, col in enumerate(cols):
                v = np.broadcast_to(np.asarray(values[j], np.uint32), (self.n,))
                tmem.block_cells(block)[rows, col] = v[lanes]

    def tmem_mma(self, taddr: UIntArray, adesc: UIntArray, bdesc: UIntArray, idesc: UIntArray,
                 enable: BoolArray, kind: Kind) -> None:  # fmt: skip
        tmem = self._tmem()
        for i in self._issuers():  # each issuing thread runs one whole MMA
            word = self._at(idesc, i)
            shape = InstrDesc.decode(word)
            problem = shape.invalid(kind)
            if problem:
                raise self._fail(f"instruction descriptor {word:#010x}: {problem}", i)
            descs = [SmemDesc.decode(self._at(v, i)) for v in (adesc, bdesc)]
            self._limit(shape.unmodeled(kind) or descs[0].unmodeled() or descs[1].unmodeled(), i)
            block, col0 = self._mma_target(taddr, shape.n, i)
            ops = []
            for desc, rows, fmt in ((descs[0], shape.m, shape.a_format), (descs[1], shape.n, shape.b_format)):
                containers = self._smem_bytes(
                    arith.operand_addresses(desc, rows, kind), kind.element_bytes, i
                )
                try:
                    ops.append(arith.values(containers, kind.ab_formats[fmt]))
                except ModelLimitError as exc:
                    raise self._error(f"not modeled: {exc}", i + self.lo) from None
            a_vals = -ops[0] if shape.negate_a else ops[0]
            b_vals = -ops[1] if shape.negate_b else ops[1]
            cells = tmem.block_cells(block)[: shape.m, col0 : col0 + shape.n]
            d = cells if self._at(enable, i) else None
            if kind.integer:
                cells[...] = arith.mma_s32(a_vals, b_vals, d, bool(shape.saturate))
            else:
                cells[...] = arith.mma_f32(a_vals, b_vals, d)

    def _issuers(self) -> list[int]:
        """The executing threads (group-local) of a single-thread tcgen05 instruction."""
        return [int(k) for k in np.flatnonzero(np.ones(self.n, bool) if self.full else self.mask)]

    def _limit(self, reason: str | None, i: int) -> None:
        if reason:  # valid PTX the model does not run: its limit, not the kernel's fault
            raise self._error(f"not modeled: {reason}", i + self.lo)

    def _owned(self, block: int, col0: int, ncols: int) -> bool:
        """Whether columns ``col0 .. col0 + ncols - 1`` are all in one allocation."""
        tmem = self._tmem()
        owned = tmem.owner[block, col0 : col0 + ncols] if col0 < TMEM_COLUMNS else np.zeros(0)
        return bool(owned.size == ncols and (owned >= 0).all() and (owned == owned[0]).all())

    def _mma_target(self, taddr: UIntArray, ncols: int, i: int, op: str = "tcgen05.mma") -> tuple[int, int]:
        """Thread ``i``'s D (or copy destination): its CTA and first column, checked to be
        allocated and free of other threads' operations in flight, and now in flight itself."""
        tmem = self._tmem()
        a = self._at(taddr, i)
        col0, block = a & 0xFFFF, self._block(i)
        if a >> LANE_SHIFT or not self._owned(block, col0, ncols):
            raise self._fail(f"D at {a:#010x} ({ncols} columns from lane 0) is not allocated", i)
        self._settle()
        flight = tmem.order.conflict(block, col0, ncols, thread=i + self.lo)
        if flight is not None:
            raise self._fail(flight.describe(), i)
        tmem.order.issue(Flight(block, col0, ncols, i + self.lo, self.dec.line, op=op))
        return block, col0

    def _smem_bytes(self, addrs: np.ndarray, size: int, i: int) -> np.ndarray:
        """The ``size``-byte containers at shared ``addrs`` (any shape), read by thread ``i``
        through the async proxy."""
        flat = addrs.reshape(-1)
        t = np.full(flat.size, i + self.lo)
        try:
            bufs, elems = self.memory.resolve("shared", flat, size, self.geo.block_index[t], t)
        except MemoryFault as f:
            raise self._fail(f"an operand at shared {f.address:#x}: {f.detail}", i) from None
        if self.proxies is not None:  # the tensor core reads through the async proxy
            self.proxies.async_read(bufs, elems, size, t[:1], self.dec)
        out: np.ndarray = self.memory.gather(bufs, elems, size).reshape(addrs.shape)
        return out

    def tmem_sync(self, op: str) -> None:
        # Loads and stores complete at issue, so waits and fences change no value; they are
        # counted (``Stats.tmem_syncs``) so that a check can require them. wait::ld delivers the
        # thread's loaded registers (tensormem_order).
        act = np.ones(self.n, bool) if self.full else self.mask
        self.stats.tmem_syncs[op] = self.stats.tmem_syncs.get(op, 0) + int(act.sum())
        if self.tensormem is None:
            return
        self._settle()
        if op == "wait::ld" and self.tensormem.pending:
            self.tensormem.order.waited(np.flatnonzero(act) + self.lo)

    def tmem_commit(self, addr: UIntArray, addr_bits: int) -> None:
        # Before the commit's arrival: the MMAs complete with the phase current now.
        tmem = self._tmem()
        self._settle()
        for i in (int(k) for k in np.flatnonzero(np.ones(self.n, bool) if self.full else self.mask)):
            key = self._barrier(addr, i)
            if key is not None:
                tmem.order.commit(i + self.lo, key, self._parity(key))

    def tmem_unwaited(self, name: str) -> None:
        """Refuse a read of register ``name`` by a thread whose tcgen05.ld of it is not waited for."""
        act = np.flatnonzero(np.ones(self.n, bool) if self.full else self.mask) + self.lo
        t = self._tmem().order.unwaited(name, act)
        if t is not None:
            why = "the tcgen05.ld that writes it may not have completed (its value is undefined)"
            raise self._fail(f"{name} is read before tcgen05.wait::ld: {why}", t - self.lo)

    def _barrier(self, addr: UIntArray, i: int) -> BarrierKey | None:
        """The (buffer, element) of thread ``i``'s mbarrier at shared ``addr``; None where the
        address is bad (the commit's arrival reports it in the instruction's own words)."""
        t = np.array([i + self.lo])
        a = np.array([self._at(addr, i)], np.uint64)
        try:
            bufs, elems = self.memory.resolve("shared", a, 8, self.geo.block_index[t], t)
        except MemoryFault:
            return None
        return int(bufs[0]), int(elems[0])

    def _parity(self, key: BarrierKey) -> int:
        """The parity of the current phase of the mbarrier at ``key``."""
        word = self.memory.gather(np.array([key[0]]), np.array([key[1]]), 8)
        return int(word[0]) >> PHASE[0] & 1

    def _settle(self) -> None:
        self._tmem().order.settle(self._parity)
