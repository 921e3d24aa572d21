"""One symbolic thread's trace for the two-thread encoding: memory accesses and barriers with the
condition under which each happens, over symbolic thread coordinates and free loaded values.

Every pointer parameter is its own global allocation (distinct bases, no aliasing); every
``.shared``/``.local`` variable its own slot. Loads return free variables (the adversarial
abstraction of GPUVerify: any value another thread may have written), so the trace is computed
once per kernel and instantiated for the second thread by renaming its variables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeVar, overload

import z3

from karyamorph.isa import ast
from karyamorph.kernel.tensormap import TensorMap
from karyamorph.model.check.clusterwindow import Remote, cluster_registers
from karyamorph.model.check.explore import Cut, Explorer
from karyamorph.model.check.intquery import IntTranslation, NotLinear
from karyamorph.model.check.loops import counted_loops
from karyamorph.model.check.structparams import pointer_fields, struct_names, struct_value
from karyamorph.model.check.symexec import (
    SLOT,
    Allocation,
    AtomicUpdate,
    Frame,
    Layout,
    SymExec,
    Term,
    Unsupported,
    WarpAnswer,
    as_const,
    bitvec,
    global_base,
    provenance,
    slot_base,
    tensor_window,
)
from karyamorph.model.check.syncstate import (
    CLUSTER_EPOCH,
    COMMITTED,
    COMPLETED,
    MAX_MBARRIERS,
    MBARRIER_PASSED,
    WARP_EPOCH,
)
from karyamorph.model.check.syncstate import initial as initial_counters
from karyamorph.model.check.warpgroups import Warpgroups, in_window
from karyamorph.model.interp.memory import GLOBAL_STRIDE
from karyamorph.model.interp.program import Program
from karyamorph.model.semantics.concrete import float_bits
from karyamorph.model.semantics.symbolic import BitVec, Bool
from karyamorph.model.semantics.types import PtxType, ptx_type

Dim3 = tuple[int, int, int]
Dim = int | tuple[int, ...]


def dim3(v: Dim, what: str) -> Dim3:
    """A launch dimension (an int or a 1-3 tuple) as three positive ints."""
    t = (v,) if isinstance(v, int) else tuple(int(x) for x in v)
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise ValueError(f"launch {what} must be 1-3 positive integers, got {v!r}")
    return (*t, 1, 1)[:3]  # type: ignore[return-value]


_E = TypeVar("_E", bound=z3.ExprRef)


class Renaming(Protocol):
    """A substitution of terms that keeps their sort (``encoding.Substitution``)."""

    def __call__(self, term: _E) -> _E: ...


@dataclass(frozen=True, slots=True)
class Tiles:
    """The whole tiles of one ``wgmma`` issue, of which a read is a piece of a thread's share:
    ``first``, the index of the issue's first read (it stands for the issue); ``ranges``, the
    ``(lo, bytes)`` shared byte ranges of its tiles (``lo`` a 64-bit term of thread A), which
    hold every piece."""

    first: int
    ranges: tuple[tuple[BitVec, int], ...]


@dataclass(slots=True)
class Access:
    """A load, store or atomic of the trace (``index`` orders events in program order)."""

    index: int
    line: int
    text: str
    space: str
    addr: BitVec
    nbytes: int
    write: bool
    atomic: bool
    guard: Bool
    value: BitVec | None = None  # a load's free value, or the value an atomic returns
    epoch: BitVec | None = None  # barriers the thread passed before it (64-bit term)
    stored: BitVec | None = None  # what a store writes (benign same-value stores compare it)
    op: str = ""  # an atomic's operation (``add``, ``inc``, ...)
    operand: BitVec | None = None  # an atomic's operand ``b``
    # Synchronisation counters (karyamorph.model.check.syncstate; None where not counted):
    group: BitVec | None = None  # a cp.async access: the async-group its copy joins
    completed: BitVec | None = None  # async-groups complete when the access is made
    warp_epoch: BitVec | None = None  # bar.warp.sync barriers passed before it
    cluster_epoch: BitVec | None = None  # barrier.cluster waits passed before it
    remote: Remote | None = None  # a .shared::cluster access: the CTA whose shared memory it reaches
    passed: BitVec | None = None  # the phases of each mbarrier the thread has seen complete
    mbarrier: int | None = None  # a bulk copy's access: the field of the mbarrier it completes on
    tx: BitVec | None = None  # an mbarrier update: its change of the tx-count
    phase: BitVec | None = None  # a bulk copy's access: the phase it completes on (None: 0);
    # an arrival of an mbarrier whose phases the trace tells: the phase it arrives in
    # An asynchronous read (a wgmma's tiles): (trace position, condition) of each wait that
    # retires it; None for an access complete where it is made
    retired: list[tuple[int, Bool]] | None = None
    tiles: Tiles | None = None  # a piece of a wgmma's tiles, where their ranges are known

    def substitute_counters(self, sub: Renaming) -> None:
        """Apply ``sub`` to the synchronisation counters, the remote CTA and the tiles' ranges (as
        to the access's other terms)."""
        self.group = sub(self.group) if self.group is not None else None
        self.completed = sub(self.completed) if self.completed is not None else None
        self.warp_epoch = sub(self.warp_epoch) if self.warp_epoch is not None else None
        self.cluster_epoch = sub(self.cluster_epoch) if self.cluster_epoch is not None else None
        self.remote = self.remote.substituted(sub) if self.remote is not None else None
        self.passed = sub(self.passed) if self.passed is not None else None
        self.tx = sub(self.tx) if self.tx is not None else None
        self.phase = sub(self.phase) if self.phase is not None else None
        if self.retired is not None:
            self.retired = [(at, sub(cond)) for at, cond in self.retired]
        if self.tiles is not None:
            self.tiles = Tiles(self.tiles.first, tuple((sub(lo), n) for lo, n in self.tiles.ranges))


