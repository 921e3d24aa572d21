"""One ``karyamorph microbench`` session: build, assemble, plan, run on the GPU worker, analyse, store.

Phases (each timed, and reported through ``progress``): the benchmarks' modules are built and
assembled (in parallel, :mod:`compiled`), refined (forms ptxas refused dropped, overlong loops
shortened) and assembled again; their launches planned for the device's shape; run in batches on
one persistent GPU worker; turned into figures; stored in one transaction. A dry run stops after
planning, with no device needed: it reports every kernel's registers and SASS and the launches a
device of a stand-in shape would get.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.device import NO_DEVICE, DeviceInfo
from karyamorph.harness.gpu.host import current_device, driver_problem, kernel_driver_release
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.record import device_record, toolchain_record
from karyamorph.harness.tools.toolchain import Toolchain, discover
from karyamorph.microbench.atomics import AtomicBench
from karyamorph.microbench.bandwidth import BandwidthBench
from karyamorph.microbench.banks import BankBench
from karyamorph.microbench.barriers import BarrierBench
from karyamorph.microbench.benchmark import Benchmark, PlanOptions
from karyamorph.microbench.bulk_copies import BulkCopyBench
from karyamorph.microbench.chase import ChaseBench
from karyamorph.microbench.compiled import Compiled, compile_modules
from karyamorph.microbench.flight import FlightBench
from karyamorph.microbench.forms import select_forms
from karyamorph.microbench.instructions import InstructionBench
from karyamorph.microbench.launches import Batch, LaunchSpec
from karyamorph.microbench.runner import BatchCall, run_batches, worker_call
from karyamorph.microbench.shape import DeviceShape
from karyamorph.microbench.tensor_rates import TensorBench
from karyamorph.microbench.turnover import TurnoverBench
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.store.database import Store
from karyamorph.store.microbench import FigureRow, MicrobenchRecord

REFINE_ROUNDS = 3
BATCH_LAUNCHES = 64


class MicrobenchError(RuntimeError):
    """The session cannot run as asked (no device, a bad option); the message says why."""


@dataclass(frozen=True, slots=True)
class MicrobenchOptions:
    """What ``karyamorph microbench`` was asked for (see its ``--help``).

    ``instr`` selects forms (``model validate``'s glob); ``instructions`` and ``memory`` say
    which groups run: the instruction group is the forms and, when no ``instr`` narrows it, the
    tensor cores (``tensor``); ``only`` names the benchmarks to run instead (:data:`NAMES`).
    ``arch`` defaults to the device's. ``stride`` is the pointer chase's entry stride in bytes.
    """

    instr: str | None = None
    instructions: bool = True
    memory: bool = True
    arch: str | None = None
    repeats: int = 3
    quick: bool = False
    warps: tuple[int, ...] | None = None
    stride: int = 64
    timeout_s: float = 120.0
    jobs: int | None = None
    dry_run: bool = False
    only: tuple[str, ...] = ()

    def as_params(self) -> dict[str, Any]:
        return {
            "instr": self.instr,
            "only": list(self.only),
            "instructions": self.instructions,
            "memory": self.memory,
            "repeats": self.repeats,
            "quick": self.quick,
            "warps": list(self.warps or ()),
            "stride": self.stride,
        }


@dataclass(frozen=True, slots=True)
class MicrobenchReport:
    """A session's outcome: its figures, where it ran, and the seconds each phase took."""

    arch: str
    figures: tuple[FigureRow, ...]
    environment: dict[str, Any]
    params: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)
    launches: int = 0
    dry_run: bool = False
    kernels: tuple[tuple[str, str, int, str], ...] = ()  # module, entry, registers, timed SASS
    device: DeviceInfo | None = None


Progress = Callable[[str], None]


