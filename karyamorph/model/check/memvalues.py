"""Values the two-thread encoding loads from ``.const`` and ``.shared`` variables whose contents
it can tell apart from "anything another thread may have written".

A load returns a free value per thread (GPUVerify's adversarial abstraction). Three cases are
determined, and become terms before the trace is encoded (:func:`settle`) or facts given to its
solver after (:func:`bind`):

- ``.const`` variables: the kernel cannot write them, so a load the trace did not read from the
  initializer exactly (a symbolic address) reads ``name.uN(address)``, one uninterpreted function
  for every thread. The solver is told the initializer's words (a table of at most
  :data:`~karyamorph.model.check.accesses.MAX_CONSTANT_ELEMENTS`; a larger one is unknown state).
  Where the host may set the table before the launch (``cudaMemcpyToSymbol``; GPUVerify's view,
  ``host_constants``), every load reads it, as an input a witness names and a replay sets.
- a ``.shared`` variable no access writes in the barrier interval of a load: its contents stay
  put while the load runs, so two threads of one block reading one address in that interval
  read one value, ``name.shared.uN(block, interval, address)``. Uninitialized shared memory is
  unknown state, never an input a counterexample may choose.
- a ``.shared`` word written before a barrier and read after it (Triton's layout changes: each
  thread stores, the block synchronises, each thread reads another's value). Where every
  thread's load address is covered by some thread's store of the same width in an earlier
  interval (evaluated for every thread by the sweep), every other write overlapping it is such a
  store, and nothing writes the variable in the load's interval or between the barriers in a
  way the trace cannot order, the value read is one some thread of the block stored there. The
  solver is told so through a third thread, ``C``, chosen per load (its coordinates and loaded
  values fresh), with the disjunction over the stores.

An access belongs to the variable its address is based on: the one its interval bounds lie in,
or else the one holding its constant addend (``B + 4 * t``). As for pointer parameters, an
access assumed to stay in its variable leaves it only through a bounds violation.
Asynchronous copies (``cp.async``) are encoded where issued, not where they land, and another
block of a cluster may write a block's shared memory (``st.shared::cluster``): a kernel that has
either keeps its loads from shared memory free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import z3

from karyamorph.model.check.accesses import MAX_CONSTANT_ELEMENTS, Access, Trace
from karyamorph.model.check.encoding import Encoding, Substitution, substitute_trace
from karyamorph.model.check.intquery import IntTranslation, NotLinear
from karyamorph.model.check.sweep import U64, Sweep
from karyamorph.model.check.symexec import SLOT, Allocation, Layout, Term, provenance
from karyamorph.model.check.terms import constant_names
from karyamorph.model.check.warpvalues import Flow
from karyamorph.model.interp.program import Program
from karyamorph.model.semantics.symbolic import BitVec, Bool

# Opcodes whose writes to shared memory land later than the trace records them.
ASYNC = ("cp.async", "cp.reduce.async", "st.async", "red.async")
# Opcodes and state spaces by which another block of a cluster reaches a block's shared memory.
REMOTE = ("mapa", "::cluster")


@dataclass(frozen=True, slots=True)
class StoredValue:
    """A load from a ``.shared`` word that earlier intervals' stores cover: its value is one of
    the ``stores`` made by thread ``C`` of thread A's block (``coords``: C's thread coordinates,
    fresh variables of thread A's trace)."""

    load: Access
    stores: tuple[Access, ...]
    coords: tuple[tuple[BitVec, int], ...]  # (C's coordinate, its exclusive limit)


@dataclass(frozen=True, slots=True)
class Settled:
    """What :func:`settle` did: the loads made terms (by kind), and those left to :func:`bind`."""

    constant: tuple[Access, ...] = ()
    unwritten: tuple[Access, ...] = ()
    stored: tuple[StoredValue, ...] = ()
    host_constants: bool = False  # the constant loads read inputs (else: the initializers)


def variable_of(layout: Layout, ints: IntTranslation, space: str, addr: BitVec) -> Allocation | None:
    """The ``.shared``/``.const`` variable an address is based on: the one its interval bounds
    lie in (read off constant high bits first, which costs less), else the one holding its
    constant addend; None when neither tells."""
    t = z3.simplify(addr)
    for bounds in (_prefix, ints.value):
        # The constant high bits may be a zero extension's zeros (``Concat(0, base + x)``),
        # which span every window: the intervals of the whole term then decide.
        try:
            lo, hi = bounds(t)[-2:]
        except NotLinear:
            continue
        if lo >= 0:
            alloc, _ = layout.find(space, lo)
            if alloc is not None and hi < alloc.base + SLOT:
                return alloc
    base = _addend(t)
    if base is None:
        return None
    alloc, off = layout.find(space, base)
    # An addend past the variable's end (``B + 4 * (j + 300)``) or before it (in the previous
    # slot's window) does not tell the variable.
    return alloc if alloc is not None and off < alloc.size else None


