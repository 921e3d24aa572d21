"""A KernelSpec on the CPU model: the interpreter's outputs against the spec's torch reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from karyamorph.harness.gpu.compare import compare, tolerance_for, worst_error
from karyamorph.harness.gpu.inputs import make_inputs
from karyamorph.harness.gpu.reference import evaluate_reference, output_args
from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.machine import ptx_machine


@dataclass(frozen=True, slots=True)
class InterpReport:
    """The interpreter's verdict on one spec: the ``karyamorph interp --format json`` payload."""

    status: str
    match: bool
    max_abs_error: float
    outputs: dict[str, dict[str, Any]]
    stats: dict[str, Any]
    seconds: float
    seed: int

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "match": self.match,
            "max_abs_error": self.max_abs_error,
            "outputs": self.outputs,
            "stats": self.stats,
            "seconds": self.seconds,
            "seed": self.seed,
        }


def estimated_thread_instructions(kernel: BoundKernel, module: ast.Module) -> int:
    """Threads in the launch times the entry's static instruction count: a floor on the work."""
    gx, gy, gz = kernel.grid
    bx, by, bz = kernel.block
    static = sum(1 for _ in module.entry(kernel.entry).instructions())
    return gx * gy * gz * bx * by * bz * static


@dataclass(frozen=True, slots=True)
class ModelRun:
    """The interpreter's result for a spec and the inputs it ran on, keyed by spec argument name."""

    inputs: dict[str, Any]
    outputs: dict[str, Any]
    stats: dict[str, Any]
    seconds: float


def run_model(
    kernel: BoundKernel,
    *,
    seed: int = 0,
    randomize_order: bool = False,
    machine: Any = None,
    max_thread_instructions: float | None = None,
) -> ModelRun:
    """Run ``spec`` on the model interpreter with the harness's inputs for ``seed`` (the same
    inputs a GPU trial with that seed gets). Outputs are CPU torch tensors by argument name.

    Spec arguments bind to the ``.entry`` parameters by position, as on the GPU. With
    ``max_thread_instructions``, the run stops (StepLimitError) once the whole launch has
    executed about that many thread-instructions.

    Raises
    ------
    UnmodeledError
        The kernel uses instructions the machine does not declare (listed with their lines).
    MemoryAccessError, DivergentBarrierError, ...
        What the interpreter found wrong, with the thread and the PTX line.
    """
    import numpy as np
    import torch


    module = parse(kernel.spec.ptx, kernel.spec.ptx_name)
    params = [p.name for p in module.entry(kernel.entry).params]
    by_param = dict(zip((a.name for a in kernel.args), params, strict=True))
    tensors = make_inputs(kernel, seed)
    arrays: dict[str, Any] = {by_param[name]: t.numpy().copy() for name, t in tensors.items()}
    for arg in kernel.args:
        if not arg.is_pointer:
            arrays[by_param[arg.name]] = kernel.scalars[arg.name]
    threads = 1
    for d in (*kernel.grid, *kernel.block):
        threads *= d
    max_steps = (
        10_000_000 if max_thread_instructions is None else max(1, int(max_thread_instructions // threads))
    )
    launch = (kernel.grid, kernel.block, kernel.shared_bytes)
    result = interpret(
        module, kernel.entry, machine or ptx_machine(), launch, arrays,
        randomize_order=randomize_order, seed=seed, max_steps=max_steps,
    )  # fmt: skip
    outputs = {
        a.name: torch.from_numpy(np.ascontiguousarray(result.outputs[by_param[a.name]]))
        for a in kernel.args
        if a.is_pointer
    }
    return ModelRun(tensors, outputs, result.stats.as_dict(), result.seconds)


def interpret_spec_file(
    kernel: BoundKernel,
    *,
    seed: int = 0,
    randomize_order: bool = False,
    machine: Any = None,
    max_thread_instructions: float | None = None,
) -> InterpReport:
    """Run ``spec`` on the model (:func:`run_model`) and compare every out/inout buffer with
    the reference evaluated on the same inputs."""

    run = run_model(
        kernel,
        seed=seed,
        randomize_order=randomize_order,
        machine=machine,
        max_thread_instructions=max_thread_instructions,
    )
    if kernel.spec.reference.torch is None and kernel.spec.reference.python is None:
        return InterpReport("pass", True, 0.0, {}, run.stats, run.seconds, seed)
    outputs: dict[str, dict[str, Any]] = {}
    match = True
    expected = evaluate_reference(kernel, {k: v.clone() for k, v in run.inputs.items()})
    for arg, want in zip(output_args(kernel), expected, strict=True):
        tol = tolerance_for(arg.dtype, kernel.spec.atol, kernel.spec.rtol)
        c = compare(arg.name, run.outputs[arg.name], want, tol)
        outputs[arg.name] = c.as_dict()
        match = match and c.passed
    worst = worst_error(o["max_abs_err"] for o in outputs.values())
    return InterpReport("pass" if match else "fail", match, worst, outputs, run.stats, run.seconds, seed)
