"""The z3 checks of a kernel for every launch in a range: block and grid sizes as variables.

The two-thread encoding of :mod:`karyamorph.model.check.checker`, with ``%ntid`` and ``%nctaid``
as z3 variables (:mod:`karyamorph.model.check.launches`) instead of numbers: the thread ids were
symbolic already, now their bounds are too, and so is every term the kernel computes from the
launch (``%ctaid.x * %ntid.x + %tid.x``, ``%nwarpid``). A proof then holds for every launch the
variables may take. Where the symbolic encoding is coarser than the one of a fixed launch (it has
no sweep over concrete warps for same-value stores), it only refutes more, and every refutation
is checked again at its own concrete launch by :func:`~karyamorph.model.check.checker.check`,
whose witness (replayed on the interpreter) is the one reported. A loop whose trip count the
launch decides is no longer unrolled concretely: where the explorer had to cut it, the verdict is
``unknown`` with the loop's line, never ``proved``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence

import z3

from karyamorph.isa import ast
from karyamorph.kernel.spec import LaunchRanges
from karyamorph.kernel.tensormap import TensorMap
from karyamorph.model.check.accesses import Trace, TwoThreadLog, dim3, explore, trace_layout, warpgroups
from karyamorph.model.check.asynccopies import track_copies
from karyamorph.model.check.caveats import apply_race_caveats, race_caveats
from karyamorph.model.check.checker import CHECKS, PLANS, check
from karyamorph.model.check.clusters import any_launch_reason
from karyamorph.model.check.encoding import Encoding
from karyamorph.model.check.explore import Explorer
from karyamorph.model.check.intquery import OutOfTime
from karyamorph.model.check.launches import AXES, Dim3, SymbolicLaunch, symbolic_launch
from karyamorph.model.check.launchsolver import LaunchProducts, LaunchSolver
from karyamorph.model.check.loops import counted_loops
from karyamorph.model.check.mbarrierphase import track_bulk_copies
from karyamorph.model.check.properties import cut_reason
from karyamorph.model.check.sweep import MAX_THREADS
from karyamorph.model.check.symexec import SymExec, Unsupported, as_const
from karyamorph.model.check.terms import constant_names
from karyamorph.model.check.verdict import Replay, Verdict, Witness
from karyamorph.model.check.witnesses import UserTerms
from karyamorph.model.interp.program import Program, prepare
from karyamorph.model.semantics.simt_machine import SCHEDULING, Machine

__all__ = ["check_any_launch", "is_proved", "proved_blocks"]

Dim = int | tuple[int, ...]
# A refutation is looked for again among launches of at most this many blocks first: its
# witness then replays on the interpreter in seconds (a race replay steps every thread).
SMALL_GRID = 2
# Seconds a property may spend looking for a refutation where a cut loop rules out a proof.
CUT_SEARCH_S = 5.0


def cut_unknown(cut: str) -> str:
    """Why a property of a kernel with a cut loop is unknown for a symbolic launch."""
    return f"{cut} (their trip count may depend on the launch, so no bound k covers every launch)"


def check_any_launch(
    module: ast.Module,
    entry: str,
    machine: Machine,
    launch: tuple[Dim, Dim, int],
    buffers: dict[str, int],
    scalars: dict[str, int | float],
    ranges: LaunchRanges | None = None,
    *,
    properties: Sequence[str] = ("bounds", "race", "barrier"),
    scheduling: str | None = None,
    unroll: int = 8,
    timeout_ms: int = 10_000,
    deadline_s: float | None = None,
    strict: bool = False,
    names: UserTerms | None = None,
    tensormaps: Mapping[str, TensorMap] | None = None,
) -> list[Verdict]:
    """Prove or refute properties of ``entry`` for every launch in ``ranges``.

    Parameters
    ----------
    module, entry, machine, buffers, scalars, properties, scheduling, unroll, timeout_ms, strict, names
        As for :func:`karyamorph.model.check.checker.check`.
    tensormaps
        As for :func:`~karyamorph.model.check.checker.check`: like the buffers, the spec's maps
        whatever the launch.
    launch
        The spec's ``(grid, block, dynamic_shared_bytes)``: which axes the kernel is launched
        with, its grid when ``ranges.grid`` is None, and its dynamic shared memory.
    ranges
        The blocks (thread counts, optionally whole multiples) and grids (block counts) to
        cover (default: 1..1024 x 1..65535); ``.reqntid`` and ``.maxntid`` of the entry narrow
        the blocks.
    deadline_s
        Time budget for the whole check (the confirmation of refutations included); what is
        undecided when it runs out is unknown.

    Returns
    -------
    list of Verdict
        One per property, in the order asked. A proved verdict's reason names the ranges; a
        refuted one is the verdict of :func:`~karyamorph.model.check.checker.check` at the
        launch the witness needs, with that launch in ``Witness.launch``.

    Raises
    ------
    UnmodeledError
        The kernel uses instructions outside the machine's set.
    ValueError
        An unknown property or scheduling.

    Notes
    -----
    When no block of ``ranges`` is one the kernel accepts (``.reqntid`` outside it), every
    verdict is unknown with that reason. A range of one launch (a ``.reqntid`` block at the
    spec's grid) is that launch's check, every rule of :func:`check` with it.
    """
    sched = scheduling or machine.scheduling
    if sched not in SCHEDULING:
        raise ValueError(f"scheduling must be one of {SCHEDULING}, got {sched!r}")
    bad = [p for p in properties if p not in CHECKS]
    if bad:
        raise ValueError(f"unknown properties {', '.join(bad)} (known: {', '.join(CHECKS)})")
    ranges = ranges or LaunchRanges("any")
    t0 = time.perf_counter()
    deadline = None if deadline_s is None else t0 + deadline_s
    program = prepare(module, entry, machine)
    clustered = any_launch_reason(program)
    if clustered is not None:  # CTAs of a cluster share their shared memory: not encoded
        return [Verdict(p, "unknown", reason=clustered) for p in properties]
    fn = module.entry(entry)
    grid, block = dim3(launch[0], "grid"), dim3(launch[1], "block")
    try:
        space = symbolic_launch(ranges, grid, block, fn.attribute("reqntid"), fn.attribute("maxntid"))
    except ValueError as exc:  # no block of the range is one the kernel accepts
        return [Verdict(p, "unknown", reason=f"no launch to check: {exc}") for p in properties]
    maps = dict(tensormaps or {})
    args = _Args(
        module, entry, machine, launch, buffers, scalars, sched, unroll, timeout_ms, strict, names, maps
    )
    if not space.variables:
        return _one_launch(args, space, properties, deadline)
    verdicts = _symbolic(program, args, space, properties, t0, deadline)
    out = []
    for v in verdicts:
        if v.verdict == "refuted" and v.witness is not None:
            v = _confirm(args, space, ranges, v, t0, deadline)
        out.append(v)
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class _Args:
    """What every check of one any-launch run is given."""

    module: ast.Module
    entry: str
    machine: Machine
    launch: tuple[Dim, Dim, int]
    buffers: dict[str, int]
    scalars: dict[str, int | float]
    scheduling: str
    unroll: int
    timeout_ms: int
    strict: bool
    names: UserTerms | None
    tensormaps: dict[str, TensorMap]


def _one_launch(
    args: _Args, space: SymbolicLaunch, properties: Sequence[str], deadline: float | None
) -> list[Verdict]:
    """The verdicts of a range that holds one launch (a ``.reqntid`` block at the spec's grid):
    that launch's check, its proofs naming the range and its witnesses the launch."""
    grid, block = _fixed(space.nctaid), _fixed(space.ntid)
    left = None if deadline is None else max(deadline - time.perf_counter(), 0.001)
    verdicts = check(
        args.module, args.entry, args.machine, (grid, block, args.launch[2]), args.buffers, args.scalars,
        properties=properties, scheduling=args.scheduling, unroll=args.unroll,
        timeout_ms=args.timeout_ms, deadline_s=left, strict=args.strict, names=args.names,
        tensormaps=args.tensormaps,
    )  # fmt: skip
    out = []
    for v in verdicts:
        if v.verdict in ("proved", "proved-up-to-k"):
            covered = (f"for every {space.ranges}", v.reason)
            v = dataclasses.replace(v, reason="; ".join(x for x in covered if x))
        elif v.witness is not None:
            v = dataclasses.replace(v, witness=dataclasses.replace(v.witness, launch=(grid, block)))
        out.append(v)
    return out


def _fixed(extents: tuple[z3.BitVecRef, z3.BitVecRef, z3.BitVecRef]) -> Dim3:
    """The numbers of a launch's extents that are all fixed."""
    out = []
    for n in extents:
        value = as_const(n)
        assert isinstance(value, int) and not isinstance(value, bool), n
        out.append(value)
    return out[0], out[1], out[2]


def _symbolic(
    program: Program,
    args: _Args,
    space: SymbolicLaunch,
    properties: Sequence[str],
    t0: float,
    deadline: float | None,
) -> list[Verdict]:
    """The verdicts of the symbolic encoding; a refutation's witness names the launch among its
    inputs (``%ntid.x`` ...)."""

    def spent() -> float:
        return time.perf_counter() - t0

    def unknown(reason: str) -> list[Verdict]:
        return [Verdict(p, "unknown", reason=reason, seconds=spent()) for p in properties]

    try:
        trace = _trace(program, args, space, deadline)
    except Unsupported as e:
        return unknown(f"not encodable for a symbolic launch: {e}")
    except OutOfTime:
        return unknown("time budget ran out while exploring the kernel")
    # Which copies the race encoding orders itself (their counters exact along the trace).
    copies_ordered = track_copies(trace)
    bulk_left = track_bulk_copies(trace) if "race" in properties else {}  # (only races ask)
    enc = Encoding.of(trace, args.scheduling, args.timeout_ms, deadline)
    enc.strict = args.strict
    enc.stores = None  # the same-value stores of a warp are proved per concrete launch only
    if enc.sweep is not None and enc.sweep.size > MAX_THREADS:
        enc.sweep = None
    enc.solver.limits.update(space.limits(trace.coords))
    old = enc.solver
    enc.solver = LaunchSolver(old.background, old.limits, old.timeout_ms, old.deadline)
    enc.solver.ints = LaunchProducts(enc.solver.limits)
    facts = [*space.constraints, *space.coordinate_limits(trace.coords)]
    enc.solver.background += facts + [enc.b(f) for f in space.coordinate_limits(trace.coords)]
    plans = {p: PLANS[p](enc) for p in properties}
    enc.planned = sum(len(q) for q in plans.values()) + (1 if trace.cuts else 0)
    try:
        cut = cut_reason(enc)
    except OutOfTime:
        return unknown(f"time budget ran out after {enc.done} of {enc.planned} queries")
    # A cut loop whose continuation reads the launch: its depth grows with the launch, so k
    # iterations prove nothing about every launch. Other cut loops are proved up to k, as for
    # one launch.
    names = set(space.variables)
    launch_cut = bool(cut) and any(names & set(constant_names(c.cond)) for c in trace.cuts)
    caveats = race_caveats(program, args.scheduling).encoded(copies_ordered, False, bulk_left)
    notes = [f"for every {space.ranges}"]
    notes += [f"loop at line {n}: all iterations" for n in sorted(set(trace.abstracted))]
    notes += [f"assuming {s}" for s in trace.stated]
    if trace.assumptions:
        notes.append("assuming every loop terminates")
    inputs = sorted(set(trace.inputs) - names)
    if inputs:
        notes.append(f"for every value of {', '.join(inputs)}")
    out = []
    base = time.perf_counter() - t0  # the trace, its encoding and the plans: every property's
    for p in properties:
        t1 = time.perf_counter()

        def finish(
            prop: str,
            verdict: str,
            witness: Witness | None,
            reason: str,
            replay: Replay | None = None,
        ) -> Verdict:
            k = None
            if verdict in ("proved", "proved-up-to-k") and launch_cut:
                return Verdict(prop, "unknown", reason=cut_unknown(cut), seconds=spent())
            if verdict == "proved" and cut:
                verdict, k, reason = "proved-up-to-k", args.unroll, cut
            if verdict in ("proved", "proved-up-to-k"):
                reason = "; ".join(x for x in (reason, *notes) if x)
            return Verdict(prop, verdict, k, witness, reason, spent(), replay)

        if launch_cut:  # no proof can come of it: look for a refutation, briefly
            brief = time.perf_counter() + CUT_SEARCH_S
            enc.solver.deadline = brief if deadline is None else min(deadline, brief)
        try:
            v = CHECKS[p](enc, plans[p], finish)
        except OutOfTime:
            why = cut_unknown(cut) if launch_cut else "time budget ran out"
            v = Verdict(p, "unknown", reason=why, seconds=spent())
        if p == "race" and v.verdict in ("proved", "proved-up-to-k"):
            v = apply_race_caveats(v, caveats, space.block_max, args.machine.warp_size)
        out.append(dataclasses.replace(v, seconds=base + time.perf_counter() - t1))
    return out


def _trace(program: Program, args: _Args, space: SymbolicLaunch, deadline: float | None) -> Trace:
    """Thread ``A``'s trace with the launch's extents as variables (the trace of
    :func:`~karyamorph.model.check.accesses.build_trace`, whose extents are numbers)."""
    layout, free = trace_layout(
        program, args.module, args.buffers, args.scalars, int(args.launch[2]), args.tensormaps
    )
    coords: dict[str, z3.BitVecRef] = {}
    for name, top in (("tid", space.block_max), ("ctaid", space.grid_max)):
        for axis, n in zip(AXES, top, strict=True):
            coords[f"{name}.{axis}"] = z3.BitVecVal(0, 32) if n == 1 else z3.BitVec(f"{name}.{axis}@A", 32)
    specials = {f"%{k}": v for k, v in coords.items()}
    (nx, ny, _), ws = space.ntid, args.machine.warp_size
    for name, extents in (("ntid", space.ntid), ("nctaid", space.nctaid)):
        for axis, t in zip(AXES, extents, strict=True):
            specials[f"%{name}.{axis}"] = t
    linear = coords["tid.x"] + coords["tid.y"] * nx + coords["tid.z"] * nx * ny
    specials["%laneid"] = z3.simplify(z3.URem(linear, ws))
    specials["%warpid"] = z3.simplify(z3.UDiv(linear, ws))
    threads = space.ntid[0] * space.ntid[1] * space.ntid[2]
    specials["%nwarpid"] = z3.simplify(z3.UDiv(threads + (ws - 1), ws))
    log = TwoThreadLog()
    x = SymExec(program, layout, specials, log)
    block = [n for n in map(as_const, space.ntid) if isinstance(n, int)]
    wgmma = None
    if len(block) == len(space.ntid):  # wgmma takes whole warpgroups: a block of one size
        wgmma = warpgroups(x, log, math.prod(block), ws, free)
    ex = Explorer(
        x,
        unroll=args.unroll,
        max_steps=200_000,
        loops=counted_loops(program.decoded, program.labels),
        fresh=log.fresh,
        mark=log.mark,
        truncate=log.truncate,
        deadline=deadline,
        opaque_products=True,
        bounds=LaunchProducts(space.limits(coords)),
        handler=wgmma,
    )
    explore(ex, log, program, wgmma)
    log.thread_vars += [v for v in coords.values() if not z3.is_bv_value(v)]
    # The launch's extents are inputs shared by both threads: a witness reads them back.
    return Trace(
        events=log.events,
        cuts=ex.cuts,
        abstracted=ex.abstracted,
        specials=specials,
        coords=coords,
        thread_vars=log.thread_vars,
        abstract=log.abstract,
        inputs={**free, **space.variables},
        layout=layout,
        grid=space.grid_max,
        block=space.block_max,
        warp_size=ws,
        latches=ex.latches,
        assumptions=ex.exits,
        stated=ex.stated,
        mbarriers=log.mbarriers,
    )


def _confirm(
    args: _Args,
    space: SymbolicLaunch,
    ranges: LaunchRanges,
    v: Verdict,
    t0: float,
    deadline: float | None,
) -> Verdict:
    """The verdict of :func:`check` at the launch a symbolic refutation names (after looking for
    one of few blocks), or unknown when that check does not refute it."""
    assert v.witness is not None
    at = _launch_of(v.witness, space)
    if ranges.grid is not None and space.variables and max(at[0]) > 1 and ranges.grid[0] <= SMALL_GRID:
        small = dataclasses.replace(ranges, grid=(ranges.grid[0], min(ranges.grid[1], SMALL_GRID)))
        program = prepare(args.module, args.entry, args.machine)
        fn = args.module.entry(args.entry)
        little = symbolic_launch(
            small, dim3(args.launch[0], "grid"), dim3(args.launch[1], "block"),
            fn.attribute("reqntid"), fn.attribute("maxntid"),
        )  # fmt: skip
        again = _symbolic(program, args, little, (v.property,), time.perf_counter(), deadline)[0]
        if again.verdict == "refuted" and again.witness is not None:
            at = _launch_of(again.witness, little)
    grid, block = at
    # The grid the witness's blocks need, when the range allows it: fewer threads to replay.
    fewest = _fewest_blocks(v.witness, space, grid, ranges)
    concrete = None
    for g in dict.fromkeys((fewest, grid)):
        left = None if deadline is None else max(deadline - time.perf_counter(), 0.001)
        concrete = check(
            args.module, args.entry, args.machine, (g, block, args.launch[2]), args.buffers, args.scalars,
            properties=(v.property,), scheduling=args.scheduling, unroll=args.unroll,
            timeout_ms=args.timeout_ms, deadline_s=left, strict=args.strict, names=args.names,
            tensormaps=args.tensormaps,
        )[0]  # fmt: skip
        if concrete.verdict == "refuted" and concrete.witness is not None:
            w = dataclasses.replace(concrete.witness, launch=(g, block))
            return dataclasses.replace(concrete, witness=w, seconds=time.perf_counter() - t0)
    assert concrete is not None
    seconds = time.perf_counter() - t0
    where = f"grid {_dims(grid)} block {_dims(block)}"
    said = concrete.reason or concrete.verdict
    return Verdict(
        v.property,
        "unknown",
        reason=f"the symbolic launch encoding found a violation at {where}, which the check of "
        f"that launch does not confirm ({said})",
        seconds=seconds,
    )


def _fewest_blocks(w: Witness, space: SymbolicLaunch, grid: Dim3, ranges: LaunchRanges) -> Dim3:
    """The smallest grid that holds the witness's blocks on its symbolic axes (``grid`` where
    that falls outside the range)."""
    if ranges.grid is None:
        return grid
    need = [max(t.block[i] for t in w.threads) + 1 for i in range(3)]
    out = tuple(need[i] if not z3.is_bv_value(space.nctaid[i]) else grid[i] for i in range(3))
    lo, hi = ranges.grid
    return (out[0], out[1], out[2]) if lo <= out[0] * out[1] * out[2] <= hi else grid


def _launch_of(w: Witness, space: SymbolicLaunch) -> tuple[Dim3, Dim3]:
    """``(grid, block)`` of a symbolic witness (its inputs hold the launch's extents)."""
    return SymbolicLaunch.from_values(dict(w.inputs), space)


def _dims(d: Dim3) -> str:
    return f"({d[0]},{d[1]},{d[2]})"


def proved_blocks(
    module: ast.Module,
    entry: str,
    machine: Machine,
    launch: tuple[Dim, Dim, int],
    buffers: dict[str, int],
    scalars: dict[str, int | float],
    candidates: Sequence[int],
    *,
    grid: tuple[int, int] | None = None,
    properties: Sequence[str] = ("bounds", "race", "barrier"),
    deadline_s: float | None = None,
    tensormaps: Mapping[str, TensorMap] | None = None,
) -> dict[int, list[Verdict]]:
    """For each candidate block size (threads, launched 1-D on x), the verdicts of the kernel at
    that block for every grid in ``grid`` (None: the spec's grid).

    A candidate is proved when every verdict is ``proved`` or ``proved-up-to-k`` (a loop
    unrolled whose depth the launch does not decide, as the model stage counts it:
    :func:`is_proved`); the others say why not (a refuted one has the launch that breaks it, an
    unknown one its reason). ``.reqntid`` rules out every other block: those candidates get an
    unknown verdict that says so.
    """
    out: dict[int, list[Verdict]] = {}
    start = time.perf_counter()
    for b in candidates:
        left = None if deadline_s is None else max(deadline_s - (time.perf_counter() - start), 0.001)
        out[b] = check_any_launch(
            module, entry, machine, (launch[0], b, launch[2]), buffers, scalars,
            LaunchRanges("any", (b, b), 1, grid), properties=properties, deadline_s=left,
            tensormaps=tensormaps,
        )  # fmt: skip
    return out


def is_proved(verdicts: Sequence[Verdict]) -> bool:
    """Whether every verdict is ``proved`` or ``proved-up-to-k``: a block size that is kept."""
    return all(v.verdict in ("proved", "proved-up-to-k") for v in verdicts)