@dataclass(slots=True)
class BarrierEvent:
    """A barrier reached under ``guard``; ``exited``: whether the thread has exited before it;
    ``loops``: the iteration variables of the abstracted loops the barrier is in."""

    index: int
    line: int
    text: str
    guard: Bool
    exited: Bool
    epoch: BitVec | None = None
    loops: tuple[BitVec, ...] = ()
    completed: BitVec | None = None  # async-groups complete on arrival (None: not counted)
    passed: BitVec | None = None  # the phases of each mbarrier the thread has seen complete

    def substitute_counters(self, sub: Renaming) -> None:
        """Apply ``sub`` to the synchronisation counters."""
        self.completed = sub(self.completed) if self.completed is not None else None
        self.passed = sub(self.passed) if self.passed is not None else None


@dataclass(slots=True)
class Trace:
    """The events of symbolic thread ``A`` and what is needed to instantiate and read them."""

    events: list[Access | BarrierEvent]
    cuts: list[Cut]
    abstracted: list[int]
    specials: dict[str, BitVec]
    coords: dict[str, BitVec]  # "tid.x" ... "ctaid.z" -> term (constant 0 for a dimension of 1)
    thread_vars: list[Term]  # every variable private to thread A (renamed for thread B)
    abstract: set[str]  # names of free variables that stand for unknown state (not inputs)
    inputs: dict[str, BitVec]  # free scalar parameters, by parameter name
    layout: Layout
    grid: Dim3
    block: Dim3
    warp_size: int
    latches: list[tuple[BitVec, Bool]] = field(
        default_factory=list
    )  # (k, latch) of loops with a symbolic range
    # (k, fact, position): iteration k of a loop with a symbolic range is the one it leaves
    # after, a fact for every event from ``position`` on (a thread there has left the loop)
    assumptions: list[tuple[BitVec, Bool, int]] = field(default_factory=list)
    stated: list[str] = field(default_factory=list)  # assumptions on inputs, in words
    cluster: Dim3 = (1, 1, 1)  # CTAs per cluster
    mbarriers: dict[int, int] = field(default_factory=dict)  # shared address -> its MBARRIER_PASSED bit
    # (MBARRIER_PASSED bit, arrival) of the arrivals whose phase (in ``Access.phase``) is told
    # (karyamorph.model.check.mbarrierphase): a wait that sees that phase complete follows them
    released: list[tuple[int, Access]] = field(default_factory=list)
    # (earlier, later) trace indices of a thread's bulk copies, the earlier landed at the later
    landed: set[tuple[int, int]] = field(default_factory=set)

    @property
    def clustered(self) -> bool:
        """Whether the CTAs of a cluster reach one another's shared memory: some access's bytes
        may be another CTA's."""
        return any(isinstance(e, Access) and e.remote is not None for e in self.events)


