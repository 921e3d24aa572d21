"""A stand-in for the GPU in validation tests: the microkernels' own PTX run on the model interpreter.

The interpreter executes the exact kernel text the GPU would get (dispatch, address arithmetic,
loads, stores), so everything but the launch itself is exercised on a CPU. Give it a machine
with a planted slip to play a GPU that disagrees with the model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from karyamorph.harness.gpu.validate import POISON, GpuOutput, GpuRunner, KernelJob
from karyamorph.isa.parser import parse
from karyamorph.model.interp.interpreter import KernelArg, interpret
from karyamorph.model.semantics.simt_machine import Machine


def emulator(machine: Machine) -> GpuRunner:
    """A runner that interprets every job's PTX with ``machine`` (both poisoned launches)."""

    def run(jobs: Sequence[KernelJob]) -> GpuOutput:
        first, second = [], []
        for job in jobs:
            module = parse(job.ptx)
            for poison, into in zip(POISON, (first, second), strict=True):
                out = np.full(job.rows * job.out_slots * 8, poison, dtype=np.uint8).view(np.uint64)
                out = out.reshape(job.rows, job.out_slots)
                args: dict[str, KernelArg] = {"inp": job.inputs, "out": out, "rows": np.uint32(job.rows)}
                if job.tensormap is not None:  # the map the GPU process would encode over the tensor
                    args["tmap"] = job.tensormap
                launch = (job.grid, job.block, 0)
                result = interpret(module, job.entry, machine, launch, args, max_steps=10**8)
                into.append(result.outputs["out"].reshape(job.rows, job.out_slots))
        return GpuOutput(tuple(first), tuple(second), {"device_name": "model interpreter"})

    return run
