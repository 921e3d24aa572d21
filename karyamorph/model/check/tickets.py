"""Atomic counters as ticket dispensers: what ``atom.add`` of a constant and ``atom.inc`` return
on a location no other access touches, in the two-thread encoding.

The two-thread abstraction leaves an atomic's result free, so ``slot = atomicAdd(count, 1);
out[slot] = v`` is neither in bounds nor race free to it. Yet when one atomic instruction, run at
most once per thread, is all that touches its location, the atomics on that location are
serialised in some order: the thread served k-th gets ``init + k * c`` (``atom.add`` of the
constant ``c``, modulo the width) or ``init + k`` while that stays at most the bound
(``atom.inc``), ``init`` being the location's content at launch, and distinct threads are served
at distinct k in ``0 .. T - 1`` for the ``T`` threads that may execute the atomic there (counted
for every thread of the launch, or of a block for shared memory). Each thread's result becomes
that term of its own free ``k``; the solver's background says ``k < T`` and that two distinct
threads at one location hold distinct ``k`` (and see one ``init``). A counterexample may hinge
on the ``init`` of a counter at a fixed element of a buffer argument (a witness input,
``count[0]``, which the replay writes; pinned to the spec's content where its init fixes that:
``zeros``, ``ones``, ``arange``) and on that of a block's shared counter nothing sets, as
zero only (what the replay's shared memory holds); any other ``init`` is abstract. An atomic
scoped to a block (``atom.cta``) on global memory serialises only its own block's threads: it
is refused, like an atomic in a loop or on a location a load, store or other atomic touches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np
import z3

from karyamorph.model.check.accesses import Access, Trace
from karyamorph.model.check.encoding import Counter, Encoding, Substitution, substitute_trace
from karyamorph.model.check.intquery import IntTranslation, NotLinear
from karyamorph.model.check.memvalues import variable_of
from karyamorph.model.check.sweep import Sweep
from karyamorph.model.check.symexec import SLOT, as_const, provenance
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.interp.program import Program
from karyamorph.model.semantics.symbolic import BitVec, Bool

TICKET_OPS = ("add", "inc")


@dataclass(frozen=True, slots=True)
class Ticket:
    """The result of the atomic at ``line`` modeled as ticket ``k`` of ``threads`` (thread A's
    ``k``) and ``init``, thread A's content of its location at launch; ``per_block``: the
    location is a block's own (shared memory); ``element``: the element that ``init`` is, as a
    witness names it, with the element's bytes (None: ``init`` is abstract); ``start``: that
    element's content at launch where the spec fixes it (None: the witness's to choose)."""

    line: int
    access: Access
    k: BitVec
    threads: int
    init: BitVec
    per_block: bool
    element: tuple[str, int] | None = None
    start: int | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the atomic at ``line`` keeps a free result."""

    line: int
    reason: str


def _loop_pcs(program: Program) -> set[int]:
    """Instructions inside a cycle of the control-flow graph (run more than once per thread)."""
    cfg = program.cfg
    looping = {b for c in nx.strongly_connected_components(cfg.graph) if len(c) > 1 for b in c}
    looping |= {b for b in cfg.graph.nodes if cfg.graph.has_edge(b, b)}
    return {pc for pc, b in enumerate(cfg.block_of) if b in looping}


def _span(ints: IntTranslation, addr: BitVec) -> tuple[int, int] | None:
    try:
        _, lo, hi = ints.value(z3.simplify(addr))
    except NotLinear:
        return None
    return lo, hi


def _scope(trace: Trace, ints: IntTranslation, acc: Access) -> tuple[int, int] | None:
    """The byte window ``[lo, hi)`` of the allocation ``acc`` lies in (a global window, or one
    shared variable), or None when that is not one allocation."""
    if acc.space == "global":
        k = provenance(acc.addr)
        return None if k is None else (k << 32, (k + 1) << 32)
    span = _span(ints, acc.addr)
    if span is None:
        return None
    alloc, _ = trace.layout.find(acc.space, span[0])
    if alloc is None or span[1] >= alloc.base + SLOT:
        return None
    return alloc.base, alloc.base + SLOT


def _touches(trace: Trace, ints: IntTranslation, acc: Access, window: tuple[int, int]) -> bool:
    """Whether ``acc`` may touch bytes of ``window`` (a window of its own space); an access
    based on another shared variable stays in it (as one based on another buffer does)."""
    if acc.space == "global":
        k = provenance(acc.addr)
        return k is None or window[0] <= k << 32 < window[1]
    var = variable_of(trace.layout, ints, acc.space, acc.addr)
    if var is not None:
        return window[0] <= var.base < window[1]
    span = _span(ints, acc.addr)
    return span is None or (span[0] < window[1] and span[1] + acc.nbytes > window[0])