def _prefix(t: z3.ExprRef) -> tuple[int, int]:
    """The lowest and highest value of an address whose high bits are a constant (the
    simplifier folds a variable's base into them: ``Concat(base >> 11, x)``); (-1, -1) if not."""
    if not z3.is_bv(t):
        return -1, -1
    lead: z3.ExprRef = t
    while z3.is_app(lead) and lead.decl().kind() in (z3.Z3_OP_CONCAT, z3.Z3_OP_ZERO_EXT):
        if lead.decl().kind() == z3.Z3_OP_ZERO_EXT:
            return _prefix(lead.children()[0]) if lead is t else (-1, -1)
        lead = lead.children()[0]
    if lead is t or not z3.is_bv_value(lead):
        return -1, -1
    low = t.size() - lead.size()
    return int(lead.as_long()) << low, ((int(lead.as_long()) + 1) << low) - 1


def _addend(t: z3.ExprRef) -> int | None:
    """The constant addend of an address term (through zero extensions), if it has one."""
    if z3.is_bv_value(t):
        return int(t.as_long())
    if not z3.is_app(t):
        return None
    kind, ch = t.decl().kind(), t.children()
    if kind == z3.Z3_OP_ZERO_EXT:
        return _addend(ch[0])
    if kind == z3.Z3_OP_CONCAT and len(ch) == 2 and z3.is_bv_value(ch[0]) and ch[0].as_long() == 0:
        return _addend(ch[1])
    if kind == z3.Z3_OP_BADD and z3.is_bv(t):
        consts = [int(c.as_long()) for c in ch if z3.is_bv_value(c)]
        if len(consts) == 1:
            return consts[0] % (1 << t.size())
    return None


def _generic(text: str) -> bool:
    """Whether an instruction addresses memory generically (no state space in its opcode)."""
    return not any(f".{sp}" in text for sp in ("global", "shared", "local", "const", "param"))


def _free(v: z3.ExprRef) -> bool:
    """Whether ``v`` is a free variable (an uninterpreted constant), not a term."""
    return z3.is_app(v) and v.num_args() == 0 and v.decl().kind() == z3.Z3_OP_UNINTERPRETED


def _interval(acc: Access) -> int | None:
    """The barrier interval of ``acc`` when it is one constant for every thread."""
    if acc.epoch is None:
        return None
    e = z3.simplify(acc.epoch)
    return int(e.as_long()) if z3.is_bv_value(e) else None


def _has_async(program: Program) -> bool:
    """Whether some write to shared memory may land where the trace does not order it."""
    return any(
        op.startswith(ASYNC) or any(r in op for r in REMOTE)
        for op in (d.source.full_opcode for d in program.decoded)
    )


