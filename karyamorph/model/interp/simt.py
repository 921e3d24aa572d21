"""The concrete execution context: registers, operands and hooks for a group of threads.

:class:`GroupExec` implements :class:`~karyamorph.model.semantics.instruction.Exec` over the concrete
domain for the threads ``[lo, hi)`` of a launch (all of them, or one warp): operands are numpy
views of the register file, writes honour the active mask, memory hooks touch only active
threads, and warp hooks (shuffle, vote) work per warp with ``np.bincount``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from karyamorph.isa import ast
from karyamorph.model.interp.asynccopy import AsyncCopies, AsyncHooks
from karyamorph.model.interp.asyncproxy import HopperHooks, HopperState, WaitWatch
from karyamorph.model.interp.atomics import apply_atomics
from karyamorph.model.interp.clusters import ClusterHooks, ClusterState
from karyamorph.model.interp.errors import MemoryAccessError, ModelLimitError, TrapError
from karyamorph.model.interp.geometry import Geometry
from karyamorph.model.interp.memory import LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, Memory, MemoryFault
from karyamorph.model.interp.proxyorder import ProxyOrder, reads_async
from karyamorph.model.interp.tensorcopy import TensorCopyHooks
from karyamorph.model.interp.tensormem import TensorMemory
from karyamorph.model.interp.tensormem_scaled import TensorMemScaledHooks
from karyamorph.model.interp.traffic import SAMPLED_WARPS, TENSOR_CORE_FETCHES, Access, Traffic, count
from karyamorph.model.interp.warp import WarpHooks
from karyamorph.model.interp.warpgroup import WarpgroupHooks
from karyamorph.model.semantics.concrete import UINT, BoolArray, ConcreteDomain, UIntArray, float_bits
from karyamorph.model.semantics.decode import Decoded, DecodedOperands
from karyamorph.model.semantics.types import PtxType


class Symbols(Protocol):
    """What a group reads of its program (:class:`~karyamorph.model.interp.program.Program`):
    the bits of literals and the addresses of symbols."""

    def immediate_bits(self, text: str, ty: PtxType) -> int: ...
    def symbol_address(self, name: str, space: str | None) -> int: ...


# A statistic of :meth:`Stats.as_dict`: a count, or counts by key, nested to any depth.
Counts = Any  # Any: a recursive type would cost every reader of the statistics a narrowing

_WINDOWS = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "param": PARAM_WINDOW}
_NO_REGISTER = np.zeros(0, np.uint8)


@dataclass(slots=True)
class Stats:
    """Counters of one interpretation (thread-instructions per opcode, bytes per space, ...)."""

    thread_instructions: dict[str, int] = field(default_factory=dict)
    warp_instructions: int = 0
    divergent_branches: int = 0
    bytes_loaded: dict[str, int] = field(default_factory=dict)
    bytes_stored: dict[str, int] = field(default_factory=dict)
    # Bytes bulk and tensor copies (the TMA unit) moved, by "<source>.<destination>" space; they
    # are among bytes_loaded and bytes_stored too.
    bulk_bytes: dict[str, int] = field(default_factory=dict)
    barriers: int = 0
    atomics: int = 0
    proxy_fences: int = 0  # thread-executions of fence.proxy.async, for checks that require it
    tmem_syncs: dict[str, int] = field(default_factory=dict)  # tcgen05 waits and fences, by kind
    traffic: Traffic = field(default_factory=Traffic)

    @property
    def total_thread_instructions(self) -> int:
        return sum(self.thread_instructions.values())

    def as_dict(self) -> dict[str, Counts]:
        return {
            "thread_instructions": dict(sorted(self.thread_instructions.items())),
            "total_thread_instructions": self.total_thread_instructions,
            "warp_instructions": self.warp_instructions,
            "divergent_branches": self.divergent_branches,
            "bytes_loaded": dict(self.bytes_loaded),
            "bytes_stored": dict(self.bytes_stored),
            "bulk_bytes": dict(self.bulk_bytes),
            "barriers": self.barriers,
            "atomics": self.atomics,
            "proxy_fences": self.proxy_fences,
            "tmem_syncs": dict(self.tmem_syncs),
            **self.traffic.as_dict(),
        }


class GroupExec(
    WarpHooks,
    WarpgroupHooks,
    AsyncHooks,
    HopperHooks,
    TensorCopyHooks,
    ClusterHooks,
    TensorMemScaledHooks,
    DecodedOperands,
):
    """The :class:`~karyamorph.model.semantics.instruction.Exec` of the threads ``[lo, hi)``; the
    interpreter sets ``dec`` and the mask."""

    D = ConcreteDomain()
    geo: Geometry  # the hooks need only a LaunchShape of it
    stats: Stats  # the hooks need only LaunchCounters of it

    def __init__(
        self,
        program: Symbols,
        regs: dict[str, np.ndarray],
        memory: Memory,
        geometry: Geometry,
        stats: Stats,
        lo: int,
        hi: int,
        rng: np.random.Generator | None,
    ) -> None:
        self.program = program
        self.regs = regs
        self.memory = memory
        self.geo = geometry
        self.stats = stats
        self.lo, self.hi, self.n = lo, hi, hi - lo
        self.rng = rng
        self.dec: Decoded = None  # type: ignore[assignment]
        self.mask = np.ones(self.n, bool)
        self.full = True
        self.ctl: tuple[str, ...] | None = None
        # Set by the interpreter: a memory observer, and the barriers this group has passed.
        self.observe: Callable[[GroupExec, np.ndarray, np.ndarray, np.ndarray, int], None] | None = None
        self.accesses: list[Access] = []  # this instruction's global and shared accesses (traffic.py)
        self._sample: np.ndarray | None = None  # the threads of the warps traffic counts
        self.phase = 0
        self.async_copies: AsyncCopies | None = None  # the launch's cp.async copies in flight
        self.hopper: HopperState | None = None  # bulk copies, mbarrier objects
        self.cluster: ClusterState | None = None  # cluster barrier arrivals and waits
        self.tensormem: TensorMemory | None = None  # each CTA's TMEM (tcgen05)
        self.proxies: ProxyOrder | None = None  # generic writes the async proxy reads (fences)
        self.can_suspend = False  # a failed try_wait hands over to other groups
        self.waits: WaitWatch | None = None  # or, running alone, is compared with the last one
        self._views: dict[str, np.ndarray] = {}  # declared registers
        self._specials: dict[str, np.ndarray] = {}  # special registers (read only)
        # Operand constants by (kind, text, bits, type): the interpreter shares one per launch.
        self.consts: dict[tuple[str, str, int, str], np.ndarray] = {}
        r = np.arange(lo, hi) % geometry.block_threads
        self._all = np.arange(self.n)  # the active threads when all are active
        self._threads = np.arange(lo, hi)
        self._blocks = geometry.block_index[lo:hi]
        self.lane_ids = (r % geometry.warp_size).astype(np.int64)
        self._lane32 = self.lane_ids.astype(np.uint32)
        local_t = np.arange(self.n)
        self.warp_base = local_t - self.lane_ids
        self.warp_id = (local_t - self.lane_ids) // 1  # group-local id of each thread's warp: its base
        # A group may start inside a warp (one thread of it, in the randomized order).
        starts = np.flatnonzero((self.lane_ids == 0) | (local_t == 0))
        self.warp_starts = starts
        self.n_warps = len(starts)
        wl = np.diff(np.append(starts, self.n))
        self.warp_index = np.repeat(np.arange(self.n_warps), wl)
        self.warp_len = np.repeat(wl, wl)

    # --- setup by the interpreter -------------------------------------------------------------
    def set(self, dec: Decoded, mask: np.ndarray, full: bool) -> None:
        self.dec, self.mask, self.full, self.ctl = dec, mask, full, None

    def operand_error(self, message: str) -> Exception:
        return self._error(message)

    def _error(self, message: str, thread: int | None = None) -> ModelLimitError:
        # ptxas accepted the PTX before the model runs it, so an operand the model cannot
        # resolve or read is the model's limit, not the kernel's fault.
        where = f" ({self.geo.describe(thread)})" if thread is not None else ""
        return ModelLimitError(f"line {self.dec.line}: {self.dec.source.full_opcode}{where}: {message}")

    # --- registers ----------------------------------------------------------------------------
    # Register views and constants are looked up once per group and kept: the register file is
    # written in place, never replaced, so a view stays valid for the whole launch.
    def register_view(self, name: str) -> np.ndarray:
        """The group's view of a declared register (raises for an undeclared one)."""
        v = self._views.get(name)
        if v is None:
            arr = self.regs.get(name)
            if arr is None:
                raise self._error(f"register {name} is not declared")
            v = self._views[name] = arr[self.lo : self.hi]
        return v

    def _const(
        self, key: tuple[str, str, int, str], bits: int, make: Callable[..., int], *args: str | PtxType | None
    ) -> UIntArray:
        c = self.consts.get(key)
        if c is None:
            c = self.D.const(make(*args), bits)
            c.flags.writeable = False  # shared by every read of the operand
            self.consts[key] = c
        return c

    def read(self, slot: str, ty: PtxType, elem: int = 0) -> UIntArray:
        op = self.dec.operands[slot]
        if isinstance(op, ast.Vector):
            op = op.elements[elem]
        bits = ty.bits
        if isinstance(op, ast.Register):
            tmem = self.tensormem  # a tcgen05.ld's registers are undefined until its wait::ld
            if tmem is not None and tmem.pending and op.name in tmem.pending:
                self.tmem_unwaited(op.name)
            v = self._views.get(op.name)
            if v is None:
                if op.name in self.regs:
                    v = self.register_view(op.name)
                else:
                    v = self._specials.get(op.name)
                    if v is None:
                        sp = self.geo.specials.get(op.name)
                        if sp is None:
                            raise self._error(f"register {op.name} is not declared")
                        v = self._specials[op.name] = sp[self.lo : self.hi]
            have = v.itemsize * 8
            if v.dtype == np.bool_:
                raise self._error(f"predicate {op.name} used as a {ty} value")
            if have == bits:
                return v
            if have > bits:
                return v.astype(UINT[bits])
            return self.D.sext(v, have, bits) if ty.signed else v.astype(UINT[bits])
        if isinstance(op, ast.Immediate):
            key = ("imm", op.text, bits, ty.name + ty.kind)  # all the literal's bits depend on
            return self._const(key, bits, self.program.immediate_bits, op.text, ty)
        if isinstance(op, ast.Symbol):
            return self._const(("sym", op.name, bits, ""), bits, self.program.symbol_address, op.name, None)
        raise self._error(f"operand {slot} ({op}) cannot be read as a value")

    def read_pred(self, slot: str) -> BoolArray:
        op = self.dec.operands[slot]
        neg = isinstance(op, ast.Negated)
        if neg:
            op = op.operand  # type: ignore[union-attr]
        if isinstance(op, ast.Register) and op.name in self.regs:
            v: BoolArray = self.register_view(op.name)
        elif isinstance(op, ast.Immediate):
            v = np.asarray(bool(int(op.value)))
        else:
            raise self._error(f"operand {slot} must be a predicate register")
        return ~v if neg else v

    def _store(self, view: np.ndarray, value: UIntArray | BoolArray) -> None:
        if self.full:
            view[...] = value
        else:
            np.copyto(view, value, where=self.mask)

    def _destination(self, slot: str, elem: int) -> np.ndarray | None:
        """The view of a destination register; None for the sink ``_``."""
        op = self.dec.operands[slot]
        if isinstance(op, ast.Vector):
            op = op.elements[elem]
        if isinstance(op, ast.Register) and op.name in self.regs:
            return self.register_view(op.name)
        if isinstance(op, ast.Symbol) and op.name == "_":
            return None
        raise self._error(f"destination {slot} ({op}) is not a declared register")

    def write(self, slot: str, value: UIntArray, ty: PtxType, elem: int = 0) -> None:
        view = self._destination(slot, elem)
        if view is None:
            return
        if view.dtype == np.bool_:
            op = self._operand(slot, elem)
            assert isinstance(op, ast.Register)
            raise self._error(f"cannot write a {ty} value to predicate {op.name}")
        have = view.itemsize * 8
        if have > ty.bits:
            value = self.D.sext(value, ty.bits, have) if ty.signed else np.asarray(value).astype(UINT[have])
        elif have < ty.bits:
            value = np.asarray(value).astype(UINT[have])
        self._store(view, value)

    def write_pred(self, slot: str, value: BoolArray) -> None:
        op = self.dec.operands[slot]
        if isinstance(op, ast.Symbol) and op.name == "_":
            return
        if not isinstance(op, ast.Register) or self.regs.get(op.name, _NO_REGISTER).dtype != np.bool_:
            raise self._error(f"destination {slot} ({op}) is not a predicate register")
        self._store(self.register_view(op.name), value)

    # --- memory -------------------------------------------------------------------------------
    def address(self, slot: str) -> tuple[UIntArray, int]:
        op = self.dec.operands[slot]
        assert isinstance(op, ast.Address)
        space = self.dec.mods.get("space")
        base = op.base
        if isinstance(base, ast.Register):
            v = self.read_register_raw(base.name)
            bits = v.dtype.itemsize * 8
            return (v + UINT[bits](op.offset % (1 << bits))) if op.offset else v, bits
        if isinstance(base, ast.Symbol):
            return np.asarray(self.program.symbol_address(base.name, space) + op.offset, np.uint64), 64
        if isinstance(base, ast.Immediate):
            return np.asarray(int(base.value) + op.offset, np.uint64), 64
        return np.asarray(op.offset, np.uint64), 64

    def read_register_raw(self, name: str) -> np.ndarray:
        return self.register_view(name)

    def _active(self) -> np.ndarray:
        return self._all if self.full else np.flatnonzero(self.mask)

    def _pick(self, value: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """The elements of a per-thread (or uniform) value for the accesses ``idx``."""
        if value.ndim == 0:
            return np.full(idx.size, value, value.dtype)
        if idx is self._all and value.shape == (self.n,):
            return value
        picked: np.ndarray = np.broadcast_to(value, (self.n,))[idx]
        return picked

    def _per_access(self, value: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """A uniform (0-d) value as it is, else its elements for the accesses ``idx``."""
        return value if value.ndim == 0 else self._pick(value, idx)

    def _resolve(
        self, space: str, addr: UIntArray, idx: np.ndarray, nbytes: int
    ) -> tuple[np.ndarray, np.ndarray]:
        a = self._pick(np.asarray(addr), idx).astype(np.uint64, copy=False)
        if idx is self._all:
            t, blocks = self._threads, self._blocks
        else:
            t = idx + self.lo
            blocks = self.geo.block_index[t]
        try:
            bufs, elems = self.memory.resolve(space, a, nbytes, blocks, t)
        except MemoryFault as f:
            thread = int(t[f.position])
            raise MemoryAccessError(
                f"line {self.dec.line}: {self.dec.source.full_opcode} ({self.geo.describe(thread)}): "
                f"{space} access of {nbytes} bytes at address {f.address:#x}: {f.detail}"
            ) from None
        if self.observe is not None:
            self.observe(self, t, bufs, elems, nbytes)
        return bufs, elems

    def _selected(self, when: BoolArray | None) -> np.ndarray:
        """Active threads, narrowed to those where ``when`` holds."""
        idx = self._active()
        if when is None:
            return idx
        narrowed: np.ndarray = idx[self._pick(np.asarray(when, bool), idx)]
        return narrowed

    def load(
        self, space: str, addr: UIntArray, addr_bits: int, ty: PtxType, when: BoolArray | None = None
    ) -> UIntArray:
        idx, nb = self._selected(when), ty.bytes
        bufs, elems = self._resolve(space, addr, idx, nb)
        if self.proxies is not None and reads_async(self.dec):
            self.proxies.async_read(bufs, elems, nb, idx + self.lo, self.dec)
        landings = self.hopper.landings if self.hopper is not None else None
        if landings is not None:
            landings.read(bufs, elems, nb, idx + self.lo, self.dec)
        vals = self.memory.gather(bufs, elems, nb)
        self._count(self.stats.bytes_loaded, space, idx.size * nb)
        self._note(space, "ld", addr, idx, nb)
        if idx.size == self.n:
            return vals
        out: np.ndarray = np.zeros(self.n, UINT[ty.bits])
        out[idx] = vals
        return out

    def store(
        self,
        space: str,
        addr: UIntArray,
        addr_bits: int,
        value: UIntArray,
        ty: PtxType,
        when: BoolArray | None = None,
    ) -> None:
        idx = self._selected(when)
        if self.rng is not None:
            idx = self.rng.permutation(idx)
        nb = ty.bytes
        bufs, elems = self._resolve(space, addr, idx, nb)
        vals = self._pick(np.asarray(value, UINT[ty.bits]), idx)
        self.memory.scatter(bufs, elems, vals, nb)
        if self.proxies is not None:
            self.proxies.generic_write(bufs, elems, nb, idx + self.lo, self.dec.line)
        if self.hopper is not None and self.hopper.landings is not None:
            self.hopper.landings.written(bufs, elems, nb)
        self._count(self.stats.bytes_stored, space, idx.size * nb)
        self._note(space, "st", addr, idx, nb)

    def atomic(
        self,
        space: str,
        op: str,
        addr: UIntArray,
        addr_bits: int,
        ty: PtxType,
        update: Callable[[UIntArray, UIntArray, UIntArray | None], UIntArray],
        b: UIntArray,
        c: UIntArray | None = None,
    ) -> UIntArray:
        idx = self._active()
        if self.rng is not None:
            idx = self.rng.permutation(idx)
        nb, dt = ty.bytes, UINT[ty.bits]
        bufs, elems = self._resolve(space, addr, idx, nb)
        bv = self._per_access(np.asarray(b, dt), idx)
        cv = None if c is None else self._per_access(np.asarray(c, dt), idx)
        additive = op == "add" and not ty.is_float
        seen = apply_atomics(self.memory, bufs, elems, nb, update, bv, cv, additive)
        if self.proxies is not None:
            self.proxies.generic_write(bufs, elems, nb, idx + self.lo, self.dec.line)
        if self.hopper is not None and self.hopper.landings is not None:
            self.hopper.landings.written(bufs, elems, nb)
        if idx is self._all:
            old = seen
        else:
            old = np.zeros(self.n, dt)
            old[idx] = seen
        if self.dec.instr.opcode in ("atom", "red"):  # not an mbarrier's or a copy's transaction count
            self.stats.atomics += idx.size
        self._count(self.stats.bytes_loaded, space, idx.size * nb)
        self._count(self.stats.bytes_stored, space, idx.size * nb)
        return old

    def _note(self, space: str, kind: str, addr: UIntArray, idx: np.ndarray, nbytes: int,
              sources: UIntArray | None = None) -> None:  # fmt: skip
        if space not in ("global", "shared") or not idx.size:
            return
        scale = 1
        if self.n_warps > SAMPLED_WARPS:
            # A fixed, evenly spread sample of the group's warps stands for all of them.
            scale = -(-self.n_warps // SAMPLED_WARPS)
            if idx is self._all:  # the common case, sampled once per group
                if self._sample is None:
                    self._sample = np.flatnonzero(self.warp_index % scale == 0)
                idx = self._sample
            else:
                idx = idx[self.warp_index[idx] % scale == 0]
        a = self._pick(np.asarray(addr), idx)
        src = None if sources is None else self._pick(np.asarray(sources), idx)
        self.accesses.append(Access(space, kind, self.lo + self.warp_base[idx], a, nbytes, scale,
                                    self.lane_ids[idx], src))  # fmt: skip

    def flush_traffic(self) -> None:
        """Count the finished instruction's accesses as requests, sectors and wavefronts (a
        tensor-core MMA's operand reads from shared memory under kind ``mma``: the tensor core
        fetches them, not the load/store units)."""
        if self.dec.instr.opcode in TENSOR_CORE_FETCHES:
            self.accesses[:] = [dataclasses.replace(a, kind="mma") for a in self.accesses]
        count(self.stats.traffic, self.accesses)
        self.accesses.clear()

    @staticmethod
    def _count(table: dict[str, int], space: str, n: int) -> None:
        table[space] = table.get(space, 0) + n

    def cvta(self, space: str, to_space: bool, value: UIntArray, bits: int) -> UIntArray:
        w = _WINDOWS.get(space)
        if w is None:
            return value
        delta = self.D.const(w, bits)
        return self.D.sub(value, delta, bits) if to_space else self.D.add(value, delta, bits)

    # --- control ------------------------------------------------------------------------------
    def branch(self, slot: str, uniform: bool) -> None:
        op = self.dec.operands[slot]
        assert isinstance(op, ast.Symbol)
        self.ctl = ("branch", op.name)

    def exit(self) -> None:
        self.ctl = ("exit",)

    def trap(self) -> None:
        raise TrapError(f"line {self.dec.line}: {self.dec.source.full_opcode}: trap: the kernel aborts here")

    def barrier(self, barrier_id: UIntArray, count: UIntArray | None) -> None:
        self.ctl = ("barrier",)


def immediate_bits(text: str, ty: PtxType) -> int:
    """The bit pattern of a PTX literal for an operand of type ``ty``."""
    t = text.strip().lower()
    body = t.lstrip("-")
    if body.startswith(("0f", "0d")) and len(body) in (10, 18):
        v = int(body[2:], 16)
        if ty.is_float and ((ty.bits == 64) != (len(body) == 18)):
            # A 0f literal used as .f64 (or 0d as .f32) means the value, converted.
            import struct

            val = struct.unpack(">f" if len(body) == 10 else ">d", bytes.fromhex(body[2:]))[0]
            return float_bits(-val if t.startswith("-") else val, ty.name)
        return (-v if t.startswith("-") else v) & ((1 << ty.bits) - 1)
    value = ast.immediate_value(text)
    if isinstance(value, float) or ty.is_float:
        return float_bits(float(value), ty.name) if ty.is_float else int(value) & ((1 << ty.bits) - 1)
    return int(value) & ((1 << ty.bits) - 1)
