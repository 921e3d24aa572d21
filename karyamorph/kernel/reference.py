"""A spec's ``[reference]`` checked when the spec loads: the torch expression parses and names
only what it will see; ``python`` has the form ``module:function``.

The expression runs later (``karyamorph.harness.gpu.reference``), with the spec's sizes, scalar
arguments and buffers as local names, the module ``torch`` and Python's builtins. A name outside
those would be a ``NameError`` halfway through a run; here it is a :class:`SpecError` naming
the key before anything runs.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable

from karyamorph.kernel.spec import Reference, SpecError

REFERENCE_MODULES = ("torch",)
"""The modules a torch reference sees besides the spec's names and Python's builtins."""

_BUILTINS = frozenset(dir(builtins))
_SHOWN = 80  # characters of an expression quoted in a message
_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_TARGET = re.compile(rf"({_DOTTED}):([A-Za-z_]\w*)\Z")


def check_reference(reference: Reference, spec_names: Iterable[str], where: str) -> None:
    """Raise :class:`SpecError` when ``reference`` cannot run as written.

    Parameters
    ----------
    reference : Reference
        The spec's ``[reference]``.
    spec_names : iterable of str
        The names the reference sees from the spec: its sizes and argument names.
    where : str
        The spec's name in messages (``vadd.toml``).

    Raises
    ------
    SpecError
        Both ``torch`` and ``python`` given; a torch expression that is not a Python expression
        or that names something it will not see (the message lists what it can name); a
        ``python`` target that is not ``module:function``.
    """
    if reference.torch is not None and reference.python is not None:
        raise SpecError(f"{where}: [reference]", "give either torch or python, not both")
    if reference.torch is not None:
        _check_torch(reference.torch, frozenset(spec_names), f"{where}: reference.torch")
    if reference.python is not None and not _TARGET.match(reference.python):
        raise SpecError(
            f"{where}: reference.python",
            f"expected 'module:function' (such as 'mypkg.refs:vadd'), got {reference.python!r}",
        )


def _check_torch(text: str, spec_names: frozenset[str], key: str) -> None:
    shown = repr(text) if len(text) <= _SHOWN else f"{text[:_SHOWN]!r}..."
    if not text.strip():
        raise SpecError(key, "the torch expression is empty")
    names = _Names(spec_names | set(REFERENCE_MODULES))
    try:
        names.visit(ast.parse(text, mode="eval"))
    except SyntaxError as exc:
        raise SpecError(key, f"not a Python expression: {shown} ({exc.msg})") from None
    except ValueError as exc:  # a NUL character
        raise SpecError(key, f"not a Python expression: {shown} ({exc})") from None
    except (RecursionError, MemoryError):
        raise SpecError(key, f"nested too deeply to check: {shown}") from None
    if names.unknown:
        listed = ", ".join(sorted(spec_names)) or "none"
        raise SpecError(
            key,
            f"unknown name {names.unknown[0]!r} in {shown}; the expression sees the spec's names "
            f"({listed}), {', '.join(REFERENCE_MODULES)} and Python's builtins",
        )


class _Names(ast.NodeVisitor):
    """Walks an expression in evaluation order, with Python's scopes: what a comprehension or a
    lambda binds is seen only inside it; ``:=`` binds in the nearest scope that is not a
    comprehension. Every name read before it is bound, and not a builtin, is ``unknown``."""

    def __init__(self, known: Iterable[str]) -> None:
        self.scopes: list[tuple[bool, set[str]]] = [(False, set(known))]  # (comprehension?, names)
        self.unknown: list[str] = []

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self.scopes[-1][1].add(node.id)
        elif node.id not in _BUILTINS and not any(node.id in names for _, names in self.scopes):
            self.unknown.append(node.id)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        next(names for comprehension, names in reversed(self.scopes) if not comprehension).add(node.target.id)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        a = node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p)]
        self.scopes.append((False, {p.arg for p in params}))
        self.visit(node.body)
        self.scopes.pop()

    def _comprehension(self, generators: list[ast.comprehension], *results: ast.expr) -> None:
        # The first iterable is evaluated outside the comprehension; the rest inside.
        self.visit(generators[0].iter)
        self.scopes.append((True, set()))
        for i, gen in enumerate(generators):
            if i:
                self.visit(gen.iter)
            self.visit(gen.target)
            for condition in gen.ifs:
                self.visit(condition)
        for result in results:
            self.visit(result)
        self.scopes.pop()

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._comprehension(node.generators, node.elt)

    def visit_SetComp(self, node: ast.SetComp) -> None:
        self._comprehension(node.generators, node.elt)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._comprehension(node.generators, node.elt)

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node.generators, node.key, node.value)
