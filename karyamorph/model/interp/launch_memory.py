"""A launch's memory laid out: every block's shared memory (static and dynamic, within the
machine's limit), each thread's local memory, the parameter space, and the module's
``.global``/``.const`` variables as global allocations."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from karyamorph.model.interp.errors import LaunchError
from karyamorph.model.interp.geometry import Geometry
from karyamorph.model.interp.memory import Allocation, Memory
from karyamorph.model.interp.program import Program, align_up
from karyamorph.model.semantics.simt_machine import Machine


def launch_memory(program: Program, machine: Machine, geo: Geometry, shared_bytes: int) -> Memory:
    """The memory of a launch of ``program`` with ``shared_bytes`` of dynamic shared memory.

    Raises
    ------
    LaunchError
        A block's shared memory (static and dynamic) beyond the machine's limit.
    """
    shared_total = program.static_shared
    for offset in program.shared_symbols.values():
        if offset >= program.static_shared:  # a dynamic (extern) array: starts at its offset
            shared_total = max(shared_total, offset + shared_bytes)
    limit = machine.resources().max_shared_memory_per_block_bytes
    if shared_total > limit:
        exceed = f"{shared_total} bytes of shared memory per block exceed {limit}"
        raise LaunchError(f"{program.fn.name}: {exceed} on {machine.arch}")
    param = Allocation(
        "params",
        "param",
        0,
        program.param_size,
        np.zeros(max(16, align_up(program.param_size, 16)), np.uint8),
    )
    blocks = geo.n_threads // geo.block_threads
    return Memory([], shared_total, blocks, geo.block_threads, program.local_size, geo.n_threads, param)


def bind_variables(program: Program, mem: Memory, kept: Mapping[str, np.ndarray]) -> None:
    """Allocate the module's variables with their initial bytes, or the bytes ``kept`` gives
    one (``.const`` too: the host may set it, as ``cudaMemcpyToSymbol`` does), and record where
    each lives in ``program.globals``.

    Raises
    ------
    LaunchError
        Given bytes of another size than the variable's.
    """
    for var in program.variables:
        data = np.frombuffer(var.data, np.uint8)
        if var.name in kept:
            data = np.asarray(kept[var.name], np.uint8).reshape(-1)
            if data.size != var.size:
                raise LaunchError(f"module variable {var.name}: {data.size} bytes given, it has {var.size}")
        program.globals[var.name] = mem.add_global(var.name, data, var.space).base
