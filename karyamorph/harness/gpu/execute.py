"""The jobs' work inside the GPU worker: correctness trials and timing on one held CUDA context.

:class:`WorkerState` is made once per worker process: the device made current (cuda.core and
torch share its primary context), one stream, the SM clock reader, the spin kernel compiled, and
a cache of loaded modules by cubin hash. The ``run_*`` functions do one job each and raise on
any failure; the worker's loop turns the exception into the job's failure.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from karyamorph.harness.gpu.clock import ClockReader, open_clock
from karyamorph.harness.gpu.compare import compare, tolerance_for
from karyamorph.harness.gpu.device import NO_DEVICE, DeviceInfo, list_devices
from karyamorph.harness.gpu.inputs import host_bits, make_inputs
from karyamorph.harness.gpu.jobs import (
    CorrectnessJob,
    CorrectnessReport,
    EvaluateJob,
    Evaluation,
    TimingJob,
    Trial,
)
from karyamorph.harness.gpu.launch import GUARD_BYTES, KernelLaunch, cuda_core_errors, kernel_args, upload
from karyamorph.harness.gpu.measurement import Timing, measure, spin_kernel
from karyamorph.harness.gpu.reference import evaluate_reference, output_args
from karyamorph.harness.gpu.timed_check import LaunchGuard
from karyamorph.isa import ast
from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import flat_args
from karyamorph.model.ptx.exactness import nondeterministic_reasons

# Loaded modules kept per worker; a search meets each variant's cubin a few times at most, so
# the oldest are dropped (cuda.core unloads a module when its ObjectCode is collected).
MAX_MODULES = 64


def job_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a job may raise and its worker survives to report (CUDA errors included:
    the worker reports them, then leaves). Anything else kills the worker, which its supervisor
    reports as a crash with the traceback."""
    return (
        RuntimeError, ValueError, TypeError, LookupError, ArithmeticError, AttributeError, OSError,
        ImportError, *cuda_core_errors(),
    )  # fmt: skip


class PartialResult(Exception):
    """A job failed after part of its result was known (an evaluation whose timing failed after
    correctness passed); ``value`` travels back with the failure, the cause is ``__cause__``."""

    def __init__(self, value: Any) -> None:
        super().__init__("the job failed after a partial result")
        self.value = value


# Input sets a worker keeps (a search's correctness trials and timing: 3 seeds, and room for the
# winner's fresh ones).
MAX_INPUT_SETS = 6


def input_key(kernel: BoundKernel, seed: int) -> tuple[Any, ...]:
    """Everything :func:`make_inputs` reads: two kernels with one key get the same inputs."""
    args = tuple((a.name, a.role, a.dtype.name, tuple(kernel.shapes.get(a.name, ())), a.init)
                 for a in flat_args(kernel.args))  # fmt: skip
    return (args, seed)


