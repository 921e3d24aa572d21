"""No module of the package imports a private name (``_name``) of another of its modules: what a
module shares it names without the underscore, so its private names stay free to change.

The CLI's command modules share their options and output helpers this way; the walk covers the
whole package so that the rule holds everywhere. Private names of other libraries are not the
package's seams and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import karyamorph

PACKAGE = Path(karyamorph.__file__).resolve().parent


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_name(path: Path, root: Path) -> list[str]:
    """The dotted name of the module at ``path`` in the package at ``root``, as parts."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imported_from(node: ast.ImportFrom, path: Path, root: Path) -> str:
    """The absolute name of the module ``node`` imports from (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    parts = _module_name(path, root)
    # A module's level-1 base is its package; a package's own __init__ is its package already.
    base = parts if path.name == "__init__.py" else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def private_imports(root: Path) -> list[str]:
    """``file:line: from module import _name`` for each import, in a module of the package at
    ``root``, of a private name from a module of that same package."""
    package = root.name
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = _imported_from(node, path, root)
            if module != package and not module.startswith(f"{package}."):
                continue
            for alias in node.names:
                if _private(alias.name):
                    where = path.relative_to(root.parent).as_posix()
                    found.append(f"{where}:{node.lineno}: from {module} import {alias.name}")
    return found


def test_no_module_imports_a_private_name_of_another() -> None:
    assert private_imports(PACKAGE) == []


def test_the_walk_finds_private_imports_absolute_and_relative(tmp_path: Path) -> None:
    # The check above passes on an empty list: this shows the walk reports what it should.
    root = tmp_path / "karyamorph"
    (root / "cli").mkdir(parents=True)
    (root / "__init__.py").write_text("from .table import width\n")
    (root / "cli" / "__init__.py").write_text("from . import _family\nfrom .runs import run\n")
    (root / "cli" / "runs.py").write_text(
        "from karyamorph.cli.support import _db_path, echo\n"
        "from .support import __all__\n"
        "from ..store import _open\n"
        "from z3.z3 import _to_expr_ref\n"
        "\n"
        "def run() -> None:\n"
        "    from karyamorph.table import _width\n"
    )
    assert private_imports(root) == [
        "karyamorph/cli/__init__.py:1: from karyamorph.cli import _family",
        "karyamorph/cli/runs.py:1: from karyamorph.cli.support import _db_path",
        "karyamorph/cli/runs.py:3: from karyamorph.store import _open",
        "karyamorph/cli/runs.py:7: from karyamorph.table import _width",
    ]
