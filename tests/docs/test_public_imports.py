"""The notebooks, the docs pages and the README use the public API only: ``import karyamorph as
km`` and the names of ``karyamorph.__all__``, never a deep module, so that deep modules stay free
to move."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

import karyamorph
from tests.docs.fences import ROOT, blocks, pages, shown

PUBLIC = frozenset(karyamorph.__all__)
PACKAGE = "karyamorph"
# Module attributes that are no API name but are fine to read.
DUNDERS = frozenset({"__version__", "__all__"})
# Public names that are subpackages too (the package made callable).
SUBPACKAGES = frozenset(n for n in PUBLIC if (Path(karyamorph.__file__).parent / n / "__init__.py").exists())


def deep_imports(source: str) -> list[str]:
    """What ``source`` (Python) takes from KaryaMorph other than its public face, one line each
    (``line 3: import karyamorph.model``); empty when it uses ``karyamorph`` and ``__all__`` only.

    Caught: importing a submodule (``import karyamorph.x``, ``from karyamorph.x import y``,
    ``from karyamorph import x`` where ``x`` is no public name, which also reaches a subpackage),
    and reading a non-public attribute of the package (``km.search.replay``: the subpackage is
    an attribute once the API has loaded it). IPython magics and shell lines are left out.
    """
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    tree = ast.parse(code)
    aliases: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE:
                    aliases.add(alias.asname or PACKAGE)
                elif alias.name.startswith(PACKAGE + "."):
                    found.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if node.module.startswith(PACKAGE + "."):
                found.append(f"line {node.lineno}: from {node.module} import ...")
            elif node.module == PACKAGE:
                for alias in node.names:
                    if alias.name not in PUBLIC:
                        found.append(f"line {node.lineno}: from {PACKAGE} import {alias.name}")
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
        ):
            continue
        if node.attr not in PUBLIC | DUNDERS:
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    # A public name that is also a subpackage (`km.search`, callable) is public to call, not to
    # reach into: `km.search.replay` is a submodule.
    for node in ast.walk(tree):
        inner = node.value if isinstance(node, ast.Attribute) else None
        if (
            isinstance(inner, ast.Attribute)
            and isinstance(inner.value, ast.Name)
            and inner.value.id in aliases
            and inner.attr in SUBPACKAGES
        ):
            found.append(f"line {node.lineno}: {inner.value.id}.{inner.attr}.{node.attr}")
    return sorted(set(found), key=lambda f: int(f.split()[1].rstrip(":")))


def python_sources() -> list[tuple[str, str]]:
    """(where, source) of every notebook code cell and every Python block of the pages."""
    out: list[tuple[str, str]] = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        for i, cell in enumerate(notebook.cells):
            if cell.cell_type == "code":
                out.append((f"{shown(path)} cell {i}", cell.source))
    for page in pages():
        for block in blocks(page):
            if block.lang == "python":
                out.append((block.where, block.text))
    return out


SOURCES = python_sources()


def test_there_is_something_to_read() -> None:
    wheres = [where for where, _ in SOURCES]
    assert sum(".ipynb" in w for w in wheres) >= 10
    assert any(w.startswith("README.md") for w in wheres)
    assert any(w.startswith("docs/api.md") for w in wheres)


@pytest.mark.parametrize(("where", "source"), SOURCES, ids=[where for where, _ in SOURCES])
def test_the_code_shown_imports_only_the_public_api(where: str, source: str) -> None:
    deep = deep_imports(source)
    assert not deep, f"{where} reaches past `import karyamorph as km`:\n" + "\n".join(deep)


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ("import karyamorph.model.check.checker\n", "line 1: import karyamorph.model.check.checker"),
        (
            "import numpy\nfrom karyamorph.search.replay import replay_curves\n",
            "line 2: from karyamorph.search",
        ),
        ("from karyamorph import Kernel, store\n", "line 1: from karyamorph import store"),
        ("from karyamorph import *\n", "line 1: from karyamorph import *"),
        ("import karyamorph as km\n\ncurves = km.search.replay.replay_curves\n", "line 3: km.search.replay"),
        ("import karyamorph\nkaryamorph.store.Store.open('x')\n", "line 2: karyamorph.store"),
        (
            "def f():\n    import karyamorph.isa.parser as p\n    return p\n",
            "line 2: import karyamorph.isa.parser",
        ),
        ("%matplotlib inline\nfrom karyamorph.kernel import bind\n", "line 2: from karyamorph.kernel"),
    ],
)
def test_a_planted_deep_import_is_caught(source: str, caught: str) -> None:
    found = deep_imports(source)
    assert len(found) == 1 and found[0].startswith(caught), found


def test_the_public_face_passes() -> None:
    source = (
        "import karyamorph as km\nfrom karyamorph import Kernel, run\nimport karyamorphic\n"
        "print(km.__version__, km.machine().warp_size, Kernel, run, km.load)\n"
    )
    assert deep_imports(source) == []


def test_a_snippet_is_read_as_the_file_it_includes(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('```python\n--8<-- "benchmarks/friction/api.py"\n```\n')
    (block,) = blocks(page)
    assert block.text == (ROOT / "benchmarks" / "friction" / "api.py").read_text()
    assert deep_imports(block.text) == []
