"""Call-site ``.param`` variables as registers, once calls are expanded in place.

After :mod:`karyamorph.model.interp.inline` an argument or return variable is written and read
only by ``st.param`` / ``ld.param`` at constant offsets (nvcc and LLVM emit nothing else for
calls). Each field such an access touches, ``(variable, byte offset, width)``, becomes a
register, and each access a ``mov`` of the access's type, so a value passes through a call with
no memory access at all: the interpreter and the checker see exactly the value stored. Fields of
one variable that overlap with different widths, or a variable used as an address, are refused
with an :class:`~karyamorph.model.semantics.decode.UnmodeledError` naming the line.
"""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.isa import ast
from karyamorph.model.semantics.decode import Unmodeled, UnmodeledError


@dataclass(frozen=True, slots=True)
class _Access:
    ins: ast.Instruction
    var: str
    offset: int
    type: str  # the access's element type (``f32``)
    count: int  # vector elements


def _type_of(ins: ast.Instruction) -> tuple[str, int]:
    count = 1
    for m in ins.modifiers:
        if m in ("v2", "v4"):
            count = int(m[1])
    return ins.modifiers[-1], count


def params_to_registers(body: tuple[ast.Statement, ...], entry: str) -> tuple[ast.Statement, ...]:
    """``body`` with its ``.param`` variables replaced by registers (see the module docstring)."""
    variables: dict[str, ast.VarDecl] = {}
    _collect(body, variables)
    if not variables:
        return body
    accesses: dict[int, _Access] = {}
    by_var: dict[str, list[_Access]] = {v: [] for v in variables}
    bad: list[Unmodeled] = []
    for ins in _instructions(body):
        for k, op in enumerate(ins.operands):
            if isinstance(op, ast.Symbol) and op.name in variables:
                why = f"uses the address of parameter {op.name}"
                bad.append(Unmodeled(ins.full_opcode, ins.loc.line, why))
            if not isinstance(op, ast.Address) or not isinstance(op.base, ast.Symbol):
                continue
            name = op.base.name
            if name not in variables:
                continue
            if ins.opcode not in ("ld", "st") or "param" not in ins.modifiers or k != int(ins.opcode == "ld"):
                why = f"accesses parameter {name} other than by ld.param/st.param"
                bad.append(Unmodeled(ins.full_opcode, ins.loc.line, why))
                continue
            ty, count = _type_of(ins)
            acc = _Access(ins, name, op.offset, ty, count)
            accesses[id(ins)] = acc
            by_var[name].append(acc)
    # A variable is split into fields of its narrowest access; wider accesses pack several.
    units: dict[str, int] = {}
    for name, accs in by_var.items():
        unit = min((ast.type_bytes(a.type) for a in accs), default=4)
        units[name] = unit
        for a in accs:
            if a.offset % unit or ast.type_bytes(a.type) % unit:
                why = f"parameter {name}: .{a.type} at byte {a.offset} straddles its {unit}-byte fields"
                bad.append(Unmodeled(a.ins.full_opcode, a.ins.loc.line, why))
    if bad:
        raise UnmodeledError(entry, bad)
    fields = {
        name: sorted({off for a in accs for off in _offsets(a, units[name])}) for name, accs in by_var.items()
    }
    return _rewrite(body, fields, units, accesses)


def _offsets(a: _Access, unit: int) -> list[int]:
    """The field offsets an access touches."""
    size = ast.type_bytes(a.type)
    return [a.offset + e * size + j for e in range(a.count) for j in range(0, size, unit)]


def field_register(var: str, offset: int) -> str:
    return f"%{var}_{offset}"


def _collect(body: tuple[ast.Statement, ...], out: dict[str, ast.VarDecl]) -> None:
    for s in body:
        if isinstance(s, ast.Block):
            _collect(s.statements, out)
        elif isinstance(s, ast.VarDecl) and s.space == "param":
            out.update(dict.fromkeys(s.names, s))


def _instructions(body: tuple[ast.Statement, ...]) -> list[ast.Instruction]:
    out: list[ast.Instruction] = []
    for s in body:
        if isinstance(s, ast.Block):
            out += _instructions(s.statements)
        elif isinstance(s, ast.Instruction):
            out.append(s)
    return out


def _rewrite(
    body: tuple[ast.Statement, ...],
    fields: dict[str, list[int]],
    units: dict[str, int],
    accesses: dict[int, _Access],
) -> tuple[ast.Statement, ...]:
    out: list[ast.Statement] = []
    for s in body:
        if isinstance(s, ast.Block):
            out.append(ast.Block(_rewrite(s.statements, fields, units, accesses), s.loc))
        elif isinstance(s, ast.VarDecl) and s.space == "param":
            for name in s.names:
                for off in fields[name]:
                    out.append(
                        ast.VarDecl("reg", f"b{8 * units[name]}", (field_register(name, off),), loc=s.loc)
                    )
        elif isinstance(s, ast.Instruction) and id(s) in accesses:
            acc = accesses[id(s)]
            out.extend(_moves(acc, units[acc.var]))
        else:
            out.append(s)
    return tuple(out)


def _moves(acc: _Access, unit: int) -> list[ast.Instruction]:
    """The ``mov`` instructions that replace one ``ld.param`` / ``st.param``."""
    ins = acc.ins
    size = ast.type_bytes(acc.type)
    value = ins.operands[0] if ins.opcode == "ld" else ins.operands[1]
    elements = value.elements if isinstance(value, ast.Vector) else (value,)
    out = []
    for e, v in enumerate(elements):
        start = acc.offset + e * size
        regs = [ast.Register(field_register(acc.var, start + j)) for j in range(0, size, unit)]
        field: ast.Operand = regs[0] if len(regs) == 1 else ast.Vector(tuple(regs))
        ops = (v, field) if ins.opcode == "ld" else (field, v)
        # Only a signed type changes a move (it sign-extends into a wider register).
        ty = acc.type if acc.type.startswith("s") and len(regs) == 1 else f"b{8 * size}"
        out.append(ast.Instruction("mov", (ty,), ops, ins.guard, ins.loc))
    return out