@dataclass(slots=True)
class WorkerState:
    """What a worker process holds between jobs (build it with :meth:`open`)."""

    device: DeviceInfo
    cuda_device: Any
    stream: Any
    clock: ClockReader
    modules: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    input_sets: OrderedDict[tuple[Any, ...], dict[str, Any]] = field(default_factory=OrderedDict)
    params: dict[tuple[str, str], tuple[ast.Param, ...]] = field(default_factory=dict)
    nondeterminism: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @staticmethod
    def open(ordinal: int) -> WorkerState:
        """Make device ``ordinal``'s context, torch's allocator, the clock reader and the spin kernel.

        Raises
        ------
        LookupError
            There is no such device.
        """
        import torch
        from cuda.core import Device

        devices = list_devices()
        if not 0 <= ordinal < len(devices):
            found = f"no CUDA device {ordinal} ({len(devices)} found)"
            raise LookupError(found if devices else NO_DEVICE)
        cuda_device = Device(ordinal)
        cuda_device.set_current()  # the primary context, which torch uses too
        torch.cuda.set_device(ordinal)
        # Touch the device through torch now, so that the first job pays for nothing but itself.
        torch.zeros(1, device=f"cuda:{ordinal}").add_(1)
        torch.cuda.synchronize(ordinal)
        state = WorkerState(devices[ordinal], cuda_device, cuda_device.create_stream(), open_clock(ordinal))
        spin_kernel(ordinal)
        return state

    @property
    def ordinal(self) -> int:
        return self.device.ordinal

    @property
    def torch_device(self) -> str:
        return f"cuda:{self.device.ordinal}"

    def kernel_launch(self, cubin: bytes, kernel: BoundKernel) -> KernelLaunch:
        """``kernel``'s entry in ``cubin``, its module loaded once per cubin (by sha256)."""
        from cuda.core import ObjectCode

        key = hashlib.sha256(cubin).hexdigest()
        code = self.modules.pop(key, None)
        if code is None:
            code = ObjectCode.from_cubin(cubin, name=f"{kernel.entry}.cubin")
        self.modules[key] = code
        while len(self.modules) > MAX_MODULES:
            self.modules.popitem(last=False)
        return KernelLaunch.from_code(code, kernel.entry, kernel, self.cuda_device, self.stream)

    def inputs(self, kernel: BoundKernel, seed: int) -> dict[str, Any]:
        """:func:`make_inputs` of ``kernel`` and ``seed`` (CPU tensors: read them, never write),
        kept for the next jobs: a search's variants share their arguments, sizes and seeds, and
        making 256 MiB of seeded floats costs more than launching the kernel that reads them."""
        key = input_key(kernel, seed)
        found = self.input_sets.pop(key, None)
        if found is None:
            found = make_inputs(kernel, seed)
        self.input_sets[key] = found
        while len(self.input_sets) > MAX_INPUT_SETS:
            self.input_sets.popitem(last=False)
        return found

    def _parsed(self, kernel: BoundKernel) -> tuple[str, str]:
        """Parse the kernel's PTX once per PTX and entry for what the jobs need of it (its
        ``.param`` list, why its launches may differ); the key of both caches."""
        ptx_key = hashlib.sha256(kernel.spec.ptx.encode()).hexdigest()
        key = (ptx_key, kernel.entry)
        if key not in self.params:
            module = prepare(kernel.spec)
            self.params[key] = module.entry(kernel.entry).params
            self.nondeterminism[ptx_key] = tuple(nondeterministic_reasons(module))
        return key

    def entry_params(self, kernel: BoundKernel) -> tuple[ast.Param, ...]:
        """The entry's ``.param`` list (to pack scalars by their PTX type), parsed once per PTX."""
        return self.params[self._parsed(kernel)]

    def nondeterministic(self, kernel: BoundKernel) -> tuple[str, ...]:
        """Why the kernel's outputs may differ between launches on the same inputs, once per PTX."""
        return self.nondeterminism[self._parsed(kernel)[0]]

    def release(self) -> None:
        """Give cached device memory back between jobs, so the sanitizer's and ncu's own
        processes find the GPU's memory free."""
        import torch

        torch.cuda.empty_cache()


def _same_bits(x: Any, y: Any) -> bool:
    import torch

    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    return torch.equal(
        x.contiguous().reshape(-1).view(torch.uint8), y.contiguous().reshape(-1).view(torch.uint8)
    )