def _element(trace: Trace, acc: Access) -> tuple[str, int, int] | None:
    """``(variable[index], bytes, byte offset)`` of an atomic at one fixed element of a buffer
    argument (whose content at launch the replay sets) or of a ``.shared`` variable no access
    initialises (whose content at launch is whatever the memory held: zeros on the interpreter,
    see :meth:`Encoding.counted_from_zero`); None for anything else (a module variable)."""
    at = as_const(z3.simplify(acc.addr))
    if acc.space not in ("global", "shared") or not isinstance(at, int) or isinstance(at, bool):
        return None
    alloc, off = trace.layout.find(acc.space, at)
    if alloc is None or alloc.init is not None or off % acc.nbytes or off + acc.nbytes > alloc.size:
        return None
    return f"{alloc.name}[{off // acc.nbytes}]", acc.nbytes, off


def _content(data: np.ndarray, off: int, nbytes: int) -> int | None:
    """The unsigned little-endian value of ``data``'s bytes ``[off, off + nbytes)`` (None past
    its end)."""
    raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    if off + nbytes > raw.size:
        return None
    return int.from_bytes(raw[off : off + nbytes].tobytes(), "little")


def _interval(e: Access) -> int | None:
    """The barrier interval of ``e`` when it is one constant for every thread."""
    epoch = z3.simplify(e.epoch) if e.epoch is not None else None
    return int(epoch.as_long()) if epoch is not None and z3.is_bv_value(epoch) else None


def _initialised(sweep: Sweep, trace: Trace, acc: Access, others: list[Access]) -> int | None:
    """The constant a block's shared counter holds when its atomics start: every other access
    to its location is a load, or a store of that one constant to its one address in an earlier
    barrier interval, and in every block some thread certainly makes such a store (``count =
    0; __syncthreads(); atomicAdd(&count, 1)``). None otherwise. (A global counter is not:
    barriers do not order the blocks.)"""
    at, mine = as_const(acc.addr), _interval(acc)
    if acc.space != "shared" or not isinstance(at, int) or mine is None:
        return None
    values: set[int] = set()
    sure = np.zeros(sweep.size, bool)
    for o in others:
        if not o.write:
            continue  # a load leaves the content as it is
        value = as_const(o.stored) if o.stored is not None else None
        before = _interval(o)
        if o.atomic or as_const(o.addr) != at or o.nbytes != acc.nbytes or before is None or before >= mine:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        values.add(value)
        may, may_not = sweep.truth(o.guard)
        sure |= may & ~may_not
    if len(values) != 1:
        return None
    blocks = 1 if sweep.blockwide else trace.grid[0] * trace.grid[1] * trace.grid[2]
    if len(np.unique(sweep.block_of[sure])) != blocks:
        return None  # some block may start counting from whatever its memory held
    return values.pop()


def _threads(sweep: Sweep, trace: Trace, acc: Access) -> int:
    """An upper bound on the threads that execute ``acc`` at one location: those whose guard may
    hold, in the launch (global memory) or in the fullest block (shared memory)."""
    may = sweep.truth(acc.guard)[0]
    nblocks = trace.grid[0] * trace.grid[1] * trace.grid[2]
    if acc.space == "shared" or sweep.blockwide:
        per_block = int(np.bincount(sweep.block_of[may].astype(np.int64)).max()) if may.any() else 0
        return per_block if acc.space == "shared" else per_block * nblocks
    return int(may.sum())


