"""Predicted time of one launch: the slowest of the busiest SM's bounds.

The busiest SM runs ``ceil(blocks / SMs)`` blocks: the block scheduler gives a slot that frees
up the next block, so a last, partial wave spreads over the SMs (one block on each of some)
rather than filling a few. For them it must issue every warp-instruction, feed each unit at its
rate, and serve its shared-memory wavefronts (``cp.async`` writes among them) and its share of
L2 sectors. Its four schedulers issue one instruction a clock each when they find a ready warp;
with the SASS of the kernel's main loop known (ptxas's stall counts and scoreboard barriers),
they find one in the fraction of cycles :func:`scheduler_efficiency` gives for the resident
warps, and the issue bound grows by its inverse (Nsight Compute saw the schedulers of an SGEMM
with two warps each, whose loads ptxas moved to the end of its loop, issue in 52% of cycles:
:mod:`karyamorph.model.cost.issue`).
Wave by wave of resident blocks, it also waits for each round of dependent global loads: with
the kernel's load batch known (the bytes a thread has in flight: in the SASS of its main loop,
else read from its PTX), a warp's rounds are its load bytes over that batch (Little's law,
:mod:`karyamorph.model.cost.memory_time`); otherwise its loop trips. A round waits the latency the
memory system has under load: the idle DRAM latency for the share of the bytes that must come
from DRAM and the L2 latency for the rest (tiles that other blocks read too), times a stated
factor (3). The measured grids of bandwidth by warps per SM and bytes per thread can stand in
for the factor (:attr:`CostMachine.use_flight_grids`: bytes in flight over the bandwidth they
reach, per load policy); they are measured and read, but not used by default (they rank the
search variants worse and under-predict one-pass kernels: benchmarks/RESULTS.md). An SM also
starts and retires its blocks one after another, each in the measured time for its size (a
one-pass kernel of many short blocks meets this bound; a grid-stride one hardly). The launch
also cannot move its compulsory bytes faster than DRAM allows (the measured DRAM bandwidth; with
the grids, the peak of its load policy's), and its same-address atomics run one after another
in L2. Bytes that bulk and tensor copies move (the TMA unit: ``cp.async.bulk*``, which no load
or store request counts) go at the copy engine's measured bandwidth: as many as the launch's
compulsory bytes at its DRAM figure, within the DRAM bound, and the rest (tiles re-read from L2)
at its L2 figure per SM, the ``bulk`` bound (:func:`bulk_seconds`; unmeasured figures leave them
to the DRAM bandwidth, and uncharged beyond). The tensor unit's ``wgmma`` work is charged at the
machine's measured wgmma-to-mma.sync rate (:func:`unit_issues`).

The bounds overlap, but not perfectly: a kernel close to two of them at once runs slower than
either alone. The prediction combines them as a p-norm (:data:`OVERLAP_NORM`), which equals the
slowest bound when one dominates and adds at most ``n ** (1/p) - 1`` (19% for two equal bounds
at p = 4) when ``n`` of them tie; plus the launch time. :attr:`Prediction.bound` names the
slowest bound. p = 4 is a stated assumption, not a fit: the Spearman figures are reported for
p = 2, 4, 8 and the hard maximum in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from karyamorph.model.cost.device_figures import CostMachine
from karyamorph.model.cost.flight import Grid, bracket, loaded_latency_s, peak
from karyamorph.model.cost.issue import Slot, issue_efficiency, loads_in_flight, lone_warp_cycles
from karyamorph.model.cost.memory_time import atomic_seconds, latency_seconds, rounds_per_warp
from karyamorph.model.cost.units import WGMMA_SPEEDUP, issue_weight, unit_of, wgmma_work
from karyamorph.model.interp.simt import Counts

SECTOR_BYTES = 32
GLOBAL_LOADS = frozenset({"LDG", "LD", "ATOMG", "ATOM", "LDGDEPBAR"})
"""SASS opcodes whose scoreboard waits a global memory round trip (``LDGDEPBAR``: the group of
``cp.async`` copies it commits)."""
SHARED_ACCESSES = frozenset({"LDS", "LDSM", "STS", "ATOMS", "LDGSTS"})
"""SASS opcodes whose scoreboard waits a shared-memory access (``LDGSTS``: its operands are read
and its shared side queued; its data is waited for by ``DEPBAR``, not by the scoreboard)."""
_FLOAT_TYPES = frozenset({"f16", "f16x2", "bf16", "bf16x2", "f32", "f64"})
OVERLAP_NORM = 4.0
"""The p of the p-norm that combines the bounds (see the module's docstring)."""


@dataclass(frozen=True, slots=True)
class KernelCounts:
    """What one launch does, in totals over the launch.

    Attributes
    ----------
    warp_instructions : dict
        By unit.
    global_sectors, shared_wavefronts : float
        Memory transactions (loads and stores together).
    global_load_requests : float
        Warp-level global load instructions.
    global_load_bytes : float
        Bytes of the sectors those loads move.
    loop_trips : float
        Branches taken per warp: the rounds of dependent work a warp runs.
    dram_bytes : float
        Bytes that must come from or go to DRAM at least once (the spec's cost).
    atomics : float
        Atomic and reduction operations (thread-level), taken to update few addresses.
    blocks, warps_per_block : int
    float_atomics : float
        The floating-point ones among ``atomics`` (no warp folds them into one operation).
    load_batch_bytes : float
        Global-load bytes one thread has in flight at once: in the SASS of its main loop
        (:func:`karyamorph.model.cost.issue.loads_in_flight`), else read from its PTX
        (:func:`karyamorph.model.cost.batches.load_batch_bytes`); 0 when unknown, and the loop
        trips stand in for the rounds of loads.
    load_policy : str
        The cache policy of most of its global loads (:func:`load_policy`): ``default``, ``cg``,
        ``cs``, ``nc``, ``nc256`` or ``cp`` (``cp.async``); empty when it loads nothing from
        global memory.
    issue_slots : tuple of Slot
        The SASS of the loop its warps spend their time in, with ptxas's scheduling
        (:mod:`karyamorph.model.cost.issue`); empty when the SASS is not known, and the
        schedulers are taken to issue every cycle.
    wgmma_work : float
        The ``mma.sync m16n8k16``s' worth of work of its ``wgmma.mma_async`` instructions
        (:func:`~karyamorph.model.cost.units.wgmma_work`): ``warp_instructions["tensor"]`` holds
        them at the stated :data:`~karyamorph.model.cost.units.WGMMA_SPEEDUP`, and
        :func:`unit_issues` re-weighs them at the machine's.
    bulk_bytes : float
        Bytes bulk and tensor copies move between global and shared memory (the TMA unit's).
    """

    warp_instructions: Mapping[str, float]
    global_sectors: float
    shared_wavefronts: float
    global_load_requests: float
    global_load_bytes: float
    loop_trips: float
    dram_bytes: float
    atomics: float
    blocks: int
    warps_per_block: int
    load_batch_bytes: float = 0.0
    float_atomics: float = 0.0
    load_policy: str = ""
    issue_slots: tuple[Slot, ...] = ()
    wgmma_work: float = 0.0
    bulk_bytes: float = 0.0


def scaled_counts(stats: Mapping[str, Counts], *, scale: float, blocks: int, warps_per_block: int,
                  dram_bytes: float, load_batch_bytes: float = 0.0, interpreted_blocks: int = 0,
                  issue_slots: tuple[Slot, ...] = ()) -> KernelCounts:  # fmt: skip
    """The interpreter's statistics of a small launch
    (:meth:`~karyamorph.model.interp.simt.Stats.as_dict`) scaled by ``scale``
    (the ratio of work, e.g. flops or bytes, between the timed size and the interpreted one) to
    a launch of ``blocks`` blocks; ``load_batch_bytes`` is the kernel's, from its PTX.

    Atomics are the exception when ``interpreted_blocks`` (the small launch's blocks) is given
    and the small launch ran at most one atomic per warp: a block's or warp's partial result
    sent to one address, once per block, so their number follows the blocks, not the work (a
    grid-stride reduction runs the same grid at every size). More atomics than warps are taken
    per element (a histogram) and scale with the work.

    With ``issue_slots`` (the SASS of the main loop), the load batch is the bytes a thread has in
    flight there as ptxas ordered its loads (:func:`~karyamorph.model.cost.issue.loads_in_flight`),
    where it has any; ``load_batch_bytes`` (read from the PTX) otherwise."""
    threads = stats["thread_instructions"]
    total_threads = max(1, stats["total_thread_instructions"])
    per_warp = stats["warp_instructions"] * 32 / total_threads  # > 1/32 when warps run partly idle
    by_unit: dict[str, float] = {}
    for key, n in threads.items():
        unit = unit_of(key)
        by_unit[unit] = by_unit.get(unit, 0.0) + scale * n * per_warp / 32 * issue_weight(key)
    tensor_work = sum(scale * n * per_warp / 32 * wgmma_work(key) for key, n in threads.items())
    bulk = stats.get("bulk_bytes", {})
    warps = max(1, blocks * warps_per_block)
    branches = scale * threads.get("bra", 0) * per_warp / 32
    atomics = float(stats.get("atomics", 0))
    floats = float(sum(n for key, n in threads.items() if _float_atomic(key)))
    atomic_scale = _atomic_scale(atomics, scale, blocks, warps_per_block, interpreted_blocks)
    return KernelCounts(
        warp_instructions=by_unit,
        global_sectors=scale * sum(stats.get("sectors", {}).values()),
        shared_wavefronts=scale * lsu_wavefronts(stats.get("wavefronts", {})),
        global_load_requests=scale * stats.get("requests", {}).get("global.ld", 0),
        global_load_bytes=scale * SECTOR_BYTES * stats.get("sectors", {}).get("global.ld", 0),
        loop_trips=branches / warps,
        dram_bytes=dram_bytes,
        atomics=atomics * atomic_scale,
        blocks=blocks,
        warps_per_block=warps_per_block,
        load_batch_bytes=(issue_slots and loads_in_flight(issue_slots)) or load_batch_bytes,
        float_atomics=min(floats, atomics) * atomic_scale,
        load_policy=load_policy(threads),
        issue_slots=issue_slots,
        wgmma_work=tensor_work,
        bulk_bytes=scale * sum(n for key, n in bulk.items() if "global" in key.split(".")),
    )


def lsu_wavefronts(wavefronts: Mapping[str, float]) -> float:
    """The load/store units' shared-memory wavefronts: a tensor core's operand fetches
    (``shared.mma``, wgmma's and tcgen05's descriptors) are not theirs."""
    return float(sum(v for k, v in wavefronts.items() if not k.endswith(".mma")))


def load_policy(thread_instructions: Mapping[str, float]) -> str:
    """The cache policy of most global loads among executed forms (``ld.global.nc.v4.f32``: ``nc``;
    with ``.L2::256B``: ``nc256``; ``.cs``, ``.cg``; ``cp.async`` copies from global: ``cp``;
    anything else ``default``), by executions; empty when no global load ran.

    Examples
    --------
    >>> load_policy({"ld.global.nc.L1::no_allocate.L2::256B.v4.f32": 8, "ld.global.f32": 2})
    'nc256'
    >>> load_policy({"cp.async.cg.shared.global": 64, "ld.global.u32": 2})
    'cp'
    """
    votes: dict[str, float] = {}
    for form, n in thread_instructions.items():
        parts = form.split(".")
        if parts[:2] == ["cp", "async"] and "global" in parts:
            votes["cp"] = votes.get("cp", 0.0) + n
            continue
        if parts[:2] != ["ld", "global"]:
            continue
        if "nc" in parts:
            policy = "nc256" if "L2::256B" in parts else "nc"
        else:
            policy = next((p for p in ("cs", "cg") if p in parts), "default")
        votes[policy] = votes.get(policy, 0.0) + n
    return max(votes, key=lambda p: votes[p]) if votes else ""


def _float_atomic(form: str) -> bool:
    """Whether an instruction form (``red.global.add.f32``) is an atomic on floating-point data."""
    parts = form.split(".")
    return parts[0] in ("atom", "red") and not _FLOAT_TYPES.isdisjoint(parts[1:])


def _atomic_scale(atomics: float, scale: float, blocks: int, warps_per_block: int,
                  small_blocks: int) -> float:  # fmt: skip
    """What the small launch's atomics are multiplied by (see :func:`scaled_counts`)."""
    if small_blocks > 0 and atomics <= small_blocks * warps_per_block:
        return blocks / small_blocks
    return scale


@dataclass(frozen=True, slots=True)
class Prediction:
    """A predicted time and the bounds it was the largest of (seconds each), with the fraction
    of cycles the schedulers issue in (:func:`scheduler_efficiency`; 1 when the SASS is not
    known)."""

    seconds: float
    bound: str
    terms: dict[str, float]
    issue_efficiency: float = 1.0

    def as_dict(self) -> dict[str, Any]:  # Any: a JSON row of numbers, a string and a table
        return {"seconds": self.seconds, "bound": self.bound, "terms": dict(self.terms),
                "issue_efficiency": self.issue_efficiency}  # fmt: skip


def predict(counts: KernelCounts, machine: CostMachine, blocks_per_sm: int, *,
            norm: float = OVERLAP_NORM) -> Prediction:  # fmt: skip
    """The time of the launch on ``machine`` with ``blocks_per_sm`` resident blocks per SM
    (``norm``: the p of the bounds' p-norm; ``math.inf`` takes the slowest bound alone)."""
    if blocks_per_sm < 1:
        raise ValueError("no block fits on an SM: nothing to predict")
    resident = min(blocks_per_sm, math.ceil(counts.blocks / machine.sms))
    waves = math.ceil(counts.blocks / (machine.sms * resident))
    busy_blocks = math.ceil(counts.blocks / machine.sms)  # the busiest SM's blocks (see above)
    per_block = {u: n / counts.blocks for u, n in unit_issues(counts, machine).items()}
    hz = machine.clock_hz
    efficiency = scheduler_efficiency(counts, machine, resident * counts.warps_per_block)
    terms: dict[str, float] = {
        "issue": busy_blocks * sum(per_block.values()) / machine.issue_per_clock / efficiency / hz,
        "shared": busy_blocks * counts.shared_wavefronts / counts.blocks
        / machine.shared_wavefronts_per_clock / hz,
        "l2": busy_blocks * counts.global_sectors / counts.blocks * SECTOR_BYTES
        / machine.l2_bytes_per_clock_per_sm / hz,
        "atomics": _atomics_seconds(counts, machine),
        "blocks": busy_blocks * block_seconds(machine, counts.warps_per_block * 32),
        "bulk": busy_blocks * bulk_seconds(counts, machine)[1] / counts.blocks,
        **_memory_terms(counts, machine, resident, waves),
    }  # fmt: skip
    terms = {k: v for k, v in terms.items() if v > 0}
    for unit, n in per_block.items():
        rate = machine.rates.get(unit, 1.0)
        terms[f"unit.{unit}"] = busy_blocks * n / rate / hz if rate > 0 else math.inf
    bound = max(terms, key=lambda k: terms[k])
    spent = terms[bound] if math.isinf(norm) else combined(terms.values(), norm)
    return Prediction(spent + machine.launch_s, bound, terms, efficiency)


def unit_issues(counts: KernelCounts, machine: CostMachine) -> dict[str, float]:
    """The launch's warp-instructions by unit, in issues at each unit's rate: the counts' own,
    their ``wgmma`` work (counted at the stated
    :data:`~karyamorph.model.cost.units.WGMMA_SPEEDUP`) re-weighed at the machine's
    ``wgmma_speedup``; the same counts where the two agree.

    Examples
    --------
    >>> from karyamorph.model.cost.device_figures import machine_for
    >>> c = KernelCounts({"tensor": 32.0}, 0, 0, 0, 0, 0, 0, 0, 1, 4, wgmma_work=64.0)
    >>> stated, measured = machine_for("sm_90"), machine_for("sm_90", {"wgmma_speedup": 4.0})
    >>> unit_issues(c, stated)["tensor"], unit_issues(c, measured)["tensor"]
    (32.0, 16.0)
    """
    out = dict(counts.warp_instructions)
    if counts.wgmma_work and machine.wgmma_speedup != WGMMA_SPEEDUP:
        shift = counts.wgmma_work * (1.0 / machine.wgmma_speedup - 1.0 / WGMMA_SPEEDUP)
        out["tensor"] = max(0.0, out.get("tensor", 0.0) + shift)
    return out


def bulk_seconds(counts: KernelCounts, machine: CostMachine) -> tuple[float, float]:
    """Seconds the launch's bulk-copy bytes take at the copy engine's measured bandwidths: those
    from DRAM (as many as its compulsory bytes, the whole device at ``bulk_bytes_per_s``), and the
    rest, re-read from L2, as one SM would take them all at ``bulk_l2_bytes_per_clock_per_sm``
    (:func:`predict` gives the busiest SM its blocks' share). An unmeasured figure charges nothing
    here.

    Examples
    --------
    >>> from karyamorph.model.cost.device_figures import machine_for
    >>> m = machine_for("sm_90", {"bulk_bytes_per_s": 2e12, "bulk_l2_bytes_per_clock_per_sm": 64.0,
    ...                           "clock_hz": 1e9, "sms": 100})
    >>> c = KernelCounts({}, 0, 0, 0, 0, 0, 1e9, 0, 100, 4, bulk_bytes=1e9 + 6.4e9)
    >>> [round(t, 6) for t in bulk_seconds(c, m)]  # 1 GB from DRAM; 6.4 GB from L2, 64 B a cycle
    [0.0005, 0.1]
    """
    from_dram = min(counts.bulk_bytes, counts.dram_bytes) if machine.bulk_bytes_per_s > 0 else 0.0
    dram = from_dram / machine.bulk_bytes_per_s if from_dram else 0.0
    rest = counts.bulk_bytes - min(counts.bulk_bytes, counts.dram_bytes)
    per_sm = machine.bulk_l2_bytes_per_clock_per_sm * machine.clock_hz
    return dram, rest / per_sm if rest > 0 and per_sm > 0 else 0.0


def dram_seconds(counts: KernelCounts, machine: CostMachine, dram_rate: float) -> float:
    """The compulsory bytes at ``dram_rate``, those bulk copies bring at the copy engine's DRAM
    bandwidth instead where it is measured (:func:`bulk_seconds`)."""
    bulk, _ = bulk_seconds(counts, machine)
    carried = min(counts.bulk_bytes, counts.dram_bytes) if bulk else 0.0
    return (counts.dram_bytes - carried) / dram_rate + bulk


def pass_cycles(counts: KernelCounts, machine: CostMachine) -> float:
    """Cycles one warp alone takes for a pass of the kernel's main loop as ptxas scheduled it
    (:func:`~karyamorph.model.cost.issue.lone_warp_cycles`), its global loads and ``cp.async``
    groups waiting the idle L2 latency (their waits in queues under load are the latency
    bound's), its shared accesses the shared-memory latency; 0 when the schedule is not known."""
    if not counts.issue_slots:
        return 0.0

    def latency(opcode: str) -> float:
        if opcode in GLOBAL_LOADS:
            return machine.l2_latency
        return machine.shared_latency if opcode in SHARED_ACCESSES else machine.scoreboard_latency

    return lone_warp_cycles(counts.issue_slots, latency)


def scheduler_efficiency(counts: KernelCounts, machine: CostMachine, resident_warps: float) -> float:
    """The fraction of cycles a scheduler issues in, with the SM's resident warps shared out over
    its schedulers, each warp running the kernel's main loop as ptxas scheduled it
    (:mod:`karyamorph.model.cost.issue`); 1 when the schedule is not known."""
    cycles = pass_cycles(counts, machine)
    if cycles <= 0:
        return 1.0
    return issue_efficiency(cycles / len(counts.issue_slots), resident_warps / machine.issue_per_clock)


def combined(seconds: Iterable[float], p: float = OVERLAP_NORM) -> float:
    """The p-norm of the bounds: the largest when it dominates, more when others come close.

    Examples
    --------
    >>> round(combined([1.0, 0.0]), 6), round(combined([1.0, 1.0], p=4), 4)
    (1.0, 1.1892)
    """
    values = [v for v in seconds if v > 0]
    if not values:
        return 0.0
    if any(math.isinf(v) for v in values):
        return math.inf
    top = max(values)  # scaled by the largest: no overflow for any p
    total: float = sum((v / top) ** p for v in values) ** (1.0 / p)  # a positive base: real
    return top * total


def _memory_terms(counts: KernelCounts, machine: CostMachine, resident: int, waves: int) -> dict[str, float]:
    """DRAM bandwidth and load latency. With the kernel's load batch known, each warp runs its
    rounds of loads one loaded latency each, wave after wave (:mod:`karyamorph.model.cost.memory_time`);
    without it, the loop trips stand in for the rounds and Little's law caps the bandwidth."""
    dram_rate = dram_bytes_per_s(counts, machine)
    if not counts.global_load_requests:
        return {"dram": dram_seconds(counts, machine, dram_rate)}
    warps = counts.blocks * counts.warps_per_block
    if counts.load_batch_bytes > 0:
        rounds = rounds_per_warp(counts.global_load_bytes, warps, counts.load_batch_bytes)
        resident_warps = resident * counts.warps_per_block
        return {"dram": dram_seconds(counts, machine, dram_rate),
                "latency": waves * rounds * round_seconds(counts, machine, resident_warps)}  # fmt: skip
    in_flight_rate = _in_flight_bandwidth(counts, machine, resident)
    return {"dram": dram_seconds(counts, machine, min(dram_rate, in_flight_rate)),
            "latency": waves * max(1.0, counts.loop_trips) * machine.dram_latency / machine.clock_hz,
            }  # fmt: skip


def _atomics_seconds(counts: KernelCounts, machine: CostMachine) -> float:
    """Same-address atomics, integer and floating-point each at its own measured rate."""
    floats = machine.float_atomics_per_clock or machine.atomics_per_clock
    hz = machine.clock_hz
    return (atomic_seconds(counts.atomics - counts.float_atomics, machine.atomics_per_clock, hz)
            + atomic_seconds(counts.float_atomics, floats, hz))  # fmt: skip


def round_seconds(counts: KernelCounts, machine: CostMachine, warps: float) -> float:
    """Seconds one round of loads waits with ``warps`` resident warps per SM, each thread with
    the kernel's load batch in flight: the idle latencies times the stated
    ``loaded_latency_factor``, mixed by where the bytes come from (:func:`dram_share`); or, on a
    machine that uses its measured grids (:mod:`karyamorph.model.cost.flight`), the DRAM and L2
    latencies at that load, mixed the same way."""
    dram, l2 = level_grid(counts, machine, "dram"), level_grid(counts, machine, "l2")
    if not dram or not l2:
        return latency_seconds(1, 1.0, machine.loaded_latency_factor * load_latency(counts, machine),
                               machine.clock_hz)  # fmt: skip
    share, batch, sms = dram_share(counts), counts.load_batch_bytes, machine.sms
    return (share * loaded_latency_s(dram, sms, warps, batch)
            + (1.0 - share) * loaded_latency_s(l2, sms, warps, batch))  # fmt: skip


def block_seconds(machine: CostMachine, threads: int) -> float:
    """Seconds an SM takes to start and retire one block of ``threads`` threads (its blocks one
    after another): the machine's measured turnover, interpolated in log2 of the threads between
    the block sizes measured (the nearest one outside them); 0 when not measured.

    Examples
    --------
    >>> from karyamorph.model.cost.device_figures import machine_for
    >>> m = machine_for("sm_90", {"turnover.64": 8e-8, "turnover.256": 1e-7})
    >>> [round(block_seconds(m, t) * 1e9) for t in (32, 128, 1024)]
    [80, 90, 100]
    """
    table = machine.block_s
    if not table:
        return 0.0
    lo, hi, t = bracket(sorted(table), threads)
    return table[int(lo)] + t * (table[int(hi)] - table[int(lo)])


def level_grid(counts: KernelCounts, machine: CostMachine, level: str) -> Grid | None:
    """The measured grid of a memory level (``dram``, ``l2``) for the kernel's load policy, else
    for plain loads; None when not measured or when the machine does not use its grids
    (:attr:`~karyamorph.model.cost.device_figures.CostMachine.use_flight_grids`)."""
    if not machine.use_flight_grids:
        return None
    return machine.flight.get(f"{level}.{counts.load_policy}") or machine.flight.get(level)


def dram_bytes_per_s(counts: KernelCounts, machine: CostMachine) -> float:
    """DRAM bandwidth for the kernel: the peak of its load policy's measured grid, else the
    machine's figure."""
    grid = level_grid(counts, machine, "dram")
    return peak(grid) if grid else machine.dram_bytes_per_s


def dram_share(counts: KernelCounts) -> float:
    """The share of the loaded bytes that must come from DRAM (the compulsory bytes, at most all)."""
    if counts.global_load_bytes <= 0:
        return 1.0
    return min(1.0, counts.dram_bytes / counts.global_load_bytes)


def load_latency(counts: KernelCounts, machine: CostMachine) -> float:
    """Cycles a global load waits on average: the DRAM latency for the share of the loaded bytes
    that must come from DRAM (the compulsory bytes, at most all of them), the L2 latency for
    the rest, which other blocks have brought into L2 already (a GEMM's tiles)."""
    share = dram_share(counts)
    return share * machine.dram_latency + (1.0 - share) * machine.l2_latency


def _in_flight_bandwidth(counts: KernelCounts, machine: CostMachine, resident: int) -> float:
    """Bytes per second the resident warps' loads in flight sustain: per warp, its load bytes
    over its rounds of dependent loads, for every resident warp, each round one DRAM latency."""
    warps = counts.blocks * counts.warps_per_block
    if not counts.global_load_bytes or not warps:
        return math.inf
    per_round = counts.global_load_bytes / warps / max(1.0, counts.loop_trips)
    flying = machine.sms * resident * counts.warps_per_block * per_round
    return flying / (machine.loaded_latency_factor * machine.dram_latency / machine.clock_hz)
