"""The package face: ``karyamorph.__all__`` is what docs/api.md documents, loads lazily, and
types strictly in a user's script; every public error derives from one base."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from mypy import api as mypy_api

import karyamorph as km
from karyamorph import api

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTED = re.compile(r"^### `(\w+)`$", re.MULTILINE)

# A user's script touching every public name; mypy --strict must accept it as written.
SCRIPT = """
from pathlib import Path

import karyamorph as km


def main(spec: Path) -> None:
    k: km.Kernel = km.Kernel.from_ptx(spec.with_suffix(".ptx"), "vadd")
    k = km.load(spec)
    compiled: km.Compiled = k.compile("sm_90")
    registers: int | None = compiled.registers
    text: str = k.sass()
    k.launch(grid=(16,), block=256, args=(1, 2, 3, 4096))
    timing: km.BenchResult = km.bench(lambda: k.launch(16, 256, (1, 2, 3, 4096)), options=km.TimingOptions())
    median: float = timing.median_ns
    r: km.RunResult = km.run(spec, arch="sm_90", sizes={"n": 4096}, stages=["compile"], store=False)
    stage: km.StageResult = r["compile"]
    passed: bool = stage.status == km.Status.PASS
    sass: str | None = r.sass
    verdicts: list[km.Verdict] = km.check(spec, sizes={"n": 1000})
    report: km.InterpReport = km.interp(spec, budget=km.ModelBudget())
    rows = km.db().sql("SELECT count(*) FROM runs").fetchall()
    warp: int = km.machine().warp_size
    errors: tuple[type[km.KaryaMorphError], ...] = (
        km.SpecError, km.PtxError, km.PtxasError, km.ArchError, km.ToolchainError, km.SassError,
        km.StageSelectionError, km.StoreError, km.LaunchArgumentError, km.NoDeviceError,
        km.CudaError, km.UnmodeledError, km.ExecutionError, km.TooLargeError,
    )
    print(registers, text, median, passed, sass, verdicts, report.match, rows, warp, errors)


def model(spec: Path) -> None:
    bound = km.bind(spec, {"n": 4096})
    module = km.parse_ptx(spec.with_suffix(".ptx"))
    text: str = km.format_ptx(module)
    u32 = km.PTX_TYPES["u32"]
    slots: tuple[km.Slot, ...] = (km.Slot("d", dest=True), km.Slot("a"))
    declarations: tuple[type[km.Instr], type[km.Law]] = (km.Instr, km.Law)
    small: km.Machine = km.Machine("small", km.machine().instructions, arch="sm_90")
    checks = km.check_instructions(small, only=["add"])
    k = km.load(spec)
    outputs = k.interpret(4, 256, {"n": 1000}, machine=small).outputs
    proved: list[km.Verdict] = k.check(4, 256, {"a": 4000, "b": 4000, "c": 4000}, {"n": 1000})
    peaks: tuple[float | None, float | None] = km.peak_rates({"compute_capability": "9.0"})
    print(bound.grid, text, u32, slots, declarations, checks, outputs, proved, peaks)


def campaigns_and_search(folder: Path) -> None:
    done: int = km.run_campaign(folder / "sweep.toml", db=folder / "k.duckdb").info.done
    imports: list[km.DatasetImport] = km.import_datasets(folder, db=folder / "k.duckdb")
    recorded = km.recording(folder / "A100.json.gz")
    best = km.search_recorded(recorded, "random", budget=10).best
    fraction: float = km.replay(recorded, "random", budget=10, repeats=2).mean_fraction_of_optimum
    searched: km.SearchResult = km.search("vadd", budget=4, arch="sm_90", db=folder / "k.duckdb")
    fastest = searched.leaderboard().iloc[0]["time_ms"], searched.winner
    template: km.Template = km.template("scale")
    value: km.Value = 256
    spec = km.KernelSpec(
        ptx=km.KernelBuilder("k", target=km.Arch.parse("sm_90").name, version="8.7").ptx(), entry="k",
        sizes={"n": 1}, launch=km.Launch((1,), (1,)),
        args=(km.ArgSpec("x", "in", km.DTYPES["f32"], ("n",), km.Init("randn")),),
        reference=km.Reference(torch="x"),
    )
    space = (km.Parameter("block", (64, value)), km.Constraint("block <= 256"), km.Footprint(threads=64))
    print(done, imports, best, fraction, template.name, spec, space)