def run_correctness(state: WorkerState, job: CorrectnessJob) -> CorrectnessReport:
    """Run the trials of ``job``: fresh inputs, poisoned outputs in guarded buffers, the reference.

    A trial fails when an output differs from the reference (NaN never passes; elements still
    holding the poison are unwritten), when a store changed a guard byte, or when an output is
    bit-identical to the previous trial's while the reference changed (a stale result).
    """
    import torch

    kernel = job.kernel
    spec = kernel.spec
    launch = state.kernel_launch(job.cubin, kernel)
    params = state.entry_params(kernel)
    device = state.torch_device
    outputs = output_args(kernel)
    poisoned = [a.name for a in kernel.args if a.role == "out"]
    driver_blocks = launch.driver_blocks_per_sm()
    trials: list[Trial] = []
    first: dict[str, Any] = {}
    previous: tuple[list[Any], tuple[Any, ...]] | None = None
    for seed in range(job.seed, job.seed + job.trials):
        initial = state.inputs(kernel, seed)
        # The reference gets its own copies: it may modify them, and so may the kernel.
        expected = evaluate_reference(kernel, {k: v.to(device) for k, v in initial.items()})
        buffers = upload(initial, device=device, guard_bytes=GUARD_BYTES, poison=poisoned)
        torch.cuda.synchronize(device)  # the copies run on torch's stream, the kernel on ours
        launch.set_args(kernel_args(kernel, params, buffers.pointers()))
        launch.enqueue()
        launch.sync()
        actual = [buffers.tensors[a.name] for a in outputs]
        comparisons = tuple(
            compare(a.name, out, exp, tolerance_for(a.dtype, spec.atol, spec.rtol), poisoned=a.role == "out")
            for a, out, exp in zip(outputs, actual, expected, strict=True)
        )
        damage = tuple(buffers.guard_damage())
        unchanged: list[str] = []
        if previous is not None:
            for a, out, exp, old_out, old_exp in zip(outputs, actual, expected, *previous, strict=True):
                if not _same_bits(exp, old_exp) and _same_bits(out, old_out):
                    unchanged.append(a.name)
        previous = ([t.clone() for t in actual], expected)
        if job.keep_first_outputs and not trials:
            first = {a.name: host_bits(t, a.dtype) for a, t in zip(outputs, actual, strict=True)}
        passed = all(c.passed for c in comparisons) and not damage and not unchanged
        trials.append(Trial(seed, passed, comparisons, damage, tuple(unchanged)))
        del buffers
    return CorrectnessReport(tuple(trials), driver_blocks, first)


def run_timing(state: WorkerState, job: TimingJob) -> Timing:
    """Measure ``job.kernel`` on inputs made from ``job.seed`` (each buffer its own allocation);
    unless ``job.options.check_outputs`` is off, check what every launch wrote
    (:class:`~karyamorph.harness.gpu.timed_check.LaunchGuard`)."""
    import torch

    kernel = job.kernel
    options = job.options
    launch = state.kernel_launch(job.cubin, kernel)
    poisoned = [a.name for a in kernel.args if a.role == "out"]
    buffers = upload(state.inputs(kernel, job.seed), device=state.torch_device, poison=poisoned)
    torch.cuda.synchronize(state.torch_device)
    launch.set_args(kernel_args(kernel, state.entry_params(kernel), buffers.pointers()))
    guard = None
    if options.check_outputs:
        guard = LaunchGuard.open(
            kernel, buffers.tensors, launch.stream_handle, seed=secrets.randbits(64), swaps=options.swaps,
            max_samples=options.max_samples, nondeterministic=state.nondeterministic(kernel),
        )  # fmt: skip
    timing = measure(
        launch.enqueue,
        launch.stream,
        ordinal=state.ordinal,
        l2_bytes=int(state.device.attributes.get("l2_cache_bytes", 0)),
        options=options,
        clock=state.clock,
        prepare=guard.prepare if guard is not None else None,
        inspect=guard.inspect if guard is not None else None,
    )
    if guard is not None:
        timing = dataclasses.replace(timing, check=guard.finish(launch.enqueue))
    del buffers  # kept alive until here: the kernel read and wrote them during the measurement
    return timing


def run_evaluate(state: WorkerState, job: EvaluateJob) -> Evaluation:
    """Correctness, then timing (on a seed of its own) when every trial passed, and when the
    timed launches wrote what they should.

    Raises
    ------
    PartialResult
        Timing failed after correctness passed; it carries the correctness report.
    """
    report = run_correctness(state, CorrectnessJob(job.kernel, job.cubin, job.seed, job.trials))
    if not report.passed:
        return Evaluation(report, None)
    try:
        # Inputs no trial has seen: a result kept from the trials cannot pass for the timed one.
        timing = run_timing(state, TimingJob(job.kernel, job.cubin, job.seed + job.trials, job.options))
    except job_errors() as exc:
        # The worker's loop classifies the cause (a CUDA error ends the worker).
        raise PartialResult(Evaluation(report, None)) from exc
    return Evaluation(report, timing)
