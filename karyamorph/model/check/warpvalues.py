"""Same-value stores of one warp: one symbolic lane runs the kernel with its lane number free,
the lanes of a warp are its instances, and z3 proves that lanes storing to one address at one
instruction store one value.

Triton's cross-warp reductions store a butterfly-reduced value from all 32 lanes of a warp to one
shared address with one unpredicated instruction: two writes of one value, harmless in effect. The
race check reports such pairs as benign only when this module proves the values equal (never
assumed), and counts them as races under ``strict``.

Every value a lane makes up on its own (a load, loop state the checker does not follow, an
atomic's result) is an uninterpreted function of the lane number, so lane ``j``'s value of any
register is the lane-``l`` term with ``l := j``: a shuffle from lane ``l ^ 16`` is a substitution,
not a second exploration. A read-only input is one function of its address for every lane. Float
arithmetic is uninterpreted; the one law used is commutativity: of IEEE addition and
multiplication (and of the product of a fused multiply-add), given to z3 as ground instances,
and of a (value, index) combine taken as one function of its two pairs where z3 proves it and
its premise holds (no NaN, indices apart: :mod:`karyamorph.model.check.warppairs`).
An instruction outside every loop is stored to once per lane, so the two stores compared are the
two that can race; one inside a loop qualifies when one run of the loop's body for a free
iteration, its state free per lane, covers every iteration and the barriers make the stores that
can race those of one iteration (:mod:`karyamorph.model.check.warploop`). Terms equal up to
commutativity are compared first without z3 (:mod:`karyamorph.model.check.warpclasses`); where
z3 cannot decide, inputs with one NaN are tried, which split lanes whose combine compares floats
(:mod:`karyamorph.model.check.warpwitness`).

Block mode (:meth:`WarpStores.same_value_in_block`) compares the threads of every warp of a
block at one store to shared memory, for values that come back from shared memory: a load that
reads back one earlier store instruction (:func:`karyamorph.model.check.memvalues.flows`) is
that store's term for the writer of its address, the writer's warp and lane put in, and each
thread's records are taken with its warp and lane constants.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar, overload

import networkx as nx
import z3

from karyamorph.isa import ast
from karyamorph.model.check.explore import Explorer
from karyamorph.model.check.inputranges import FiniteFloats
from karyamorph.model.check.intquery import OutOfTime
from karyamorph.model.check.loops import counted_loops
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
    provenance,
)
from karyamorph.model.check.terms import dag_size, uninterpreted
from karyamorph.model.check.warpclasses import MAX_WARPS, Item, apart_by_class, classes
from karyamorph.model.check.warploop import enclosing_loop, same_start
from karyamorph.model.check.warppairs import PREFIX, PairSelections, applications, operands, premises
from karyamorph.model.check.warpwitness import PATTERNS, NanDifference, nan_difference
from karyamorph.model.interp.program import Program
from karyamorph.model.semantics.decode import Decoded
from karyamorph.model.semantics.symbolic import BitVec, Bool
from karyamorph.model.semantics.types import PtxType

_E = TypeVar("_E", bound=z3.ExprRef)

Dim3 = tuple[int, int, int]
# Uninterpreted float operations whose first two operands commute: IEEE 754 addition and
# multiplication (PTX makes NaN results canonical, so the bits agree too), and the float min/max
# forms whose commutativity z3 proves for the model's own semantics (see _LaneExec).
COMMUTATIVE = ("add.", "mul.", "fma.", "min.", "max.")
TIMEOUT_MS = 10_000
# z3's resource budget per same-value query (its "rlimit", counted in solver steps, so the cut is
# the same on a loaded machine as on an idle one). The proofs of the Triton reductions in the
# corpus take at most about 0.5 million steps; past the budget the question is left undecided
# (the race verdict unknown, with the reason) instead of waiting for the wall-clock timeout.
RLIMIT = 2_000_000
# The same budget, told before the terms of every lane are built: one lane's guard, address and
# value as a shared graph. The Triton reductions proved here take at most about 3,200 nodes, and
# argmax's butterfly, its selects made pair functions (warppairs), about 13,600; the same
# butterfly with its float comparisons as bit-vector circuits takes about 16,500, and z3 does not
# decide it within 30 s. In block mode (:meth:`WarpStores.same_value_in_block`) one thread's
# records, its lane and warp constants, are measured: argmin's, the pairs of two warps read
# back from shared memory, take about 11,500.
MAX_NODES = 16_000
# What a proof that used the (value, index) pair functions' law says of it.
PAIRED = "a (value, index) combine commutes there: no NaN, and the indices it pairs differ"


@dataclass(frozen=True, slots=True)
class Flow:
    """A shared load that reads back what one store instruction wrote in an earlier interval
    (:func:`karyamorph.model.check.memvalues.flows`): for each address the load may read, a
    thread of the block that certainly stored there, as ``(address, its linear thread index in
    the block, element)``, the element being which of the store's accesses (a vector store's
    words, in order) wrote it."""

    store: tuple[int, str]  # (line, opcode) of the store instruction
    elements: int  # the store's accesses per thread
    writers: tuple[tuple[int, int, int], ...]


class _Reached(Exception):
    """The lane made its store at the target instruction (one outside every loop)."""


@dataclass(slots=True)
class _Lane:
    """The memory and warp hooks of the symbolic lane ``lane`` (a term) of a warp of ``width``."""

    lane: BitVec
    width: int
    exists: Callable[[BitVec], Bool]  # lane number -> whether that lane is a thread of the block
    target: Decoded  # the instruction whose stores are recorded
    readonly: dict[int, str]  # global window -> buffer name, for buffers no thread writes
    loop_line: int | None = None  # line of the latch of the loop around the target, if any
    iteration: BitVec | None = None  # that loop's free iteration, once the explorer makes it
    problem: str = ""  # why the records do not stand for one iteration of every lane
    counter: int = 0
    pairs: PairSelections = field(default_factory=PairSelections)  # (value, index) combines
    records: list[tuple[Bool, BitVec, BitVec]] = field(default_factory=list)  # (guard, address, value)
    # Block mode (every warp's lanes compared): the warp number (a term), the thread a free value
    # belongs to (warp and lane; else the lane), the shared loads that read back a store by
    # (line, opcode), that store's (guard, address, value) as the run makes it, and the lines of
    # the loads made their writers' values.
    warp_id: BitVec | None = None
    thread: BitVec | None = None
    flows: Mapping[tuple[int, str], Flow] = field(default_factory=dict)
    stored: dict[tuple[int, str], list[tuple[Bool, BitVec, BitVec]]] = field(default_factory=dict)
    read_back: set[int] = field(default_factory=set)

    @overload
    def fresh(self, name: str, sort: z3.BitVecSortRef, abstract: bool = True) -> BitVec: ...
    @overload
    def fresh(self, name: str, sort: z3.BoolSortRef, abstract: bool = True) -> Bool: ...
    def fresh(self, name: str, sort: z3.BitVecSortRef | z3.BoolSortRef, abstract: bool = True) -> Term:
        """A free value of ``sort`` per lane: an uninterpreted function of the lane number."""
        self.counter += 1
        f: z3.FuncDeclRef[Term] = z3.Function(f"{name}#{self.counter}", z3.BitVecSort(32), sort)
        out = f(self.lane if self.thread is None else self.thread)
        if not abstract and self.loop_line is not None and name == f"k{self.loop_line}":
            self.iteration = bitvec(out, name)  # the explorer's iteration of the target's loop
        return out

    def mark(self) -> int:
        return len(self.records)

    def truncate(self, n: int) -> None:
        del self.records[n:]

    def at(self, term: _E, j: BitVec) -> _E:
        """``term`` as lane ``j`` has it (folded when ``j`` is a constant)."""
        out = z3.substitute(term, (self.lane, j))
        return z3.simplify(out) if z3.is_bv_value(j) else out

    def load(self, x: SymExec, space: str, addr: BitVec, ty: PtxType) -> BitVec:
        window = provenance(addr) if space == "global" else None
        name = self.readonly.get(window) if window is not None else None
        if name is not None:
            # An input no thread writes: lanes reading one address read one value.
            f: z3.FuncDeclRef[BitVec] = z3.Function(
                f"{name}.u{ty.bits}", z3.BitVecSort(64), z3.BitVecSort(ty.bits)
            )
            return f(addr)
        flow = self.flows.get((x.dec.line, x.dec.source.full_opcode)) if space == "shared" else None
        if flow is not None:
            got = self._read_back(flow, addr, ty)
            if got is not None:
                self.read_back.add(x.dec.line)
                return got
        return self.fresh(f"ld{x.dec.line}", z3.BitVecSort(ty.bits))

    def _read_back(self, flow: Flow, addr: BitVec, ty: PtxType) -> BitVec | None:
        """What a shared load at ``addr`` reads in block mode: the value its writer stored, chosen
        by address from the flow's writers (each the store's term with the writer's warp and
        lane); None when the run's own record of the store does not give each writer's value."""
        made = self.stored.get(flow.store, [])
        if self.warp_id is None or len(made) != flow.elements:
            return None
        out = self.fresh(f"ld{flow.store[0]}.elsewhere", z3.BitVecSort(ty.bits))  # no writer's address
        for address, t, k in reversed(flow.writers):
            g, a, v = made[k]
            lane, warp = z3.BitVecVal(t % self.width, 32), z3.BitVecVal(t // self.width, 32)
            who = ((self.lane, lane), (self.warp_id, warp))
            at = z3.simplify(z3.substitute(a, *who))
            if v.size() != ty.bits or not z3.is_true(z3.simplify(z3.substitute(g, *who))):
                return None
            if not z3.is_bv_value(at) or at.as_long() != address:
                return None
            here = z3.BitVecVal(address, addr.size())
            out = z3.If(addr == here, z3.simplify(z3.substitute(v, *who)), out)
        return out

    def store(self, x: SymExec, space: str, addr: BitVec, value: BitVec, ty: PtxType) -> None:
        site = (x.dec.line, x.dec.source.full_opcode)
        if space == "shared" and any(f.store == site for f in self.flows.values()):
            self.stored.setdefault(site, []).append((x.cond, addr, value))
        if x.dec is self.target:
            if self.loop_line is not None and (
                self.iteration is None or not same_start(x.frame.epoch, self.iteration, self.lane)
            ):
                self.problem = (
                    "not reached in one run of the loop's body for a free iteration from one "
                    "barrier count for every lane"
                )
                raise _Reached
            self.records.append((x.cond, addr, value))
            if len(self.records) == x.count("b"):
                raise _Reached  # the lane's part is known: what follows cannot change it

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
        return self.fresh(f"atom{x.dec.line}", z3.BitVecSort(ty.bits))

    def warp(self, x: SymExec, kind: str, args: tuple[Term, ...]) -> WarpAnswer:
        me = self.lane
        if kind.startswith("shfl"):
            a, b, c = (bitvec(v, f"{x.where()}: {kind}") for v in args[:3])
            cv = as_const(c)
            if not isinstance(cv, int) or isinstance(cv, bool):
                raise Unsupported(f"{x.where()}: a shuffle's clamp operand is not a constant")
            # The source lane may be a term (ldmatrix's rows come from lanes its address picks):
            # lane j's value is this lane's term with the lane number j, whatever j is.
            bv = b & 31
            cl, seg = cv & 31, (cv >> 8) & 31
            hi, lo = (me & seg) | (cl & ~seg & 31), me & seg
            mode = kind.split(".")[1]
            j = {"up": me - bv, "down": me + bv, "bfly": me ^ bv, "idx": lo | (bv & ~seg & 31)}[mode]
            ok = j >= hi if mode == "up" else j <= hi  # signed: l - b may be negative
            ok = z3.And(ok, j >= 0, j < self.width, self.exists(j))
            return z3.If(ok, self.at(a, j), a), ok
        p = boolean(args[0], f"{x.where()}: {kind}")
        lanes = [self.at(p, z3.BitVecVal(i, 32)) for i in range(self.width)]
        live = [z3.And(q, self.exists(z3.BitVecVal(i, 32))) for i, q in enumerate(lanes)]
        mode = kind.split(".")[1]
        if mode == "ballot":
            bits = [z3.If(q, z3.BitVecVal(1 << i, 32), z3.BitVecVal(0, 32)) for i, q in enumerate(live)]
            return z3.simplify(sum(bits[1:], bits[0]))
        if mode == "all":
            return z3.And([z3.Or(q, z3.Not(self.exists(z3.BitVecVal(i, 32)))) for i, q in enumerate(lanes)])
        if mode == "any":
            return z3.Or(live)
        return z3.Or(z3.And(lanes), z3.Not(z3.Or(live)))


_COMMUTES: dict[str, bool] = {}  # instruction form -> its semantics proved commutative


def _operands(x: SymExec) -> tuple[str, ...]:
    """The source slots of a float min/max: ``a, b`` or, for the three-input form, ``a, b, c``."""
    return ("a", "b", "c") if len(x.dec.source.operands) == 4 else ("a", "b")


def _commutes(x: SymExec) -> bool:
    """Whether the current instruction is a float min/max (two or three inputs) whose semantics
    z3 proves commutative in its first two operands (run on fresh operands both ways round, the
    third one fixed; once per instruction form)."""
    src = x.dec.source
    if src.opcode not in ("min", "max") or not x.ty.is_float or len(src.operands) not in (3, 4):
        return False
    regs = [x.dec.operands.get(s) for s in _operands(x)]
    names = [r.name for r in regs if isinstance(r, ast.Register)]
    if len(names) != len(regs) or len(set(names)) != len(names):
        return False
    form = src.full_opcode + ("/3" if len(names) == 3 else "")
    if form not in _COMMUTES:
        bits = x.ty.bits
        p, q, r = z3.BitVec("p", bits), z3.BitVec("q", bits), z3.BitVec("r", bits)
        outs = [
            _rerun(x, {n: _fit(value, x, n) for n, value in zip(names, (u, v, r), strict=False)}, "d")
            for u, v in ((p, q), (q, p))
        ]
        s = z3.Solver()
        _COMMUTES[form] = s.check(outs[0] != outs[1]) == z3.unsat
    return _COMMUTES[form]


def _rerun(x: SymExec, regs: dict[str, BitVec], out: str) -> Term:
    """The current instruction's result in slot ``out``, run again with registers ``regs`` given
    other values (in a fork of the frame: the lane's own state is untouched)."""
    frame = x.frame.fork(z3.BoolVal(True))
    frame.regs.update(regs)
    probe = SymExec(x.program, x.layout, x.specials, x.memory)
    probe.set(x.dec, frame, None)
    x.dec.instr.semantics(probe)
    d = x.dec.operands[out]
    assert isinstance(d, ast.Register)
    return frame.regs[d.name]


def _fit(v: BitVec, x: SymExec, reg: str) -> BitVec:
    have = x.program.registers[reg].bits
    return v if have == v.size() else z3.ZeroExt(have - v.size(), v)


class _LaneExec(SymExec):
    """The lane's Exec: a float min/max whose semantics commutes is an uninterpreted function
    of its operands (z3 then needs only the law, not the comparison circuits of every lane), and
    the selects of a (value, index) combine are halves of one pair function
    (:mod:`karyamorph.model.check.warppairs`)."""

    __slots__ = ()

    def _pairs(self) -> PairSelections:
        assert isinstance(self.memory, _Lane)
        return self.memory.pairs

    def write(self, slot: str, value: BitVec, ty: PtxType, elem: int = 0) -> None:
        if slot == "d" and _commutes(self):
            slots = _operands(self)
            name = self.dec.source.full_opcode + ("/3" if len(slots) == 3 else "")
            f = self.D.function(name, (ty.bits,) * len(slots), ty.bits)
            value = f(*(self.read(s, ty) for s in slots))
        elif slot == "d" and self.dec.source.opcode == "selp" and self._pairs().enabled:
            half = self._pairs().select(self.read_pred("c"), self.read("a", ty), self.read("b", ty))
            value = value if half is None else half
        SymExec.write(self, slot, value, ty, elem)

    def write_pred(self, slot: str, value: Bool) -> None:
        SymExec.write_pred(self, slot, value)
        pairs, src, op = self._pairs(), self.dec.source, self.dec.operands[slot]
        if not pairs.enabled or self.guard is not None or not isinstance(op, ast.Register):
            return
        d = boolean(self.frame.regs[op.name], self.where())
        if src.opcode == "setp" and slot == "p" and self.mod("bool") is None:
            fresh = self._restated(operands(self.ty.bits, self.ty.is_float))
            if fresh is not None:
                pairs.compared(d, self.read("a", self.ty), self.read("b", self.ty), self.ty.is_float, fresh)
        elif src.opcode in ("and", "or") and slot == "d" and self.ty.kind == "pred":
            pairs.combined(d, self.read_pred("a"), self.read_pred("b"), src.opcode == "and")

    def _restated(self, fresh: tuple[BitVec, BitVec]) -> Bool | None:
        """The current compare's predicate with ``fresh`` as its two operands (None: they are not
        two registers of the compare's width)."""
        regs = [self.dec.operands.get(s) for s in "ab"]
        names = [r.name for r in regs if isinstance(r, ast.Register) and r.name not in self.specials]
        if len(names) != 2 or names[0] == names[1]:
            return None
        if any(self.program.registers[n].bits != self.ty.bits for n in names):
            return None
        return boolean(_rerun(self, dict(zip(names, fresh, strict=True)), "p"), self.where())


def _commutativity(terms: list[BitVec], laws: tuple[str, ...] = COMMUTATIVE) -> list[Bool]:
    """``f(a, b, ...) == f(b, a, ...)`` for every application in ``terms`` of a function whose name
    starts with one of ``laws``."""
    out, seen = [], set()
    for t in uninterpreted(z3.And([v == v for v in terms]), constants=False, applications=True):
        d = t.decl()
        if t.get_id() in seen or not d.name().startswith(laws):
            continue
        seen.add(t.get_id())
        a, b, *rest = t.children()
        if not a.eq(b):
            out.append(t == d(b, a, *rest))
    return out


@dataclass(slots=True)
class WarpStores:
    """Decides, per store instruction, whether the lanes of a warp storing to one address there
    store one value."""

    program: Program
    layout: Layout
    grid: Dim3
    block: Dim3
    warp_size: int
    readonly: dict[int, str]
    unroll: int = 8
    deadline: float | None = None  # time.perf_counter() value past which OutOfTime is raised
    # read-only float buffers the spec fills with finite values, with what it says of them
    finite: Mapping[str, FiniteFloats] = field(default_factory=dict)
    # shared loads that read back one store instruction's values (memvalues.flows)
    flows: Mapping[tuple[int, str], Flow] = field(default_factory=dict)
    # answers by (line, opcode): an unrolled loop's copies of a store are one instruction here
    _answers: dict[tuple[int, str], tuple[bool | None, str]] = field(default_factory=dict)
    # the inputs found to make two lanes store different values, by (line, opcode)
    examples: dict[tuple[int, str], NanDifference] = field(default_factory=dict)

    def _timeout_ms(self) -> int:
        if self.deadline is None:
            return TIMEOUT_MS
        left = int((self.deadline - time.perf_counter()) * 1000)
        if left <= 0:
            raise OutOfTime("while proving the lanes of a warp store one value")
        return min(TIMEOUT_MS, left)

    def _in_loop(self, pc: int) -> bool:
        cfg = self.program.cfg
        b = cfg.block_of[pc]
        return cfg.graph.has_edge(b, b) or any(
            b in c and len(c) > 1 for c in nx.strongly_connected_components(cfg.graph)
        )

    def _specials(self, lane: BitVec, warp: BitVec, block: list[BitVec]) -> tuple[dict[str, BitVec], Bool]:
        bx, by, bz = self.block
        n = bx * by * bz
        lin = warp * self.warp_size + lane
        tid = (
            lin if by * bz == 1 else z3.URem(lin, bx),
            z3.URem(z3.UDiv(lin, bx), by),
            z3.UDiv(lin, bx * by),
        )
        sp: dict[str, BitVec] = {}
        for i, axis in enumerate("xyz"):
            sp[f"%tid.{axis}"] = tid[i] if self.block[i] > 1 else z3.BitVecVal(0, 32)
            sp[f"%ntid.{axis}"] = z3.BitVecVal(self.block[i], 32)
            sp[f"%ctaid.{axis}"] = block[i]
            sp[f"%nctaid.{axis}"] = z3.BitVecVal(self.grid[i], 32)
        sp["%laneid"], sp["%warpid"] = lane, warp
        sp["%nwarpid"] = z3.BitVecVal(-(-n // self.warp_size), 32)
        return sp, z3.ULT(lin, n)

    def same_value(self, line: int, opcode: str) -> tuple[bool | None, str]:
        """Whether every two lanes of one warp that store to one address at the instruction at
        ``line`` store one value there: (True: proved, False: two lanes may store different
        values, None: not decided; how or why not)."""
        key = (line, opcode)
        if key not in self._answers:
            answer, paired = self._decide(line, opcode, pairs=True)
            if answer[0] is not True and paired:
                answer, _ = self._decide(line, opcode, pairs=False)  # the selects as they are
            self._answers[key] = answer
        return self._answers[key]

    def same_value_in_block(self, line: int, opcode: str) -> tuple[bool | None, str]:
        """Whether every two threads of one block that store to one address at the instruction
        at ``line`` store one value there, their loads of shared memory that read back one store
        instruction (:attr:`flows`) made the values their writers stored: (True: proved, None:
        not decided, or no such load; how, in a parenthesis's words, or why not). Every thread is
        taken one by one, so a block of at most ``MAX_WARPS`` warps.

        The writer of an address is one thread that certainly stored there. Any other stores the
        same value, or the race check refutes that store's own pair, so the proof stands
        beside the race check, not alone."""
        key = (line, f"{opcode}@block")
        if key not in self._answers:
            n = self.block[0] * self.block[1] * self.block[2]
            flows = self._flows()
            if not flows:
                self._answers[key] = (None, "no load of shared memory reads back one store")
            elif -(-n // self.warp_size) > MAX_WARPS:
                self._answers[key] = (None, f"a block of more than {MAX_WARPS} warps")
            else:
                answer, paired = self._decide(line, opcode, pairs=True, flows=flows)
                if answer[0] is not True and paired:
                    answer, _ = self._decide(line, opcode, pairs=False, flows=flows)
                self._answers[key] = answer
        return self._answers[key]

    def _flows(self) -> dict[tuple[int, str], Flow]:
        """The flows whose load and store are each the one instruction of their line, outside
        every loop (run once per thread)."""
        decoded = self.program.decoded
        out = {}
        for site, flow in self.flows.items():
            pcs = [
                [i for i, d in enumerate(decoded) if (d.line, d.source.full_opcode) == where]
                for where in (site, flow.store)
            ]
            if all(len(p) == 1 and not self._in_loop(p[0]) for p in pcs):
                out[site] = flow
        return out

    def _decide(
        self, line: int, opcode: str, pairs: bool, flows: Mapping[tuple[int, str], Flow] | None = None
    ) -> tuple[tuple[bool | None, str], bool]:
        """The answer of :meth:`same_value` (given ``flows``, the loads read back: of
        :meth:`same_value_in_block`), and whether a pair function stood for some selects (with
        ``pairs``; an answer short of a proof is then to be asked again without)."""
        decoded = self.program.decoded
        pcs = [i for i, d in enumerate(decoded) if d.line == line and d.source.full_opcode == opcode]
        if len(pcs) != 1:
            return (None, f"line {line} holds {len(pcs)} {opcode} instructions"), False
        loops = counted_loops(decoded, self.program.labels)
        around = None
        if self._in_loop(pcs[0]):
            around, why = enclosing_loop(self.program, pcs[0])
            if around is None:
                return (None, f"the store at line {line} is inside a loop ({why})"), False
            # Its state free per lane from iteration 1 on: every iteration's stores are covered.
            loops[around.latch] = around
        n = self.block[0] * self.block[1] * self.block[2]
        width = min(self.warp_size, n)
        lane, warp = z3.BitVec("lane@W", 32), z3.BitVec("warp@W", 32)
        coords = [
            z3.BitVec(f"ctaid.{a}@W", 32) if g > 1 else z3.BitVecVal(0, 32)
            for a, g in zip("xyz", self.grid, strict=True)
        ]
        sp, valid = self._specials(lane, warp, coords)
        if n % self.warp_size == 0:
            # Whole warps: every lane of the warp (warp < warps, as the proof states) is a thread,
            # said as a constant so that lanes' terms agree syntactically, not only under it.
            valid = z3.BoolVal(True)
            exists: Callable[[BitVec], Bool] = lambda j: z3.BoolVal(True)  # noqa: E731
        else:
            exists = lambda j: z3.ULT(warp * self.warp_size + j, n)  # noqa: E731
        mem = _Lane(lane, width, exists, decoded[pcs[0]], self.readonly)
        mem.pairs.enabled = pairs
        block = flows is not None
        if flows is not None:
            mem.warp_id, mem.thread, mem.flows = warp, warp * self.warp_size + lane, flows
        mem.loop_line = None if around is None else decoded[around.latch].line
        x = _LaneExec(self.program, self.layout, sp, mem)
        # Counted loops are always abstracted (their state free per lane): the values a warp
        # combines before its store need not be followed through every iteration. A matrix
        # product's result is free per lane too (a lane's part of it depends on every lane's
        # operands): its arithmetic is a large term that no lane comparison needs.
        ex = Explorer(
            x, unroll=self.unroll, loops=loops, opaque_products=True,
            fresh=mem.fresh, mark=mem.mark, truncate=mem.truncate, exact_trips=0, deadline=self.deadline,
        )  # fmt: skip
        regs: dict[str, Term] = {
            r: z3.BoolVal(False) if t.kind == "pred" else z3.BitVecVal(0, t.bits)
            for r, t in self.program.registers.items()
        }
        try:
            for _ in ex.run(Frame(regs, z3.BoolVal(True), z3.BoolVal(False))):
                pass  # barriers: the lanes' values do not depend on them
        except _Reached:
            pass
        except Unsupported as e:
            return (None, f"one warp's lanes cannot be run together: {e}"), mem.pairs.used
        if mem.problem:
            return (None, f"the store at line {line} is inside a loop, {mem.problem}"), mem.pairs.used
        if not mem.records:
            return (True, f"no lane stores at line {line}"), mem.pairs.used
        warps = -(-n // self.warp_size)
        if block:
            items = _every_thread(mem, valid, warps, self.warp_size, self.deadline)
            terms = [z3.And(g, a == a, v == v) for t, g, a, v in items if t == 0]  # thread 0's
            size = dag_size(z3.And(terms), MAX_NODES)
        else:
            size = dag_size(z3.And([z3.And(g, a == a, v == v) for g, a, v in mem.records]), MAX_NODES)
            items = [
                (
                    i,
                    mem.at(z3.And(g, valid), z3.BitVecVal(i, 32)),
                    mem.at(a, z3.BitVecVal(i, 32)),
                    mem.at(v, z3.BitVecVal(i, 32)),
                )
                for i in range(width)
                for g, a, v in mem.records
            ]
        if size > MAX_NODES:
            answer: tuple[bool | None, str] = (
                None,
                (
                    f"line {line}: one lane's guard, address and value take over {MAX_NODES:,} terms, "
                    f"past what the proof tries"
                ),
            )
        else:
            answer = _equal_where_same_address(
                items, warp, coords, self.grid, 1 if block else warps, line, self._timeout_ms(), self.finite
            )
        if block:
            if answer[0] is True:
                read = ", ".join(map(str, sorted(mem.read_back)))
                stored = ", ".join(sorted({str(f.store[0]) for f in mem.flows.values()}))
                how = f"reading back at line(s) {read} what line(s) {stored} stored"
                answer = (True, f"{how}; {PAIRED}" if PAIRED in answer[1] else how)
            return (answer[0] or None, answer[1]), mem.pairs.used
        if answer[0] is None and not mem.pairs.used:
            # Undecided: a float comparison's NaN case may be what keeps the lanes apart.
            fixed = [(t, z3.BitVecVal(0, 32)) for t in (warp, *coords) if not z3.is_bv_value(t)]
            nan_able = [b for b in self.readonly.values() if b not in self.finite]
            inputs = {f"{b}.u{w}": b for b in nan_able for w in PATTERNS}
            found = nan_difference(items, inputs, fixed)
            if found is not None:
                self.examples[(line, opcode)] = found
                return (False, f"line {line}: two lanes may store different values ({found.text})"), False
            if len(nan_able) < len(self.readonly):
                kept = ", ".join(sorted(set(self.readonly.values()) - set(nan_able)))
                why = f"{answer[1]}; no NaN tried in {kept}, whose values the spec keeps finite"
                return (None, why), False
        return answer, mem.pairs.used


def _every_thread(
    mem: _Lane, valid: Bool, warps: int, warp_size: int, deadline: float | None = None
) -> list[Item]:
    """The lane's records as every thread of the block has them (thread ``w * warp_size + i``:
    lane ``i`` of warp ``w``), simplified with both numbers constants (OutOfTime past
    ``deadline``, a ``time.perf_counter()`` value)."""
    assert mem.warp_id is not None
    out = []
    for w in range(warps):
        if deadline is not None and time.perf_counter() > deadline:
            raise OutOfTime("while taking the lanes of every warp of a block")
        for i in range(mem.width):
            who = ((mem.lane, z3.BitVecVal(i, 32)), (mem.warp_id, z3.BitVecVal(w, 32)))
            for g, a, v in mem.records:
                guard = boolean(z3.simplify(z3.substitute(z3.And(g, valid), *who)), "a store's guard")
                addr = bitvec(z3.simplify(z3.substitute(a, *who)), "a store's address")
                value = bitvec(z3.simplify(z3.substitute(v, *who)), "a stored value")
                out.append((w * warp_size + i, guard, addr, value))
    return out


def _equal_where_same_address(
    items: list[tuple[int, Bool, BitVec, BitVec]],
    warp: BitVec,
    block: list[BitVec],
    grid: Dim3,
    warps: int,
    line: int,
    timeout_ms: int,
    finite: Mapping[str, FiniteFloats],
) -> tuple[bool | None, str]:
    """Whether items ``(lane, guard, address, value)`` of distinct lanes with true guards and one
    address always have one value (None: z3 gave up, or the premise of a pair function's law is
    not shown)."""
    # Simplifying and solving the lane equalities first takes the proof from about 0.5 s to
    # 0.05 s on a Triton layernorm's variance reduction (z3's default solver search is slower).
    s = z3.Then("simplify", "solve-eqs", "smt").solver()
    s.set("timeout", timeout_ms)
    s.set("rlimit", RLIMIT)
    facts = [z3.ULT(warp, warps), *(z3.ULT(b, g) for b, g in zip(block, grid, strict=True) if g > 1)]
    laws: tuple[str, ...] = COMMUTATIVE
    paired = ""
    apps = applications([v for *_, v in items])
    if apps:
        if warps > MAX_WARPS or not premises(apps, facts, finite, warp, warps, RLIMIT):
            return None, f"line {line}: a (value, index) combine may meet a NaN or one index twice"
        laws = (*COMMUTATIVE, PREFIX)
        paired = f" ({PAIRED})"
    # Fastest first: the lanes' values are one term up to commutativity, or lanes whose terms
    # differ store to different addresses (a butterfly over part of a warp, one slot per group).
    cls = classes(items, laws)
    if len(set(cls)) == 1:
        return True, f"every lane stores one value at line {line}{paired}"
    if apart_by_class(items, cls, warp, warps, facts, RLIMIT):
        return True, f"lanes storing to one address at line {line} store one value{paired}"
    s.add(*facts)
    s.add(*_commutativity([v for _, _, _, v in items], laws))
    # Common case first: every lane's value is one term up to the laws above.
    first = items[0][3]
    common = s.check(z3.Or([v != first for _, _, _, v in items[1:]] or [z3.BoolVal(False)]))
    if common == z3.unsat:
        return True, f"every lane stores one value at line {line}{paired}"
    if common == z3.unknown:
        # The narrower question below is no easier for z3 than this one: do not wait twice.
        return None, f"line {line}: z3 gave up ({_why(s)})"
    i, j = z3.BitVec("i@W", 16), z3.BitVec("j@W", 16)

    def pick(sel: BitVec, column: list[_E]) -> _E:
        """The entry ``sel`` of a column of ``items``."""
        out = column[-1]
        for idx in range(len(column) - 2, -1, -1):
            out = z3.If(sel == idx, column[idx], out)
        return out

    lanes = [z3.BitVecVal(lane, 16) for lane, _, _, _ in items]
    guards, addrs, values = (
        [g for _, g, _, _ in items],
        [a for _, _, a, _ in items],
        [v for _, _, _, v in items],
    )
    r = s.check(
        z3.ULT(i, len(items)), z3.ULT(j, len(items)), pick(i, lanes) != pick(j, lanes),
        pick(i, guards), pick(j, guards), pick(i, addrs) == pick(j, addrs),
        pick(i, values) != pick(j, values),
    )  # fmt: skip
    if r == z3.unsat:
        return True, f"lanes storing to one address at line {line} store one value{paired}"
    if r == z3.sat:
        return False, f"line {line}: two lanes may store different values"
    return None, f"line {line}: z3 gave up ({_why(s)})"


def _why(s: z3.Solver) -> str:
    reason = s.reason_unknown()
    if "resource" in reason or "rlimit" in reason:
        return f"resource limit of {RLIMIT:,} steps"
    return reason
