"""Predicted time of one launch: the slowest of the per-SM bounds, wave by wave.

Per wave of resident blocks, an SM must issue every warp-instruction (4 per clock), feed each
unit at its rate, serve its shared-memory wavefronts and its share of L2 sectors, and wait for
each round of dependent global loads one loaded DRAM latency: with the kernel's load batch known
(the bytes a thread has in flight, read from its PTX), a warp's rounds are its load bytes over
that batch (Little's law, :mod:`karyamorph.model.cost.memory`); otherwise its loop trips. The
launch also cannot move its compulsory bytes faster than DRAM allows, and its same-address
atomics run one after another in L2. A load waits the DRAM latency for the share of the bytes
that must come from DRAM, and the L2 latency for the rest (tiles that other blocks read too).

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

from karyamorph.model.cost.machine import CostMachine
from karyamorph.model.cost.memory import atomic_seconds, latency_seconds, rounds_per_warp
from karyamorph.model.cost.units import unit_of

SECTOR_BYTES = 32
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
        Global-load bytes one thread has in flight at once
        (:func:`karyamorph.model.cost.batches.load_batch_bytes`); 0 when unknown, and the loop
        trips stand in for the rounds of loads.
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


def scaled_counts(stats: Mapping[str, Any], *, scale: float, blocks: int, warps_per_block: int,
                  dram_bytes: float, load_batch_bytes: float = 0.0,
                  interpreted_blocks: int = 0) -> KernelCounts:  # fmt: skip
    """The interpreter's statistics of a small launch (:meth:`Stats.as_dict`) scaled by ``scale``
    (the ratio of work, e.g. flops or bytes, between the timed size and the interpreted one) to
    a launch of ``blocks`` blocks; ``load_batch_bytes`` is the kernel's, from its PTX.

    Atomics are the exception when ``interpreted_blocks`` (the small launch's blocks) is given
    and the small launch ran at most one atomic per warp: a block's or warp's partial result
    sent to one address, once per block, so their number follows the blocks, not the work (a
    grid-stride reduction runs the same grid at every size). More atomics than warps are taken
    per element (a histogram) and scale with the work."""
    threads = stats["thread_instructions"]
    total_threads = max(1, stats["total_thread_instructions"])
    per_warp = stats["warp_instructions"] * 32 / total_threads  # > 1/32 when warps run partly idle
    by_unit: dict[str, float] = {}
    for key, n in threads.items():
        unit = unit_of(key)
        by_unit[unit] = by_unit.get(unit, 0.0) + scale * n * per_warp / 32
    warps = max(1, blocks * warps_per_block)
    branches = scale * threads.get("bra", 0) * per_warp / 32
    atomics = float(stats.get("atomics", 0))
    floats = float(sum(n for key, n in threads.items() if _float_atomic(key)))
    atomic_scale = _atomic_scale(atomics, scale, blocks, warps_per_block, interpreted_blocks)
    return KernelCounts(
        warp_instructions=by_unit,
        global_sectors=scale * sum(stats.get("sectors", {}).values()),
        shared_wavefronts=scale * sum(stats.get("wavefronts", {}).values()),
        global_load_requests=scale * stats.get("requests", {}).get("global.ld", 0),
        global_load_bytes=scale * SECTOR_BYTES * stats.get("sectors", {}).get("global.ld", 0),
        loop_trips=branches / warps,
        dram_bytes=dram_bytes,
        atomics=atomics * atomic_scale,
        blocks=blocks,
        warps_per_block=warps_per_block,
        load_batch_bytes=load_batch_bytes,
        float_atomics=min(floats, atomics) * atomic_scale,
    )


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
    """A predicted time and the bounds it was the largest of (seconds each)."""

    seconds: float
    bound: str
    terms: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "bound": self.bound, "terms": dict(self.terms)}


def predict(counts: KernelCounts, machine: CostMachine, blocks_per_sm: int, *,
            norm: float = OVERLAP_NORM) -> Prediction:  # fmt: skip
    """The time of the launch on ``machine`` with ``blocks_per_sm`` resident blocks per SM
    (``norm``: the p of the bounds' p-norm; ``math.inf`` takes the slowest bound alone)."""
    if blocks_per_sm < 1:
        raise ValueError("no block fits on an SM: nothing to predict")
    resident = min(blocks_per_sm, math.ceil(counts.blocks / machine.sms))
    waves = math.ceil(counts.blocks / (machine.sms * resident))
    busy_blocks = waves * resident  # the busiest SM's blocks
    per_block = {u: n / counts.blocks for u, n in counts.warp_instructions.items()}
    hz = machine.clock_hz
    terms: dict[str, float] = {
        "issue": busy_blocks * sum(per_block.values()) / machine.issue_per_clock / hz,
        "shared": busy_blocks * counts.shared_wavefronts / counts.blocks
        / machine.shared_wavefronts_per_clock / hz,
        "l2": busy_blocks * counts.global_sectors / counts.blocks * SECTOR_BYTES
        / machine.l2_bytes_per_clock_per_sm / hz,
        "atomics": _atomics_seconds(counts, machine),
        **_memory_terms(counts, machine, resident, waves),
    }  # fmt: skip
    terms = {k: v for k, v in terms.items() if v > 0}
    for unit, n in per_block.items():
        rate = machine.rates.get(unit, 1.0)
        terms[f"unit.{unit}"] = busy_blocks * n / rate / hz if rate > 0 else math.inf
    bound = max(terms, key=lambda k: terms[k])
    spent = terms[bound] if math.isinf(norm) else combined(terms.values(), norm)
    return Prediction(spent + machine.launch_s, bound, terms)


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
    return top * sum((v / top) ** p for v in values) ** (1.0 / p)


def _memory_terms(counts: KernelCounts, machine: CostMachine, resident: int, waves: int) -> dict[str, float]:
    """DRAM bandwidth and load latency. With the kernel's load batch known, each warp runs its
    rounds of loads one loaded latency each, wave after wave (:mod:`karyamorph.model.cost.memory`);
    without it, the loop trips stand in for the rounds and Little's law caps the bandwidth."""
    if not counts.global_load_requests:
        return {"dram": counts.dram_bytes / machine.dram_bytes_per_s}
    warps = counts.blocks * counts.warps_per_block
    if counts.load_batch_bytes > 0:
        loaded = machine.loaded_latency_factor * load_latency(counts, machine)
        rounds = rounds_per_warp(counts.global_load_bytes, warps, counts.load_batch_bytes)
        return {"dram": counts.dram_bytes / machine.dram_bytes_per_s,
                "latency": latency_seconds(waves, rounds, loaded, machine.clock_hz)}  # fmt: skip
    in_flight = _in_flight_bandwidth(counts, machine, resident)
    return {"dram": counts.dram_bytes / min(machine.dram_bytes_per_s, in_flight),
            "latency": waves * max(1.0, counts.loop_trips) * machine.dram_latency / machine.clock_hz,
            }  # fmt: skip


def _atomics_seconds(counts: KernelCounts, machine: CostMachine) -> float:
    """Same-address atomics, integer and floating-point each at its own measured rate."""
    floats = machine.float_atomics_per_clock or machine.atomics_per_clock
    hz = machine.clock_hz
    return (atomic_seconds(counts.atomics - counts.float_atomics, machine.atomics_per_clock, hz)
            + atomic_seconds(counts.float_atomics, floats, hz))  # fmt: skip


def load_latency(counts: KernelCounts, machine: CostMachine) -> float:
    """Cycles a global load waits on average: the DRAM latency for the share of the loaded bytes
    that must come from DRAM (the compulsory bytes, at most all of them), the L2 latency for
    the rest, which other blocks have brought into L2 already (a GEMM's tiles)."""
    if counts.global_load_bytes <= 0:
        return machine.dram_latency
    share = min(1.0, counts.dram_bytes / counts.global_load_bytes)
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
