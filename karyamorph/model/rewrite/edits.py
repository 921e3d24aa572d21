"""The PTX edits rewrites make, on the parsed module: cache operators on global loads and stores,
performance directives on the ``.entry``, and ``.pragma "nounroll"`` on loop headers.

Each edit returns a new :class:`~karyamorph.isa.ast.Module` (the AST is frozen) and touches only
the one ``.entry``; an edit that finds nothing to change returns an equal module, which the
catalogue takes as "does not apply".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from karyamorph.isa import ast

LOAD_OPERATORS = ("ca", "cg", "cs", "lu", "cv")
"""Cache operators of ``ld`` (PTX ISA, "Cache Operators"); ``.nc`` is a qualifier beside them."""
STORE_OPERATORS = ("wb", "cg", "cs", "wt")
"""Cache operators of ``st``."""
VECTORS = ("v2", "v4", "v8")
NOUNROLL = ast.Directive("pragma", '"nounroll"', terminated=True)

# The only loads and stores an edit touches: a weak access of the global window with at most a
# cache operator and a vector width beside its type. Anything else (.volatile, .relaxed,
# .acquire, eviction hints, .nc already) says more about ordering or caching than the catalogue
# may rewrite.
_PLAIN_LOAD = frozenset(("global", *LOAD_OPERATORS, *VECTORS))
_PLAIN_STORE = frozenset(("global", *STORE_OPERATORS, *VECTORS))


def plain_global_load(ins: ast.Instruction) -> bool:
    """Whether ``ins`` is ``ld.global[.cop][.vec].type`` with no ``.cv`` (it re-fetches on purpose)."""
    mods = ins.modifiers
    return (ins.opcode == "ld" and "global" in mods and "cv" not in mods
            and all(m in _PLAIN_LOAD for m in mods[:-1]))  # fmt: skip


def plain_global_store(ins: ast.Instruction) -> bool:
    """Whether ``ins`` is ``st.global[.cop][.vec].type``."""
    mods = ins.modifiers
    return ins.opcode == "st" and "global" in mods and all(m in _PLAIN_STORE for m in mods[:-1])


def with_load_operator(ins: ast.Instruction, operator: str) -> ast.Instruction:
    """``ins`` (a plain global load) with ``operator`` (``nc``, ``cg``, ``cs``, ``lu``) in place
    of its cache operator: ``ld.global.ca.f32`` -> ``ld.global.nc.f32``."""
    rest = [m for m in ins.modifiers if m not in LOAD_OPERATORS and m != "global"]
    return dataclasses.replace(ins, modifiers=("global", operator, *rest))


def with_store_operator(ins: ast.Instruction, operator: str) -> ast.Instruction:
    """``ins`` (a plain global store) with ``operator`` (``cs``, ``wt``) as its cache operator."""
    rest = [m for m in ins.modifiers if m not in STORE_OPERATORS and m != "global"]
    return dataclasses.replace(ins, modifiers=("global", operator, *rest))


def map_instructions(
    module: ast.Module, entry: str, change: Callable[[ast.Instruction], ast.Instruction]
) -> ast.Module:
    """``module`` with ``change`` applied to every instruction of ``entry``'s body (nested
    blocks included)."""

    def walk(statements: tuple[ast.Statement, ...]) -> tuple[ast.Statement, ...]:
        out: list[ast.Statement] = []
        for s in statements:
            if isinstance(s, ast.Instruction):
                out.append(change(s))
            elif isinstance(s, ast.Block):
                out.append(dataclasses.replace(s, statements=walk(s.statements)))
            else:
                out.append(s)
        return tuple(out)

    return _map_entry(module, entry, lambda f: dataclasses.replace(f, body=walk(f.body or ())))


def pointer_sources(function: ast.Function) -> dict[str, frozenset[str]]:
    """Each register of ``function`` and the parameters its value may derive from: a register
    loaded by ``ld.param`` from parameter ``p`` derives from ``p``, any other register from every
    register its defining instructions read (flow-insensitive, so a register reused for two
    pointers derives from both: a selection by it errs towards editing nothing)."""
    params = {p.name for p in function.params}
    sources: dict[str, frozenset[str]] = {}
    instructions = [
        i for i in function.instructions() if i.operands and isinstance(i.operands[0], ast.Register)
    ]
    changed = True
    while changed:  # to a fixpoint: loops carry pointers around their back edges
        changed = False
        for ins in instructions:
            dest = ins.operands[0]
            assert isinstance(dest, ast.Register)
            found: set[str] = set()
            if ins.opcode == "ld" and "param" in ins.modifiers:
                found = {a.base.name for a in ins.operands[1:] if isinstance(a, ast.Address)
                         and isinstance(a.base, ast.Symbol) and a.base.name in params}  # fmt: skip
            elif ins.opcode not in ("ld", "st", "atom", "red"):
                for op in ins.operands[1:]:
                    for reg in _registers(op):
                        found |= sources.get(reg, frozenset())
            if not found <= sources.get(dest.name, frozenset()):
                sources[dest.name] = sources.get(dest.name, frozenset()) | found
                changed = True
    return sources


def load_buffer(ins: ast.Instruction, sources: dict[str, frozenset[str]]) -> str | None:
    """The one pointer parameter a load's address derives from, or None (several, or none)."""
    address = next((a for a in ins.operands if isinstance(a, ast.Address)), None)
    if address is None or not isinstance(address.base, ast.Register):
        return None
    found = sources.get(address.base.name, frozenset())
    return next(iter(found)) if len(found) == 1 else None


