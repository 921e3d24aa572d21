"""Run a bound kernel on the interpreter: the seeded inputs a GPU trial gets, its launch figures."""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.inputs import make_inputs
from karyamorph.kernel.spec import ArgSpec, struct_layout
from karyamorph.kernel.structs import StructArg
from karyamorph.model.interp.interpreter import InterpResult, KernelArg, interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.simt_machine import Machine


def spec_inputs(kernel: BoundKernel, seed: int = 0) -> dict[str, KernelArg]:
    """The kernel's seeded buffers (:func:`karyamorph.kernel.inputs.make_inputs`, the GPU's own
    inputs for ``seed``) and its scalars, by argument name; a struct as a
    :class:`~karyamorph.kernel.structs.StructArg` of its fields' buffers and scalars."""
    arrays = make_inputs(kernel, seed)

    def value(a: ArgSpec) -> np.ndarray | int | float:
        return arrays[a.name] if a.is_pointer else kernel.scalars[a.name]

    return {
        a.name: StructArg(struct_layout(a), {f.name: value(f) for f in a.fields}) if a.is_struct else value(a)
        for a in kernel.args
    }


def interpret_spec(
    kernel: BoundKernel,
    machine: Machine | None = None,
    *,
    inputs: dict[str, KernelArg] | None = None,
    seed: int = 0,
    randomize_order: bool = False,
    max_steps: int = 10_000_000,
) -> tuple[InterpResult, dict[str, KernelArg]]:
    """Interpret a spec's kernel for its launch.

    Returns
    -------
    (InterpResult, inputs)
        The result and the inputs it ran on (so that a caller can compute the reference).
    """
    machine = machine or ptx_machine()
    name = str(getattr(kernel, "ptx_name", "<spec>.ptx"))
    module = parse(kernel.spec.ptx, name)
    args = inputs if inputs is not None else spec_inputs(kernel, seed)
    result = interpret(
        module,
        kernel.entry,
        machine,
        kernel.launch,
        dict(args),
        randomize_order=randomize_order,
        seed=seed,
        max_steps=max_steps,
    )
    return result, args