def settle(trace: Trace, program: Program, host_constants: bool = False) -> Settled:
    """Make the values of the loads this module determines terms of the trace (before it is
    encoded: the new variables are thread A's); returns what was done and what :func:`bind`
    completes once the trace is encoded. ``host_constants``: the ``.const`` variables hold what
    the host set, not their initializers."""
    ints = thread_bounds(trace)
    accesses = [e for e in trace.events if isinstance(e, Access)]
    shared_async = _has_async(program)
    writes, anywhere = _writes(trace, ints, accesses)
    pairs: list[tuple[BitVec, BitVec]] = []
    constant: list[Access] = []
    unwritten: list[Access] = []
    stored: list[StoredValue] = []
    sweep: Sweep | None = None
    block = [v for k, v in trace.coords.items() if k.startswith("ctaid")]
    decisive: set[str] | None = None
    intervals = {a.index: _interval(a) for a in accesses if a.space == "shared"}
    for a in accesses:
        if a.write or a.value is None or not _free(a.value) or z3.is_false(a.guard):
            continue
        bits = a.value.size()
        if a.space == "const":
            alloc = variable_of(trace.layout, ints, "const", a.addr)
            if alloc is None:
                continue
            f = _table(alloc.name, bits)
            pairs.append((a.value, f(a.addr)))
            if host_constants:
                trace.abstract.discard(a.value.decl().name())
            else:  # the initializer, as far as bind states it: never a witness's choice
                trace.abstract.add(f.name())
            constant.append(a)
            continue
        if a.space != "shared" or anywhere or shared_async:
            continue
        alloc = variable_of(trace.layout, ints, "shared", a.addr)
        interval = intervals[a.index]
        if alloc is None or a.epoch is None:
            continue
        mine = writes.get(alloc.name, [])
        if not mine:
            epoch: BitVec = z3.BitVecVal(0, 64)  # unwritten all launch: one value throughout
        elif interval is not None and all(intervals[w.index] not in (None, interval) for w in mine):
            epoch = a.epoch  # unwritten in this interval: one value while it lasts
            # Only a value that decides an access is worth its facts: they join every query.
            decisive = _deciding(trace) if decisive is None else decisive
            got = None
            if a.value.decl().name() in decisive:
                sweep = sweep or Sweep.of(trace)
                got = covered(sweep, a, interval, mine)
            if got is not None:
                stored.append(_third_thread(trace, a, got))
        else:
            continue
        g = z3.Function(
            f"{alloc.name}.shared.u{bits}",
            *(z3.BitVecSort(32) for _ in block),
            z3.BitVecSort(64),
            z3.BitVecSort(64),
            z3.BitVecSort(bits),
        )
        value = g(*block, epoch, a.addr)
        pairs.append((a.value, value))
        trace.abstract.add(g.name())
        unwritten.append(a)
    if pairs:
        substitute_trace(trace, Substitution(pairs))
        by_name = {v.decl().name(): r for v, r in pairs}
        for a in accesses:
            if a.value is not None and _free(a.value) and a.value.decl().name() in by_name:
                a.value = by_name[a.value.decl().name()]
    return Settled(tuple(constant), tuple(unwritten), tuple(stored), host_constants)


def thread_bounds(trace: Trace) -> IntTranslation:
    """Integer bounds of thread A's coordinates, for :func:`variable_of`."""
    limits = {
        f"{name}.{axis}@A": n
        for name, dims in (("tid", trace.block), ("ctaid", trace.grid))
        for axis, n in zip("xyz", dims, strict=True)
    }
    return IntTranslation(limits)


def _writes(
    trace: Trace, ints: IntTranslation, accesses: list[Access]
) -> tuple[dict[str, list[Access]], bool]:
    """The writes of each shared variable, and whether some write's variable is not known (a
    shared address no variable holds, or a generic pointer the trace could not place)."""
    writes: dict[str, list[Access]] = {}
    anywhere = False
    for a in accesses:
        if not a.write or z3.is_false(a.guard):
            continue
        if a.space == "shared":
            alloc = variable_of(trace.layout, ints, "shared", a.addr)
            if alloc is None:
                anywhere = True
            else:
                writes.setdefault(alloc.name, []).append(a)
        elif a.space == "global" and _generic(a.text) and provenance(a.addr) is None:
            anywhere = True  # a generic pointer the trace could not place may point into shared
    return writes, anywhere


def _deciding(trace: Trace) -> set[str]:
    """Names of the variables an address, a guard or a loop's exit condition mentions."""
    # One walk over the terms together: the events share most of their subterms.
    terms: list[Bool] = [e.guard for e in trace.events]
    terms += [a.addr == a.addr for a in trace.events if isinstance(a, Access)]
    terms += [latch for _, latch in trace.latches]
    return set(constant_names(z3.And(terms))) if terms else set()