MEMORY: dict[str, Callable[[MicrobenchOptions], Benchmark]] = {
    "chase": lambda o: ChaseBench(o.stride),
    "bandwidth": lambda _: BandwidthBench(),
    "banks": lambda _: BankBench(),
    "atomics": lambda _: AtomicBench(),
    "barriers": lambda _: BarrierBench(),
    "flight": lambda _: FlightBench(),
    "turnover": lambda _: TurnoverBench(),
    "bulk": lambda _: BulkCopyBench(),
}
"""The memory group's benchmarks by name, each made from the options."""
NAMES = ("instr", "tensor", *MEMORY)
"""Every benchmark's name, in the order a session runs them (what ``only`` may name)."""


def benchmarks(options: MicrobenchOptions, arch: str) -> list[Benchmark]:
    """The benchmarks the options select.

    Raises
    ------
    MicrobenchError
        ``only`` names no benchmark, or ``instr`` matches no form.
    """
    unknown = sorted(set(options.only) - set(NAMES))
    if unknown:
        raise MicrobenchError(f"no benchmark named {', '.join(unknown)} (known: {', '.join(NAMES)})")

    def chosen(name: str, group: bool) -> bool:
        return name in options.only if options.only else group

    out: list[Benchmark] = []
    if chosen("instr", options.instructions):
        forms, left = select_forms(ptx_machine(), arch, options.instr)
        if not forms and not left:
            raise MicrobenchError(f"--instr {options.instr!r} matches no modeled form")
        out.append(InstructionBench(forms, left))
    if chosen("tensor", options.instructions and options.instr is None):
        out.append(TensorBench())
    out += [make(options) for name, make in MEMORY.items() if chosen(name, options.memory)]
    return out


def compile_all(
    benches: Sequence[Benchmark], arch: str, toolchain: Toolchain, jobs: int | None
) -> dict[str, Compiled]:
    """Every benchmark's modules assembled for ``arch``, refined until nothing changes."""
    modules = {k: m for b in benches for k, m in b.modules(arch).items()}
    compiled = compile_modules(modules, arch, toolchain, jobs=jobs)
    for _ in range(REFINE_ROUNDS):
        again = {k: m for b in benches for k, m in b.refine(compiled).items()}
        if not again:
            break
        compiled.update(compile_modules(again, arch, toolchain, jobs=jobs))
    return compiled


def batches(
    specs: Sequence[LaunchSpec], compiled: dict[str, Compiled], size: int = BATCH_LAUNCHES
) -> list[Batch]:
    """``specs`` in batches of at most ``size``, each carrying the cubins its launches use."""
    out = []
    for i in range(0, len(specs), size):
        part = tuple(specs[i : i + size])
        out.append(Batch({s.module: compiled[s.module].cubin for s in part}, part))
    return out


def environment(device: DeviceInfo | None, shape: DeviceShape, toolchain: Toolchain) -> dict[str, Any]:
    """Where the session ran: device, drivers, clocks, toolchain, host."""
    return {
        "device_name": device.name if device else None,
        "device": device.as_dict() if device else None,
        "cuda_driver": device.cuda_driver_release if device else None,
        "driver_release": kernel_driver_release(),
        "shape": shape.as_dict(),
        "ptxas": toolchain.versions.get("ptxas", ""),
        "nvdisasm": toolchain.versions.get("nvdisasm", ""),
        "cuda_release": toolchain.cuda_release,
        "host": platform.node(),
        "python": platform.python_version(),
    }


def _kernels(compiled: dict[str, Compiled]) -> tuple[tuple[str, str, int, str], ...]:
    rows = []
    for key, c in sorted(compiled.items()):
        if not c.ok:
            rows.append((key, "-", 0, f"ptxas: {(c.error or '').splitlines()[0]}"))
            continue
        for entry, regs in sorted(c.registers.items()):
            regions = c.regions.get(entry, ())
            text = " | ".join(
                ", ".join(f"{v} {k}" for k, v in sorted(r.items(), key=lambda kv: -kv[1])[:4])
                for r in regions
            )
            rows.append((key, entry, regs, text))
    return tuple(rows)