def issue(
    trace: Trace, program: Program, contents: Mapping[str, np.ndarray] | None = None
) -> tuple[list[Ticket], list[Refusal]]:
    """Replace, in ``trace``, the results of the atomics that qualify as ticket dispensers by
    their ticket terms (before the trace is encoded: the new ``k`` are thread variables).

    ``contents``: global buffers (by parameter name) whose content at launch the spec fixes."""
    contents = contents or {}
    accesses = [e for e in trace.events if isinstance(e, Access)]
    limits: dict[str, int] = {}
    for name, dims in (("tid", trace.block), ("ctaid", trace.grid)):
        for axis, n in zip("xyz", dims, strict=True):
            limits[f"{name}.{axis}@A"] = n
    ints = IntTranslation(limits)
    sweep = Sweep.of(trace)
    looping = _loop_pcs(program)
    pcs: dict[int, list[int]] = {}
    for pc, d in enumerate(program.decoded):
        pcs.setdefault(d.line, []).append(pc)
    tickets: list[Ticket] = []
    refused: list[Refusal] = []
    pairs: list[tuple[BitVec, BitVec]] = []
    for acc in accesses:
        if not acc.atomic or acc.op not in TICKET_OPS or acc.value is None or acc.operand is None:
            continue
        if acc.space not in ("global", "shared") or ".f" in acc.text or z3.is_false(acc.guard):
            continue
        step = as_const(acc.operand)
        if not isinstance(step, int) or isinstance(step, bool):
            refused.append(
                Refusal(acc.line, f"the atomic at line {acc.line} adds a value that is not a constant")
            )
            continue
        if (
            any(pc in looping for pc in pcs.get(acc.line, []))
            or sum(1 for a in accesses if a.line == acc.line) != 1
        ):
            refused.append(
                Refusal(acc.line, f"the atomic at line {acc.line} may run more than once per thread")
            )
            continue
        blocks = trace.grid[0] * trace.grid[1] * trace.grid[2]
        if (
            acc.space == "global"
            and blocks > 1
            and any(f".{s}." in f"{acc.text}." for s in ("cta", "cluster"))
        ):
            refused.append(
                Refusal(acc.line, f"the atomic at line {acc.line} is atomic only within its block or cluster")
            )
            continue
        window = _scope(trace, ints, acc)
        others = [
            a
            for a in accesses
            if window is not None
            and a is not acc
            and a.space == acc.space
            and _touches(trace, ints, a, window)
        ]
        start = _initialised(sweep, trace, acc, others) if others else None
        if window is None or (others and start is None):
            refused.append(
                Refusal(
                    acc.line, f"the location of the atomic at line {acc.line} is touched by other accesses"
                )
            )
            continue
        n = _threads(sweep, trace, acc)
        if n == 0:
            continue
        old = acc.value
        w = old.size()
        alloc, _ = trace.layout.find(acc.space, window[0])
        init: BitVec
        element, fixed = _element(trace, acc), None
        data = contents.get(alloc.name) if acc.space == "global" and alloc is not None else None
        if data is not None and element is not None:
            fixed = _content(data, element[2], element[1])  # the spec's, which the witness names
        if start is not None:
            init = z3.BitVecVal(start, w)
        elif data is not None and fixed is None and not data.any():
            init = z3.BitVecVal(0, w)  # zeros wherever it counts
        else:
            # The location's content at launch: a value per thread, equal for two threads at
            # one location (see serve); a witness's to choose where it is a buffer's element or
            # an unset shared counter (Encoding.counted_from_zero), pinned to the spec's where
            # that fixes it, else unknown state a counterexample may not hinge on.
            init = z3.BitVec(f"atom{acc.line}#init@A", w)
            trace.thread_vars.append(init)
            if element is None:
                trace.abstract.add(init.decl().name())
        k = z3.BitVec(f"ticket{acc.line}#0@A", w)
        trace.thread_vars.append(k)
        if acc.op == "add":
            value = init + k * z3.BitVecVal(step, w)
        else:
            # atom.inc: old + 1 while old < bound, so the k-th result is init + k while that is
            # at most the bound; past it the result stays free.
            wide = z3.ZeroExt(1, init) + z3.ZeroExt(1, k)
            value = z3.If(z3.ULE(wide, z3.BitVecVal(step, w + 1)), init + k, old)
        pairs.append((old, value))
        named = element[:2] if element is not None and not z3.is_bv_value(init) else None
        tickets.append(Ticket(acc.line, acc, k, n, init, acc.space == "shared", named, fixed))
    if pairs:
        substitute_trace(trace, Substitution(pairs))
    return tickets, refused


def serve(enc: Encoding, tickets: list[Ticket]) -> None:
    """Give the encoding's solver what the tickets satisfy: ``k < T`` for both threads; at one
    location (of one block, for shared memory), one content at launch, and distinct ``k`` for
    two distinct threads that both execute the atomic; and the counters whose start a witness
    names (:attr:`Encoding.counters`)."""
    facts: list[Bool] = []
    for t in tickets:
        if t.element is not None:
            key, nbytes = t.element
            if enc.element_bytes().get(key.partition("[")[0], nbytes) == nbytes:
                enc.counters.append(Counter(t.init, key, nbytes, settable=not t.per_block))
            else:  # the buffer's inputs count in another width: the start stays unknown
                enc.abstract |= {t.init.decl().name(), enc.b(t.init).decl().name()}
        if t.start is not None:
            facts += [t.init == t.start, enc.b(t.init) == t.start]
        kb = enc.b(t.k)
        enc.served |= {t.k.decl().name(), kb.decl().name()}
        for v in (t.k, kb):
            enc.solver.limits[v.decl().name()] = t.threads
            facts.append(z3.ULT(v, t.threads))
        acc = t.access
        place = [acc.addr == enc.b(acc.addr), *([enc.same_block()] if t.per_block else [])]
        facts.append(z3.Implies(z3.And(place), t.init == enc.b(t.init)))
        facts.append(z3.Implies(z3.And(acc.guard, enc.b(acc.guard), enc.distinct(), *place), t.k != kb))
    enc.solver.background.extend(facts)


def explain(verdicts: list[Verdict], refused: list[Refusal]) -> list[Verdict]:
    """Verdicts whose undecided reason hinges on an atomic's result, with why that atomic is not
    a ticket dispenser."""
    out = []
    for v in verdicts:
        why = [r.reason for r in refused if f"the atomic at line {r.line} returns" in v.reason]
        if v.verdict == "unknown" and why:
            v = replace(v, reason=f"{v.reason} (not a ticket: {'; '.join(dict.fromkeys(why))})")
        out.append(v)
    return out
