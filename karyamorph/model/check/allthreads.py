"""All threads of a launch run symbolically: concrete coordinates, symbolic inputs, a memory of
concrete byte addresses, threads of a block interleaved at barriers and warp instructions.

This is the driver of the equivalence check (:mod:`karyamorph.model.check.equiv`): the same
instruction semantics and :class:`~karyamorph.model.check.symexec.SymExec` as the two-thread encoding,
with a memory that keeps contents. Unwritten global bytes are the inputs, named by parameter
position so that two kernels read the same inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import z3

from karyamorph.isa import ast
from karyamorph.model.check.accesses import build_layout, dim3
from karyamorph.model.check.explore import Event, Explorer, Gen, WarpRequest
from karyamorph.model.check.symexec import (
    AtomicUpdate,
    Frame,
    Layout,
    SymExec,
    Term,
    Unsupported,
    WarpAnswer,
    as_const,
    bitvec,
    boolean,
)
from karyamorph.model.interp.program import Program
from karyamorph.model.ptx.data import atomic_update
from karyamorph.model.semantics.symbolic import BitVec, Bool, SymbolicDomain
from karyamorph.model.semantics.types import PtxType

Dim = int | tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Side:
    """One kernel's launch at one size: ``(grid, block, dynamic shared bytes)``, buffer sizes in
    bytes by pointer parameter name, scalar values by parameter name."""

    launch: tuple[Dim, Dim, int]
    buffers: dict[str, int]
    scalars: dict[str, int | float]


@dataclass(slots=True)
class Store:
    """Memory contents by concrete byte address; unwritten global bytes are the shared inputs."""

    tag: str
    layout: Layout
    positions: dict[int, int]  # global allocation window -> parameter position
    cells: dict[tuple[str, int, int], BitVec] = field(default_factory=dict)

    def initial(self, space: str, owner: int, addr: int) -> BitVec:
        """An unwritten byte: a byte of a free 32-bit word, so that reads of any width agree."""
        word, j = addr // 4 * 4, addr % 4
        for a in self.layout.of_space(space):  # a module variable starts with its initializer
            if a.init is not None and a.base <= addr < a.base + a.size:
                return z3.BitVecVal(a.init[addr - a.base], 8)
        if space == "global":
            p = self.positions.get(addr >> 32)
            name = f"in{p}[{word & 0xFFFFFFFF}]" if p is not None else f"wild[{word:#x}]"
        else:
            name = f"{self.tag}.{space}{owner}[{word}]"  # uninitialised: arbitrary
        return z3.Extract(8 * j + 7, 8 * j, z3.BitVec(name, 32))

    def read(self, space: str, owner: int, addr: int, nbytes: int) -> BitVec:
        kept = [self.cells.get((space, owner, addr + i)) for i in range(nbytes)]
        parts = [p if p is not None else self.initial(space, owner, addr + i) for i, p in enumerate(kept)]
        whole = _reassemble(parts)
        if whole is not None:
            return whole
        return z3.simplify(z3.Concat(*reversed(parts))) if nbytes > 1 else parts[0]

    def write(self, space: str, owner: int, addr: int, value: BitVec, nbytes: int, cond: Bool) -> None:
        value = z3.simplify(value)
        if not z3.is_true(cond):
            value = z3.simplify(z3.If(cond, value, self.read(space, owner, addr, nbytes)))
        for i in range(nbytes):
            self.cells[(space, owner, addr + i)] = z3.Extract(8 * i + 7, 8 * i, value)


def _reassemble(parts: list[BitVec]) -> BitVec | None:
    """The term whose consecutive bytes ``parts`` are (low byte first), or None. Keeping whole
    words lets the simplifier normalise sums, which byte slices would hide."""
    first = parts[0]
    if not z3.is_app_of(first, z3.Z3_OP_EXTRACT):
        return None
    src = first.arg(0)
    if not isinstance(src, z3.BitVecRef):  # (an extract's argument always is one)
        return None
    lo = first.params()[1]
    for i, p in enumerate(parts):
        if not z3.is_app_of(p, z3.Z3_OP_EXTRACT) or not p.arg(0).eq(src) or p.params()[1] != lo + 8 * i:
            return None
    hi = lo + 8 * len(parts) - 1
    return src if lo == 0 and hi == src.size() - 1 else z3.Extract(hi, lo, src)


@dataclass(slots=True)
class _ThreadMemory:
    """One thread's view of the store (its block and thread index for shared and local)."""

    cells: Store
    block: int
    thread: int
    pending: WarpAnswer | None = None

    def _where(self, x: SymExec, space: str, addr: BitVec) -> tuple[int, int]:
        a = as_const(addr)
        if not isinstance(a, int) or isinstance(a, bool):
            raise Unsupported(
                f"{x.where()}: data-dependent {space} address (equivalence needs "
                "addresses fixed by the launch)"
            )
        return (self.block if space == "shared" else self.thread if space == "local" else 0), a

    def load(self, x: SymExec, space: str, addr: BitVec, ty: PtxType) -> BitVec:
        owner, a = self._where(x, space, addr)
        return self.cells.read(space, owner, a, ty.bytes)

    def store(self, x: SymExec, space: str, addr: BitVec, value: BitVec, ty: PtxType) -> None:
        owner, a = self._where(x, space, addr)
        self.cells.write(space, owner, a, value, ty.bytes, x.cond)

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
    ) -> BitVec:
        owner, a = self._where(x, space, addr)
        old = self.cells.read(space, owner, a, ty.bytes)
        new = update(old, b, c) if update is not None else atomic_update(x.D, op, ty, old, b, c)
        self.cells.write(space, owner, a, new, ty.bytes, x.cond)
        return old

    def warp(self, x: SymExec, kind: str, args: tuple[Term, ...]) -> WarpAnswer:
        if self.pending is not None:
            r, self.pending = self.pending, None
            return r
        raise WarpRequest(kind, args)