def covered(sweep: Sweep, load: Access, interval: int, writes: list[Access]) -> list[Access] | None:
    """The stores whose values ``load`` reads, when every thread's load address is covered by
    some thread's store of its width in an earlier interval, and every write of the variable that
    may touch a loaded byte is such a store at the load's own address, in an earlier interval;
    None otherwise. A write in a later interval happens after a barrier the loading thread
    reaches only after its load, and one in the load's interval must touch no loaded byte of any
    thread. Addresses are keyed by block (shared memory is a block's own)."""
    site = sweep.site(load)
    if site is None:
        return None
    threads, addr = site
    key = addr + (sweep.block_of[threads] << U64(44))
    n = load.nbytes
    covered = np.zeros(len(key), bool)
    sources: list[Access] = []
    for w in writes:
        wi = _interval(w)
        if wi is None:
            return None  # written in an interval the trace cannot order
        if wi > interval:
            continue
        wsite = sweep.site(w)
        if wsite is None:
            return None
        wthreads, waddr = wsite
        wkey = np.sort(waddr + (sweep.block_of[wthreads] << U64(44)))
        # Starts x whose bytes [x, x + w.nbytes) meet a load's [y, y + n): y - w.nbytes < x < y + n.
        meet = np.searchsorted(wkey, key + U64(n), side="left") - np.searchsorted(
            wkey, key - np.minimum(key, U64(w.nbytes - 1)), side="left"
        )
        if not np.any(meet):
            continue  # touches no loaded byte
        if wi == interval:
            return None  # written where it is read, while it is read
        same = np.searchsorted(wkey, key, side="right") - np.searchsorted(wkey, key, side="left")
        plain = not w.atomic and w.nbytes == n and w.stored is not None
        if np.any(meet > (same if plain else 0)):
            return None  # a write touches a loaded byte other than as a whole stored word
        sources.append(w)
        may, may_not = sweep.truth(w.guard)
        sure = (may & ~may_not)[wthreads]  # threads that certainly make the store
        dkey = np.sort((waddr + (sweep.block_of[wthreads] << U64(44)))[sure])
        if len(dkey):
            at = np.minimum(np.searchsorted(dkey, key, side="left"), len(dkey) - 1)
            covered |= dkey[at] == key
    if not sources or not covered.all():
        return None
    return sources


def flows(trace: Trace, program: Program) -> dict[tuple[int, str], Flow]:
    """The shared loads, by (line, opcode), each of whose accesses is :func:`covered` by the
    accesses of one store instruction, whose writing threads and addresses are the same in every
    block. Nothing when an asynchronous or another block's write may land in shared memory, or
    some write's variable is not known."""
    if _has_async(program):
        return {}
    accesses = [e for e in trace.events if isinstance(e, Access)]
    ints = thread_bounds(trace)
    writes, anywhere = _writes(trace, ints, accesses)
    if anywhere:
        return {}
    sites: dict[tuple[int, str], list[Access]] = {}
    for a in accesses:
        if a.space == "shared" and not a.atomic and not z3.is_false(a.guard):
            sites.setdefault((a.line, a.text), []).append(a)
    sweep: Sweep | None = None
    out: dict[tuple[int, str], Flow] = {}
    for site, loads in sites.items():
        interval = _interval(loads[0])
        if loads[0].write or interval is None or any(_interval(a) != interval for a in loads):
            continue
        alloc = variable_of(trace.layout, ints, "shared", loads[0].addr)
        if alloc is None:
            continue
        sweep = sweep or Sweep.of(trace)
        sources: set[tuple[int, str]] = set()
        for a in loads:
            got = covered(sweep, a, interval, writes.get(alloc.name, []))
            if got is None:
                break
            sources |= {(w.line, w.text) for w in got}
        else:
            if len(sources) == 1:
                store = sources.pop()
                table = _writers(sweep, trace, sorted(sites[store], key=lambda w: w.index))
                if table is not None:
                    out[site] = Flow(store, len(sites[store]), table)
    return out


def _writers(sweep: Sweep, trace: Trace, elements: list[Access]) -> tuple[tuple[int, int, int], ...] | None:
    """``(address, thread, element)`` for each address the store's ``elements`` certainly write,
    with the lowest such thread; None when the threads and addresses differ between blocks, or
    an element's interval is not one constant."""
    nt = trace.block[0] * trace.block[1] * trace.block[2]
    first: dict[int, tuple[int, int]] = {}
    for k, w in enumerate(elements):
        site = sweep.site(w)
        if site is None or _interval(w) is None:
            return None
        threads, addr = site
        may, may_not = sweep.truth(w.guard)
        sure = (may & ~may_not)[threads]
        threads, addr = threads[sure], addr[sure]
        blocks = sweep.block_of[threads].astype(np.int64)
        order = np.lexsort((threads, blocks))
        tids, addr, blocks = (threads % nt)[order], addr[order], blocks[order]
        count = np.bincount(blocks)
        if len(count) == 0 or np.any(count != count[0]):
            return None
        rows = len(count)
        tids, addr = tids.reshape(rows, -1), addr.reshape(rows, -1)
        if np.any(tids != tids[0]) or np.any(addr != addr[0]):
            return None  # another block writes other words, or from other threads
        for t, x in zip(tids[0].tolist(), addr[0].tolist(), strict=True):
            first.setdefault(int(x), (int(t), k))
    return tuple((x, t, k) for x, (t, k) in sorted(first.items()))


