"""Module -> PTX text: a canonical printer whose output ptxas assembles to the same SASS."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

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


def format_function(f: ast.Function) -> str:
    """An ``.entry`` or ``.func`` with its body (or ``;`` for a prototype)."""
    writer = _Writer(None)
    writer.function(f)
    return "\n".join(writer.lines)


def format_module(module: ast.Module, notes: Notes | None = None) -> str:
    """The whole module as PTX text, ending with a newline.

    Parameters
    ----------
    module : Module
        What to print.
    notes : Notes, optional
        Text to keep around the constructs, by their source location: the comments of the
        source (``comments.py``), for instance. None prints the module alone.
    """
    writer = _Writer(notes)
    version, target, address_size = module.header_locs
    writer.put(f".version {module.version}", version, "")
    if module.target:
        writer.put(f".target {', '.join(module.target)}", target, "")
    if module.address_size is not None:
        writer.put(f".address_size {module.address_size}", address_size, "")
    writer.lines.append("")
    for item in module.items:
        if isinstance(item, ast.Function):
            writer.function(item)
            writer.lines.append("")
        elif isinstance(item, ast.VarDecl):
            writer.put(format_decl(item), item.loc, "")
        else:
            writer.put(format_directive(item), item.loc, "")
    if notes is not None:
        writer.extra(notes.end, "")
    return "\n".join(writer.lines).rstrip("\n") + "\n"


@dataclass(frozen=True, slots=True)
class Note:
    """Text kept around one construct when it is printed: lines before it, a tail on its line."""

    before: tuple[str, ...] = ()
    """Whole lines printed before the construct at its indentation; "" is an empty line."""
    after: str = ""
    """Text that ends the construct's (last) printed line, after a space."""


@dataclass(frozen=True, slots=True)
class Notes:
    """What :func:`format_module` prints besides the module, by source location.

    ``at`` maps the ``loc`` of a construct to its note; a function's or a block's ``end_loc``
    to lines before its ``}`` (at the body's indentation) and a tail after it; a function's
    ``body_loc`` to its ``{`` line; an entry of ``Module.header_locs`` to that header line. A
    prototype's tail ends its ``;`` line. ``end`` holds lines after the last item.
    """

    at: Mapping[ast.Loc, Note] = field(default_factory=dict)
    end: tuple[str, ...] = ()


class _Writer:
    """The printed lines, each construct's note put around it."""

    __slots__ = ("at", "lines")

    def __init__(self, notes: Notes | None) -> None:
        self.at: Mapping[ast.Loc, Note] = {} if notes is None else notes.at
        self.lines: list[str] = []

    def put(self, text: str, loc: ast.Loc, pad: str) -> None:
        """``text`` at indentation ``pad``, with the note of ``loc``."""
        note = self.at.get(loc) if self.at else None
        if note is None:
            self.lines.append(pad + text)
        else:
            self.extra(note.before, pad)
            self.lines.append(pad + text + _tail(note))

    def extra(self, lines: tuple[str, ...], pad: str) -> None:
        """Lines of a note; an empty one only where it parts two non-empty lines."""
        for line in lines:
            if line:
                self.lines.append(pad + line)
            elif self.lines and self.lines[-1]:
                self.lines.append("")

    def statements(self, statements: tuple[ast.Statement, ...], depth: int) -> None:
        pad = INDENT * depth
        for s in statements:
            if isinstance(s, ast.Label):
                note = self.at.get(s.loc) if self.at else None
                if note is None:
                    self.lines.append(f"{s.name}:")
                else:  # a label stands at the margin, the lines before it at the body's indentation
                    self.extra(note.before, pad)
                    self.lines.append(f"{s.name}:{_tail(note)}")
            elif isinstance(s, ast.Instruction):
                self.put(format_instruction(s), s.loc, pad)
            elif isinstance(s, ast.VarDecl):
                self.put(format_decl(s), s.loc, pad)
            elif isinstance(s, ast.Directive):
                self.put(format_directive(s), s.loc, pad)
            else:
                self.put("{", s.loc, pad)
                self.statements(s.statements, depth + 1)
                self.close(s.end_loc, depth + 1)

    def close(self, loc: ast.Loc, depth: int) -> None:
        """The ``}`` that ends a body whose statements stand at ``depth``."""
        note = self.at.get(loc) if self.at else None
        if note is not None:
            self.extra(note.before, INDENT * depth)
        self.lines.append(INDENT * (depth - 1) + "}" + ("" if note is None else _tail(note)))

    def function(self, f: ast.Function) -> None:
        head = " ".join([*(f".{w}" for w in f.linkage), f".{f.kind}"])
        if f.returns:
            head += " (" + ", ".join(format_param(p) for p in f.returns) + ")"
        head += f" {f.name}"
        if f.params:
            params = [INDENT + format_param(p) for p in f.params]
            lines = [head + "(", *(p + "," for p in params[:-1]), params[-1], ")"]
        else:
            lines = [head + "()" if f.kind == "entry" or f.body is None else head]
        for name, values in f.attributes:
            lines.append(f".{name} {', '.join(str(v) for v in values)}".rstrip())
        if f.body is None:
            lines[-1] += ";"
        note = self.at.get(f.loc) if self.at else None
        if note is not None:
            self.extra(note.before, "")
            lines[-1 if f.body is None else 0] += _tail(note)
        self.lines.extend(lines)
        if f.body is not None:
            self.put("{", f.body_loc, "")
            self.statements(f.body, 1)
            self.close(f.end_loc, 1)


def _tail(note: Note) -> str:
    return " " + note.after if note.after else ""