def _lane_const(v: Term, what: str) -> int:
    c = as_const(v)
    if not isinstance(c, int) or isinstance(c, bool):
        raise Unsupported(f"{what} operand is not fixed by the launch")
    return c


def _resolve_warp(reqs: dict[int, WarpRequest], width: int) -> dict[int, WarpAnswer]:
    """Results of one warp instruction for the lanes that reached it (lane -> result)."""
    kind = next(iter(reqs.values())).kind
    if kind.startswith("shfl"):
        mode = kind.split(".")[1]
        out: dict[int, WarpAnswer] = {}
        for lane, req in reqs.items():
            a, b, c, _mask = req.args_
            bv, cv = _lane_const(b, "shfl.sync b") & 31, _lane_const(c, "shfl.sync c")
            cl, seg = cv & 31, (cv >> 8) & 31
            hi, lo = (lane & seg) | (cl & ~seg), lane & seg
            j = {"up": lane - bv, "down": lane + bv, "bfly": lane ^ bv, "idx": lo | (bv & ~seg)}[mode]
            ok = j >= hi if mode == "up" else j <= hi
            ok = ok and 0 <= j < width and j in reqs
            out[lane] = (bitvec(reqs[j].args_[0] if ok else a, kind), z3.BoolVal(ok))
        return out
    mode = kind.split(".")[1]
    ps = {lane: boolean(r.args_[0], kind) for lane, r in reqs.items()}
    v: WarpAnswer
    if mode == "ballot":
        v = z3.simplify(
            sum(
                (z3.If(p, z3.BitVecVal(1 << k, 32), z3.BitVecVal(0, 32)) for k, p in ps.items()),
                z3.BitVecVal(0, 32),
            )
        )
    elif mode == "all":
        v = z3.simplify(z3.And(*ps.values()))
    elif mode == "any":
        v = z3.simplify(z3.Or(*ps.values()))
    else:
        v = z3.simplify(z3.Or(z3.And(*ps.values()), z3.Not(z3.Or(*ps.values()))))
    return dict.fromkeys(reqs, v)


@dataclass(slots=True)
class Kernel:
    program: Program
    module: ast.Module
    warp_size: int


