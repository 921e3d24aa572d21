"""``wgmma`` in the two-thread encoding: the shared memory a warpgroup MMA reads, from its issue to
the ``wgmma.wait_group`` that retires it.

PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions": ``mma_async``
reads its A and B tiles through matrix descriptors asynchronously, some time between its issue
and the ``wgmma.wait_group N`` after which at most N newer committed groups are pending; a write
to those bytes in between, by any thread, is a race. The encoding logs a share of the tiles for
each thread where it is issued: elements :mod:`karyamorph.model.ptx.wgmma` loads for that thread,
at the addresses that module computes, so that a witness replays on the interpreter (whole
16-byte rows of a core matrix, or two adjacent elements of an MN-major row, spread over the
threads that load them). The shares cover both tiles, and every element is in the shares of at
least two threads, so a thread's write into its own share is still a pair of two distinct
threads. In every later barrier interval up to the one of the wait that retires it, the read is
logged again, as its whole tiles' byte ranges where these are constants. A read thus spans whole
barrier intervals from issue to retirement, which over-approximates its lifetime at both ends
(sound for races: two threads of a barrier interval are unordered anyway). D becomes a free
value per thread (its multiplicands come from the other lanes, which the encoding leaves free).

A descriptor holds an address in the CTA's shared window: the kernel must have one shared
variable (see :func:`in_window`). What is not encoded is refused (the property is
unknown, with the reason): a block that is not whole warpgroups, a ``wgmma`` instruction under a
path condition that depends on the thread or on values the encoding leaves free (one on free
scalar parameters is the same for every thread, so a warpgroup executes the instruction
together; a wait then retires a read on the paths it runs on), a read still pending where the
number of barriers since its issue is not a constant, or when the thread exits, and a ``wgmma``
inside a loop whose iterations the checker abstracts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Generic, Protocol, TypeVar

import numpy as np
import z3

from karyamorph.model.check.explore import Cut
from karyamorph.model.check.symexec import Layout as MemoryLayout
from karyamorph.model.check.symexec import SymExec, Unsupported, as_const
from karyamorph.model.check.terms import constant_names, unsatisfiable
from karyamorph.model.interp.program import Program
from karyamorph.model.ptx.wgmma import K, Layout, Operands, address, layout, operands, readable
from karyamorph.model.semantics.concrete import BoolArray, ConcreteDomain, UIntArray
from karyamorph.model.semantics.decode import Decoded
from karyamorph.model.semantics.symbolic import BitVec, Bool, SymbolicDomain
from karyamorph.model.semantics.types import TYPES

WARPGROUP_WARPS = 4
_B64 = TYPES["b64"]
_LOOP_LINE = re.compile(r"k(\d+)#")
# z3's time for "the paths a wait leaves a read pending on are none" (an unrolled loop's
# conditions); undecided, the read stays pending, and an unretired read makes the trace refused.
NEVER_TIMEOUT_MS = 2_000
WINDOW_BASE = 1024  # where the checker keeps a wgmma kernel's shared memory (see in_window)
A = TypeVar("A")
Constants = dict[int, tuple[BitVec, BitVec]]  # a term's id -> (the term, kept alive; its value)


class ReadLog(Protocol[A]):
    """Where the reads go: the two-thread log (:class:`~karyamorph.model.check.accesses.TwoThreadLog`)."""

    def read(self, x: SymExec, space: str, addr: BitVec, nbytes: int) -> A:
        """Log a read of ``nbytes`` at ``addr`` that yields no value, under ``x``'s condition."""
        ...

    def again(
        self, access: A, epoch: BitVec, guard: Bool, addr: BitVec | None = None, nbytes: int = 0
    ) -> None:
        """Log ``access`` once more, in the barrier interval ``epoch`` under ``guard`` (at
        ``addr``, ``nbytes`` wide, where given)."""
        ...

    def retire(self, access: A, guard: Bool) -> None:
        """Note that ``access`` (a read of :meth:`read`) is complete from here on, on the paths
        ``guard``."""
        ...

    def tile(self, reads: list[A], ranges: tuple[tuple[BitVec, int], ...]) -> None:
        """Note that ``reads`` are the pieces of one issue's tiles, every one inside one of the
        ranges ``(lo, bytes)`` (``lo`` a 64-bit term of the thread)."""
        ...


