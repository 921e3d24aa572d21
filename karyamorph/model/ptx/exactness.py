"""Whether the model computes a module bit for bit as the GPU does.

Every modeled instruction is exact except the hardware approximations (``.approx``, and
``div.full``: the model computes them in float64 and rounds, within the PTX error bound but not
bit for bit), floating-point atomics (the GPU's order of the additions is not the model's),
floating-point matrix multiply-accumulate (the tensor core's order and rounding), and
reads of special registers whose values only the hardware knows (clocks, timers, SM and warp
ids). A module free of these gives the same bits on the model as on the GPU for the same inputs,
so a difference there is a model defect, not rounding.
"""

from __future__ import annotations

from karyamorph.isa import ast

_APPROXIMATE = ("approx", "full")
_FLOAT_TYPES = ("f16", "f16x2", "bf16", "bf16x2", "f32", "f64")
_INTEGER_MMA = ("s8", "u8", "s4", "u4", "b1", "s32")
_HARDWARE_ONLY = ("%clock", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi",
                  "%smid", "%nsmid", "%warpid", "%nwarpid", "%gridid")  # fmt: skip
# ... and the performance monitor counters %pm0..%pm7 (any name starting with %pm).


def _reads_hardware_only(operand: ast.Operand | None) -> str | None:
    if isinstance(operand, ast.Register):
        hardware = operand.name in _HARDWARE_ONLY or operand.name.startswith("%pm")
        return operand.name if hardware else None
    if isinstance(operand, ast.Negated):
        return _reads_hardware_only(operand.operand)
    if isinstance(operand, ast.Pair):
        return _reads_hardware_only(operand.first) or _reads_hardware_only(operand.second)
    if isinstance(operand, ast.Vector | ast.ParenList):
        return next(filter(None, map(_reads_hardware_only, operand.elements)), None)
    if isinstance(operand, ast.Address):
        return next(filter(None, map(_reads_hardware_only, (operand.base, *operand.extra))), None)
    return None


def _float_atomic_sum(instr: ast.Instruction) -> bool:
    mods = instr.modifiers
    return (
        instr.opcode in ("atom", "red")
        and any(m in _FLOAT_TYPES for m in mods)
        and ("add" in mods or "sub" in mods)
    )


def _tensor_core_float(instr: ast.Instruction) -> bool:
    """A matrix multiply-accumulate on floating-point data (integer ones are exact)."""
    if not (instr.opcode in ("mma", "wgmma") or (instr.opcode == "wmma" and "mma" in instr.modifiers)):
        return False
    return not all(m in _INTEGER_MMA or not _is_type(m) for m in instr.modifiers)


def _is_type(modifier: str) -> bool:
    return modifier[0] in "sufbe" and any(c.isdigit() for c in modifier)


def inexact_reasons(module: ast.Module) -> list[str]:
    """Why the model's results on ``module`` may differ in bits from the GPU's, one line per
    instruction form (with its first line); empty when the model is bit-exact on it."""
    return _reasons(module, rounding=True)


def nondeterministic_reasons(module: ast.Module) -> list[str]:
    """Why two launches of ``module`` on the same inputs may write different bits, one line per
    instruction form: floating-point atomic sums (their order is the hardware's) and reads of
    clocks, timers and SM or warp ids. Hardware approximations and the tensor core's rounding
    are deterministic and not listed.
    """
    return _reasons(module, rounding=False)


def _reasons(module: ast.Module, *, rounding: bool) -> list[str]:
    """The instruction forms that make results order- or hardware-dependent, and with
    ``rounding`` those whose rounding the model does not reproduce bit for bit."""
    reasons: dict[str, str] = {}
    for function in module.functions:
        for instr in function.instructions():
            line = instr.loc.line
            if rounding and any(m in _APPROXIMATE for m in instr.modifiers):
                why = f"line {line}: {instr.full_opcode} is a hardware approximation"
                reasons.setdefault(instr.full_opcode, why)
            elif _float_atomic_sum(instr):
                why = f"line {line}: {instr.full_opcode} sums in the GPU's order"
                reasons.setdefault(instr.full_opcode, why)
            elif rounding and _tensor_core_float(instr):
                why = f"line {line}: {instr.full_opcode} adds in the tensor core's own order and rounding"
                reasons.setdefault(instr.full_opcode, why)
            for operand in instr.operands:
                name = _reads_hardware_only(operand)
                if name:
                    reasons.setdefault(name, f"line {line}: {name} is known only to the hardware")
    return list(reasons.values())