def run_launch(
    k: Kernel, tag: str, side: Side, scalars: dict[str, BitVec], unroll: int, floats: str = "uf"
) -> tuple[Store, list[int]]:
    """Run every thread of a launch; returns the final store and the lines of cut loops."""
    grid, block = dim3(side.launch[0], "grid"), dim3(side.launch[1], "block")
    layout, free = build_layout(k.program, k.module, side.buffers, {}, int(side.launch[2]))
    for name, (off, size, _v) in list(layout.params.items()):
        if name in scalars:
            layout.params[name] = (off, size, scalars[name])
        elif name in free:
            raise ValueError(f"{k.program.fn.name}: parameter {name!r} has no value in the instance")
    names = [p.name for p in k.program.fn.params]
    positions = {a.base >> 32: names.index(a.name) for a in layout.of_space("global") if a.name in names}
    store = Store(tag, layout, positions)
    cuts: list[int] = []
    domain = SymbolicDomain(floats)
    bt = block[0] * block[1] * block[2]
    for b in range(grid[0] * grid[1] * grid[2]):
        gens: dict[int, Gen] = {}
        mems: dict[int, _ThreadMemory] = {}
        explorers = []
        for t in range(bt):
            sp = _concrete_specials(grid, block, b, t, k.warp_size)
            mem = _ThreadMemory(store, b, b * bt + t)
            x = SymExec(k.program, layout, sp, mem, domain)
            ex = Explorer(x, unroll=unroll)
            regs: dict[str, Term] = {
                n: z3.BoolVal(False) if ty.kind == "pred" else z3.BitVecVal(0, ty.bits)
                for n, ty in k.program.registers.items()
            }
            gens[t] = ex.run(Frame(regs, z3.BoolVal(True), z3.BoolVal(False)))
            mems[t] = mem
            explorers.append(ex)
        _schedule(gens, mems, k.warp_size, bt)
        cuts += [c.line for ex in explorers for c in ex.cuts]
    return store, cuts


def _requests(waiting: dict[int, Event], lanes: list[int], w0: int) -> dict[int, WarpRequest] | None:
    """The warp requests of ``lanes`` (by lane, ``w0`` the warp's first thread) when every one of
    them waits at one, else None."""
    reqs: dict[int, WarpRequest] = {}
    for t in lanes:
        ev = waiting.get(t)
        if ev is None or ev[0] != "warp":
            return None
        reqs[t - w0] = ev[1]
    return reqs


def _line(ev: Event) -> int:
    return ev[2].line if ev[0] == "warp" else ev[1].line


def _schedule(gens: dict[int, Gen], mems: dict[int, _ThreadMemory], ws: int, bt: int) -> None:
    waiting: dict[int, Event] = {}
    send: dict[int, WarpAnswer | None] = dict.fromkeys(gens)
    live = set(gens)
    while live:
        for t in sorted(live - set(waiting)):
            answer = send[t]
            try:
                ev = gens[t].send(answer) if answer is not None else next(gens[t])
            except StopIteration:
                live.discard(t)
                continue
            send[t] = None
            waiting[t] = ev
        if not live:
            return
        progressed = False
        for w0 in range(0, bt, ws):
            lanes = [t for t in range(w0, min(bt, w0 + ws)) if t in live]
            reqs = _requests(waiting, lanes, w0) if lanes else None
            if reqs is not None:
                res = _resolve_warp(reqs, min(ws, bt - w0))
                for t in lanes:
                    send[t] = res[t - w0]
                    del waiting[t]
                progressed = True
        if not progressed and live and all(t in waiting and waiting[t][0] == "barrier" for t in live):
            for t in live:
                del waiting[t]
            progressed = True
        if not progressed and live <= set(waiting):
            lines = sorted({_line(waiting[t]) for t in live})
            raise Unsupported(f"threads wait at different barriers or warp instructions (lines {lines})")


def _concrete_specials(
    grid: tuple[int, int, int], block: tuple[int, int, int], b: int, t: int, ws: int
) -> dict[str, BitVec]:
    tid = (t % block[0], t // block[0] % block[1], t // (block[0] * block[1]))
    cta = (b % grid[0], b // grid[0] % grid[1], b // (grid[0] * grid[1]))
    nwarps = -(-(block[0] * block[1] * block[2]) // ws)
    sp = {"%laneid": t % ws, "%warpid": t // ws, "%nwarpid": nwarps}
    for i, axis in enumerate("xyz"):
        sp |= {
            f"%tid.{axis}": tid[i],
            f"%ctaid.{axis}": cta[i],
            f"%ntid.{axis}": block[i],
            f"%nctaid.{axis}": grid[i],
        }
    return {k: z3.BitVecVal(v, 32) for k, v in sp.items()}