@dataclass(slots=True)
class _Issued(Generic[A]):
    """One ``mma_async``: its line, its reads as logged at issue, the epoch of the issue, the
    byte ranges of its whole tiles where their addresses are constants (None: not), and the
    paths on which it is still pending (its issue's condition, less the waits that retired it)."""

    line: int
    reads: list[A]
    epoch: BitVec
    hulls: list[tuple[int, int]] | None
    pending: Bool


@dataclass(slots=True)
class Warpgroups(Generic[A]):
    """The explorer's handler for ``wgmma``: logs the tiles' reads and tracks the groups pending.

    ``fresh(name, bits)``: a new abstract value of this thread. Call :meth:`finish` with the
    lines of the loops the exploration abstracted once it is done."""

    x: SymExec
    log: ReadLog[A]
    fresh: Callable[[str, int], BitVec]
    block_threads: int
    warp_size: int
    inputs: frozenset[str] = frozenset()  # free scalar parameters: one value for every thread
    uncommitted: list[_Issued[A]] = field(default_factory=list)
    groups: list[list[_Issued[A]]] = field(default_factory=list)  # committed, oldest first
    commits: list[Bool] = field(default_factory=list)  # the condition each group was committed under
    in_loops: dict[int, int] = field(default_factory=dict)  # loop line -> a wgmma line inside
    # The explorer's cuts (paths not followed: a spin loop past its unrolling), as they grow
    cuts: list[Cut] = field(default_factory=list)
    # (condition id, cuts seen) -> (the condition, kept alive; whether a warpgroup runs it together)
    _together: dict[tuple[int, int], tuple[Bool, bool]] = field(default_factory=dict)
    # (matrix, constant fields, the thread's terms' ids) -> (those terms, kept alive; the pieces
    # of its tile at the start's offset in the swizzle period)
    _pieces: dict[tuple[object, ...], tuple[list[BitVec], list[tuple[BitVec, int]]]] = field(
        default_factory=dict
    )
    _constants: Constants = field(default_factory=dict)  # descriptor fields found constant

    def __call__(self, dec: Decoded, loops: tuple[BitVec, ...]) -> bool:
        if dec.instr.opcode != "wgmma":
            return False
        op = dec.instr.fixed[0] if dec.instr.fixed else ""
        if loops:
            # The body of a loop the explorer abstracts (or probes, before it decides to run it
            # as it comes): a read in flight across its iterations is not encoded. Nothing is
            # kept; :meth:`finish` refuses the trace if the loop was abstracted after all.
            for k in loops:
                m = _LOOP_LINE.match(k.decl().name())
                self.in_loops.setdefault(int(m.group(1)) if m else -1, dec.line)
            if op == "mma_async":
                self._havoc_d(dec)
            return True
        self._aligned(dec)
        if op == "mma_async":
            self._issue(dec)
        elif op == "commit_group":
            self.groups.append(self.uncommitted)
            self.commits.append(z3.simplify(self.x.cond))
            self.uncommitted = []
        elif op == "wait_group":
            self._wait(dec, self.x.imm("n"))
        elif op != "fence":
            raise Unsupported(f"{self.x.where()}: not encoded by the two-thread checker")
        return True

    def finish(self, abstracted: list[int]) -> None:
        """Refuse the trace where a read is still pending at the end of the thread, or a wgmma
        lies in a loop the exploration abstracted (``abstracted``: those loops' lines)."""
        for loop in sorted(set(abstracted) & set(self.in_loops)):
            raise Unsupported(
                f"line {self.in_loops[loop]}: wgmma inside the loop at line {loop}, whose iterations "
                "the checker abstracts (reads in flight across iterations are not encoded)"
            )
        pending = [i.line for g in (*self.groups, self.uncommitted) for i in g]
        if pending:
            raise Unsupported(
                f"line(s) {', '.join(map(str, sorted(set(pending))))}: wgmma.mma_async not retired by a "
                "wgmma.wait_group before the thread exits"
            )

    # --- the instructions ---------------------------------------------------------------------
    def _aligned(self, dec: Decoded) -> None:
        """A ``.sync.aligned`` warpgroup instruction: whole warpgroups, one path condition."""
        x = self.x
        size = WARPGROUP_WARPS * self.warp_size
        if self.block_threads % size:
            raise Unsupported(
                f"{x.where()}: a block of {self.block_threads} threads holds an incomplete warpgroup"
            )
        cond = z3.simplify(x.cond)
        if not self._runs_together(cond):
            raise Unsupported(
                f"{x.where()}: wgmma under a path condition that depends on the thread or on values "
                "the checker leaves free (it encodes wgmma only where a warpgroup executes it together)"
            )

    def _runs_together(self, cond: Bool) -> bool:
        """Whether a warpgroup executes an instruction under ``cond`` together (asked once per
        condition while the cuts stay as they are: a loop's iteration asks it of each of its
        warpgroup instructions)."""
        key = (cond.get_id(), len(self.cuts))
        hit = self._together.get(key)
        if hit is None:
            ok = (
                z3.is_true(cond)
                or set(constant_names(cond)) <= self.inputs
                or self._followed(cond)
                or self._per_warpgroup(cond)
            )
            hit = self._together[key] = (cond, ok)
        return hit[1]

    def _per_warpgroup(self, cond: Bool) -> bool:
        """Whether ``cond`` is one value for all threads of a warpgroup on the paths the
        exploration follows (a warp-specialised kernel's role test, ``tid.x / 128 >= 1``, past
        spin loops each thread leaves at its own iteration): with every thread-private term
        renamed for a second thread of the same warpgroup, neither thread on a cut path, the two
        may not differ."""
        sp = self.x.specials
        followed = self._uncut()
        names: dict[str, z3.ExprRef] = {}
        for term in (cond, *followed):
            names.update(constant_names(term))
        own: list[tuple[z3.ExprRef, z3.ExprRef]] = [
            (v, z3.BitVec(f"{n}~", v.size()) if isinstance(v, z3.BitVecRef) else z3.Bool(f"{n}~"))
            for n, v in names.items()
            if n not in self.inputs
        ]
        if not own:
            return True
        renamed = z3.substitute(cond, *own)
        group = z3.UDiv(sp["%warpid"], WARPGROUP_WARPS)
        facts = [group == z3.substitute(group, *own), cond != renamed]
        facts += followed + [z3.substitute(f, *own) for f in followed]
        for axis in "xyz":  # both threads inside the block
            t, n = sp[f"%tid.{axis}"], sp[f"%ntid.{axis}"]
            facts += [z3.ULT(t, n), z3.ULT(z3.substitute(t, *own), n)]
        return _never(z3.And(*facts))

    def _uncut(self) -> list[Bool]:
        """The conditions of the paths the exploration follows: on none of its cuts."""
        return [z3.Not(c.cond) for c in self.cuts]

    def _followed(self, cond: Bool) -> bool:
        """Whether ``cond`` holds on every path the exploration follows: it is false only where a
        cut path (a spin loop still waiting past the unrolling, say) goes on. Every thread that
        gets here past such a loop then executes the instruction; the cut leaves the verdict
        proved up to k."""
        return z3.is_true(cond) or self._committed(cond, z3.BoolVal(True))

    def _committed(self, commit: Bool, cond: Bool) -> bool:
        """Whether every path the exploration follows to a wait under ``cond`` ran the commit
        under ``commit`` (the wait's cond past one more spin loop than the commit's, say): the
        groups such a wait counts are then the same on all of them."""
        return _never(z3.And(cond, z3.Not(commit), *self._uncut()))

    def _havoc_d(self, dec: Decoded) -> None:
        name = f"mma{dec.line}"
        self.x.havoc("d", lambda bits: self.fresh(name, bits))

    def _issue(self, dec: Decoded) -> None:
        x, d = self.x, self.x.D
        ops = operands(x)  # every kind's rows hold 32 bytes of K: the same pieces below
        n, from_registers, trans_a, trans_b = ops.n, ops.from_registers, ops.trans_a, ops.trans_b
        b = _known(layout(d, x.read("b", _B64)), self._constants)
        valid = readable(d, b, trans_b)
        a: Layout[BitVec, Bool] | None = None
        if not from_registers:
            a = _known(layout(d, x.read("a", _B64)), self._constants)
            valid = z3.And(valid, readable(d, a, trans_a))
        if not z3.is_true(z3.simplify(z3.Implies(x.cond, valid))) and not _never(
            z3.And(x.cond, z3.Not(valid))
        ):
            raise Unsupported(
                f"{x.where()}: a descriptor the model may not read (a base offset, or an MN-major "
                "matrix without swizzling), for some thread"
            )
        self._in_window()
        reads = [self.log.read(x, "shared", at, nbytes) for at, nbytes in self._places(ops, a, b)]
        tiles = [(b, trans_b, n)] + ([(a, trans_a, 64)] if a is not None else [])
        hulls = [_hull(m, mn_major, extent) for m, mn_major, extent in tiles]
        known = None if None in hulls else [(lo, hi - lo) for lo, hi in filter(None, hulls)]
        spans = [_span(m, mn_major, extent, self._constants) for m, mn_major, extent in tiles]
        if reads and None not in spans:
            self.log.tile(reads, tuple(s for s in spans if s is not None))
        self.uncommitted.append(_Issued(dec.line, reads, x.frame.epoch, known, z3.simplify(x.cond)))
        self._havoc_d(dec)

    def _places(
        self, ops: Operands, a: Layout[BitVec, Bool] | None, b: Layout[BitVec, Bool]
    ) -> list[tuple[BitVec, int]]:
        """The (64-bit shared address, bytes) pieces of the tiles this thread's share holds."""
        x = self.x
        lane = z3.ZeroExt(32, x.lane())
        warp = z3.ZeroExt(32, z3.URem(x.specials["%warpid"], WARPGROUP_WARPS))
        g, t = z3.LShR(lane, 2), lane & 3
        out: list[tuple[BitVec, int]] = []
        if a is not None:  # rows 16 w + g and 16 w + g + 8 of A, every k
            rows = (warp * 16 + g, warp * 16 + g + 8)
            out += self._matrix(
                a, (lane, warp), ("a", ops.trans_a), lambda m: _rows_of_a(x.D, m, rows, ops.trans_a)
            )
        out += self._matrix(
            b, (lane, warp), ("b", ops.trans_b, ops.n), lambda m: _columns_of_b(x.D, m, ops, t, warp, g)
        )
        return out

    def _matrix(
        self,
        m: Layout[BitVec, Bool],
        thread: tuple[BitVec, BitVec],
        role: tuple[object, ...],
        pieces: Callable[[Layout[BitVec, Bool]], list[tuple[BitVec, int]]],
    ) -> list[tuple[BitVec, int]]:
        """One matrix's pieces, ``pieces(m)`` as (32-bit address, bytes), as 64-bit addresses.

        Where the descriptor's fields other than its start are constants, and so is the start's
        offset in the swizzle's period, the pieces are built once at that offset (a pipelined
        loop's stages share them) and moved by the start's base: ``address(base + offset) =
        base + address(offset)`` with ``base`` a multiple of the period (see :func:`_span`). The
        sum stays below 2^32 (a start below 2^18, strides below 2^18 times at most 256 rows), so
        the 32-bit address the instruction truncates to is the same."""
        period = _SWIZZLE_PERIOD - 1
        offset = _constant(z3.simplify(m.start & period), self._constants)
        fixed = [as_const(f) for f in (offset, *_fields(m)[1:])]
        if not all(isinstance(f, int) and not isinstance(f, bool) for f in fixed):
            return [(z3.simplify(z3.ZeroExt(32, at)), n) for at, n in pieces(m)]
        key = (role, *fixed, *(v.get_id() for v in thread))
        hit = self._pieces.get(key)
        if hit is None:
            moved = pieces(replace(m, start=offset))
            hit = self._pieces[key] = ([*thread], [(z3.simplify(z3.ZeroExt(32, at)), n) for at, n in moved])
        base = z3.simplify(m.start & ~period)
        return [(z3.simplify(base + at), n) for at, n in hit[1]]

    def _in_window(self) -> None:
        """Refuse a layout whose shared memory :func:`in_window` could not place."""
        shared = self.x.layout.of_space("shared")
        if len(shared) != 1 or shared[0].base != WINDOW_BASE:
            raise Unsupported(
                f"{self.x.where()}: a descriptor addresses the shared window, and the kernel has "
                f"{len(shared)} shared variables, which the checker keeps apart"
            )

    def _wait(self, dec: Decoded, n: int) -> None:
        x = self.x
        if n < 0:
            raise x.operand_error(f"wgmma.wait_group needs a count of at least 0, got {n}")
        cond = z3.simplify(x.cond)
        if n and not all(z3.is_true(c) or c.eq(cond) or self._committed(c, cond) for c in self.commits):
            # Which groups are the newest n differs between paths that committed differently.
            raise Unsupported(f"{x.where()}: wgmma groups committed under other path conditions")
        keep = max(len(self.groups) - n, 0)
        retired = self.groups[:keep]
        self.groups, self.commits = self.groups[keep:], self.commits[keep:]
        still: list[list[_Issued[A]]] = []  # retired on some paths only: pending on the others
        for group in retired:
            left = []
            for issued in group:
                done = z3.simplify(z3.And(issued.pending, cond))
                issued.pending = z3.simplify(z3.And(issued.pending, z3.Not(cond)))
                if not self._followed(z3.Not(issued.pending)):
                    left.append(issued)
                if not _never(done):
                    self._in_flight(issued, done)
                    for r in issued.reads:
                        self.log.retire(r, done)
            if left:
                still.append(left)
        self.groups = still + self.groups
        self.commits = [z3.BoolVal(True)] * len(still) + self.commits

    def _in_flight(self, issued: _Issued[A], guard: Bool) -> None:
        """Log ``issued``'s reads again in every barrier interval after its issue up to the
        current one, where the wait retires it (on the paths ``guard``)."""
        passed = as_const(self.x.frame.epoch - issued.epoch)
        if not isinstance(passed, int) or isinstance(passed, bool) or passed >= 1 << 32:
            raise Unsupported(
                f"{self.x.where()}: the barriers passed since the wgmma.mma_async at line "
                f"{issued.line} are not a constant count"
            )
        for j in range(1, passed + 1):
            epoch = z3.simplify(issued.epoch + j)
            if issued.hulls is None:
                for r in issued.reads:
                    self.log.again(r, epoch, guard)
                continue
            # Past its issue, where no replay can show a race with it, a read stands for its
            # whole tiles (a few accesses, not a hundred per thread).
            for lo, nbytes in issued.hulls:
                self.log.again(issued.reads[0], epoch, guard, z3.BitVecVal(lo, 64), nbytes)


