"""The model runs only on PTX ptxas accepted, and refuses what is too large before allocating it."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness import model_gate
from karyamorph.harness.model_run import run_model
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.base import Context, Status
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.model import ModelStage
from karyamorph.harness.tools.ptxas import PtxasError, assemble
from karyamorph.harness.tools.toolchain import Toolchain, discover, discover_from
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare as prepare_spec
from karyamorph.model.interp.budget import ModelBudget, TooLargeError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.program import prepare
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.harness.budget_kernels import HEAD, SHARED_PTX, SPIN_PTX, local_ptx, regs_ptx, write_spec

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20


def _no_ptxas() -> Toolchain:
    """The toolchain of a machine with no NVIDIA tools anywhere (raises ToolchainError)."""
    return discover_from(use_wheels=False, cuda_home=None, path="", default_root=None)


def _peak_bytes(fn: object) -> tuple[BaseException | None, int]:
    """Run ``fn`` under tracemalloc (numpy reports its buffers there); its error and peak bytes."""
    tracemalloc.start()
    try:
        fn()  # type: ignore[operator]
        error = None
    except TooLargeError as exc:
        error = exc
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return error, peak


def test_ptxas_accepts_the_large_kernels_the_budget_refuses() -> None:
    # The budget is not a second ptxas: these are real kernels to ptxas, too large only for the model.
    tc = discover()
    for ptx in (regs_ptx(1_000_000), local_ptx(16 * MIB), SHARED_PTX):
        assert assemble(ptx, "sm_80", tc).cubin


def test_too_many_registers_are_refused_before_one_is_laid_out() -> None:
    module = parse(regs_ptx(1_000_000))
    error, peak = _peak_bytes(lambda: prepare(module, "k", ptx_machine()))
    # 1 000 000 predicates + 3 + 2 more, declared in the text.
    assert str(error) == "too large for the model: registers declared by k (1000005 > 262144)"
    assert peak < 16 * MIB  # a dict of a million names alone takes ~100 MB


def test_local_memory_of_every_thread_is_refused_before_it_is_allocated() -> None:
    module = parse(local_ptx(16 * MIB))
    out = np.zeros(256, np.uint32)
    error, peak = _peak_bytes(lambda: interpret(module, "k", ptx_machine(), (1, 256, 0), {"out": out}))
    assert isinstance(error, TooLargeError)
    assert "of which local memory 4294967296" in str(error)  # 256 threads x 16 MiB
    assert error.limit == 2 << 30 and error.figure > 256 * 16 * MIB
    assert peak < 16 * MIB


def test_the_byte_figure_is_what_the_interpreter_really_allocates() -> None:
    # 64 threads x 1 MiB of local memory: tracemalloc sees the interpreter allocate it, and a
    # budget one byte under the launch's figure refuses it.
    module = parse(local_ptx(MIB))
    out = np.zeros(64, np.uint32)
    launch = (1, 64, 0)
    error, peak = _peak_bytes(lambda: interpret(module, "k", ptx_machine(), launch, {"out": out}))
    assert error is None and peak >= 64 * MIB
    program = prepare(module, "k", ptx_machine())
    figure = program.footprint((1, 1, 1), (64, 1, 1), 0, [out.nbytes]).total
    assert 64 * MIB <= figure <= peak
    with pytest.raises(TooLargeError, match="of which local memory 67108864"):
        interpret(module, "k", ptx_machine(), launch, {"out": out}, budget=ModelBudget(max_bytes=figure - 1))
    interpret(module, "k", ptx_machine(), launch, {"out": out}, budget=ModelBudget(max_bytes=figure))


def test_a_terabyte_module_variable_is_refused_not_allocated() -> None:
    ptx = HEAD + ".global .align 4 .b8 g[1099511627776];\n\n.visible .entry k()\n{\n    ret;\n}\n"
    assert assemble(ptx, "sm_80", discover()).cubin  # ptxas takes it
    with pytest.raises(TooLargeError, match=r"module \.global and \.const variables \(1099511627776 > "):
        prepare(parse(ptx), "k", ptx_machine())


def test_shared_memory_of_every_block_counts(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "dyn", SHARED_PTX, grid=100_000, block=32, shared_bytes=48 * 1024)
    with pytest.raises(TooLargeError, match="of which shared memory 4915200000"):  # 100 000 x 48 KiB
        run_model(bind(load_spec(spec)))


def test_work_over_the_budget_is_refused_before_inputs_are_made(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "wide", regs_ptx(4), grid=4096, block=256)
    kernel = bind(load_spec(spec))
    budget = ModelBudget(max_thread_instructions=1e6)
    with pytest.raises(TooLargeError, match=r"estimated as 1048576 threads x \d+ instructions"):
        run_model(kernel, budget=budget)
    assert run_model(kernel).outputs["out"].numel() == 4096 * 256  # the default budget takes it


def test_a_kernel_that_never_ends_stops_at_the_budget(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "spin", SPIN_PTX, block=64)
    t0 = time.perf_counter()
    with pytest.raises(TooLargeError, match=r"still running after 1562 steps of up to 64 threads"):
        run_model(bind(load_spec(spec)), budget=ModelBudget(max_thread_instructions=1e5))
    assert time.perf_counter() - t0 < 30


# --- the model stage ------------------------------------------------------------------------


def _model_stage(spec_path: Path, *stages: object) -> dict[str, object]:
    run = run_pipeline(load_spec(spec_path), arch="sm_80", stages=list(stages))  # type: ignore[arg-type]
    return {name: r for name, r in run.stages}


def test_a_rejected_ptx_is_not_modeled_and_says_what_ptxas_said(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "pred", regs_ptx(4294967296))
    with pytest.raises(PtxasError) as rejected:
        assemble(regs_ptx(4294967296), "sm_80", discover())
    assert "line 7; error   : Constant overflow" in rejected.value.log  # ptxas's own words
    want = f"ptxas rejected the PTX for sm_80: {spec.with_suffix('.ptx')}:7: error: Constant overflow"
    after_compile = _model_stage(spec, CompileStage(), ModelStage())
    assert after_compile["compile"].status == Status.FAIL  # type: ignore[attr-defined]
    model = after_compile["model"]
    assert (model.status, model.data["reason"]) == (Status.SKIP, want)  # type: ignore[attr-defined]
    # Without the compile stage the model stage runs ptxas itself.
    alone = _model_stage(spec, ModelStage())["model"]
    assert (alone.status, alone.data["reason"]) == (Status.SKIP, want)  # type: ignore[attr-defined]


def test_the_model_stage_skips_a_kernel_with_too_many_registers(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "regs", regs_ptx(1_000_000))
    stages = _model_stage(spec, CompileStage(), ModelStage())
    assert stages["compile"].status == Status.PASS  # type: ignore[attr-defined]
    model = stages["model"]
    assert model.status == Status.SKIP  # type: ignore[attr-defined]
    assert model.data["reason"] == "too large for the model: registers declared by k (1000005 > 262144)"  # type: ignore[attr-defined]


def test_a_launch_too_large_to_interpret_is_still_checked(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "local", local_ptx(16 * MIB), block=256)
    model = _model_stage(spec, CompileStage(), ModelStage())["model"]
    interp = model.data["interp"]  # type: ignore[attr-defined]
    assert interp["status"] == "not run"
    assert interp["reason"].startswith("too large for the model: bytes the interpreter would allocate")
    assert {c["verdict"] for c in model.data["checks"]} == {"proved"}  # type: ignore[attr-defined]
    assert model.status == Status.PASS  # type: ignore[attr-defined]


def test_normal_kernels_are_modeled_as_before(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "small", regs_ptx(4), block=64)
    model = _model_stage(spec, CompileStage(), ModelStage())["model"]
    assert model.status == Status.PASS  # type: ignore[attr-defined]
    assert model.data["interp"]["status"] == "pass"  # type: ignore[attr-defined]
    vadd = bind(load_spec(ROOT / "datasets/kernels/vadd.toml"), sizes={"n": 1000})
    run = run_model(vadd)
    assert np.array_equal(run.outputs["c"].numpy(), (run.inputs["a"] + run.inputs["b"]).numpy())


# --- the ptxas gate -------------------------------------------------------------------------


def test_an_acceptance_is_cached_and_a_rejection_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KARYAMORPH_CACHE", str(tmp_path))
    calls: list[str] = []
    real = model_gate.assemble

    def counting(ptx: str, arch: str, *args: object, **kwargs: object) -> object:
        calls.append(arch)
        return real(ptx, arch, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(model_gate, "assemble", counting)
    good = regs_ptx(4)
    model_gate.require_ptxas(good, "sm_80")
    model_gate.require_ptxas(good, "sm_80")
    assert calls == ["sm_80"]
    model_gate.require_ptxas(good, "sm_90")  # another arch is another question
    assert calls == ["sm_80", "sm_90"]
    for _ in range(2):
        with pytest.raises(PtxasError, match="Constant overflow"):
            model_gate.require_ptxas(regs_ptx(4294967296), "sm_80")
    assert len(calls) == 4


def test_without_ptxas_the_model_stage_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pipeline finds its toolchain before any stage (a missing ptxas stops it there); a
    # stage given no toolchain looks for ptxas itself.
    monkeypatch.setattr(model_gate, "discover", _no_ptxas)
    spec = load_spec(write_spec(tmp_path, "small", regs_ptx(4)))
    context = Context(kernel=bind(spec), arch=Arch.parse("sm_80"), module=prepare_spec(spec))
    model = ModelStage().run(context)
    assert model.status == Status.SKIP
    assert "ptxas was not found" in model.data["reason"]
    assert "pip install nvidia-cuda-nvcc" in model.data["reason"]