def build_layout(
    program: Program,
    module: ast.Module,
    buffers: dict[str, int],
    scalars: dict[str, int | float],
    shared_bytes: int,
) -> tuple[Layout, dict[str, BitVec]]:
    """Allocations and parameter values of a launch; returns the layout and the free scalars."""
    fn = program.fn
    allocations: list[Allocation] = []
    symbols: dict[str, int] = {}
    k = 0
    for p in fn.params:
        if p.name in buffers:
            allocations.append(Allocation(p.name, "global", global_base(k), int(buffers[p.name])))
            k += 1
        elif p.name in program.structs:  # a struct's pointer fields: allocations of their own
            for field_name, field_bytes in pointer_fields(p.name, program.structs[p.name], buffers):
                allocations.append(Allocation(field_name, "global", global_base(k), field_bytes))
                k += 1
    known = {p.name for p in fn.params} | struct_names(program.structs)
    unknown = sorted(set(buffers) - known)
    unknown += sorted(set(scalars) - known)
    if unknown:
        raise ValueError(
            f"{fn.name}: no parameter named {', '.join(unknown)} "
            f"(parameters: {', '.join(p.name for p in fn.params)})"
        )
    slots = 0
    dynamic_base: int | None = None
    decls = [s for s in _decls(fn.body or ()) if s.space in ("shared", "local")]
    decls += [i for i in module.items if isinstance(i, ast.VarDecl) and i.space == "shared"]
    for d in decls:
        for name in d.names:
            size = d.size_bytes
            if size is None:  # extern .shared: every one names the dynamic region
                if dynamic_base is None:
                    dynamic_base = slot_base(slots)
                    slots += 1
                    allocations.append(Allocation(name, "shared", dynamic_base, shared_bytes))
                symbols[name] = dynamic_base
                continue
            base = slot_base(slots)
            slots += 1
            symbols[name] = base
            allocations.append(Allocation(name, d.space, base, size))
    for var in program.variables:  # module .global variables after the pointer parameters
        if var.space == "global":
            base = global_base(k)
            k += 1
        else:  # .const: a slot of its own, like a shared variable
            base = slot_base(slots)
            slots += 1
        allocations.append(Allocation(var.name, var.space, base, var.size, var.data))
        symbols[var.name] = base
    symbols.update(program.functions)
    params: dict[str, tuple[int, int, BitVec]] = {}
    free: dict[str, BitVec] = {}
    for p in fn.params:
        nbytes = p.size_bytes
        bits = 8 * nbytes
        if p.name in buffers:
            a = next(x for x in allocations if x.name == p.name and x.space == "global")
            value: BitVec = z3.BitVecVal(a.base % (1 << bits), bits)
        elif p.name in program.structs:
            value, fields = struct_value(p.name, program.structs[p.name], allocations, scalars)
            free.update(fields)
        elif p.name in scalars:
            v = scalars[p.name]
            t = ptx_type(p.type) if p.type in ("f16", "f32", "f64") else None
            raw = float_bits(float(v), t.name) if t is not None else int(v)
            value = z3.BitVecVal(raw % (1 << bits), bits)
        else:
            value = z3.BitVec(p.name, bits)
            free[p.name] = value
        params[p.name] = (program.param_offsets[p.name], nbytes, value)
    return Layout(allocations, symbols, params), free


def _decls(statements: tuple[ast.Statement, ...]) -> list[ast.VarDecl]:
    out: list[ast.VarDecl] = []
    for s in statements:
        if isinstance(s, ast.Block):
            out += _decls(s.statements)
        elif isinstance(s, ast.VarDecl):
            out.append(s)
    return out