def in_window(program: Program, memory: MemoryLayout) -> MemoryLayout:
    """``memory`` with a ``wgmma`` kernel's one shared variable at :data:`WINDOW_BASE`.

    A descriptor holds bits 4-17 of an address in the CTA's shared window, below 2^18 bytes,
    where the interpreter (like the hardware) lays out every shared variable; the checker keeps
    each variable in a slot of its own, 2^20 bytes apart, whose base a kernel's
    ``(address >> 4) | bits`` would carry into the descriptor's other fields. The one variable
    (Triton's and CUTLASS's one dynamic buffer) goes to where it lies in the interpreter's
    window (offset 0), moved by 1024 bytes, which keeps the swizzle patterns' 1024-byte phase;
    with several, which one an address lies in is lost (refused where a wgmma runs)."""
    shared = memory.of_space("shared")
    if len(shared) != 1 or not any(d.instr.opcode == "wgmma" for d in program.decoded):
        return memory
    old = shared[0]
    new = replace(old, base=WINDOW_BASE)
    allocations = [new if a is old else a for a in memory.allocations]
    moved = {k for k, v in memory.symbols.items() if v == old.base and k not in program.functions}
    symbols = {k: WINDOW_BASE if k in moved else v for k, v in memory.symbols.items()}
    return MemoryLayout(allocations, symbols, memory.params)


