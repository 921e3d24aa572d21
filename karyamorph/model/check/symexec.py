"""The symbolic Exec: one thread's registers as z3 terms, its operands, and the hooks semantics call.

:class:`SymExec` implements :class:`~karyamorph.model.semantics.instruction.Exec` over the symbolic domain
for one thread whose coordinates may be symbolic. Control flow is predicated: the driver
(:mod:`karyamorph.model.check.explore`) sets the thread's active condition and the instruction's guard,
and a write under a symbolic guard keeps the old value where the guard is false. Memory and warp
hooks go to a :class:`MemoryModel`: the two-thread race/bounds encoding logs accesses and returns
free values (:mod:`karyamorph.model.check.accesses`), the equivalence driver keeps real contents
(:mod:`karyamorph.model.check.equiv`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import z3

from karyamorph.isa import ast
from karyamorph.kernel.tensormap import TensorMap
from karyamorph.model.check.clusterwindow import Remote, cluster_of, window
from karyamorph.model.check.intquery import IntTranslation, NotLinear
from karyamorph.model.check.syncstate import (
    CLUSTER_EPOCH,
    COMMITTED,
    COMPLETED,
    MBARRIER_PASSED,
    WARP_EPOCH,
    async_step,
)
from karyamorph.model.check.syncstate import waited as mbarrier_waited
from karyamorph.model.interp.memory import GLOBAL_STRIDE, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW
from karyamorph.model.interp.program import Program
from karyamorph.model.interp.simt import immediate_bits
from karyamorph.model.ptx.cluster import RANK_SHIFT, RANK_STRIDE
from karyamorph.model.semantics.decode import Decoded, DecodedOperands
from karyamorph.model.semantics.symbolic import BitVec, Bool, SymbolicDomain
from karyamorph.model.semantics.types import PtxType

# What a register holds: a bit-vector term of its width, or a Boolean term for a predicate.
Term = BitVec | Bool
# An atomic's ``update(old, b, c)`` (see Exec.atomic).
AtomicUpdate = Callable[[BitVec, BitVec, BitVec | None], BitVec]
# A warp hook's answer: (value, predicate) for ``shfl.*``, a value for ``vote.ballot``, a
# predicate for the other votes.
WarpAnswer = tuple[BitVec, Bool] | BitVec | Bool
_E = TypeVar("_E", bound=z3.ExprRef)

WINDOWS = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "param": PARAM_WINDOW}
# Shared and local variables each get a slot of their own, so an overrun of one never lands in
# another (the bounds check is per allocation, not per state space).
SLOT = 1 << 20


class Unsupported(Exception):
    """A construct the symbolic driver cannot encode; the message names the PTX line."""


@dataclass(frozen=True, slots=True)
class Allocation:
    """One buffer the checker knows: a pointer argument, a ``.shared`` or ``.local`` variable."""

    name: str
    space: str
    base: int
    size: int
    init: bytes | None = None  # a module variable's initial bytes (None: a buffer or scratch)


@dataclass(slots=True)
class Layout:
    """Where every allocation of a launch lives, and the value of every kernel parameter."""

    allocations: list[Allocation]
    symbols: dict[str, int]
    params: dict[str, tuple[int, int, BitVec]]  # name -> (offset in param space, bytes, value term)
    tensormaps: dict[str, TensorMap] = field(default_factory=dict)  # tensor-map parameters' fields

    def tensormap_at(self, offset: int) -> tuple[str, TensorMap] | None:
        """The tensor-map parameter whose object starts at param-space ``offset``, and its
        fields (None: none given there)."""
        for name, (start, _, _) in self.params.items():
            if start == offset and name in self.tensormaps:
                return name, self.tensormaps[name]
        return None

    def of_space(self, space: str) -> list[Allocation]:
        return [a for a in self.allocations if a.space == space]

    def find(self, space: str, address: int) -> tuple[Allocation | None, int]:
        """The allocation of ``space`` that holds ``address`` and the offset in it."""
        stride = GLOBAL_STRIDE if space == "global" else SLOT
        for a in self.of_space(space):
            if a.base <= address < a.base + stride:
                return a, address - a.base
        return None, address


def tensor_window(tm: TensorMap) -> tuple[tuple[int, ...], int]:
    """The extents (elements along each dimension) and bytes of the window the checker gives a
    tensor map's tensor: each dimension widened by the box on both sides, so that a box row that
    starts in reach of the tensor never runs into the next row. Only tensor copies reach the
    tensor, so its layout is the checker's to choose."""
    extents = tuple(d + 2 * b for d, b in zip(tm.dims, tm.box, strict=True))
    return extents, tm.elem_bytes * math.prod(extents)


