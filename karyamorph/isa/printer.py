"""Module -> PTX text: a canonical printer whose output ptxas assembles to the same SASS."""

from __future__ import annotations

from karyamorph.isa import ast

INDENT = "\t"


def format_operand(op: ast.Operand) -> str:
    """PTX text of one operand."""
    if isinstance(op, ast.Register | ast.Symbol):
        return op.name
    if isinstance(op, ast.Immediate):
        return op.text
    if isinstance(op, ast.Negated):
        return "!" + format_operand(op.operand)
    if isinstance(op, ast.Pair):
        return f"{format_operand(op.first)}|{format_operand(op.second)}"
    if isinstance(op, ast.Vector):
        return "{" + ", ".join(format_operand(e) for e in op.elements) + "}"
    if isinstance(op, ast.ParenList):
        return "(" + ", ".join(format_operand(e) for e in op.elements) + ")"
    if isinstance(op, ast.Expression):
        return op.text
    return _format_address(op)


def _format_address(a: ast.Address) -> str:
    text = "" if a.base is None else format_operand(a.base)
    if a.offset:
        text += f"+{a.offset}"
    for e in a.extra:
        text += ", " + format_operand(e)
    return f"[{text}]"


def format_instruction(ins: ast.Instruction) -> str:
    """One instruction without indentation: ``@%p1 bra $L__BB0_2;``."""
    guard = ""
    if ins.guard is not None:
        guard = f"@{'!' if ins.guard.negated else ''}{ins.guard.register} "
    operands = ", ".join(format_operand(o) for o in ins.operands)
    return f"{guard}{ins.full_opcode}{' ' + operands if operands else ''};"


def format_decl(d: ast.VarDecl) -> str:
    """A declaration statement: ``.shared .align 16 .b8 smem[1024];``."""
    words = [f".{q}" for q in d.qualifiers] + [f".{d.space}"]
    if d.align is not None:
        words.append(f".align {d.align}")
    if d.vector is not None:
        words.append(f".v{d.vector}")
    words.append(f".{d.type}")
    suffix = f"<{d.count}>" if d.count is not None else _dims(d.dims)
    names = ", ".join(n + suffix for n in d.names)
    init = f" = {d.init}" if d.init is not None else ""
    return f"{' '.join(words)} {names}{init};"


def _dims(dims: tuple[int | None, ...]) -> str:
    return "".join("[]" if d is None else f"[{d}]" for d in dims)


def format_directive(d: ast.Directive) -> str:
    """A verbatim directive: ``.loc 1 2 3``, ``.pragma "nounroll";``, a ``.section`` block."""
    if d.body is not None:
        return f".{d.name} {d.args}\n{{{d.body}}}"
    text = f".{d.name} {d.args}".rstrip()
    return text + (";" if d.terminated else "")


def format_param(p: ast.Param) -> str:
    """A parameter: ``.param .u64 .ptr .global .align 16 name``."""
    words = [f".{p.space}"]
    if p.align is not None:
        words.append(f".align {p.align}")
    words.append(f".{p.type}")
    if p.is_ptr:
        words.append(".ptr")
        if p.ptr_space:
            words.append(f".{p.ptr_space}")
        if p.ptr_align is not None:
            words.append(f".align {p.ptr_align}")
    return f"{' '.join(words)} {p.name}{_dims(p.dims)}"


def _statements(statements: tuple[ast.Statement, ...], depth: int) -> list[str]:
    pad = INDENT * depth
    out: list[str] = []
    for s in statements:
        if isinstance(s, ast.Label):
            out.append(f"{s.name}:")
        elif isinstance(s, ast.Instruction):
            out.append(pad + format_instruction(s))
        elif isinstance(s, ast.VarDecl):
            out.append(pad + format_decl(s))
        elif isinstance(s, ast.Directive):
            out.append(pad + format_directive(s))
        else:
            out.append(pad + "{")
            out.extend(_statements(s.statements, depth + 1))
            out.append(pad + "}")
    return out


def format_function(f: ast.Function) -> str:
    """An ``.entry`` or ``.func`` with its body (or ``;`` for a prototype)."""
    head = " ".join([*(f".{w}" for w in f.linkage), f".{f.kind}"])
    if f.returns:
        head += " (" + ", ".join(format_param(p) for p in f.returns) + ")"
    head += f" {f.name}"
    if f.params:
        head += "(\n" + ",\n".join(INDENT + format_param(p) for p in f.params) + "\n)"
    elif f.kind == "entry" or f.body is None:
        head += "()"
    lines = [head]
    for name, values in f.attributes:
        lines.append(f".{name} {', '.join(str(v) for v in values)}".rstrip())
    if f.body is None:
        lines[-1] += ";"
        return "\n".join(lines)
    lines.append("{")
    lines.extend(_statements(f.body, 1))
    lines.append("}")
    return "\n".join(lines)


def format_module(module: ast.Module) -> str:
    """The whole module as PTX text, ending with a newline."""
    parts = [f".version {module.version}"]
    if module.target:
        parts.append(f".target {', '.join(module.target)}")
    if module.address_size is not None:
        parts.append(f".address_size {module.address_size}")
    parts.append("")
    for item in module.items:
        if isinstance(item, ast.Function):
            parts.append(format_function(item))
            parts.append("")
        elif isinstance(item, ast.VarDecl):
            parts.append(format_decl(item))
        else:
            parts.append(format_directive(item))
    return "\n".join(parts).rstrip("\n") + "\n"