def _fields(m: Layout[BitVec, Bool]) -> tuple[BitVec, ...]:
    return (m.start, m.lbo, m.sbo, m.base_offset, m.mode)


def _known(m: Layout[BitVec, Bool], constants: Constants) -> Layout[BitVec, Bool]:
    """``m`` with its fields simplified, and its swizzle mode marked where it is a constant (a
    kernel's descriptors mostly are: the addresses then cost a few terms, not a case split)."""
    fields = [z3.simplify(t) for t in _fields(m)]
    fields[1:] = [_constant(t, constants) for t in fields[1:]]
    value = as_const(fields[-1])
    known = value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 4 else None
    start, lbo, sbo, base_offset, mode = fields
    return Layout(start, lbo, sbo, base_offset, mode, known_mode=known)


def _constant(t: BitVec, constants: Constants) -> BitVec:
    """``t`` as the constant it is for every value of its variables (a descriptor's stride
    fields, read past ``desc + 2`` whose carry z3's simplifier cannot rule out), else ``t``."""
    if z3.is_bv_value(t):
        return t
    hit = constants.get(t.get_id())
    if hit is not None:
        return hit[1]
    zeros = [(v, z3.BitVecVal(0, v.size())) for v in constant_names(t).values() if z3.is_bv(v)]
    guess = z3.simplify(z3.substitute(t, *zeros)) if zeros else t
    out = guess if z3.is_bv_value(guess) and _never(t != guess) else t
    constants[t.get_id()] = (t, out)
    return out


