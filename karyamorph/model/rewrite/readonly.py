"""The read-only side condition of a load rewrite: the model's accesses (one symbolic thread of
the launch, :func:`karyamorph.model.check.accesses.build_trace`) say which buffers the edited
loads may read, and whether any store or atomic of the kernel may write one of them.

Both questions are over-approximated: a thread's guard is the path condition the symbolic
executor found, abstracted loops read free values, and z3 answers "may". A buffer that may be
both read by an edited load and written is refused, with the writing thread and byte offset as
the witness. Distinct pointer parameters are distinct allocations here (no aliasing), as in
every check of the model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import z3

from karyamorph.isa import ast
from karyamorph.model.check.accesses import Access, Dim3, build_trace, coord_constraints
from karyamorph.model.check.intquery import OutOfTime
from karyamorph.model.check.symexec import Allocation, Unsupported
from karyamorph.model.check.verdict import ThreadId, Witness
from karyamorph.model.interp.program import Program
from karyamorph.model.semantics.symbolic import Bool

# Spaces an access may reach a pointer parameter's buffer through (a generic address may be global).
_GLOBAL_REACH = ("global", "generic")


@dataclass(frozen=True, slots=True)
class ReadOnlyVerdict:
    """Whether the edited loads read only buffers the kernel does not write.

    Attributes
    ----------
    holds : bool
        True when no edited load may read a written buffer.
    reason : str
        Which buffers the loads read (when it holds), or what writes one of them.
    witness : Witness or None
        The writing thread, the store's and the load's lines, the buffer and byte offset.
    """

    holds: bool
    reason: str
    witness: Witness | None = None


def check_read_only(
    program: Program,
    module: ast.Module,
    launch: tuple[Dim3, Dim3, int],
    buffers: dict[str, int],
    scalars: dict[str, int | float],
    lines: frozenset[int],
    *,
    warp_size: int = 32,
    unroll: int = 8,
    timeout_ms: int = 10_000,
) -> ReadOnlyVerdict:
    """Check that the loads at PTX ``lines`` read no buffer a store or atomic of the kernel
    writes, for ``launch`` (``(grid, block, shared_bytes)``) with the given buffer sizes and
    scalar values."""
    grid, block, shared = launch
    try:
        trace = build_trace(program, module, grid, block, warp_size, buffers, scalars, shared, unroll,
                            deadline=time.perf_counter() + timeout_ms / 1000)  # fmt: skip
    except (Unsupported, OutOfTime) as exc:
        return ReadOnlyVerdict(False, f"the model cannot enumerate the kernel's accesses: {exc}")
    within = coord_constraints(trace.coords, grid, block)
    accesses = [e for e in trace.events if isinstance(e, Access) and e.space in _GLOBAL_REACH]
    loads = [e for e in accesses if not e.write and not e.atomic and e.line in lines]
    writes = [e for e in accesses if e.write or e.atomic]
    read: list[str] = []
    for alloc in trace.layout.of_space("global"):
        if alloc.name not in buffers:
            continue
        reader = next((e for e in loads if _reaches(e, alloc, within, timeout_ms) is not False), None)
        if reader is None:
            continue
        read.append(alloc.name)
        for w in writes:
            got = _reaches(w, alloc, within, timeout_ms)
            if got is False:
                continue
            if got is None:
                undecided = f"{w.text} at line {w.line} writes {alloc.name}"
                return ReadOnlyVerdict(False, f"z3 could not decide whether {undecided}, which "
                                       f"{reader.text} at line {reader.line} reads")  # fmt: skip
            threads = (_thread(got, trace.coords),)
            offset = got.eval(w.addr, model_completion=True).as_long() - alloc.base
            witness = Witness(
                threads, (w.line, reader.line), (w.text, reader.text), "global", alloc.name, offset
            )
            kind = "atomic" if w.atomic else "store"
            return ReadOnlyVerdict(False, f"{alloc.name} is read by {reader.text} at line {reader.line} and "
                                   f"written by the {kind} {w.text} at line {w.line}", witness)  # fmt: skip
    return ReadOnlyVerdict(
        True, f"the edited loads read {', '.join(read) or 'no buffer'}, which nothing writes"
    )


def _reaches(
    e: Access, alloc: Allocation, within: list[Bool], timeout_ms: int
) -> z3.ModelRef | Literal[False] | None:
    """A model where ``e`` touches ``alloc`` (its first byte inside it), False when it cannot,
    None when z3 gives up."""
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*within, e.guard, z3.UGE(e.addr, alloc.base), z3.ULT(e.addr, alloc.base + alloc.size))
    r = s.check()
    if r == z3.unsat:
        return False
    return s.model() if r == z3.sat else None


def _thread(m: z3.ModelRef, coords: dict[str, z3.BitVecRef]) -> ThreadId:
    def at(name: str) -> int:
        return int(m.eval(coords[name], model_completion=True).as_long())

    block = (at("ctaid.x"), at("ctaid.y"), at("ctaid.z"))
    return ThreadId(block, (at("tid.x"), at("tid.y"), at("tid.z")))
