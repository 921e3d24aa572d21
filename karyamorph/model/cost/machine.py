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

# Warp-instructions per clock per SM by unit (CUDA C++ Programming Guide, "Arithmetic
# Instructions" table, lanes per SM / 32), for compute capability 9.0; 8.0 differs in fp32 (64
# lanes) and 8.6+ consumer parts in fp64 (2 lanes).
_RATES_SM90: dict[str, float] = {
    "fp32": 4.0, "int": 2.0, "fp64": 2.0, "half": 4.0, "sfu": 0.5, "convert": 0.5,
    "memory": 1.0, "shuffle": 1.0, "control": 1.0, "other": 1.0,
    # mma.sync m16n8k16 (2,048 FMA): the H100 SXM5's 989.4 dense FP16 TFLOP/s over 132 SMs at
    # its 1,830 MHz boost (NVIDIA H100 Tensor Core GPU Architecture whitepaper) are 2,048 FMA per
    # clock per SM, one m16n8k16 a clock, through wgmma; mma.sync reaches about half of that
    # (Luo et al. 2024, section 5). The measured HGEMM searches reach 454 TFLOP/s with mma.sync,
    # above the quarter rate once assumed here.
    "tensor": 0.5,
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
        queues fill): the latency Little's law needs for loads in flight. 3 is a stated
        assumption, not a measurement (the microbenchmarks time an idle chase only); the cost
        model's Spearman figures are reported for 2, 3 and 4 in benchmarks/RESULTS.md.
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
    from microbenchmarks (same names, plus ``rate.<unit>``).

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
    for key, value in values.items():
        if key.startswith("rate."):
            rates[key[5:]] = float(value)
        elif key in CostMachine.__dataclass_fields__:
            plain[key] = value
    source = "defaults" if not values else f"defaults + {', '.join(sorted(values))}"
    return dataclasses.replace(machine, rates=rates, source=source, measured=tuple(sorted(measured or ())),
                               **plain)  # type: ignore[arg-type]  # fmt: skip