def _never(cond: Bool) -> bool:
    """Whether ``cond`` (over free scalar parameters) is unsatisfiable; False when not decided."""
    return unsatisfiable(cond, NEVER_TIMEOUT_MS)


def _row(
    d: SymbolicDomain, m: Layout[BitVec, Bool], mn: BitVec, mn_major: bool, elements: int
) -> list[tuple[BitVec, int]]:
    """The pieces of memory holding ``elements`` adjacent rows of A (columns of B) from ``mn``
    on, for every k: a K-major row is two 16-byte pieces (eight k each, which a swizzle moves
    as a whole); an MN-major one a piece of ``2 * elements`` bytes for each k (adjacent in
    memory: ``mn`` is even where ``elements`` is 2, so the piece stays in one 16-byte chunk)."""
    out: list[tuple[BitVec, int]] = []
    if mn_major:
        for k in range(K):
            out.append((address(d, m, mn, k, True), 2 * elements))
        return out
    for e in range(elements):
        for k in (0, 8):
            out.append((address(d, m, mn + e, k, False), 16))
    return out


def _rows_of_a(
    d: SymbolicDomain, m: Layout[BitVec, Bool], rows: tuple[BitVec, ...], mn_major: bool
) -> list[tuple[BitVec, int]]:
    """The pieces of A's rows ``rows`` (this thread's: ``16 w + g`` and ``16 w + g + 8``)."""
    return [piece for row in rows for piece in _row(d, m, row, mn_major, 1)]


