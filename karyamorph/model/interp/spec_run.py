"""Run a KernelSpec-like object on the interpreter: inputs from its initialisers, launch from its sizes.

``model/`` may not import ``harness``; the spec is taken by its attributes (``ptx``, ``entry``,
``args`` with ``name``/``role``/``dtype.name``/``init``, ``grid()``, ``block()``,
``shared_bytes()``, ``shape(arg)``, ``scalar_value(arg)``), which :class:`KernelSpec` has.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel
from karyamorph.model.interp.interpreter import InterpResult, interpret
from karyamorph.model.ptx.machine import ptx_machine
from karyamorph.model.semantics.machine import Machine

NUMPY_DTYPES: dict[str, Any] = {
    "f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64,
    "s8": np.int8, "u8": np.uint8, "s16": np.int16, "u16": np.uint16,
    "s32": np.int32, "u32": np.uint32, "s64": np.int64, "u64": np.uint64,
}  # fmt: skip


def make_inputs(kernel: BoundKernel, seed: int = 0) -> dict[str, Any]:
    """Numpy arrays (pointer arguments) and scalars for a kernel, from its initialisers."""
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for arg in kernel.args:
        if arg.role == "scalar":
            out[arg.name] = kernel.scalars[arg.name]
            continue
        shape = kernel.shapes[arg.name]
        dt = NUMPY_DTYPES[arg.dtype.name]
        kind = arg.init.kind
        v: Any
        if kind == "randn":
            v = rng.standard_normal(shape)
        elif kind == "rand":
            v = rng.random(shape)
        elif kind == "ones":
            v = np.ones(shape)
        elif kind == "arange":
            v = np.arange(int(np.prod(shape))).reshape(shape)
        elif kind == "randint":
            v = rng.integers(arg.init.low, arg.init.high, size=shape)
        else:
            v = np.zeros(shape)
        out[arg.name] = np.asarray(v).astype(dt)
    return out


def interpret_spec(
    kernel: BoundKernel,
    machine: Machine | None = None,
    *,
    inputs: dict[str, Any] | None = None,
    seed: int = 0,
    randomize_order: bool = False,
    max_steps: int = 10_000_000,
) -> tuple[InterpResult, dict[str, Any]]:
    """Interpret a spec's kernel for its launch.

    Returns
    -------
    (InterpResult, inputs)
        The result and the inputs it ran on (so that a caller can compute the reference).
    """
    machine = machine or ptx_machine()
    name = str(getattr(kernel, "ptx_name", "<spec>.ptx"))
    module = parse(kernel.spec.ptx, name)
    args = inputs if inputs is not None else make_inputs(kernel, seed)
    launch = (kernel.grid, kernel.block, kernel.shared_bytes)
    result = interpret(
        module,
        kernel.entry,
        machine,
        launch,
        dict(args),
        randomize_order=randomize_order,
        seed=seed,
        max_steps=max_steps,
    )
    return result, args
