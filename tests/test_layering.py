"""The import rules of the package's floors: dependencies point downward, isa/ and model/ stay light.

``python tests/test_layering.py`` prints the floors this test enforces.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "karyamorph"

# The floors, lowest first. A package imports only packages on floors below its own: never one
# above, never a sibling on its floor. `table` is the one plain module of shared table output.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors",),  # the one base class of the package's errors
    ("isa", "store", "table"),  # the PTX language; the DuckDB store; table output
    ("kernel",),  # kernel specs: what to run, as plain data
    ("model",),  # the SIMT model: semantics, interpreter, z3 checks, cost model
    ("harness",),  # one run: pipeline, stages, GPU runtime, tool wrappers
    ("validation", "remote"),  # the model against the GPU, form by form; GPU hosts over SSH
    ("microbench", "search", "campaign", "render"),  # measured figures, searches, campaigns, text
    ("dashboard",),  # the web page
    ("api", "cli"),  # the Python face (`import karyamorph as km`); the command line
)

# What a package must never import beyond the floor rule: heavy third-party packages, and the
# store below the harness (specs and the model are data and proofs, not records).
HEAVY = ("torch", "duckdb", "cuda", "cupy")
NEVER: dict[str, tuple[str, ...]] = {
    "errors": (*HEAVY, "z3"),
    "isa": HEAVY,
    "kernel": (*HEAVY, "z3", "sympy", "karyamorph.store"),
    "model": (*HEAVY, "karyamorph.store"),
    "store": ("torch", "cuda"),
    "search": ("cuda",),
    "campaign": ("torch", "cuda"),
    # The page runs no GPU code itself: GPU work happens in the harness's worker processes.
    "dashboard": ("torch", "cuda", "cupy"),
}


def floor_of(package: str) -> int:
    return next(i for i, floor in enumerate(FLOORS) if package in floor)


def forbidden(package: str) -> tuple[str, ...]:
    """What ``package`` must not import: every package not on a floor below, and its NEVER list."""
    rank = floor_of(package)
    ours = (f"karyamorph.{p}" for i, floor in enumerate(FLOORS) if i >= rank for p in floor if p != package)
    return (*ours, *NEVER.get(package, ()))


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _files(package: str) -> list[Path]:
    single = PACKAGE / f"{package}.py"
    return [single] if single.exists() else sorted((PACKAGE / package).rglob("*.py"))


def test_every_package_is_on_a_floor() -> None:
    packages = {p.stem for p in PACKAGE.iterdir() if p.name not in ("__init__.py", "__pycache__")}
    assert packages == {p for floor in FLOORS for p in floor}


def test_no_module_imports_upward() -> None:
    problems = []
    for package in (p for floor in FLOORS for p in floor):
        banned = forbidden(package)
        for path in _files(package):
            for name in imported_modules(path):
                if any(name == f or name.startswith(f + ".") for f in banned):
                    problems.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert problems == []


def floors_text() -> str:
    """The floors as a newcomer reads them, highest first."""
    lines = []
    for rank in reversed(range(len(FLOORS))):
        below = [p for floor in FLOORS[:rank] for p in floor]
        for package in FLOORS[rank]:
            never = [n for n in NEVER.get(package, ()) if not n.startswith("karyamorph.")]
            extra = f"; never {', '.join(never)}" if never else ""
            reach = ", ".join(b for b in below if f"karyamorph.{b}" not in NEVER.get(package, ()))
            lines.append(f"{rank}  {package:<11} imports {reach or 'nothing of ours'}{extra}")
    return "\n".join(lines)


def test_the_floors_print() -> None:
    text = floors_text()
    print(text)
    assert text.splitlines()[1].startswith(f"{len(FLOORS) - 1}  cli")
    assert "0  errors      imports nothing of ours; never torch, duckdb, cuda, cupy, z3" in text
    assert "1  isa         imports errors; never torch, duckdb, cuda, cupy" in text


def test_only_the_cli_imports_the_dashboard() -> None:
    importers = sorted(
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        if "dashboard" not in path.relative_to(PACKAGE).parts[:-1]
        and any(n.split(".")[:2] == ["karyamorph", "dashboard"] for n in imported_modules(path))
    )
    assert {Path(p).parent.name for p in importers} == {"cli"}


def _heavy_after(imports: str) -> list[str]:
    code = (
        f"import sys; {imports};"
        "heavy = sorted(m for m in ('torch', 'duckdb', 'cuda.bindings', 'cuda.core', 'cupy', 'z3')"
        " if m in sys.modules);"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [m for m in out.stdout.strip().split(",") if m]


def test_importing_the_core_stays_light() -> None:
    core = "import karyamorph, karyamorph.isa.parser, karyamorph.isa.printer, karyamorph.model"
    core += ", karyamorph.kernel"
    assert _heavy_after(core) == []
    # The pipeline runs the model stage (z3) but touches the GPU (torch, cuda) only inside a stage.
    assert _heavy_after("import karyamorph.harness.pipeline, karyamorph.harness.session") in (
        ["z3"],
        ["duckdb", "z3"],
    )


def test_the_command_line_starts_without_the_web_stack() -> None:
    # `karyamorph --help` must not pay for starlette, uvicorn or jinja2: the dashboard's commands
    # import them when they run.
    web = "('starlette', 'uvicorn', 'jinja2')"
    code = f"import sys, karyamorph.cli; print(sorted(m for m in {web} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_search_runs_without_the_gpu_stack() -> None:
    # Spaces, strategies and replay work on recorded data: no harness, torch, duckdb or z3. A GPU
    # evaluator is a module of its own that the package face does not import.
    assert _heavy_after("import karyamorph.search, karyamorph.search.replay") == []
    code = "import sys, karyamorph.search; print(sorted(m for m in sys.modules if 'harness' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# The package face's lazy loader (PEP 562 `__getattr__` in karyamorph/__init__.py): the one
# import of our own inside a function outside the CLI, and lazy by design, so that
# `import karyamorph` stays light. Its imports run on first use of a name, after the package has
# finished importing, so they cannot close an import cycle either.
LAZY_FACE = (PACKAGE / "__init__.py", "__getattr__")


def test_no_import_of_our_own_modules_inside_a_function() -> None:
    # An import placed in a function to dodge a cycle hides a design problem; the CLI alone
    # imports lazily, so that `karyamorph --help` starts without z3 or duckdb.
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent.name == "cli":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or (path, fn.name) == LAZY_FACE:
                continue
            for node in ast.walk(fn):
                name = node.module if isinstance(node, ast.ImportFrom) else None
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [name or ""]
                if isinstance(node, ast.Import | ast.ImportFrom) and any(
                    n.startswith("karyamorph") for n in names
                ):
                    problems.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} in {fn.name}")
    assert problems == []


def test_no_import_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        # The face's imports are lazy (LAZY_FACE) or for type checkers only: none runs at import.
        lazy = path == LAZY_FACE[0]
        graph[module] = set() if lazy else {n for n in imported_modules(path) if n.startswith("karyamorph")}
    # A module's import of a package also runs that package's __init__.
    edges = {m: {d for d in deps if d in graph} for m, deps in graph.items()}
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        seen[m] = 1
        stack.append(m)
        for d in sorted(edges[m]):
            if seen.get(d) == 1:
                return [*stack[stack.index(d) :], d]
            if d not in seen and (cycle := visit(d)):
                return cycle
        stack.pop()
        seen[m] = 2
        return None

    for m in sorted(edges):
        if m not in seen and (cycle := visit(m)):
            raise AssertionError(" -> ".join(cycle))


# The rooms of model/, lowest first: a room imports only the rooms before it.
MODEL_ROOMS = ("resources", "semantics", "ptx", "interp", "check", "cost", "rewrite")


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


if __name__ == "__main__":
    print(floors_text())