def _columns_of_b(
    d: SymbolicDomain, m: Layout[BitVec, Bool], ops: Operands, t: BitVec, warp: BitVec, g: BitVec
) -> list[tuple[BitVec, int]]:
    """The pieces of B this thread's share holds: K-major, columns ``8 (c / 2) + 2 t`` and the
    next one, every k; MN-major, see :func:`_shared_columns`."""
    if ops.trans_b:
        return _shared_columns(d, m, ops.n, t, warp * 8 + g)
    out: list[tuple[BitVec, int]] = []
    for c in range(0, ops.n // 4, 2):
        out += _row(d, m, t * 2 + 8 * (c // 2), False, 2)
    return out


def _shared_columns(
    d: SymbolicDomain, m: Layout[BitVec, Bool], n: int, t: BitVec, q: BitVec
) -> list[tuple[BitVec, int]]:
    """Pieces of an MN-major B that thread ``q`` (``8 w + g``, 0-31) of the 32 threads with lane
    ``% 4 == t`` reads: for each k, columns ``8 j + 2 t`` and the next, for the chunk ``j = q mod
    N / 8``, so that at least two threads read each (all 32 read all N / 8 chunks in the
    interpreter; one per thread keeps the trace small, and every piece is one a replay sees that
    thread read)."""
    chunks = n // 8
    if chunks > 16:  # (32 threads share the chunks: N <= 128 gives each chunk two readers)
        raise Unsupported(f"an MN-major B of {n} columns: fewer than two threads would read a chunk")
    q64 = z3.ZeroExt(32, q) if q.size() < 64 else q
    js = [z3.URem(q64, chunks)]  # chunk q mod C: each read by 32 / C >= 2 threads
    out: list[tuple[BitVec, int]] = []
    for j in js:
        mn = j * 8 + t * 2
        out += _row(d, m, mn, True, 2)
    return out


# A start address that is a multiple of this keeps every swizzle's pattern in place: the swizzle
# XORs address bits 4-6 with bits 7-9, so ``address(start + x) = start + address(x)``.
_SWIZZLE_PERIOD = 1024


def _span(
    m: Layout[BitVec, Bool], mn_major: bool, extent: int, constants: Constants
) -> tuple[BitVec, int] | None:
    """``(lo, bytes)``: the tile of ``extent`` rows of A (columns of B) by 16 k spans ``bytes``
    from the term ``lo``, where the descriptor's fields other than its start are constants and
    so is its start's offset in the swizzle's period (a thread's tile, a k step into it), None
    otherwise. The tile at start ``base + offset`` is the tile at ``offset`` moved by ``base``."""
    period = _SWIZZLE_PERIOD - 1
    offset = _constant(z3.simplify(m.start & period), constants)
    if not z3.is_bv_value(offset):
        return None
    at = _hull(replace(m, start=offset), mn_major, extent)
    if at is None:
        return None
    return z3.simplify((m.start & ~period) + at[0]), at[1] - at[0]


def _hull(m: Layout[BitVec, Bool], mn_major: bool, extent: int) -> tuple[int, int] | None:
    """``[lo, hi)``, the window offsets of the bytes a tile of ``extent`` rows of A (columns of
    B) by 16 k spans, where the descriptor's fields are constants (None otherwise)."""
    fields = []
    for term in (m.start, m.lbo, m.sbo, m.base_offset, m.mode):
        f = as_const(term)
        if not isinstance(f, int) or isinstance(f, bool):
            return None
        fields.append(f)
    cd = ConcreteDomain()
    start, lbo, sbo, base_offset, mode = (cd.const(f, 64) for f in fields)
    c: Layout[UIntArray, BoolArray] = Layout(start, lbo, sbo, base_offset, mode)
    step = 8 if mn_major else 1
    rows = np.arange(0, extent, step, dtype=np.uint64)
    ks = range(K) if mn_major else (0, 8)  # the first element of each 16-byte piece
    starts = np.concatenate([address(cd, c, rows, k, mn_major).astype(np.int64) for k in ks])
    return int(starts.min()), int(starts.max()) + 16
