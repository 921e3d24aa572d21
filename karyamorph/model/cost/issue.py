"""How often a warp scheduler finds a warp to issue, from the schedule ptxas wrote into the SASS.

Each SASS instruction of Volta and later carries its scheduling (Jia et al. 2018, "Dissecting
the NVIDIA Volta GPU Architecture via Microbenchmarking", section 2.1): the cycles its warp
waits before its next instruction (the stall count), and for instructions of variable latency
(memory, special registers, tensor ops) one of six scoreboard barriers that it releases when
its result is written (or its operands read), which later instructions wait on by a mask. A
barrier is a counter: each instruction that sets it adds one pending release, a wait mask waits
for none to be pending, and ``DEPBAR.LE SBb, n`` (after ``LDGDEPBAR`` commits a group of
``cp.async`` copies) for at most ``n``. ptxas chooses all of it; how far a load lies from its
first use, and so how much of its latency the warp's own instructions cover, is visible there
and not in the PTX (ptxas moves loads: an SGEMM's register prefetch, written before its fma
loop, can end up just before the stores that consume it).

:func:`lone_warp_cycles` walks a loop body as one warp alone would run it: an instruction issues
once its stall-count wait is over and the barriers it waits on are released, each variable
latency taken from the caller (the machine's measured latencies). Its cycles per instruction
``c`` say how often a warp is ready; with ``w`` warps on a scheduler, each ready at a given
cycle with probability ``1/c`` and independently of the others, the scheduler issues in a
fraction ``1 - (1 - 1/c) ** w`` of its cycles (:func:`issue_efficiency`). Measured with Nsight
Compute on four H200 SGEMM variants (benchmarks/stall_reasons.py), that formula with the
measured ``c`` (cycles per issue less those spent ready but not selected) gives 0.86, 0.76, 0.66
and 0.56 of the cycles where ncu counted 0.81, 0.70, 0.60 and 0.52: the ranks and, within 0.06,
the fractions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

BARRIERS = 6
"""Scoreboard barriers a warp has (SB0-SB5)."""
WARMUP = 2
"""Passes of a loop body walked before the timed ones (barriers carry over between passes)."""
PASSES = 4
"""Passes timed, averaged: a pipeline whose copies outlast a pass alternates long and short ones."""


@dataclass(frozen=True, slots=True)
class Slot:
    """One SASS instruction as the scheduler sees it.

    Attributes
    ----------
    opcode : str
        Base opcode (``LDG``, ``FFMA``).
    stall : int
        Cycles before the warp's next instruction may issue (at least 1 is taken).
    write_barrier, read_barrier : int or None
        The scoreboard barrier released when the result is written / the operands are read.
    wait_mask : int
        Bit ``b`` set: the instruction waits until barrier ``b`` has no pending release.
    wait_count : tuple of int, optional
        ``(b, n)`` for ``DEPBAR.LE SBb, n``: it waits until at most ``n`` are pending on ``b``.
    load_bytes : int
        Bytes one thread reads from global memory with it (``LDG``, ``LDGSTS``), else 0.
    """

    opcode: str
    stall: int
    write_barrier: int | None = None
    read_barrier: int | None = None
    wait_mask: int = 0
    wait_count: tuple[int, int] | None = None
    load_bytes: int = 0


def lone_warp_cycles(slots: Sequence[Slot], latency: Callable[[str], float], *, read_cycles: float = 10.0,
                     passes: int = PASSES) -> float:  # fmt: skip
    """Cycles one warp alone takes for one pass of ``slots`` (a loop body), in the steady state:
    the mean of ``passes`` passes after :data:`WARMUP` ones.

    ``latency(opcode)`` is the cycles from the issue of a variable-latency instruction to the
    release of its write barrier; ``read_cycles`` those to the release of its read barrier.

    Examples
    --------
    A load whose value is used two instructions later waits out its latency once per pass:

    >>> body = [Slot("LDG", 1, write_barrier=0), Slot("IADD3", 1), Slot("FADD", 1, wait_mask=1)]
    >>> lone_warp_cycles(body, lambda op: 100.0)
    101.0
    """
    t = 0.0
    # Release times, per barrier. A release already past counts for nothing (the warp's clock
    # only moves on), so a barrier's list is pruned when an instruction waits on it.
    pending: list[list[float]] = [[] for _ in range(BARRIERS)]
    start = 0.0
    for walked in range(WARMUP + max(1, passes)):
        if walked == WARMUP:
            start = t
        for s in slots:
            waited = [b for b in range(BARRIERS) if s.wait_mask >> b & 1]
            ready = max([t, *(max(pending[b], default=0.0) for b in waited)])
            if s.wait_count is not None:
                b, most = s.wait_count
                later = sorted(pending[b], reverse=True)
                ready = max(ready, later[most] if len(later) > most else 0.0)
                waited.append(b)
            for b in waited:
                pending[b] = [r for r in pending[b] if r > ready]
            t = ready + max(1, s.stall)
            if s.write_barrier is not None:
                pending[s.write_barrier].append(ready + latency(s.opcode))
            if s.read_barrier is not None:
                pending[s.read_barrier].append(ready + read_cycles)
    return (t - start) / max(1, passes)


def issue_efficiency(cycles_per_instruction: float, warps_per_scheduler: float) -> float:
    """The fraction of a scheduler's cycles in which it issues, with ``warps_per_scheduler``
    warps each ready one cycle in ``cycles_per_instruction`` (see the module's description).

    Examples
    --------
    >>> round(issue_efficiency(2.0, 2), 2), round(issue_efficiency(1.0, 1), 2)
    (0.75, 1.0)
    """
    if cycles_per_instruction <= 1.0 or warps_per_scheduler <= 0:
        return 1.0
    idle: float = (1.0 - 1.0 / cycles_per_instruction) ** warps_per_scheduler  # a base in (0, 1)
    return 1.0 - idle


def loads_in_flight(slots: Sequence[Slot]) -> float:
    """The most global-load bytes one thread has in flight in a pass of ``slots`` (the steady
    state of the loop): a load's bytes are in flight from its issue until an instruction waits on
    its barrier; a ``cp.async`` copy's until ``DEPBAR`` waits on the group ``LDGDEPBAR`` committed
    it to. This is the load batch as ptxas ordered the loads, which the PTX does not show.

    Examples
    --------
    Two 16-byte loads issued before the first is used, then one more:

    >>> load = [Slot("LDG", 1, write_barrier=b, load_bytes=16) for b in (0, 1)]
    >>> body = [*load, Slot("FADD", 1, wait_mask=0b01), load[0], Slot("FADD", 1, wait_mask=0b11)]
    >>> loads_in_flight(body)
    32.0
    """
    pending: list[list[float]] = [[] for _ in range(BARRIERS)]  # bytes, per barrier
    group = 0.0  # cp.async bytes not yet committed
    most = 0.0
    for _ in range(WARMUP + PASSES):
        for s in slots:
            for b in range(BARRIERS):
                if s.wait_mask >> b & 1:
                    pending[b].clear()
            if s.wait_count is not None:
                b, n = s.wait_count
                del pending[b][: max(0, len(pending[b]) - n)]
            if s.opcode == "LDGSTS":
                group += s.load_bytes
            elif s.opcode == "LDGDEPBAR" and s.write_barrier is not None:
                pending[s.write_barrier].append(group)
                group = 0.0
            elif s.load_bytes and s.write_barrier is not None:
                pending[s.write_barrier].append(float(s.load_bytes))
            most = max(most, group + sum(sum(p) for p in pending))
    return most
