"""The device figures a time prediction needs, per arch: SMs, clock, issue rates by unit,
bandwidths and latencies.

Defaults are stated with their source and replaced by measured figures where the arch's
microbenchmark tables hold them (``datasets/microbench/<arch>/``, read by the caller and passed
as ``measured``). A prediction says which figures it used (:attr:`CostMachine.source`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from karyamorph.model.cost.flight import Grid, grid_of
from karyamorph.model.cost.units import WGMMA_SPEEDUP

# Warp-instructions per clock per SM by unit (CUDA C++ Programming Guide, "Arithmetic
# Instructions" table, lanes per SM / 32), for compute capability 9.0; 8.0 differs in fp32 (64
# lanes) and 8.6+ consumer parts in fp64 (2 lanes).
_RATES_SM90: dict[str, float] = {
    "fp32": 4.0, "int": 2.0, "fp64": 2.0, "half": 4.0, "sfu": 0.5, "convert": 0.5,
    "memory": 1.0, "shuffle": 1.0, "control": 1.0, "other": 1.0,
    # mma.sync m16n8k16 (2,048 FMA): the H100 SXM5's 989.4 dense FP16 TFLOP/s over 132 SMs at
    # its 1,830 MHz boost (NVIDIA H100 Tensor Core GPU Architecture whitepaper) are 2,048 FMA per
    # clock per SM, one m16n8k16 a clock, through wgmma; mma.sync reaches about half of that
    # (Luo et al. 2024, section 5). The tensor microbenchmark measures it (``rate.tensor``) and
    # wgmma's rate over it (``wgmma_speedup``): on an H100 SXM (2026-12-06,
    # datasets/microbench/sm_90/h100) mma.sync m16n8k16 f16 reaches 1,292 FMA a clock an SM
    # from 8 warps an SM on, 0.63 m16n8k16 a clock, and wgmma 2,046 (1.58x). The H200 has the
    # same SM, so its default is the H100's figure until its own tables measure it.
    "tensor": 0.63,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class CostMachine:
    """Figures of one device.

    Parameters
    ----------
    name : str
    sms : int
        Streaming multiprocessors.
    clock_hz : float
        SM clock under load.
    rates : dict
        Warp-instructions per clock per SM, by unit (:data:`karyamorph.model.cost.units.UNITS`).
    issue_per_clock : float
        Warp-instructions one SM issues per clock in all (one per scheduler).
    dram_bytes_per_s : float
        Achievable DRAM bandwidth.
    l2_bytes_per_clock_per_sm : float
        L2 bandwidth shared out per SM.
    shared_wavefronts_per_clock : float
        Shared-memory wavefronts per clock per SM.
    dram_latency, l2_latency : float
        Load-to-use latency in cycles, of an idle memory system (a pointer chase).
    loaded_latency_factor : float
        How much longer a load takes when the memory system streams near its bandwidth (the
        queues fill): 3 is a stated assumption. The H200's :attr:`flight` grids measure it: with
        16 bytes a thread in flight, a DRAM round waits 3.3x the idle chase's latency at 64 warps
        an SM, 1.3x at 1 to 8 warps.
    atomics_per_clock : float
        Atomic updates of one address the device completes per clock (they serialise in L2);
        measured as ``global.contended`` in the microbenchmark tables.
    float_atomics_per_clock : float
        The same for floating-point adds, which no warp folds into one operation
        (``global.contended.f32``); 0: not measured, the integer rate stands in.
    launch_s : float
        Launch and drain time of an empty kernel.
    source : str
        Where the figures come from.
    measured : tuple of str
        The names of the measured figures among them.
    flight : dict
        Measured bandwidth by warps per SM and bytes in flight per thread
        (:mod:`karyamorph.model.cost.flight`), by grid: ``l2``, ``dram`` (plain loads),
        ``dram.<policy>`` (``nc``, ``cs``, ...: the search templates' cache policies) and the
        ``cp`` (``cp.async``) grid of both levels.
    use_flight_grids : bool
        Whether a round of loads waits the latency the :attr:`flight` grids give the kernel's
        resident warps, load batch and policy (and DRAM runs at its policy's peak) instead of
        ``loaded_latency_factor`` times the idle latencies. Off by default: over the 700
        measured H200 search variants the grids give a lower median error but rank the
        reduction and transpose variants worse, and they under-predict one-pass kernels of one
        element a thread (benchmarks/RESULTS.md).
    block_s : dict
        Seconds an SM takes to start and retire one block, by threads a block (the measured
        ``turnover`` of a wave of resident blocks over their number; empty: taken as 0).
    shared_latency : float
        Cycles until a shared-memory access's scoreboard barrier is released (the measured
        ``ld.shared`` chase; 30 is a stated default near Luo et al.'s H100 figure).
    scoreboard_latency : float
        The same for the other variable-latency instructions that are not global loads (special
        registers, MUFU, conversions, tensor ops): 20, a stated assumption.
    wgmma_speedup : float
        wgmma's tensor rate over mma.sync's (FMA per clock per SM): the best f16 wgmma form over
        mma.sync m16n8k16, both measured in one session by the tensor microbenchmark; else the
        stated :data:`~karyamorph.model.cost.units.WGMMA_SPEEDUP` (1.58, an H100's).
    bulk_bytes_per_s : float
        Bandwidth of bulk and tensor copies (the TMA unit) streaming from DRAM, whole device: the
        best configuration of the bulk-copy microbenchmark; 0: not measured, and bulk copies'
        bytes count among the compulsory bytes at :attr:`dram_bytes_per_s` as any other bytes.
    bulk_l2_bytes_per_clock_per_sm : float
        The same from an L2-resident array, per SM (every SM copying); 0: not measured, and bulk
        copies' re-reads of L2 are not charged.
    """

    name: str
    sms: int
    clock_hz: float
    rates: Mapping[str, float]
    dram_bytes_per_s: float
    l2_bytes_per_clock_per_sm: float
    dram_latency: float
    l2_latency: float
    issue_per_clock: float = 4.0
    loaded_latency_factor: float = 3.0
    atomics_per_clock: float = 0.5
    float_atomics_per_clock: float = 0.0
    shared_wavefronts_per_clock: float = 1.0
    launch_s: float = 2.5e-6
    source: str = "defaults"
    measured: tuple[str, ...] = field(default=())
    flight: Mapping[str, Grid] = field(default_factory=dict)
    use_flight_grids: bool = False
    block_s: Mapping[int, float] = field(default_factory=dict)
    shared_latency: float = 30.0
    scoreboard_latency: float = 20.0
    wgmma_speedup: float = WGMMA_SPEEDUP
    bulk_bytes_per_s: float = 0.0
    bulk_l2_bytes_per_clock_per_sm: float = 0.0


# H200 (GH100, 132 SMs, 1,980 MHz boost, HBM3e 4.8 TB/s of which ~90% is reachable by a copy
# kernel); latencies from Luo et al. 2024 and Chips and Cheese's H100 measurements (L2 ~ 260-290,
# DRAM ~ 480-700 cycles); L2 bandwidth ~ 5.5 TB/s on H100 (Chips and Cheese).
_DEFAULTS: dict[str, CostMachine] = {
    "sm_90": CostMachine("sm_90 (H200 defaults)", 132, 1.98e9, _RATES_SM90, 4.3e12, 21.0, 600.0, 270.0),
    "sm_120": CostMachine(
        "sm_120 (RTX 5090 defaults)", 170, 2.41e9, {**_RATES_SM90, "fp64": 0.0625, "tensor": 0.25},
        1.6e12, 16.0, 550.0, 250.0,
    ),
}  # fmt: skip


def machine_for(
    arch: str, measured: Mapping[str, float] | None = None, **figures: float | int
) -> CostMachine:
    """The cost machine of ``arch`` (its base name, e.g. ``sm_90``): defaults, then the device's
    own ``figures`` (``sms``, ``clock_hz``, ``dram_bytes_per_s``, ...), then ``measured`` figures
    from microbenchmarks (same names, plus ``rate.<unit>``, ``wgmma_speedup``,
    ``bulk_bytes_per_s``, ``bulk_l2_bytes_per_clock_per_sm``).

    Raises
    ------
    KeyError
        No defaults for ``arch`` and no figures to stand in for them.
    """
    base = arch.rstrip("af")
    machine = _DEFAULTS.get(base) or _DEFAULTS["sm_90"]
    values = {**figures, **(measured or {})}
    rates = dict(machine.rates)
    plain: dict[str, float | int] = {}
    points: dict[str, list[tuple[float, float, float]]] = {}
    turnover: dict[int, float] = {}
    for key, value in values.items():
        if key.startswith("rate."):
            rates[key[5:]] = float(value)
        elif key.startswith("flight."):  # flight.<grid>.<warps per SM>.<bytes per thread>
            grid, warps, batch = key[len("flight.") :].rsplit(".", 2)
            points.setdefault(grid, []).append((float(warps), float(batch), float(value)))
        elif key.startswith("turnover."):  # turnover.<threads a block>: seconds a block
            turnover[int(key.split(".", 1)[1])] = float(value)
        elif key in CostMachine.__dataclass_fields__:
            plain[key] = value
    source = "defaults" if not values else f"defaults + {', '.join(_names(values))}"
    return dataclasses.replace(machine, rates=rates, source=source, measured=_names(measured or {}),
                               flight={k: grid_of(v) for k, v in points.items()},
                               block_s=dict(sorted(turnover.items())), **plain)  # type: ignore[arg-type]  # fmt: skip


def _names(figures: Mapping[str, float | int]) -> tuple[str, ...]:
    """The figures' names, sorted, a grid's points under one name (``flight.dram.nc``)."""

    def name(key: str) -> str:
        if key.startswith("flight."):
            return key.rsplit(".", 2)[0]
        return "turnover" if key.startswith("turnover.") else key

    return tuple(sorted({name(k) for k in figures}))
