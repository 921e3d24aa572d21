"""Run a microbenchmark kernel on the model interpreter: the hardware-only reads (the SM clock,
the SM id) become 0, every other instruction runs as the GPU would run it."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from karyamorph.isa import ast
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine

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


TICK = "karyamorph_tick"


def emulated(module: ast.Module, sm_shift: int) -> ast.Module:
    """``module`` for a stand-in device on the model: each ``%clock64`` read takes a fresh value
    from a module counter (``atom.global.add.u64``, 1000 a read, so every timed region has a
    positive length), and ``%smid`` is ``%ctaid.x >> sm_shift`` (``2**sm_shift`` blocks an SM)."""

    def swap(s: ast.Statement) -> ast.Statement:
        if not isinstance(s, ast.Instruction) or s.opcode != "mov":
            return s
        dst, src = s.operands
        if isinstance(src, ast.Register) and src.name == "%clock64":
            return ast.Instruction(
                "atom",
                ("global", "add", "u64"),
                (dst, ast.Address(ast.Symbol(TICK)), ast.Immediate("1000")),
                s.guard,
            )
        if isinstance(src, ast.Register) and src.name == "%smid":
            return ast.Instruction(
                "shr", ("u32",), (dst, ast.Register("%ctaid.x"), ast.Immediate(str(sm_shift))), s.guard
            )
        return s

    items: list[ast.TopLevel] = [ast.VarDecl("global", "u64", (TICK,), align=8)]
    for item in module.items:
        if isinstance(item, ast.Function) and item.body is not None:
            item = dataclasses.replace(item, body=tuple(swap(s) for s in item.body))
        items.append(item)
    return dataclasses.replace(module, items=tuple(items))
