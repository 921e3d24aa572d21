"""The import rules of DESIGN.md: dependencies point downward, isa/ and model/ stay light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "karyamorph"

# layer -> what it must never import (ours and heavy third-party packages).
FORBIDDEN = {
    "isa": ("karyamorph.kernel", "karyamorph.model", "karyamorph.harness", "karyamorph.store",
            "karyamorph.search", "karyamorph.dashboard", "karyamorph.cli", "torch", "duckdb", "cuda", "cupy"),
    "kernel": ("karyamorph.model", "karyamorph.harness", "karyamorph.store", "karyamorph.search",
               "karyamorph.dashboard", "karyamorph.cli", "torch", "duckdb", "cuda", "cupy", "z3", "sympy"),
    "model": ("karyamorph.harness", "karyamorph.store", "karyamorph.search", "karyamorph.dashboard",
              "karyamorph.cli", "torch", "duckdb", "cuda", "cupy"),
    "store": ("karyamorph.isa", "karyamorph.kernel", "karyamorph.model", "karyamorph.harness",
              "karyamorph.search", "karyamorph.dashboard", "karyamorph.cli", "torch", "cuda"),
    "harness": ("karyamorph.search", "karyamorph.dashboard", "karyamorph.cli"),
    "search": ("karyamorph.dashboard", "karyamorph.cli", "cuda"),
}  # fmt: skip


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_module_imports_upward() -> None:
    problems = []
    for layer, forbidden in FORBIDDEN.items():
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for name in imported_modules(path):
                if any(name == f or name.startswith(f + ".") for f in forbidden):
                    problems.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert problems == []


def test_importing_the_core_stays_light() -> None:
    code = (
        "import sys, karyamorph, karyamorph.isa.parser, karyamorph.isa.printer, karyamorph.model;"
        "import karyamorph.kernel, karyamorph.harness.pipeline;"
        "heavy = sorted(m for m in ('torch', 'duckdb', 'cuda.bindings', 'cupy', 'z3') if m in sys.modules);"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# The rooms of model/, lowest first: a room imports only the rooms before it.
MODEL_ROOMS = ("resources", "semantics", "ptx", "interp", "check")


def test_model_rooms_import_downward() -> None:
    problems = []
    for rank, room in enumerate(MODEL_ROOMS):
        above = MODEL_ROOMS[rank + 1 :]
        for path in sorted((PACKAGE / "model" / room).rglob("*.py")):
            for name in imported_modules(path):
                if any(name.startswith(f"karyamorph.model.{r}") for r in above):
                    problems.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert problems == []
    rooms = {p.name for p in (PACKAGE / "model").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert rooms == set(MODEL_ROOMS)
    assert sorted(p.name for p in (PACKAGE / "model").glob("*.py")) == ["__init__.py"]
