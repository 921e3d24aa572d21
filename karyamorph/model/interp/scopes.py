"""Nested ``{ }`` scopes resolved: every name a block declares renamed apart, one flat namespace.

PTX's braces group instructions and scope variables: "any variable declared within a scope is
not available outside the scope" (PTX ISA, "Control Flow Instructions: {}"), and an inner
declaration hides an outer one of the same name. nvcc's half-precision intrinsics rely on it:
``{.reg .b16 low,high; mov.b32 {low,high}, %r7; mov.b16 %rs2, low;}`` appears once per call,
each time declaring ``low`` again. The interpreter and the checker keep one register file per
thread, keyed by name, so this pass gives each block's ``.reg``, ``.local`` and ``.shared``
names a name of their own (``low`` in the third block becomes ``%low$3``) and rewrites every use
to the declaration it resolves to, innermost first. Registers declared without a ``%`` are
renamed with one, so that operands naming them are registers, not symbols, from here on.
Labels keep function scope and ``.param`` variables of call sequences are left to
:mod:`karyamorph.model.interp.inline`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from karyamorph.isa import ast

_SCOPED_SPACES = ("reg", "local", "shared")


def resolve_scopes(fn: ast.Function) -> ast.Function:
    """``fn`` with the names its nested blocks declare made unique (``fn`` itself when no block
    declares a name and every register is written with ``%``)."""
    if fn.body is None or not _needs_renaming(fn.body, top=True):
        return fn
    return replace(fn, body=_Resolver().block(fn.body, (), depth=0))


def resolve_module_scopes(module: ast.Module) -> ast.Module:
    """``module`` with :func:`resolve_scopes` applied to every function body."""
    items = tuple(resolve_scopes(i) if isinstance(i, ast.Function) else i for i in module.items)
    if all(a is b for a, b in zip(items, module.items, strict=True)):
        return module
    return replace(module, items=items)


def _needs_renaming(body: tuple[ast.Statement, ...], *, top: bool) -> bool:
    for s in body:
        if isinstance(s, ast.Block):
            if _needs_renaming(s.statements, top=False):
                return True
        elif (
            isinstance(s, ast.VarDecl)
            and s.space in _SCOPED_SPACES
            and (not top or (s.space == "reg" and any(not n.startswith("%") for n in s.names)))
        ):
            return True
    return False


# One scope's renamings: a register (``%r`` or a counted ``%r<4>``'s ``%r0``...) or variable
# name -> its new name.
_Scope = dict[str, str]


@dataclass(slots=True)
class _Resolver:
    blocks: int = 0  # blocks seen so far: the tag of the next one

    def block(
        self, body: tuple[ast.Statement, ...], outer: tuple[_Scope, ...], depth: int
    ) -> tuple[ast.Statement, ...]:
        tag = self.blocks
        self.blocks += 1
        scope: _Scope = {}
        for s in body:
            if isinstance(s, ast.VarDecl) and s.space in _SCOPED_SPACES:
                for name in s.names:
                    new = _new_name(name, s, tag, depth)
                    if s.count is not None:
                        scope.update({f"{name}{i}": f"{new}{i}" for i in range(s.count)})
                    scope[name] = new
        scopes = (*outer, scope)
        out: list[ast.Statement] = []
        for s in body:
            if isinstance(s, ast.Block):
                out.append(replace(s, statements=self.block(s.statements, scopes, depth + 1)))
            elif isinstance(s, ast.VarDecl) and s.space in _SCOPED_SPACES:
                out.append(replace(s, names=tuple(scope[n] for n in s.names)))
            elif isinstance(s, ast.Instruction):
                out.append(_instruction(s, scopes))
            else:
                out.append(s)
        return tuple(out)


def _new_name(name: str, decl: ast.VarDecl, tag: int, depth: int) -> str:
    """The flat name of ``name`` declared by ``decl`` in block ``tag`` (``depth`` 0: the body)."""
    if depth == 0:  # the function's own scope keeps its names; a bare register gains its %
        return name if decl.space != "reg" or name.startswith("%") else f"%{name}"
    bare = name.removeprefix("%")
    # A counted name's registers append digits, so it ends in "_" to keep "%t$1_" + "0" apart
    # from a plain "%t$10" of block 10.
    suffix = "_" if decl.count is not None else ""
    return f"%{bare}${tag}{suffix}" if decl.space == "reg" else f"{bare}${tag}{suffix}"


def _lookup(name: str, scopes: tuple[_Scope, ...]) -> str | None:
    for scope in reversed(scopes):
        if name in scope:
            return scope[name]
    return None


def _instruction(ins: ast.Instruction, scopes: tuple[_Scope, ...]) -> ast.Instruction:
    guard = ins.guard
    if guard is not None:
        new = _lookup(guard.register, scopes)
        guard = guard if new is None else ast.Guard(new, guard.negated)
    return replace(ins, operands=tuple(_operand(o, scopes) for o in ins.operands), guard=guard)


def _operand(o: ast.Operand, scopes: tuple[_Scope, ...]) -> ast.Operand:
    if isinstance(o, ast.Register | ast.Symbol):
        new = _lookup(o.name, scopes)
        if new is None:
            return o
        return ast.Register(new) if new.startswith("%") else ast.Symbol(new)
    if isinstance(o, ast.Address):
        base = o.base
        if isinstance(base, ast.Register | ast.Symbol):
            base = _operand(base, scopes)  # type: ignore[assignment]
        return replace(o, base=base, extra=tuple(_operand(e, scopes) for e in o.extra))
    if isinstance(o, ast.Vector | ast.ParenList):
        return replace(o, elements=tuple(_operand(e, scopes) for e in o.elements))
    if isinstance(o, ast.Negated):
        return ast.Negated(_operand(o.operand, scopes))
    if isinstance(o, ast.Pair):
        return ast.Pair(_operand(o.first, scopes), _operand(o.second, scopes))
    return o
