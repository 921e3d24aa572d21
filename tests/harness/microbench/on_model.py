"""Run a microbenchmark kernel on the model interpreter: the hardware-only reads (the SM clock,
the SM id) become 0, every other instruction runs as the GPU would run it."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from karyamorph.isa import ast
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.machine import ptx_machine

HARDWARE_ONLY = ("%clock64", "%smid")


def _zeroed(op: ast.Operand) -> ast.Operand:
    return ast.Immediate("0") if isinstance(op, ast.Register) and op.name in HARDWARE_ONLY else op


def without_hardware_reads(module: ast.Module) -> ast.Module:
    """``module`` with every read of ``%clock64`` and ``%smid`` replaced by the literal 0."""
    items = []
    for item in module.items:
        if isinstance(item, ast.Function) and item.body is not None:
            body = tuple(
                dataclasses.replace(s, operands=tuple(_zeroed(o) for o in s.operands))
                if isinstance(s, ast.Instruction)
                else s
                for s in item.body
            )
            item = dataclasses.replace(item, body=body)
        items.append(item)
    return dataclasses.replace(module, items=tuple(items))


def run(
    module: ast.Module,
    entry: str,
    grid: int,
    block: int,
    args: dict[str, Any],
    shared: int = 0,
    max_steps: int = 5_000_000,
) -> dict[str, np.ndarray]:
    """The outputs of ``entry`` run for one launch on the model (clock and SM id reading 0)."""
    result = interpret(
        without_hardware_reads(module), entry, ptx_machine(), (grid, block, shared), args, max_steps=max_steps
    )
    return result.outputs