"""


def test_all_is_what_the_api_page_documents() -> None:
    documented = DOCUMENTED.findall((ROOT / "docs" / "api.md").read_text())
    assert len(documented) == len(set(documented)), "a name documented twice"
    assert sorted(documented) == sorted(km.__all__)


def test_the_face_and_the_api_package_list_the_same_names() -> None:
    assert km.__all__ == api.__all__
    for name in set(km.__all__) - {"search"}:
        assert getattr(km, name) is getattr(api, name)


def test_search_is_the_callable_package_whichever_was_imported_first() -> None:
    """``karyamorph.search`` is a subpackage too: the name is that package, and calling it is
    the API's search (a fresh process, so that the order of imports is the one written)."""
    for first in ("km.search", "km.SearchResult", "__import__('karyamorph.search.space')"):
        code = (
            f"import karyamorph as km; {first}; import karyamorph.search as package;"
            "from karyamorph.api import search;"
            "print(km.search is package, callable(km.search), type(km.search).__call__.__doc__ is not None,"
            " search.__module__)"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.split() == ["True", "True", "True", "karyamorph.search.run"], (first, out.stdout)


def test_a_search_of_nothing_is_the_projects_error_before_any_gpu_work() -> None:
    with pytest.raises(km.KaryaMorphError, match="no template named 'no_such'"):
        km.search("no_such", budget=2, arch="sm_90")


def test_search_without_a_gpu_says_so_in_the_projects_error() -> None:
    from karyamorph.harness.gpu.host import current_device

    if current_device() is not None:
        pytest.skip("this machine has a GPU: the search would run")
    with pytest.raises(km.KaryaMorphError, match="no GPU"):
        km.search("vadd", budget=2)


def test_the_api_page_is_in_the_site_nav() -> None:
    assert "  - Python API: api.md\n" in (ROOT / "mkdocs.yml").read_text()


def test_importing_the_face_is_light_and_a_name_loads_it() -> None:
    code = (
        "import sys, karyamorph as km;"
        "names = ('z3', 'duckdb', 'torch', 'cuda.core', 'karyamorph.api');"
        "heavy = lambda: sorted(m for m in names if m in sys.modules);"
        "before = heavy(); km.Kernel; print(before, 'karyamorph.api' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] True"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'karyamorph' has no attribute 'Kernal'"):
        km.Kernal  # type: ignore[attr-defined]  # noqa: B018
    assert set(km.__all__) <= set(dir(km))


def test_every_public_error_derives_from_the_one_base_and_keeps_its_builtin() -> None:
    errors = [getattr(km, n) for n in km.__all__ if n.endswith("Error")]
    assert len(errors) == 15
    assert all(issubclass(e, km.KaryaMorphError) for e in errors)
    assert issubclass(km.SpecError, ValueError) and issubclass(km.ArchError, ValueError)
    assert issubclass(km.PtxasError, RuntimeError) and issubclass(km.CudaError, RuntimeError)
    assert issubclass(km.ToolchainError, RuntimeError) and issubclass(km.TooLargeError, ValueError)
    # Not a catch-all: a bug stays a bug.
    assert not issubclass(KeyError, km.KaryaMorphError) and not issubclass(TypeError, km.KaryaMorphError)


def test_a_raised_error_is_caught_by_the_base() -> None:
    with pytest.raises(km.KaryaMorphError):
        km.run(ROOT / "datasets" / "kernels" / "vadd.toml", arch="sm_7", store=False)


def test_the_script_uses_every_public_name() -> None:
    used = set(re.findall(r"\bkm\.(\w+)", SCRIPT))
    assert set(km.__all__) <= used, sorted(set(km.__all__) - used)


def test_a_user_script_types_strictly(tmp_path: Path) -> None:
    script = tmp_path / "user_script.py"
    script.write_text(SCRIPT)
    cache = str(ROOT / ".mypy_cache")
    options = ["--strict", "--follow-imports=silent", "--no-error-summary", "--cache-dir", cache]
    stdout, stderr, status = mypy_api.run([*options, str(script)])
    assert status == 0, stdout + stderr