def _third_thread(trace: Trace, load: Access, stores: list[Access]) -> StoredValue:
    """Thread C of ``load``: fresh coordinates (its block is thread A's) as thread variables of
    the trace; the facts on it are made by :func:`bind`."""
    coords: list[tuple[BitVec, int]] = []
    dims = dict(zip("xyz", trace.block, strict=True))
    for k, v in trace.coords.items():
        if k.startswith("tid") and not z3.is_bv_value(v):
            c = z3.BitVec(f"src{load.line}.{load.index}.{k}@A", 32)
            trace.thread_vars.append(c)
            coords.append((c, dims[k[-1]]))
    return StoredValue(load, tuple(stores), tuple(coords))


def bind(enc: Encoding, settled: Settled) -> None:
    """Give the encoding's solver what the loads of stored values satisfy, for both threads, and
    add the constant loads to the inputs a witness names."""
    pinned: set[tuple[str, int]] = set()
    for a in settled.constant:
        alloc = enc.trace.layout.find("const", _lowest(enc, a))[0]
        if alloc is None or a.value is None:
            continue
        if settled.host_constants:
            enc.loads.append((a, alloc.name, a.nbytes))
        elif (alloc.name, a.nbytes) not in pinned:
            pinned.add((alloc.name, a.nbytes))
            enc.solver.background.extend(_initializer(alloc, a.nbytes))
    trace = enc.trace
    coordinates = {v.decl().name() for v in trace.coords.values() if not z3.is_bv_value(v)}
    private = {v.decl().name() for v in trace.thread_vars} - coordinates
    facts: list[Bool] = []
    for s in settled.stored:
        load = s.load
        assert load.value is not None
        tid = [v for k, v in trace.coords.items() if k.startswith("tid") and not z3.is_bv_value(v)]
        to_c: list[tuple[Term, Term]] = [(v, c) for v, (c, _) in zip(tid, s.coords, strict=True)]
        # C's own private values (its loads, loop state) are fresh: unknown state like A's.
        mentioned: dict[str, z3.ExprRef] = {}
        for w in s.stores:
            for t in (w.guard, w.addr, w.stored):
                if t is not None:
                    mentioned.update(constant_names(t))
        copies: list[Term] = []
        for name, v in sorted(mentioned.items()):
            if name in private and (z3.is_bv(v) or z3.is_bool(v)):
                fresh = f"{name.replace('@A', '')}.src{load.index}@A"
                copy: Term = z3.BitVec(fresh, v.size()) if z3.is_bv(v) else z3.Bool(fresh)
                to_c.append((v, copy))
                copies.append(copy)
                enc.abstract |= {copy.decl().name(), copy.decl().name().replace("@A", "@B")}
        c = Substitution(to_c)
        options = [
            z3.And(c(w.guard), c(w.addr) == load.addr, c(w.stored) == load.value)
            for w in s.stores
            if w.stored is not None
        ]
        fact = z3.Implies(load.guard, z3.And(*(z3.ULT(v, n) for v, n in s.coords), z3.Or(options)))
        for v, n in s.coords:
            enc.solver.limits[v.decl().name()] = n
            enc.solver.limits[v.decl().name().replace("@A", "@B")] = n
        renamed = [(v, z3.Const(v.decl().name().replace("@A", "@B"), v.sort())) for v in copies]
        b = enc.b(fact)
        facts += [fact, z3.substitute(b, *renamed) if renamed else b]
    enc.solver.background.extend(facts)


def _table(name: str, bits: int) -> z3.FuncDeclRef[BitVec]:
    """The contents of the ``.const`` variable ``name`` read ``bits`` wide, by address."""
    return z3.Function(f"{name}.u{bits}", z3.BitVecSort(64), z3.BitVecSort(bits))


def _initializer(alloc: Allocation, nbytes: int) -> list[Bool]:
    """``f(address) == word`` for every ``nbytes`` word of a ``.const`` variable's initializer
    (none for a table past MAX_CONSTANT_ELEMENTS words: its loads stay unknown state)."""
    data = alloc.init or bytes(alloc.size)
    if len(data) // nbytes > MAX_CONSTANT_ELEMENTS:
        return []
    bits = 8 * nbytes
    f = _table(alloc.name, bits)
    return [
        f(z3.BitVecVal(alloc.base + off, 64))
        == int.from_bytes(data[off : off + nbytes], "little") % (1 << bits)
        for off in range(0, len(data) - nbytes + 1, nbytes)
    ]


def _lowest(enc: Encoding, a: Access) -> int:
    span = enc.span(a.addr)
    if span is not None:
        return span[0]
    base = _addend(z3.simplify(a.addr))
    return base if base is not None else -1
