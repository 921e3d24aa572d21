"""A KernelSpec on the CPU model: the interpreter's outputs against the spec's torch reference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from karyamorph.harness.gpu.compare import compare, tolerance_for, worst_error
from karyamorph.harness.gpu.inputs import make_inputs
from karyamorph.harness.gpu.reference import evaluate_reference, output_args
from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.spec import flat_args, struct_layout
from karyamorph.kernel.structs import StructArg
from karyamorph.kernel.tensormap import TensorMapArg
from karyamorph.model.interp.budget import Footprint, ModelBudget
from karyamorph.model.interp.errors import StepLimitError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.program import prepare
from karyamorph.model.ptx.ptx_machine import ptx_machine


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


def check_budget(kernel: BoundKernel, module: ast.Module, budget: ModelBudget, machine: Any = None) -> int:
    """Refuse (TooLargeError) a spec's launch over ``budget``, before any input is made: the
    entry's registers and module variables, the bytes of the launch (the interpreter's, plus the
    inputs the harness keeps beside them) and the estimated work. Returns the launch's threads."""
    program = prepare(module, kernel.entry, machine or ptx_machine(), budget)
    threads = kernel.threads
    buffers = [kernel.buffer_bytes(arg) for arg in flat_args(kernel.args) if arg.is_pointer]
    budget.check_work(threads, len(program.decoded))
    own = program.footprint(kernel.grid, kernel.block, kernel.shared_bytes, buffers)
    # The harness keeps each input as a torch tensor and a numpy copy besides the model's own.
    budget.check_bytes(Footprint((*own.parts, ("input copies", 2 * sum(buffers)))))
    return threads


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
    budget: ModelBudget | None = None,
) -> ModelRun:
    """Run ``spec`` on the model interpreter with the harness's inputs for ``seed`` (the same
    inputs a GPU trial with that seed gets). Outputs are CPU torch tensors by argument name.

    Spec arguments bind to the ``.entry`` parameters by position, as on the GPU. The launch is
    checked against ``budget`` (default :class:`ModelBudget`'s) before any input is made, and
    stops once it has spent the budget's instructions.

    Raises
    ------
    TooLargeError
        The kernel or launch is over ``budget`` (before running), or ran past its instructions.
    UnmodeledError
        The kernel uses instructions the machine does not declare (listed with their lines).
    MemoryAccessError, DivergentBarrierError, ...
        What the interpreter found wrong, with the thread and the PTX line.
    """
    module = parse(kernel.spec.ptx, kernel.spec.ptx_name)
    machine = machine or ptx_machine()
    budget = budget or ModelBudget()
    threads = check_budget(kernel, module, budget, machine)
    # numpy and torch (make_inputs) only now: a launch refused above costs no import of them
    # (seconds in a fresh process).
    import numpy as np

    params = [p.name for p in module.entry(kernel.entry).params]
    by_param = dict(zip((a.name for a in kernel.args), params, strict=True))
    tensors = make_inputs(kernel, seed)
    own = {name: _to_numpy(t) for name, t in tensors.items()}  # by argument (and field) name
    arrays = model_arguments(kernel, params, own)
    try:
        result = interpret(
            module, kernel.entry, machine, kernel.launch, arrays,
            randomize_order=randomize_order, seed=seed, max_steps=budget.steps(threads), budget=budget,
            cluster=kernel.spec.launch.cluster,
        )  # fmt: skip
    except StepLimitError:
        raise budget.ran_out(threads) from None
    # The interpreter names a struct's pointer field's buffer ``param.field``.
    out_names = {a.name: by_param[a.name] for a in kernel.args if a.is_pointer}
    out_names |= {
        f.name: f"{by_param[a.name]}.{f.name}" for a in kernel.args if a.is_struct for f in a.fields
    }
    outputs = {
        name: _to_torch(np.ascontiguousarray(result.outputs[out_names[name]]), tensors[name].dtype)
        for name in tensors
    }
    return ModelRun(tensors, outputs, result.stats.as_dict(), result.seconds)


def model_arguments(kernel: BoundKernel, params: Sequence[str], own: Mapping[str, Any]) -> dict[str, Any]:
    """What the model's interpreter takes for each ``.entry`` parameter, by parameter name.

    Spec arguments bind to ``params`` (the entry's parameter names) by position: a buffer gives
    its array from ``own`` (numpy arrays by argument and field name), a scalar its value, a
    struct a :class:`~karyamorph.kernel.structs.StructArg` of its fields, and a buffer with a
    ``tensormap`` a :class:`~karyamorph.kernel.tensormap.TensorMapArg` of its array and its map
    (the model gives the array a buffer named as the parameter, whose outputs come back under
    that name as a pointer argument's do).
    """
    arrays: dict[str, Any] = {}
    for arg, param in zip(kernel.args, params, strict=True):
        if arg.is_struct:  # its fields' buffers and scalars, by field name
            values = {f.name: own[f.name] if f.is_pointer else kernel.scalars[f.name] for f in arg.fields}
            arrays[param] = StructArg(struct_layout(arg), values)
        elif arg.is_tensormap:
            arrays[param] = TensorMapArg(own[arg.name], kernel.tensormaps[arg.name])
        else:
            arrays[param] = own[arg.name] if arg.is_pointer else kernel.scalars[arg.name]
    return arrays


def _to_numpy(t: Any) -> Any:
    """A copy of a CPU tensor for the model; bf16, which numpy lacks, as its uint16 bits."""
    import numpy as np
    import torch

    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).copy()
    return t.numpy().copy()


def _to_torch(a: Any, dtype: Any) -> Any:
    """The model's output array as a tensor of the input's ``dtype`` (bf16 from its bits)."""
    import numpy as np
    import torch

    if dtype == torch.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def interpret_spec_file(
    kernel: BoundKernel,
    *,
    seed: int = 0,
    randomize_order: bool = False,
    machine: Any = None,
    budget: ModelBudget | None = None,
) -> InterpReport:
    """Run ``spec`` on the model (:func:`run_model`) and compare every out/inout buffer with
    the reference evaluated on the same inputs."""

    run = run_model(
        kernel,
        seed=seed,
        randomize_order=randomize_order,
        machine=machine,
        budget=budget,
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
