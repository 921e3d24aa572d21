"""The z3 checks of a kernel for one launch: bounds, race and barrier verdicts (public API).

The encoding follows GPUVerify and Faial: two distinct symbolic threads, one trace of predicated
accesses per thread split into barrier intervals, one condition per access (bounds) or per pair
of accesses (race), distinct allocations per pointer parameter, loop variables as free variables
with their range condition for canonical counted loops (unless their concrete trip count is
short) and bounded unrolling otherwise. What depends on the thread ids alone is decided by
evaluating it for every thread (:mod:`karyamorph.model.check.sweep`); the rest is asked in batches
(:mod:`karyamorph.model.check.properties`), as linear integer arithmetic where that translation is
exact (:mod:`karyamorph.model.check.intquery`), as bit-vectors otherwise. Counterexamples are
replayed on the interpreter before they are reported. Equivalence of two kernels lives in
:mod:`karyamorph.model.check.equiv`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np

from karyamorph.isa import ast
from karyamorph.kernel.structs import StructLayout
from karyamorph.kernel.tensormap import TensorMap
from karyamorph.model.check.accesses import build_trace, dim3
from karyamorph.model.check.asynccopies import track_copies
from karyamorph.model.check.caveats import apply_race_caveats, race_caveats
from karyamorph.model.check.clusters import cluster_reason
from karyamorph.model.check.encoding import Encoding
from karyamorph.model.check.equiv import EquivInstance, Side, check_equivalence
from karyamorph.model.check.inputranges import FiniteFloats, InputRange, ValueRange
from karyamorph.model.check.intquery import OutOfTime
from karyamorph.model.check.mbarrierphase import track_bulk_copies
from karyamorph.model.check.memvalues import bind, flows, settle
from karyamorph.model.check.pairs import check_race, plan_race
from karyamorph.model.check.properties import (
    check_barrier,
    check_bounds,
    cut_reason,
    plan_barrier,
    plan_bounds,
)
from karyamorph.model.check.replay import replay as replay_witness
from karyamorph.model.check.symexec import Unsupported
from karyamorph.model.check.tickets import explain, issue, serve
from karyamorph.model.check.verdict import Replay, Verdict, Witness
from karyamorph.model.check.warpsync import track_warp_barriers
from karyamorph.model.check.warpvalues import WarpStores
from karyamorph.model.check.witnesses import UserTerms, in_user_terms
from karyamorph.model.interp.program import prepare
from karyamorph.model.interp.spin import GRID_SYNC_REASON, grid_sync_line
from karyamorph.model.ptx.cluster import cluster_shape
from karyamorph.model.semantics.simt_machine import SCHEDULING, Machine

CHECKS = {"bounds": check_bounds, "race": check_race, "barrier": check_barrier}
PLANS = {"bounds": plan_bounds, "race": plan_race, "barrier": plan_barrier}
Dim = int | tuple[int, ...]

__all__ = [
    "CHECKS", "EquivInstance", "FiniteFloats", "InputRange", "Side", "UserTerms", "ValueRange", "check",
    "check_equivalence",
]  # fmt: skip


def check(
    module: ast.Module,
    entry: str,
    machine: Machine,
    launch: tuple[Dim, Dim, int],
    buffers: dict[str, int],
    scalars: dict[str, int | float],
    *,
    properties: Sequence[str] = ("bounds", "race", "barrier"),
    scheduling: str | None = None,
    unroll: int = 8,
    timeout_ms: int = 10_000,
    deadline_s: float | None = None,
    replay: bool = True,
    strict: bool = False,
    loads_agree: bool = True,
    names: UserTerms | None = None,
    contents: Mapping[str, np.ndarray] | None = None,
    structs: Mapping[str, StructLayout] | None = None,
    host_constants: bool = False,
    input_ranges: Mapping[str, ValueRange] | None = None,
    cluster: tuple[int, int, int] | None = None,
    tensormaps: Mapping[str, TensorMap] | None = None,
) -> list[Verdict]:
    """Prove or refute properties of ``entry`` for one launch.

    Parameters
    ----------
    module, entry
        The parsed PTX and the ``.entry`` to check.
    machine
        The machine model (:func:`karyamorph.model.ptx.ptx_machine.ptx_machine`).
    launch
        ``(grid, block, dynamic_shared_bytes)``; grid and block are ints or 1-3 tuples.
    buffers
        Pointer parameter name -> size of its buffer in bytes. Each is its own allocation.
    scalars
        Scalar parameter name -> value. A parameter in neither mapping is a free input: the
        verdict then holds for every value of it (``n`` in "proved for every n").
    properties
        Any of ``bounds`` (every global, shared and local access inside its allocation),
        ``race`` (no two threads access one location between barriers, one of them writing,
        unless both are atomics; across blocks for global memory, and across the CTAs of a
        cluster for the cluster's shared window) and ``barrier`` (no barrier is
        reached by some but not all non-exited threads of a block).
    scheduling
        ``its`` (sm_70+ independent thread scheduling: lanes of a warp are unordered) or
        ``lockstep`` (a warp executes one instruction at a time for all its lanes); default:
        the machine's.
    unroll
        How many iterations of a loop that is neither concrete nor a canonical counted loop
        are explored; deeper ones make the verdict proved-up-to-k.
    timeout_ms
        z3 timeout per query; a timeout gives an unknown verdict.
    deadline_s
        Time budget for the whole check, in seconds (None: no budget). Every property not
        decided when it runs out is unknown, with the reason "time budget of N s ran out after
        M of K queries"; a budget never turns into a pass.
    replay
        Replay every counterexample on the CPU interpreter
        (:func:`karyamorph.model.check.replay.replay`) before reporting it, and keep the outcome
        in ``Verdict.replay``. A counterexample whose replay contradicts it is a checker defect:
        the search goes on, and if every counterexample found is contradicted the property is
        ``unknown`` with the reason (never ``refuted``).
    strict
        Count stores of one value to one address by two threads (of any warps) as races; by
        default they are benign once z3 proves the values equal (the verdict's reason names
        their lines).
    loads_agree
        Whether the same-value proof may count on two threads' loads of one word reading one
        value. False: a store is benign only where its value is equal whatever each thread's
        loads (and the memory it reads) give, as GPUVerify's default abstraction has it (its
        ``--equality-abstraction`` is this default); two stores of one loaded value race.
    names
        The names (and element sizes) a witness should use for ``.param`` names: a spec's
        arguments; by default the PTX's own.
    contents
        Buffers (by parameter name) whose content at launch the spec fixes (its ``zeros``,
        ``ones`` and ``arange`` inputs): an atomic counter there starts at its element's value
        (:mod:`karyamorph.model.check.tickets`).
    structs
        The layout of each struct parameter passed by value, by parameter name
        (:class:`~karyamorph.kernel.structs.StructLayout`). Its fields go by ``param.field`` in
        ``buffers`` (every pointer field, each its own allocation) and ``scalars`` (a field in
        neither is a free input).
    host_constants
        The host may set the module's ``.const`` variables before the launch
        (``cudaMemcpyToSymbol``), as GPUVerify assumes: their contents are inputs, which a
        witness names, instead of their initializers.
    input_ranges
        The values the elements of input buffers hold, by parameter name (a spec's
        ``randint(lo, hi)``: :class:`~karyamorph.model.check.inputranges.InputRange`; its
        ``randn`` of floats: :class:`~karyamorph.model.check.inputranges.FiniteFloats`). A buffer no
        thread writes is read as an input, and each load of one of its elements is assumed to
        read a value in the range: the verdicts hold for such inputs only, and a witness names
        values within them. None (the default): every value.
    cluster
        The launch's cluster shape in CTAs, for an ``.explicitcluster`` kernel without
        ``.reqnctapercluster`` (a spec's ``[launch] cluster``); the kernel's own attribute
        otherwise. Accesses of the cluster's shared window reach the CTA they name, and
        ``barrier.cluster`` orders the threads of the cluster
        (:mod:`karyamorph.model.check.clusters`).
    tensormaps
        The fields of each tensor-map parameter (``.param .align 64 .b8 name[128]``), by name: a
        tensor copy through it writes (or reads) the span its box takes in shared memory, which
        the bounds check holds to its variable, and a load lands on its mbarrier as a bulk copy
        does (:mod:`karyamorph.model.check.mbarrierphase`). Its tensor is reached by tensor copies
        alone, which clip the box to it: a load's global side needs no check, and a store writes
        its box's rows in a window of the tensor's own
        (:func:`karyamorph.model.check.symexec.tensor_window`), in its bulk async-group.

    Returns
    -------
    list of Verdict
        One per property, in the order asked. Refuted verdicts carry a witness (and, with
        ``replay``, what the interpreter made of it).

    Raises
    ------
    UnmodeledError
        The kernel uses instructions outside the machine's set (all of them are listed).
    ValueError
        An unknown property, scheduling or parameter name.
    """
    sched = scheduling or machine.scheduling
    if sched not in SCHEDULING:
        raise ValueError(f"scheduling must be one of {SCHEDULING}, got {sched!r}")
    bad = [p for p in properties if p not in CHECKS]
    if bad:
        raise ValueError(
            f"unknown propert{'y' if len(bad) == 1 else 'ies'} {', '.join(bad)} "
            f"(known: {', '.join(CHECKS)}; equivalence: check_equivalence)"
        )
    t0 = time.perf_counter()
    deadline = None if deadline_s is None else t0 + deadline_s
    program = prepare(module, entry, machine)
    program.structs = dict(structs or {})
    sync = grid_sync_line(program.fn)
    if sync is not None:  # every block must run at once: neither encoding nor replay can
        reason = f"line {sync}: {GRID_SYNC_REASON}"
        return [Verdict(p, "unknown", reason=reason, seconds=time.perf_counter() - t0) for p in properties]
    clustered = cluster_reason(program, cluster)
    if clustered is not None:  # a cluster barrier the encoding cannot place, or no cluster shape
        return [Verdict(p, "unknown", reason=clustered, seconds=time.perf_counter() - t0) for p in properties]
    grid, block = dim3(launch[0], "grid"), dim3(launch[1], "block")

    def out_of_time(done: int, planned: int | None) -> str:
        if planned is None:
            return f"time budget of {deadline_s:g} s ran out after 0 queries, while exploring the kernel"
        return f"time budget of {deadline_s:g} s ran out after {done} of {planned} queries"

    try:
        trace = build_trace(
            program,
            module,
            grid,
            block,
            machine.warp_size,
            buffers,
            scalars,
            int(launch[2]),
            unroll,
            deadline=deadline,
            host_constants=host_constants,
            cluster=cluster_shape(program.fn, cluster) or (1, 1, 1),
            tensormaps=tensormaps,
        )
    except Unsupported as e:
        spent = time.perf_counter() - t0
        return [Verdict(p, "unknown", reason=f"not encodable: {e}", seconds=spent) for p in properties]
    except OutOfTime:
        spent = time.perf_counter() - t0
        return [Verdict(p, "unknown", reason=out_of_time(0, None), seconds=spent) for p in properties]
    # Which copies and warp barriers the race encoding orders itself (before any substitution).
    copies_ordered = track_copies(trace)
    bulk_left = track_bulk_copies(trace) if "race" in properties else {}  # (only races ask)
    warps_ordered = track_warp_barriers(trace, program, machine.warp_size)
    tickets, refused = issue(trace, program, contents)
    read_back = flows(trace, program)
    settled = settle(trace, program, host_constants)
    enc = Encoding.of(trace, sched, timeout_ms, deadline, input_ranges)
    serve(enc, tickets)
    bind(enc, settled)
    enc.strict = strict
    enc.loads_agree = loads_agree
    finite = {b: r for b, r in (input_ranges or {}).items() if isinstance(r, FiniteFloats)}
    enc.stores = WarpStores(
        program,
        trace.layout,
        grid,
        block,
        machine.warp_size,
        enc.readonly,
        unroll,
        deadline,
        finite,
        read_back,
    )
    replayed = [0.0]  # seconds spent replaying: not part of a check's time
    # Witness inputs name elements in units of the loads that read them.
    widths = enc.element_bytes()
    if replay:

        def vet(prop: str, w: Witness) -> Replay:
            r = replay_witness(
                module, entry, machine, launch, buffers, scalars, Verdict(prop, "refuted", witness=w),
                element_bytes=widths, scheduling=sched, structs=structs, tensormaps=tensormaps,
                # A pair that reaches the replay is a race by the rule the check applied: with
                # loads_agree off, one value stored from loads is one too.
                strict=enc.strict or not loads_agree, cluster=cluster,
            )  # fmt: skip
            replayed[0] += r.seconds
            return r

        enc.vet = vet
    plans = {p: PLANS[p](enc) for p in properties}
    enc.planned = sum(len(q) for q in plans.values()) + (1 if trace.cuts else 0)
    try:
        cut = cut_reason(enc)
    except OutOfTime:
        spent = time.perf_counter() - t0
        reason = out_of_time(enc.done, enc.planned)
        return [Verdict(p, "unknown", reason=reason, seconds=spent) for p in properties]
    caveats = race_caveats(program, sched).encoded(copies_ordered, warps_ordered, bulk_left)
    base = time.perf_counter() - t0
    notes = [
        f"loop at line {n}: all iterations (free iteration variable)" for n in sorted(set(trace.abstracted))
    ]
    if trace.assumptions:
        notes.append("assuming every loop terminates")
    notes += [f"assuming {s}" for s in trace.stated]
    if trace.inputs:
        notes.append(f"for every value of {', '.join(sorted(trace.inputs))}")
    words = (names or UserTerms()).names
    notes += [f"assuming the elements of {words.get(b, b)} are {r}" for b, r in sorted(enc.ranged.items())]
    out = []
    for p in properties:
        t1 = time.perf_counter()
        replayed[0] = 0.0

        def finish(
            prop: str,
            verdict: str,
            witness: Witness | None,
            reason: str,
            replay: Replay | None = None,
            t1: float = t1,
        ) -> Verdict:
            k = None
            if verdict == "proved" and cut:
                verdict, k, reason = "proved-up-to-k", unroll, cut
            if verdict in ("proved", "proved-up-to-k"):
                reason = "; ".join(x for x in (reason, *notes) if x)
            seconds = base + time.perf_counter() - t1 - replayed[0]
            return Verdict(prop, verdict, k, witness, reason, seconds, replay)

        try:
            v = CHECKS[p](enc, plans[p], finish)
            out.append(apply_race_caveats(v, caveats, block, machine.warp_size) if p == "race" else v)
        except OutOfTime:
            reason = out_of_time(enc.done, enc.planned)
            out.append(Verdict(p, "unknown", reason=reason, seconds=base + time.perf_counter() - t1))
    return in_user_terms(explain(out, refused), module, entry, names or UserTerms(), widths)