def run_session(
    options: MicrobenchOptions,
    *,
    progress: Progress | None = None,
    call: BatchCall | None = None,
    device: DeviceInfo | None = None,
    toolchain: Toolchain | None = None,
) -> MicrobenchReport:
    """Run (or with ``dry_run`` only plan) the selected microbenchmarks.

    Parameters
    ----------
    options : MicrobenchOptions
        What to measure.
    progress : callable, optional
        Gets one line per finished phase (with its seconds).
    call : BatchCall, optional
        Runs batches; default: a persistent GPU worker on the device (tests pass a stand-in).
    device : DeviceInfo, optional
        The device (default: device 0); with ``call`` given, the device it stands for.

    Raises
    ------
    MicrobenchError
        No CUDA device for a session that is not a dry run, or a pattern that selects nothing.
    """
    say = progress or (lambda _: None)
    t0 = time.perf_counter()
    device = _device(options, device, call)
    arch = options.arch or (device.arch if device else "sm_90")
    shape = DeviceShape.of(device) if device is not None else DeviceShape.stand_in(arch)
    toolchain = toolchain or discover()
    plan = PlanOptions(options.repeats, options.quick, options.warps)
    benches = benchmarks(options, arch)
    worker = None
    if call is None and not options.dry_run:
        # The worker starts (torch, a CUDA context: seconds) while ptxas assembles.
        worker = GpuWorker(device.ordinal if device else 0)
        worker.start()
    try:
        seconds: dict[str, float] = {}
        compiled = compile_all(benches, arch, toolchain, options.jobs)
        seconds["compile"] = time.perf_counter() - t0
        say(f"assembled {len(compiled)} modules for {arch} in {seconds['compile']:.1f} s")
        specs = {b.name: b.launches(compiled, shape, plan) for b in benches}
        total = sum(len(s) for s in specs.values())
        env = environment(device, shape, toolchain)
        if options.dry_run:
            say(f"planned {total} launches for {'a stand-in' if shape.nominal else 'this'} {arch} device")
            return MicrobenchReport(
                arch, (), env, options.as_params(), seconds, total, True, _kernels(compiled), device
            )
        runner = call if call is not None else worker_call(worker)  # type: ignore[arg-type]
        figures: list[FigureRow] = []
        for bench in benches:
            t = time.perf_counter()
            outcome = run_batches(runner, batches(specs[bench.name], compiled), options.timeout_s)
            figures += bench.figures(compiled, outcome, shape, plan)
            seconds[bench.name] = time.perf_counter() - t
            failed = f", {len(outcome.failures)} failed" if outcome.failures else ""
            say(f"{bench.name}: {len(specs[bench.name])} launches in {seconds[bench.name]:.1f} s{failed}")
    finally:
        if worker is not None:
            worker.close()
    seconds["total"] = time.perf_counter() - t0
    return MicrobenchReport(arch, tuple(figures), env, options.as_params(), seconds, total, device=device)


def _device(
    options: MicrobenchOptions, device: DeviceInfo | None, call: BatchCall | None
) -> DeviceInfo | None:
    """The device to plan for: the one given, else device 0 (required unless a dry run or a
    stand-in ``call`` runs the launches).

    Raises
    ------
    MicrobenchError
        No CUDA device where one is needed.
    """
    if device is not None:
        return device
    found = current_device()
    if call is None and not options.dry_run:
        problem = driver_problem()
        if problem is not None or found is None:
            raise MicrobenchError(
                f"{problem or NO_DEVICE}: microbenchmarks need a GPU "
                "(--dry-run assembles every kernel without one)"
            )
    return found


def session_params(report: MicrobenchReport) -> dict[str, Any]:
    """The parameters stored with a session: the options, phase seconds, launch count, date."""
    return {
        **report.params,
        "seconds": report.seconds,
        "launches": report.launches,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def store_report(report: MicrobenchReport, db: Path, toolchain: Toolchain | None = None) -> str:
    """Write the session to the store at ``db``; returns its id."""
    rec = MicrobenchRecord(
        report.arch,
        platform.node(),
        session_params(report),
        report.environment,
        device_record(report.device),
        toolchain_record(toolchain or discover()),
        report.figures,
    )
    with Store.open(db) as store:
        return store.record_microbench(rec)