def global_base(k: int) -> int:
    """Base address of the k-th global allocation (the interpreter's layout, 4 GiB apart)."""
    return (k + 1) * GLOBAL_STRIDE


def slot_base(k: int) -> int:
    return (k + 1) * SLOT


@dataclass(slots=True)
class Frame:
    """A thread's state on one predicated path: registers, active condition, exited condition."""

    regs: dict[str, Term]
    active: Bool
    exited: Bool
    pruned: int = 0  # bumped whenever paths leave ``active`` (exit, cut loop): merges must not revive them
    # Barriers passed so far: two threads of a block are in one barrier interval exactly when
    # they have passed equally many (barriers are aligned; the barrier property checks that).
    epoch: BitVec = field(default_factory=lambda: z3.BitVecVal(0, 64))

    def fork(self, active: Bool) -> Frame:
        return Frame(dict(self.regs), active, self.exited, self.pruned, self.epoch)


class MemoryModel(Protocol):
    """What the memory and warp hooks of :class:`SymExec` delegate to."""

    def load(self, x: SymExec, space: str, addr: BitVec, ty: PtxType) -> BitVec: ...
    def store(self, x: SymExec, space: str, addr: BitVec, value: BitVec, ty: PtxType) -> None: ...
    def atomic(
        self,
        x: SymExec,
        space: str,
        op: str,
        addr: BitVec,
        ty: PtxType,
        update: AtomicUpdate | None,
        b: BitVec,
        c: BitVec | None,
    ) -> BitVec: ...

    def warp(self, x: SymExec, kind: str, args: tuple[Term, ...]) -> WarpAnswer:
        """The warp hook ``kind`` (``shfl.idx``, ``vote.ballot`` ...) with the Exec hook's operands."""
        ...


def bitvec(t: Term, what: str) -> BitVec:
    """``t``, the term of a register of a value type (a bit-vector); ``what`` names it."""
    if not isinstance(t, z3.BitVecRef):
        raise Unsupported(f"{what}: a predicate used as a value")
    return t


def boolean(t: Term, what: str) -> Bool:
    """``t``, the term of a predicate register; ``what`` names it."""
    if not isinstance(t, z3.BoolRef):
        raise Unsupported(f"{what}: a value used as a predicate")
    return t


def provenance(addr: BitVec, limits: Mapping[str, int] | None = None) -> int | None:
    """The global allocation window (``address >> 32``) a pointer term is based on, read from its
    constant addend (the parameter's base), or from its interval bounds when the simplifier has
    folded the base into the high bits (``Concat(base >> 10, x, 0)`` for ``base + x * 4``); None
    when the term has no single base.

    ``limits``: exclusive upper bounds of named variables (the thread coordinates, ``ctaid.x@A``:
    the launch's grid and block). Without them a coordinate folded into the high bits may carry
    the address into the next windows, and the term has no single base."""
    t = z3.simplify(addr)
    if z3.is_bv_value(t):
        return int(t.as_long()) >> 32 or None
    if t.decl().kind() == z3.Z3_OP_BADD:
        const = sum(int(c.as_long()) for c in t.children() if z3.is_bv_value(c))
        return (const % (1 << 64)) >> 32 or None
    try:
        _, lo, hi = IntTranslation(dict(limits or {})).value(t)
    except NotLinear:
        return None
    return lo >> 32 if lo >> 32 == hi >> 32 else None


def simple(term: _E) -> _E:
    """``term`` simplified (constants fold, so that concrete control flow is recognised)."""
    return z3.simplify(term)


def as_const(term: z3.ExprRef) -> int | bool | None:
    """The value of a term that simplifies to a constant, else None."""
    t = z3.simplify(term)
    if z3.is_bv_value(t):
        return int(t.as_long())
    if z3.is_true(t):
        return True
    if z3.is_false(t):
        return False
    return None


