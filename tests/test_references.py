"""Every cross-reference in a docstring or a docs page names something that exists.

A Sphinx-style role (:mod:`x`, :func:`x`, :class:`x`, :meth:`x`, :attr:`x`, :data:`x`,
:exc:`x`) in a docstring of ``karyamorph`` or in a page under ``docs/`` is resolved the way a
reader would: a dotted name from the top of its package, else a name of the module the docstring
is in (defined or imported there), else an attribute of the class it is in. A name that moved or
was renamed leaves a reference that no longer resolves, and this test names it with its place.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "karyamorph"
ROLE = re.compile(r":(mod|func|class|meth|attr|data|exc|obj):`~?\.?([A-Za-z_][\w.]*)(?:\(\))?`")
_MISSING = object()


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def docstrings(path: Path) -> Iterator[tuple[int, str | None, str]]:
    """(line, the class the text is about or in (None), text) of every docstring in ``path``."""
    tree = ast.parse(path.read_text())
    stack: list[tuple[ast.AST, str | None]] = [(tree, None)]
    while stack:
        node, cls = stack.pop()
        inner = node.name if isinstance(node, ast.ClassDef) else cls
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield getattr(node, "lineno", 1), inner, text
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        stack += [(child, inner) for child in body]
        # A string after an assignment documents it (attributes, constants).
        for before, after in itertools.pairwise(body):
            if (
                isinstance(before, ast.Assign | ast.AnnAssign)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                yield after.lineno, inner, after.value.value


def imported_names(path: Path, package: str) -> dict[str, str]:
    """Every name ``path`` imports (``TYPE_CHECKING`` blocks included), to its dotted origin."""
    names: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], base]).strip(".")
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                names[alias.asname or top] = alias.name if alias.asname else top
    return names


def _chain(start: Any, parts: list[str]) -> Any:
    obj = start
    for part in parts:
        obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def _import_prefix(name: str) -> tuple[ModuleType | None, list[str]]:
    """The longest importable module prefix of ``name`` and the attribute path after it."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            return importlib.import_module(".".join(parts[:cut])), parts[cut:]
        except ImportError:
            continue
    return None, parts


def resolves(name: str, module: ModuleType | None, cls: str | None,
             imports: dict[str, str] | None = None) -> bool:  # fmt: skip
    """Whether ``name`` names something, read in ``module`` (and class ``cls`` of it)."""
    candidates = [name]
    if module is not None:
        package = module.__name__ if hasattr(module, "__path__") else module.__name__.rpartition(".")[0]
        candidates.append(f"{package}.{name}")
        first, _, rest = name.partition(".")
        if imports and first in imports:
            candidates.append(f"{imports[first]}.{rest}".rstrip("."))
    for candidate in candidates:
        found, rest_parts = _import_prefix(candidate)
        if found is not None and _chain(found, rest_parts) is not _MISSING:
            return True
    if module is None:
        return False
    parts = name.split(".")
    if _chain(module, parts) is not _MISSING:
        return True
    owner = getattr(module, cls, None) if cls is not None else None
    if owner is not None and (_chain(owner, parts) is not _MISSING or _annotated(owner, parts[0])):
        return True
    head = _chain(module, parts[:1])
    return head is not _MISSING and len(parts) == 2 and _annotated(head, parts[1])


def _annotated(owner: Any, name: str) -> bool:
    """An instance attribute: declared by annotation (a dataclass's field) or set as ``self.name``
    in a method of the class or a base."""
    for k in getattr(owner, "__mro__", (owner,)):
        if name in getattr(k, "__annotations__", {}) or name in _assigned(k):
            return True
    return False


def _assigned(cls: Any) -> set[str]:
    """The ``self.x = ...`` names in the source of ``cls`` (empty when it has none to read)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return set()
    targets = [t for node in ast.walk(tree) if isinstance(node, ast.Assign | ast.AnnAssign)
               for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]  # fmt: skip
    return {t.attr for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
            and t.value.id == "self"}  # fmt: skip


def unresolved() -> list[str]:
    out: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__main__.py":  # importing it runs the program
            continue
        name = module_name(path)
        module = importlib.import_module(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imports = imported_names(path, package)
        for line, cls, text in docstrings(path):
            for m in ROLE.finditer(text):
                if not resolves(m.group(2), module, cls, imports):
                    out.append(f"{path.relative_to(ROOT)}:{line}: :{m.group(1)}:`{m.group(2)}`")
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for number, text in enumerate(page.read_text().splitlines(), 1):
            for m in ROLE.finditer(text):
                if not resolves(m.group(2), None, None):
                    out.append(f"{page.relative_to(ROOT)}:{number}: :{m.group(1)}:`{m.group(2)}`")
    return out


def test_every_reference_in_a_docstring_or_a_page_resolves() -> None:
    stale = unresolved()
    assert not stale, f"{len(stale)} reference(s) name nothing:\n" + "\n".join(stale)


def test_a_stale_reference_is_found() -> None:
    from karyamorph.harness.gpu import measurement

    assert resolves("karyamorph.harness.gpu.measurement.measure", measurement, None)
    assert resolves("TimingOptions", measurement, None) and resolves("stats", measurement, "Timing")
    assert not resolves("karyamorph.harness.gpu.measurement.no_such_function", measurement, None)
    assert not resolves("no_such_name", measurement, "Timing")


@pytest.mark.parametrize("text", [":func:`x`", ":class:`~a.b.C`", ":meth:`.run`"])
def test_the_roles_are_read(text: str) -> None:
    assert ROLE.search(text) is not None