def _registers(op: ast.Operand) -> list[str]:
    if isinstance(op, ast.Register):
        return [op.name]
    if isinstance(op, ast.Negated):
        return _registers(op.operand)
    if isinstance(op, ast.Vector | ast.ParenList):
        return [r for e in op.elements for r in _registers(e)]
    if isinstance(op, ast.Address):
        return [op.base.name] if isinstance(op.base, ast.Register) else []
    return []


def add_attribute(module: ast.Module, entry: str, name: str, values: tuple[int, ...]) -> ast.Module:
    """``module`` with the performance directive ``.name values`` on ``entry`` (the caller has
    checked it declares none of that name)."""
    return _map_entry(
        module, entry, lambda f: dataclasses.replace(f, attributes=(*f.attributes, (name, values)))
    )


def loop_headers(function: ast.Function) -> tuple[str, ...]:
    """Labels of ``function``'s body that a later ``bra`` jumps back to: the headers of its loops
    as compilers and hand-written PTX lay them out (a back edge is a branch to a label above it)."""
    seen: list[str] = []
    headers: list[str] = []
    for s in _flat(function.body or ()):
        if isinstance(s, ast.Label):
            seen.append(s.name)
        elif isinstance(s, ast.Instruction) and s.opcode == "bra" and s.operands:
            target = s.operands[-1]
            if isinstance(target, ast.Symbol) and target.name in seen and target.name not in headers:
                headers.append(target.name)
    return tuple(headers)


def add_nounroll(module: ast.Module, entry: str) -> ast.Module:
    """``.pragma "nounroll";`` as the first statement of every loop header of ``entry`` that has
    none (the ISA reads a statement-level ``nounroll`` in the loop header block, before its
    first instruction)."""
    headers = set(loop_headers(module.entry(entry)))

    def walk(statements: tuple[ast.Statement, ...]) -> tuple[ast.Statement, ...]:
        out: list[ast.Statement] = []
        for i, s in enumerate(statements):
            if isinstance(s, ast.Block):
                s = dataclasses.replace(s, statements=walk(s.statements))
            out.append(s)
            following = statements[i + 1] if i + 1 < len(statements) else None
            if isinstance(s, ast.Label) and s.name in headers and not _is_nounroll(following):
                out.append(NOUNROLL)
        return tuple(out)

    return _map_entry(module, entry, lambda f: dataclasses.replace(f, body=walk(f.body or ())))


def drop_nounroll(module: ast.Module, entry: str) -> ast.Module:
    """``module`` without the statement-level ``.pragma "nounroll";`` of ``entry``'s body."""

    def walk(statements: tuple[ast.Statement, ...]) -> tuple[ast.Statement, ...]:
        out: list[ast.Statement] = []
        for s in statements:
            if isinstance(s, ast.Block):
                out.append(dataclasses.replace(s, statements=walk(s.statements)))
            elif not _is_nounroll(s):
                out.append(s)
        return tuple(out)

    return _map_entry(module, entry, lambda f: dataclasses.replace(f, body=walk(f.body or ())))


def has_nounroll(function: ast.Function) -> bool:
    """Whether ``function``'s body carries a statement-level ``nounroll`` pragma."""
    return any(_is_nounroll(s) for s in _flat(function.body or ()))


def _is_nounroll(s: ast.Statement | None) -> bool:
    return isinstance(s, ast.Directive) and s.name == "pragma" and s.args.strip() == '"nounroll"'


def _flat(statements: tuple[ast.Statement, ...]) -> list[ast.Statement]:
    out: list[ast.Statement] = []
    for s in statements:
        out.extend(_flat(s.statements) if isinstance(s, ast.Block) else (s,))
    return out


def _map_entry(module: ast.Module, entry: str, change: Callable[[ast.Function], ast.Function]) -> ast.Module:
    items = tuple(
        change(i) if isinstance(i, ast.Function) and i.is_entry and i.name == entry else i
        for i in module.items
    )
    return dataclasses.replace(module, items=items)