def thread_coords(
    tag: str, grid: Dim3, block: Dim3, warp_size: int, cluster: Dim3 | None = None
) -> tuple[dict[str, BitVec], dict[str, BitVec]]:
    """(special registers, coordinates) of a symbolic thread; a dimension of 1 gives constant 0.
    With ``cluster`` (CTAs per cluster), the cluster registers too."""
    coords: dict[str, BitVec] = {}
    for name, dims in (("tid", block), ("ctaid", grid)):
        for axis, n in zip("xyz", dims, strict=True):
            coords[f"{name}.{axis}"] = (
                z3.BitVecVal(0, 32) if n == 1 else z3.BitVec(f"{name}.{axis}@{tag}", 32)
            )
    sp = {f"%{k}": v for k, v in coords.items()}
    for name, dims in (("ntid", block), ("nctaid", grid)):
        for axis, n in zip("xyz", dims, strict=True):
            sp[f"%{name}.{axis}"] = z3.BitVecVal(n, 32)
    linear = coords["tid.x"] + coords["tid.y"] * block[0] + coords["tid.z"] * (block[0] * block[1])
    sp["%laneid"] = z3.URem(linear, warp_size)
    sp["%warpid"] = z3.UDiv(linear, warp_size)
    nthreads = block[0] * block[1] * block[2]
    sp["%nwarpid"] = z3.BitVecVal(-(-nthreads // warp_size), 32)
    if cluster is not None:
        sp.update(cluster_registers(coords, grid, cluster))
    return sp, coords


def _coord_limits(coords: dict[str, BitVec], grid: Dim3, block: Dim3) -> list[tuple[BitVec, int]]:
    out = []
    for name, dims in (("tid", block), ("ctaid", grid)):
        for axis, n in zip("xyz", dims, strict=True):
            v = coords[f"{name}.{axis}"]
            if not z3.is_bv_value(v):
                out.append((v, n))
    return out


def coord_constraints(coords: dict[str, BitVec], grid: Dim3, block: Dim3) -> list[Bool]:
    return [z3.ULT(v, n) for v, n in _coord_limits(coords, grid, block)]


# Constant arrays up to this many elements are read exactly (an if-chain over their elements);
# a load from a larger one reads a free value.
MAX_CONSTANT_ELEMENTS = 1024


def constant_load(layout: Layout, addr: BitVec, ty: PtxType, other: BitVec) -> BitVec | None:
    """The value a ``ld.const`` of ``ty`` at ``addr`` reads from the module's ``.const``
    variables, which hold their initial bytes (zeros without an initializer) for the whole
    launch: exact for a constant address, a choice among the elements of the one variable a
    symbolic address can reach (``other``, a free value, past its end); None when the address
    may reach several variables or the variable is too large to enumerate."""
    t = z3.simplify(addr)
    try:
        _, lo, hi = IntTranslation({}).value(t)
    except NotLinear:
        return None
    alloc = layout.find("const", lo)[0]
    if alloc is None or alloc.init is None or hi >= alloc.base + SLOT:
        return None  # the address may lie in more than one variable's window
    data = alloc.init
    if len(data) // ty.bytes > MAX_CONSTANT_ELEMENTS:
        return None
    value = other
    for off in range(len(data) - ty.bytes, -1, -ty.bytes):
        word = int.from_bytes(data[off : off + ty.bytes], "little")
        value = z3.If(addr == alloc.base + off, z3.BitVecVal(word, ty.bits), value)
    return z3.simplify(value) if z3.is_bv_value(t) else value


@dataclass(slots=True)
class TwoThreadLog:
    """The memory model of the two-thread encoding: log every access, return free values."""

    tag: str = "A"
    events: list[Access | BarrierEvent] = field(default_factory=list)
    thread_vars: list[Term] = field(default_factory=list)
    abstract: set[str] = field(default_factory=set)
    counter: int = 0
    host_constants: bool = False  # .const contents are the host's, not the initializers (memvalues)
    mbarriers: dict[int, int] = field(default_factory=dict)  # shared address -> MBARRIER_PASSED bit

    @overload
    def fresh(self, name: str, sort: z3.BitVecSortRef, abstract: bool = True) -> BitVec: ...
    @overload
    def fresh(self, name: str, sort: z3.BoolSortRef, abstract: bool = True) -> Bool: ...
    def fresh(self, name: str, sort: z3.BitVecSortRef | z3.BoolSortRef, abstract: bool = True) -> Term:
        """A new free variable of ``sort``, private to this thread (``abstract``: it stands for
        unknown state, not an input)."""
        self.counter += 1
        v = z3.Const(f"{name}#{self.counter}@{self.tag}", sort)
        self.thread_vars.append(v)
        if abstract:
            self.abstract.add(v.decl().name())
        return v

    def mark(self) -> int:
        return len(self.events)

    def truncate(self, n: int) -> None:
        del self.events[n:]

    def _log(
        self,
        x: SymExec,
        space: str,
        addr: BitVec,
        ty: PtxType,
        write: bool,
        atomic: bool,
        value: BitVec | None = None,
        stored: BitVec | None = None,
        op: str = "",
        operand: BitVec | None = None,
        tx: BitVec | None = None,
    ) -> None:
        d = x.dec
        regs = x.frame.regs
        self.events.append(
            Access(
                len(self.events),
                d.line,
                d.source.full_opcode,
                space,
                addr,
                ty.bytes,
                write,
                atomic,
                x.cond,
                value,
                x.frame.epoch,
                stored,
                op,
                operand,
                _counter(regs, COMMITTED) if x.copying else None,
                _counter(regs, COMPLETED),
                _counter(regs, WARP_EPOCH),
                _counter(regs, CLUSTER_EPOCH),
                x.remote,
                _counter(regs, MBARRIER_PASSED),
                tx=tx,
            )
        )

    def load(self, x: SymExec, space: str, addr: BitVec, ty: PtxType) -> BitVec:
        if space == "const" and not self.host_constants:
            other = self.fresh(f"ld{x.dec.line}", z3.BitVecSort(ty.bits))
            known = constant_load(x.layout, addr, ty, other)
            if known is not None:
                self._log(x, space, addr, ty, False, False)
                return known
        # Global loads may turn out to read an input (a buffer no thread writes): decided later.
        # A module .global variable holds state, not an input: its loads stay abstract.
        module = space == "global" and _module_variable(x.layout, addr)
        v = self.fresh(f"ld{x.dec.line}", z3.BitVecSort(ty.bits), abstract=space != "global" or module)
        self._log(x, space, addr, ty, False, False, v)
        return v

    def store(self, x: SymExec, space: str, addr: BitVec, value: BitVec, ty: PtxType) -> None:
        self._log(x, space, addr, ty, True, False, stored=value)

    def span(
        self, x: SymExec, space: str, addr: BitVec, nbytes: int, write: bool, mbarrier: int | None = None
    ) -> None:
        """Log ``nbytes`` at ``addr`` read or written by an asynchronous bulk copy (no value);
        ``mbarrier``: the bit of the mbarrier it completes on (:meth:`mbarrier_bit`)."""
        self._log(x, space, addr, PtxType(f"b{8 * nbytes}", 8 * nbytes, "b"), write, False)
        last = self.events[-1]
        assert isinstance(last, Access)
        last.warp_epoch = None  # asynchronous: a bar.warp.sync does not wait for it
        last.mbarrier = mbarrier

    def mbarrier_bit(self, address: int) -> int | None:
        """The ``MBARRIER_PASSED`` bit of the mbarrier at shared ``address`` (numbered as met;
        None past the counter's 64 bits)."""
        if address not in self.mbarriers and len(self.mbarriers) < MAX_MBARRIERS:
            self.mbarriers[address] = len(self.mbarriers)
        return self.mbarriers.get(address)

    def rank(self, x: SymExec, rank: BitVec) -> None:
        """Log ``mapa``'s rank operand as a one-byte access of the pseudo-space ``cluster`` at
        address ``rank``: the bounds check holds it below the cluster's CTA count."""
        wide = z3.ZeroExt(64 - rank.size(), rank) if rank.size() < 64 else rank
        self._log(x, "cluster", wide, PtxType("b8", 8, "b"), False, False)

    def read(self, x: SymExec, space: str, addr: BitVec, nbytes: int) -> Access:
        """Log a read of ``nbytes`` that yields no value here (a tile of a ``wgmma``)."""
        self._log(x, space, addr, PtxType(f"b{8 * nbytes}", 8 * nbytes, "b"), False, False)
        last = self.events[-1]
        assert isinstance(last, Access)
        last.warp_epoch = None  # asynchronous: a bar.warp.sync does not wait for it
        last.retired = []
        return last

    def retire(self, access: Access, guard: Bool) -> None:
        """Note that a read of :meth:`read` is complete from here on, on the paths ``guard``."""
        assert access.retired is not None
        access.retired.append((len(self.events), guard))

    def tile(self, reads: list[Access], ranges: tuple[tuple[BitVec, int], ...]) -> None:
        """Note that ``reads`` are the pieces of one ``wgmma`` issue's tiles, which ``ranges``
        hold (the race plan asks about the tiles first, :func:`karyamorph.model.check.pairs.plan_race`)."""
        tiles = Tiles(reads[0].index, ranges)
        for r in reads:
            r.tiles = tiles

    def again(
        self, access: Access, epoch: BitVec, guard: Bool, addr: BitVec | None = None, nbytes: int = 0
    ) -> None:
        """Log ``access`` once more, in the barrier interval ``epoch`` under ``guard`` (a read still
        in flight), or a read of ``nbytes`` at ``addr`` by the same instruction."""
        at, width = (addr, nbytes) if addr is not None else (access.addr, access.nbytes)
        # (logged where the wait retires it: complete there)
        more = replace(
            access, index=len(self.events), epoch=epoch, guard=guard, addr=at, nbytes=width, retired=None,
            tiles=None,
        )  # fmt: skip
        self.events.append(more)

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
        old = self.fresh(f"atom{x.dec.line}", z3.BitVecSort(ty.bits))
        self._log(x, space, addr, ty, True, True, old, op=op, operand=b, tx=c if op == "mbarrier" else None)
        return old

    def warp(self, x: SymExec, kind: str, args: tuple[Term, ...]) -> WarpAnswer:
        line = x.dec.line
        if kind.startswith("shfl"):
            value = bitvec(args[0], f"line {line}: {kind}")
            return (
                self.fresh(f"shfl{line}", z3.BitVecSort(value.size())),
                self.fresh(f"shflp{line}", z3.BoolSort()),
            )
        if kind == "vote.ballot":
            full = _whole_ballot(x, args)
            return full if full is not None else self.fresh(f"ballot{line}", z3.BitVecSort(32))
        return self.fresh(f"vote{line}", z3.BoolSort())


def _whole_ballot(x: SymExec, args: tuple[Term, ...]) -> BitVec | None:
    """The ballot of a predicate every member holds (``elect.sync``'s), where the membermask is
    a constant and the block is whole warps: the membermask itself. PTX ISA, ``vote.sync`` /
    ``elect.sync``: every thread the mask names executes the instruction before any resumes, so
    each member's vote is in (a member that does not come is undefined behaviour). None
    otherwise: the other lanes' votes are free."""
    p, mask = args
    m = as_const(mask) if isinstance(mask, z3.BitVecRef) else None
    if not (isinstance(p, z3.BoolRef) and z3.is_true(p)) or not isinstance(m, int) or isinstance(m, bool):
        return None
    nthreads = 1
    for axis in "xyz":
        n = as_const(x.specials[f"%ntid.{axis}"])
        if not isinstance(n, int) or isinstance(n, bool):
            return None
        nthreads *= n
    if nthreads % 32 or m >> 32:
        return None
    return z3.BitVecVal(m, 32)


def _counter(regs: dict[str, Term], name: str) -> BitVec | None:
    """A synchronisation counter of a frame, or None where the frame does not count it."""
    t = regs.get(name)
    return None if t is None else bitvec(t, name)


def _module_variable(layout: Layout, addr: BitVec) -> bool:
    """Whether a global address lies in a module variable (by its constant base)."""
    k = provenance(addr)
    alloc, _ = layout.find("global", k << 32) if k is not None else (None, 0)
    return alloc is not None and alloc.init is not None


def trace_layout(
    program: Program,
    module: ast.Module,
    buffers: dict[str, int],
    scalars: dict[str, int | float],
    shared_bytes: int,
    tensormaps: Mapping[str, TensorMap] | None,
) -> tuple[Layout, dict[str, z3.BitVecRef]]:
    """The memory layout of a two-thread trace, and its free inputs: :func:`build_layout`, a
    ``wgmma`` kernel's shared variable at its window (:func:`in_window`), and each tensor map's
    tensor in a global window of its own (:func:`tensor_window`), which tensor copies alone reach."""
    layout, free = build_layout(program, module, buffers, scalars, shared_bytes)
    layout = in_window(program, layout)
    layout.tensormaps = dict(tensormaps or {})
    k = len(layout.of_space("global"))
    for name, tm in layout.tensormaps.items():
        free.pop(name, None)  # an opaque object, not an input the verdicts range over
        _, size = tensor_window(tm)  # its tensor: a window of its own, which tensor stores write
        if size > GLOBAL_STRIDE:
            raise Unsupported(f"the tensor of tensor map {name} is too large for the checker's window")
        layout.allocations.append(Allocation(name, "global", global_base(k), size))
        k += 1
    return layout, free


def warpgroups(
    x: SymExec, log: TwoThreadLog, threads: int, warp_size: int, free: Mapping[str, z3.ExprRef]
) -> Warpgroups[Access]:
    """The explorer's ``wgmma`` handler for a block of ``threads`` (its free scalar inputs
    ``free``: one value for every thread)."""
    fresh = lambda name, bits: log.fresh(name, z3.BitVecSort(bits))  # noqa: E731
    return Warpgroups(x, log, fresh, threads, warp_size, frozenset(v.decl().name() for v in free.values()))


def explore(ex: Explorer, log: TwoThreadLog, program: Program, wgmma: Warpgroups[Access] | None) -> None:
    """Run thread ``A``'s exploration from zeroed registers and fresh synchronisation counters,
    logging each barrier it reaches with the counters there; ``wgmma`` (the explorer's handler,
    if any) then refuses what it could not encode."""
    if wgmma is not None:
        wgmma.cuts = ex.cuts
    regs: dict[str, Term] = {}
    for name, t in program.registers.items():
        regs[name] = z3.BoolVal(False) if t.kind == "pred" else z3.BitVecVal(0, t.bits)
    regs.update(initial_counters())
    frame = Frame(regs, z3.BoolVal(True), z3.BoolVal(False))
    for event in ex.run(frame):
        if event[0] == "barrier":
            _, dec, fr, cond, loops = event
            n, text = len(log.events), dec.source.full_opcode
            done, passed = _counter(fr.regs, COMPLETED), _counter(fr.regs, MBARRIER_PASSED)
            log.events.append(BarrierEvent(n, dec.line, text, cond, fr.exited, fr.epoch, loops, done, passed))
    if wgmma is not None:
        wgmma.finish(ex.abstracted)


def build_trace(
    program: Program,
    module: ast.Module,
    grid: Dim3,
    block: Dim3,
    warp_size: int,
    buffers: dict[str, int],
    scalars: dict[str, int | float],
    shared_bytes: int,
    unroll: int,
    max_steps: int = 200_000,
    deadline: float | None = None,
    host_constants: bool = False,
    cluster: Dim3 = (1, 1, 1),
    tensormaps: Mapping[str, TensorMap] | None = None,
) -> Trace:
    """Explore thread ``A``'s code for a launch and return its trace (``deadline``: a
    ``time.perf_counter()`` value past which :class:`~karyamorph.model.check.intquery.OutOfTime` is
    raised; ``host_constants``: ``.const`` loads stay free for
    :mod:`karyamorph.model.check.memvalues`, not read from the initializers; ``cluster``: CTAs
    per cluster, which must tile the grid; ``tensormaps``: the fields of each tensor-map
    parameter, by name, for the tensor copies through it)."""
    if any(g % c for g, c in zip(grid, cluster, strict=True)):
        raise ValueError(f"a grid of {grid} CTAs is not a whole number of clusters of {cluster}")
    layout, free = trace_layout(program, module, buffers, scalars, shared_bytes, tensormaps)
    specials, coords = thread_coords("A", grid, block, warp_size, cluster)
    log = TwoThreadLog(host_constants=host_constants)
    x = SymExec(program, layout, specials, log)
    nthreads = block[0] * block[1] * block[2]
    wgmma = warpgroups(x, log, nthreads, warp_size, free)
    ex = Explorer(
        x,
        unroll=unroll,
        max_steps=max_steps,
        loops=counted_loops(program.decoded, program.labels),
        fresh=log.fresh,
        mark=log.mark,
        truncate=log.truncate,
        deadline=deadline,
        opaque_products=True,
        handler=wgmma,
        bounds=IntTranslation({v.decl().name(): n for v, n in _coord_limits(coords, grid, block)}),
    )
    explore(ex, log, program, wgmma)
    for v in coords.values():
        if not z3.is_bv_value(v):
            log.thread_vars.append(v)
    return Trace(
        log.events,
        ex.cuts,
        ex.abstracted,
        specials,
        coords,
        log.thread_vars,
        log.abstract,
        free,
        layout,
        grid,
        block,
        warp_size,
        ex.latches,
        ex.exits,
        ex.stated,
        cluster,
        log.mbarriers,
    )