@dataclass(slots=True)
class SymExec(DecodedOperands):
    """The :class:`~karyamorph.model.semantics.instruction.Exec` of one symbolic thread.

    ``specials`` maps special registers (``%tid.x``) to terms; ``memory`` receives the memory and
    warp hooks. The driver calls :meth:`set` before each instruction and reads :attr:`ctl` after.
    """

    program: Program
    layout: Layout
    specials: dict[str, BitVec]
    memory: MemoryModel
    D: SymbolicDomain = field(default_factory=SymbolicDomain)
    dec: Decoded = field(default=None)  # type: ignore[assignment]
    frame: Frame = field(default=None)  # type: ignore[assignment]
    guard: Bool | None = None
    cond: Bool = field(default=None)  # type: ignore[assignment]
    ctl: tuple[str, ...] | None = None
    copying: bool = False  # inside a cp.async: its accesses are asynchronous (see syncstate)
    remote: Remote | None = None  # the CTA the access being logged reaches (.shared::cluster)

    def set(self, dec: Decoded, frame: Frame, guard: Bool | None) -> None:
        self.dec, self.frame, self.guard, self.ctl = dec, frame, guard, None
        self.cond = frame.active if guard is None else z3.simplify(z3.And(frame.active, guard))

    def where(self) -> str:
        return f"line {self.dec.line}: {self.dec.source.full_opcode}"

    def operand_error(self, message: str) -> Exception:
        return Unsupported(f"{self.where()}: {message}")

    # --- registers ------------------------------------------------------------------------------
    def _reg_type(self, name: str) -> PtxType:
        t = self.program.registers.get(name)
        if t is None:
            raise Unsupported(f"{self.where()}: register {name} is not declared")
        return t

    def read(self, slot: str, ty: PtxType, elem: int = 0) -> BitVec:
        op = self._operand(slot, elem)
        bits = ty.bits
        if isinstance(op, ast.Register):
            if op.name in self.specials:
                v, have = self.specials[op.name], 32
            else:
                t = self._reg_type(op.name)
                if t.kind == "pred":
                    raise Unsupported(f"{self.where()}: predicate {op.name} used as a {ty} value")
                v, have = self.value_register(op.name), t.bits
            if have == bits:
                return v
            if have > bits:
                return z3.Extract(bits - 1, 0, v)
            return z3.SignExt(bits - have, v) if ty.signed else z3.ZeroExt(bits - have, v)
        if isinstance(op, ast.Immediate):
            return z3.BitVecVal(immediate_bits(op.text, ty), bits)
        if isinstance(op, ast.Symbol):
            return z3.BitVecVal(self.symbol_address(op.name, None) % (1 << bits), bits)
        raise Unsupported(f"{self.where()}: operand {slot} ({op}) cannot be read as a value")

    def symbol_address(self, name: str, space: str | None) -> int:
        if name in self.layout.symbols:
            return self.layout.symbols[name]
        if name in self.layout.params:
            return self.layout.params[name][0]
        raise Unsupported(f"{self.where()}: symbol {name!r} is not a variable, parameter or function")

    def value_register(self, name: str) -> BitVec:
        """The term of a register of a value type (a bit-vector of its width)."""
        return bitvec(self.frame.regs[name], f"{self.where()}: register {name}")

    def pred_register(self, name: str) -> Bool:
        """The term of a predicate register."""
        return boolean(self.frame.regs[name], f"{self.where()}: register {name}")

    def read_pred(self, slot: str) -> Bool:
        op = self.dec.operands[slot]
        neg = isinstance(op, ast.Negated)
        if isinstance(op, ast.Negated):
            op = op.operand
        if isinstance(op, ast.Immediate):
            v = z3.BoolVal(bool(int(op.value)))
        elif isinstance(op, ast.Register) and op.name in self.frame.regs:
            v = self.pred_register(op.name)
        else:
            raise Unsupported(f"{self.where()}: operand {slot} must be a predicate register")
        return z3.Not(v) if neg else v

    def _assign(self, name: str, value: Term) -> None:
        if self.guard is not None:
            value = z3.If(self.guard, value, self.frame.regs[name])
        # Folding constants as they arise keeps loop counters concrete and terms small.
        self.frame.regs[name] = z3.simplify(value)

    def write(self, slot: str, value: BitVec, ty: PtxType, elem: int = 0) -> None:
        op = self._operand(slot, elem)
        if isinstance(op, ast.Symbol) and op.name == "_":
            return
        if not isinstance(op, ast.Register) or op.name not in self.frame.regs:
            raise Unsupported(f"{self.where()}: destination {slot} ({op}) is not a declared register")
        have = self._reg_type(op.name).bits
        value = self.D._bv(value, ty.bits)
        if have > ty.bits:
            value = z3.SignExt(have - ty.bits, value) if ty.signed else z3.ZeroExt(have - ty.bits, value)
        elif have < ty.bits:
            value = z3.Extract(have - 1, 0, value)
        self._assign(op.name, value)

    def write_pred(self, slot: str, value: Bool) -> None:
        op = self.dec.operands[slot]
        if isinstance(op, ast.Symbol) and op.name == "_":
            return
        if not isinstance(op, ast.Register) or self._reg_type(op.name).kind != "pred":
            raise Unsupported(f"{self.where()}: destination {slot} ({op}) is not a predicate register")
        self._assign(op.name, value)

    def havoc(self, slot: str, fresh: Callable[[int], Term]) -> None:
        """Give every register of ``slot`` a value of ``fresh(bits)`` (kept where the guard is false)."""
        for j in range(self.count(slot)):
            op = self._operand(slot, j)
            if isinstance(op, ast.Symbol) and op.name == "_":
                continue
            if not isinstance(op, ast.Register) or op.name not in self.frame.regs:
                raise Unsupported(f"{self.where()}: destination {slot} ({op}) is not a declared register")
            t = self._reg_type(op.name)
            self._assign(op.name, fresh(t.bits))

    # --- memory -----------------------------------------------------------------------------------
    def address(self, slot: str) -> tuple[BitVec, int]:
        op = self.dec.operands[slot]
        if not isinstance(op, ast.Address):
            raise Unsupported(f"{self.where()}: operand {slot} is not an address")
        base = op.base
        if isinstance(base, ast.Register):
            t = self._reg_type(base.name)
            v = self.value_register(base.name)
            return (v + op.offset if op.offset else v), t.bits
        if isinstance(base, ast.Symbol):
            return z3.BitVecVal(self.symbol_address(base.name, self.mod("space")) + op.offset, 64), 64
        start = int(base.value) if isinstance(base, ast.Immediate) else 0
        return z3.BitVecVal(start + op.offset, 64), 64

    def resolve(self, space: str, addr: BitVec, addr_bits: int) -> tuple[str, BitVec]:
        """(state space, 64-bit address inside it) of an access; generic addresses by window."""
        a = z3.ZeroExt(64 - addr_bits, addr) if addr_bits < 64 else addr
        if space != "generic":
            return space, a
        w = as_const(z3.LShR(a, 48))
        named = {1: "shared", 2: "local", 3: "param"}.get(w if isinstance(w, int) else 0)
        if named is None:
            return "global", a
        if named == "shared" and cluster_of(self.specials) is not None:
            # The generic window holds the cluster's shared window (mapa of a generic address).
            return "shared::cluster", a - WINDOWS[named]
        return named, a - WINDOWS[named]

    def _owned(self, sp: str, a: BitVec) -> tuple[str, BitVec]:
        """An access of the cluster's shared window as a plain shared one, with :attr:`remote`
        set to the CTA it reaches (:mod:`karyamorph.model.check.clusterwindow`); other spaces
        unchanged (and :attr:`remote` cleared)."""
        self.remote = None
        if sp != "shared::cluster":
            return sp, a
        got = window(self.specials, a)
        if got is None:
            raise Unsupported(
                f"{self.where()}: the cluster's shared window is followed by the two-thread trace only"
            )
        if any(al.base + al.size > RANK_STRIDE for al in self.layout.of_space("shared")):
            raise Unsupported(f"{self.where()}: shared variables past the cluster window's first rank")
        a, self.remote = got
        return "shared", a

    def _narrowed(self, when: Bool | None) -> Bool:
        """The active condition narrowed by a per-thread ``when`` (None: unchanged), or False."""
        if when is None:
            return self.cond
        c = as_const(when)
        if c is True:
            return self.cond
        return z3.BoolVal(False) if c is False else z3.simplify(z3.And(self.cond, when))

    def load(self, space: str, addr: BitVec, addr_bits: int, ty: PtxType, when: Bool | None = None) -> BitVec:
        sp, a = self._owned(*self.resolve(space, addr, addr_bits))
        if sp == "param":
            return self._param(a, ty)
        cond, outer = self._narrowed(when), self.cond
        if z3.is_false(cond):
            return z3.BitVecVal(0, ty.bits)
        self.cond = cond  # the memory model logs the access under the thread's condition
        try:
            v = self.memory.load(self, sp, a, ty)
        finally:
            self.cond = outer
        return v if when is None else z3.If(when, v, z3.BitVecVal(0, ty.bits))

    def _param(self, a: BitVec, ty: PtxType) -> BitVec:
        off = as_const(a)
        if not isinstance(off, int):
            raise Unsupported(f"{self.where()}: parameter address is not a constant")
        for _name, (start, size, value) in self.layout.params.items():
            if start <= off and off + ty.bytes <= start + size:
                lo = (off - start) * 8
                return z3.Extract(lo + ty.bits - 1, lo, value) if value.size() > ty.bits or lo else value
        raise Unsupported(f"{self.where()}: parameter offset {off} is outside every parameter")

    def store(
        self, space: str, addr: BitVec, addr_bits: int, value: BitVec, ty: PtxType, when: Bool | None = None
    ) -> None:
        sp, a = self._owned(*self.resolve(space, addr, addr_bits))
        if sp == "param":
            raise Unsupported(f"{self.where()}: stores to the parameter space are not modeled")
        cond, outer = self._narrowed(when), self.cond
        if z3.is_false(cond):
            return
        self.cond = cond
        try:
            self.memory.store(self, sp, a, self.D._bv(value, ty.bits), ty)
        finally:
            self.cond = outer

    def bulk_copy(
        self,
        dst_space: str,
        dst: BitVec,
        dst_bits: int,
        src_space: str,
        src: BitVec,
        src_bits: int,
        size: BitVec,
        grouped: bool,
        mbar: tuple[BitVec, int] | None,
    ) -> None:
        """A bulk copy (``cp.async.bulk``, :mod:`karyamorph.model.ptx.bulk_copy`): its source and
        destination logged as one read and one write of ``size`` bytes where it is issued. It
        lands when its mbarrier's phase completes, which the race encoding orders for one-phase
        mbarriers (:mod:`karyamorph.model.check.mbarrierphase`), or when its bulk async-group
        does, which it orders as it orders ``cp.async`` groups where the groups are counted; the
        race verdicts of a kernel with any other are unknown
        (:mod:`karyamorph.model.check.caveats`)."""
        n = as_const(z3.simplify(size))
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise Unsupported(f"{self.where()}: a bulk copy's size is not a positive constant")
        span = getattr(self.memory, "span", None)  # optional: memory models that log byte spans
        if span is None:
            raise Unsupported(f"{self.where()}: bulk copies are followed by the two-thread trace only")
        bit = self._mbarrier_bit(*mbar) if mbar is not None else None
        # A store's spans belong to the thread's next bulk async-group (its group counted)
        self.copying = grouped and self._bulk_groups_counted()
        try:
            self._bulk_spans(
                span, n, bit, ((src_space, src, src_bits, False), (dst_space, dst, dst_bits, True))
            )
        finally:
            self.copying = False

    def _bulk_spans(
        self,
        span: Callable[..., None],
        n: int,
        bit: int | None,
        sides: tuple[tuple[str, BitVec, int, bool], ...],
    ) -> None:
        for space, addr, bits, write in sides:
            if space == "shared::cluster":  # the cluster window: below the first rank, the CTA's own
                own = as_const(z3.LShR(addr, RANK_SHIFT))
                if own != 0:
                    raise Unsupported(f"{self.where()}: a bulk copy into another CTA's shared memory")
                space = "shared"
            sp, a = self.resolve(space, addr, bits)
            span(self, sp, a, n, write, mbarrier=bit)

    def tensor_copy(
        self,
        direction: str,
        smem: BitVec,
        smem_bits: int,
        tmap: BitVec,
        tmap_bits: int,
        coords: list[BitVec],
        mbar: tuple[BitVec, int] | None = None,
        mask: BitVec | None = None,
    ) -> BitVec:
        """A tensor copy through a tensor map (:mod:`karyamorph.model.ptx.tensor_copy`): the box's
        bytes in shared memory logged as one write (a load, landing on ``mbar``) or one read (a
        store, in a bulk async-group) of the span the box takes there, where it is issued. The
        global side is the map's tensor, which only tensor copies reach and which they clip to
        its bounds: a load's needs no check and is not logged; a store's box is logged row by
        row (:meth:`_box_rows`), in its bulk async-group too. Returns the box's bytes (what
        complete-tx counts)."""
        if mask is not None:
            raise Unsupported(f"{self.where()}: a multicast tensor copy is followed by the interpreter only")
        sp, at = self.resolve("generic", tmap, tmap_bits)
        offset = as_const(at)
        found = self.layout.tensormap_at(offset) if sp == "param" and isinstance(offset, int) else None
        if found is None:
            raise Unsupported(
                f"{self.where()}: the copy's tensor map is not a tensor-map parameter given to the check"
            )
        _, tm = found
        span = getattr(self.memory, "span", None)
        if span is None:
            raise Unsupported(f"{self.where()}: tensor copies are followed by the two-thread trace only")
        if as_const(z3.LShR(z3.ZeroExt(64 - smem_bits, smem) if smem_bits < 64 else smem, RANK_SHIFT)) != 0:
            raise Unsupported(f"{self.where()}: a tensor copy into another CTA's shared memory")
        bit = self._mbarrier_bit(*mbar) if mbar is not None else None
        _, a = self.resolve("shared", smem, smem_bits)
        if direction == "load":
            span(self, "shared", a, tm.shared_bytes, True, mbarrier=bit)
            return z3.BitVecVal(tm.box_bytes, 32)
        # A store joins the thread's next bulk async-group: its shared read, then its box's rows
        self.copying = self._bulk_groups_counted()
        try:
            span(self, "shared", a, tm.shared_bytes, False)
            self._box_rows(span, found[0], tm, coords)
        finally:
            self.copying = False
        return z3.BitVecVal(tm.box_bytes, 32)

    def _box_rows(self, span: Callable[..., None], name: str, tm: TensorMap, coords: list[BitVec]) -> None:
        """Log a tensor store's box as a write of each of its rows (innermost dimension) that lies
        in the tensor, at its place in the tensor's window (:func:`tensor_window`): rows of two
        boxes meet there exactly where the boxes do (less the columns past the tensor's edges,
        which a row keeps)."""
        base = next(al.base for al in self.layout.of_space("global") if al.name == name)
        extents, _ = tensor_window(tm)
        wide = [z3.SignExt(64 - c.size(), c) if c.size() < 64 else c for c in coords]
        zero = z3.BitVecVal(0, 64)
        inner = z3.And(wide[0] < tm.dims[0], wide[0] + tm.box[0] > zero)  # some column inside
        outer = self.cond
        rows = itertools.product(*[range(n) for n in tm.box_elements[1:]])
        try:
            for row in rows:
                where = [wide[d + 1] + i * tm.element_strides[d + 1] for d, i in enumerate(row)]
                inside = [z3.And(w >= zero, w < tm.dims[d + 1]) for d, w in enumerate(where)]
                self.cond = z3.simplify(z3.And(outer, inner, *inside))
                if z3.is_false(self.cond):
                    continue
                offset, scale = wide[0] + tm.box[0], 1
                for d, w in enumerate(where):
                    scale *= extents[d]
                    offset = offset + (w + tm.box[d + 1]) * scale
                span(
                    self,
                    "global",
                    z3.simplify(base + offset * tm.elem_bytes),
                    tm.box[0] * tm.elem_bytes,
                    True,
                )
        finally:
            self.cond = outer

    def _mbarrier_bit(self, addr: BitVec, bits: int) -> int | None:
        """The field of the ``MBARRIER_PASSED`` counter for the mbarrier at shared address ``addr``
        (None: the address is not a constant, or the memory model does not number mbarriers)."""
        number = getattr(self.memory, "mbarrier_bit", None)  # optional, as ``span`` is
        at = as_const(self.resolve("shared", addr, bits)[1])
        if number is None or not isinstance(at, int) or isinstance(at, bool):
            return None
        out: int | None = number(at)
        return out

    def mbarrier_waited(self, addr: BitVec, bits: int, waited: BitVec, done: Bool) -> Bool | None:
        """A ``test_wait``/``try_wait`` on the mbarrier at ``addr`` for the phase of parity
        ``waited``, true when ``done``: a frame that counts them (``MBARRIER_PASSED``) counts one
        more phase of the mbarrier seen where the wait was for the next one's parity
        (:func:`karyamorph.model.check.syncstate.waited`).

        ``done`` reads the mbarrier's word, state the two-thread encoding leaves free, so a
        proof holds for either result already. With a memory model that makes choices
        (``fresh``), the result is a choice of the thread instead: a witness picks when each wait
        returns true, which its replay on the interpreter then confirms or not (a wait passes
        only once its phase completed there), rather than hinging on that state."""
        regs = self.frame.regs
        fresh = getattr(self.memory, "fresh", None)  # optional: the two-thread log's
        kept = None
        if fresh is not None and MBARRIER_PASSED in regs:
            kept = done = fresh(f"wait{self.dec.line}", z3.BoolSort(), abstract=False)
        if MBARRIER_PASSED not in regs:
            return kept
        field = self._mbarrier_bit(addr, bits)
        if field is None:
            return kept
        passed = bitvec(regs[MBARRIER_PASSED], MBARRIER_PASSED)
        self._assign(MBARRIER_PASSED, z3.simplify(mbarrier_waited(passed, field, waited, done)))
        return kept

    def _bulk_groups_counted(self) -> bool:
        """Whether the frame's async-group counters count bulk async-groups: the two-thread
        encoding's frame, in a kernel without ``cp.async`` groups of its own (the two kinds of
        group are counted apart by the hardware, by one pair of counters here)."""
        return COMMITTED in self.frame.regs and not any(
            d.instr.name.startswith("cp.async") and not d.instr.name.startswith("cp.async.bulk")
            for d in self.program.decoded
        )

    def bulk_group(self, op: str, n: int = 0) -> None:
        """``cp.async.bulk.commit_group`` (``commit``), ``wait_group n`` (``wait``) and
        ``wait_group.read n`` (``wait.read``: the sources are read, the writes may still be in
        flight, so no group counts as complete): counted as ``cp.async`` groups are
        (:meth:`async_group`) where :meth:`_bulk_groups_counted`."""
        if op == "wait.read" or not self._bulk_groups_counted():
            return
        self.async_group(op, n)

    def copy_async(
        self, dst: BitVec, dst_bits: int, src: BitVec, src_bits: int, nbytes: int, src_nbytes: BitVec
    ) -> None:
        # Logged where it is issued (the read of global, the write of shared), marked as
        # asynchronous: the race encoding lets them land anywhere up to the wait that completes
        # their group (karyamorph.model.check.asynccopies).
        d, word = self.D, PtxType("b32", 32, "b")
        self.copying = True
        try:
            for w in range(nbytes // 4):
                some = d.lt(d.const(4 * w, 32), src_nbytes, 32, False)  # a byte of this word is read
                v = self.load("global", d.add(src, d.const(4 * w, src_bits), src_bits), src_bits, word, some)
                keep = d.const(0, 32)
                for b in range(4):  # bytes at or past src-size are zeros
                    inside = d.lt(d.const(4 * w + b, 32), src_nbytes, 32, False)
                    keep = d.or_(keep, d.ite(inside, d.const(0xFF << (8 * b), 32), d.const(0, 32), 32), 32)
                at = d.add(dst, d.const(4 * w, dst_bits), dst_bits)
                self.store("shared", at, dst_bits, d.and_(v, keep, 32), word)
        finally:
            self.copying = False

    def async_group(self, op: str, n: int = 0) -> None:
        # A frame with the async-group counters (the two-thread encoding's) counts the groups
        # committed and complete; other drivers have performed the copy where it was issued.
        regs = self.frame.regs
        if COMMITTED in regs:
            committed, completed = async_step(
                bitvec(regs[COMMITTED], COMMITTED), bitvec(regs[COMPLETED], COMPLETED), op, n
            )
            self._assign(COMMITTED, committed)
            self._assign(COMPLETED, completed)

    def atomic(
        self,
        space: str,
        op: str,
        addr: BitVec,
        addr_bits: int,
        ty: PtxType,
        update: AtomicUpdate | BitVec,
        b: BitVec | None = None,
        c: BitVec | None = None,
    ) -> BitVec:
        # The declared hook passes (update, b, c); older declarations passed (b, c) only.
        fn: AtomicUpdate | None
        if callable(update):
            fn = update
        else:
            fn, b, c = None, update, b
        if b is None:
            raise Unsupported(f"{self.where()}: atomic without an operand")
        sp, a = self._owned(*self.resolve(space, addr, addr_bits))
        return self.memory.atomic(self, sp, op, a, ty, fn, b, c)

    def cvta(self, space: str, to_space: bool, value: BitVec, bits: int) -> BitVec:
        w = WINDOWS.get(space)
        if w is None:
            return value
        delta = z3.BitVecVal(w % (1 << bits), bits)
        return value - delta if to_space else value + delta

    # --- warp and control -------------------------------------------------------------------------
    def lane(self) -> BitVec:
        return self.specials["%laneid"]

    def shuffle(self, mode: str, a: BitVec, b: BitVec, c: BitVec, mask: BitVec) -> tuple[BitVec, Bool]:
        got = self.memory.warp(self, f"shfl.{mode}", (a, b, c, mask))
        if not isinstance(got, tuple):
            raise Unsupported(f"{self.where()}: the memory model answered a shuffle with {got}")
        return got

    def vote(self, mode: str, p: Bool, mask: BitVec) -> BitVec | Bool:
        if self.dec.instr.name == "bar.warp.sync" and WARP_EPOCH in self.frame.regs:
            # bar.warp.sync's semantics check its lanes with a vote; a frame that counts warp
            # barriers (the two-thread encoding's) counts this one.
            self._assign(WARP_EPOCH, bitvec(self.frame.regs[WARP_EPOCH], WARP_EPOCH) + 1)
        got = self.memory.warp(self, f"vote.{mode}", (p, mask))
        if isinstance(got, tuple):
            raise Unsupported(f"{self.where()}: the memory model answered a vote with {got}")
        return got

    def branch(self, slot: str, uniform: bool) -> None:
        op = self.dec.operands[slot]
        if not isinstance(op, ast.Symbol):
            raise Unsupported(f"{self.where()}: branch target must be a label")
        self.ctl = ("branch", op.name)

    def exit(self) -> None:
        self.ctl = ("exit",)

    def trap(self) -> None:
        # The launch aborts: nothing after it happens, in this thread or any other. Ending only
        # this thread's path keeps every execution the hardware can have (and more), so what
        # is proved with it holds; a barrier waits only for threads that have not exited.
        self.ctl = ("exit",)

    def cluster_rank(self, rank: BitVec) -> None:
        """``mapa``'s rank operand: a memory model that checks ranks (the two-thread log's
        ``rank``) logs it, for the bounds check to hold it below the cluster's size."""
        log = getattr(self.memory, "rank", None)  # optional, as ``span`` is
        if log is not None:
            log(self, rank)

    def cluster_barrier(self, op: str) -> bool:
        """``barrier.cluster.arrive``/``wait``: a frame that counts cluster barriers (the
        two-thread encoding's) counts the wait; False, so that the wait is a CTA barrier too (the
        threads of the block meet there as well). The arrive is the wait's: the checker encodes
        only an arrive with its wait right after it (:mod:`karyamorph.model.check.clusters`)."""
        if op == "wait" and CLUSTER_EPOCH in self.frame.regs:
            self._assign(CLUSTER_EPOCH, bitvec(self.frame.regs[CLUSTER_EPOCH], CLUSTER_EPOCH) + 1)
        return False

    def barrier(self, barrier_id: BitVec, count: BitVec | None) -> None:
        if count is not None:
            raise Unsupported(f"{self.where()}: barriers with a thread count are not modeled")
        self.ctl = ("barrier",)
