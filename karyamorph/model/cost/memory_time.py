"""The time global memory takes, by the laws that bound it: bandwidth, Little's law over the
loads a kernel keeps in flight, and same-address atomics that serialise in L2.

Little's law: a memory system with latency ``L`` serves at most ``N / L`` bytes per second when
``N`` bytes are in flight. On a GPU ``N`` is what the resident warps have issued and not yet
used: per warp, 32 lanes times the thread's load batch (:mod:`karyamorph.model.cost.batches`).
A warp that must move ``B`` bytes, ``b`` at a time, runs ``ceil(B / b)`` rounds of one latency
each; the SM's waves of blocks run one after another.
"""

from __future__ import annotations

import math

WARP_LANES = 32


def rounds_per_warp(load_bytes: float, warps: float, batch_bytes: float) -> float:
    """Rounds of dependent global loads one warp runs: its share of ``load_bytes`` (the
    launch's, over ``warps`` warps) in batches of ``batch_bytes`` per thread (32 lanes).

    Examples
    --------
    >>> rounds_per_warp(load_bytes=64 * 1024, warps=8, batch_bytes=32)  # 8 KiB a warp, 1 KiB a batch
    8.0
    """
    if warps <= 0 or batch_bytes <= 0 or load_bytes <= 0:
        return 0.0
    return max(1.0, load_bytes / warps / (WARP_LANES * batch_bytes))


def latency_seconds(waves: int, rounds: float, latency_cycles: float, clock_hz: float) -> float:
    """The time ``waves`` waves of warps take when each runs ``rounds`` rounds of loads, each
    round one ``latency_cycles`` (Little's law with the resident warps as the loads in flight)."""
    return waves * rounds * latency_cycles / clock_hz


def flight_bandwidth(sms: int, resident_warps: float, batch_bytes: float, latency_s: float) -> float:
    """Bytes per second ``sms`` SMs draw with ``resident_warps`` warps each, every warp with a
    batch of ``batch_bytes`` per thread in flight for ``latency_s`` (Little's law: N / L)."""
    if latency_s <= 0:
        return math.inf
    return sms * resident_warps * WARP_LANES * batch_bytes / latency_s


def atomic_seconds(atomics: float, per_clock: float, clock_hz: float) -> float:
    """The time ``atomics`` same-address updates take in L2, one after another at ``per_clock``
    a clock (they serialise on the address; the SMs' count does not help)."""
    if atomics <= 0:
        return 0.0
    return atomics / per_clock / clock_hz
