"""The GPU stages: correctness and timing (in the persistent worker), on a real GPU and without one.

Tests marked ``gpu`` run every example kernel through correctness and timing and plant broken
kernels (an out-of-bounds write, an illegal address, an endless loop); they are skipped only
when there is no CUDA device. The rest run anywhere: skips without a device, the one-shot
worker's process handling, the spec file its job points to, parameter packing, statistics and
peaks.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness.gpu.device import DeviceInfo, current_device
from karyamorph.harness.gpu.launch import encode_scalar, kernel_args, scalar_param
from karyamorph.harness.gpu.measurement import TimingOptions, summarize
from karyamorph.harness.gpu.worker import (
    EXIT_NO_DEVICE,
    Job,
    run_worker,
    spec_file,
    spec_toml,
)
from karyamorph.harness.pipeline import RunResult, prepare_spec, run_pipeline
from karyamorph.harness.stages.base import Context, StageResult, Status
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.correctness import CorrectnessStage
from karyamorph.harness.stages.static import StaticStage
from karyamorph.harness.stages.timing import TimingStage, peak_dram_gbps, peak_fp32_gflops
from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import DTYPES, KernelSpec

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "datasets" / "kernels"
DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("*.toml"))

DEVICE = current_device()
gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(DEVICE is None, reason="no CUDA device")

# Short caps keep the suite quick; the method is the same as the stage's defaults.
FAST = TimingOptions(max_wall_seconds=2.0, max_samples=500)


def context(spec: KernelSpec, device: DeviceInfo | None, cubin: bytes | None = None) -> Context:
    return Context(kernel=bind(spec), arch=Arch.parse("sm_90"), toolchain=None, device=device, cubin=cubin)


def fake_h100() -> DeviceInfo:
    """A DeviceInfo with an H100 SXM's published numbers (no GPU needed to build one)."""
    attrs = {
        "multiprocessor_count": 132,
        "clock_rate_khz": 1_980_000,
        "memory_clock_rate_khz": 2_619_000,
        "memory_bus_width_bits": 5120,
        "l2_cache_bytes": 50 * 2**20,
    }
    return DeviceInfo(0, "H100 (numbers only)", (9, 0), 13000, 80 * 2**30, attrs)


# ----------------------------------------------------------------------------------------------
# Without a GPU


def test_gpu_stages_skip_without_a_device() -> None:
    spec = load_spec(EXAMPLES / "vadd.toml")
    for stage in (CorrectnessStage(), TimingStage()):
        r = stage.run(context(spec, None, cubin=b"\x7fELF"))
        assert r.status == Status.SKIP and r.data["reason"] == "no CUDA device"


def test_gpu_stages_skip_without_a_cubin_or_a_passing_correctness() -> None:
    spec = load_spec(EXAMPLES / "vadd.toml")
    device = fake_h100()
    assert CorrectnessStage().run(context(spec, device)).data["reason"] == "compile did not pass"
    assert TimingStage().run(context(spec, device)).data["reason"] == "compile did not pass"
    ctx = context(spec, device, cubin=b"\x7fELF")
    assert "correctness did not run" in TimingStage().run(ctx).data["reason"]
    ctx.correct = False
    assert TimingStage().run(ctx).data["reason"] == "correctness did not pass"
    no_ref = dataclasses.replace(spec, reference=dataclasses.replace(spec.reference, torch=None))
    assert "no [reference]" in CorrectnessStage().run(context(no_ref, device, cubin=b"x")).data["reason"]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_run_worker_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    # The wrapper starts a grandchild and waits: both must die when the time is up.
    wrapper = ["sh", "-c", "sleep 300 & echo $! > grandchild.pid; wait", "sh"]
    job = Job("none.toml", "none.cubin", "k", "once")
    t0 = time.perf_counter()
    outcome = run_worker(job, workdir=tmp_path, timeout_s=1.0, wrapper=wrapper)
    assert time.perf_counter() - t0 < 10
    assert outcome.timed_out and outcome.returncode is None and outcome.result is None
    pid = int((tmp_path / "grandchild.pid").read_text())
    deadline = time.perf_counter() + 5
    while _alive(pid) and time.perf_counter() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_run_worker_reports_exit_status_stderr_and_result(tmp_path: Path) -> None:
    code = (
        "import json, sys; job = json.load(open(sys.argv[-1])); "
        "open(job['result_path'], 'w').write(json.dumps({'seed': job['seed']})); "
        "sys.stderr.write('CUDA_ERROR_ILLEGAL_ADDRESS: boom'); sys.exit(2)"
    )
    job = Job("none.toml", "none.cubin", "k", "once", seed=41)
    outcome = run_worker(job, workdir=tmp_path, wrapper=[sys.executable, "-c", code])
    assert outcome.returncode == 2 and not outcome.timed_out
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in outcome.stderr
    assert outcome.result == {"seed": 41}


@pytest.mark.skipif(DEVICE is not None, reason="checks the worker's answer on a machine without a GPU")
def test_worker_runs_standalone_and_says_there_is_no_device(tmp_path: Path) -> None:
    spec = load_spec(EXAMPLES / "vadd.toml")
    job = Job(str(spec.source_path), str(tmp_path / "vadd.cubin"), "vadd", "once")
    outcome = run_worker(job, workdir=tmp_path, timeout_s=60)
    assert outcome.returncode == EXIT_NO_DEVICE, outcome.stderr
    assert "no CUDA device" in outcome.stderr


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")) + sorted(DATA.glob("*.toml")), ids=str)
def test_spec_toml_loads_back_as_the_same_spec(path: Path, tmp_path: Path) -> None:
    spec = prepare_spec(load_spec(path), "sm_90").spec  # the worker gets CUDA source as its PTX
    copy = tmp_path / "copy.toml"
    copy.write_text(spec_toml(spec))
    again = load_spec(copy)
    fields = (
        "ptx",
        "entry",
        "sizes",
        "launch",
        "args",
        "reference",
        "atol",
        "rtol",
        "cost_bytes",
        "cost_flops",
    )
    for name in fields:
        assert getattr(again, name) == getattr(spec, name), name


def test_spec_file_is_the_original_unless_the_spec_changed(tmp_path: Path) -> None:
    spec = load_spec(EXAMPLES / "vadd.toml")
    assert spec_file(spec, tmp_path) == spec.source_path
    small = dataclasses.replace(spec, sizes={"n": 1000})
    written = spec_file(small, tmp_path)
    assert written.parent == tmp_path
    assert load_spec(written).sizes == {"n": 1000}


def test_scalars_are_packed_by_the_param_type_with_the_spec_dtype_bits() -> None:
    f32, u32, s32 = DTYPES["f32"], DTYPES["u32"], DTYPES["s32"]
    v = scalar_param(1.5, f32, ast.Param("alpha", "f32"))
    assert isinstance(v, np.float32) and float(v) == 1.5
    bits = scalar_param(1.5, f32, ast.Param("alpha", "b32"))
    assert isinstance(bits, np.uint32) and int(bits) == 0x3FC00000
    assert int(scalar_param(-1, s32, ast.Param("k", "u32"))) == 0xFFFFFFFF
    assert int(scalar_param(7, u32, ast.Param("k", "s32"))) == 7
    assert encode_scalar(1.0, DTYPES["bf16"]) == (0x3F80).to_bytes(2, "little")
    # 1 + 2**-8 lies halfway between two bf16 values: round to the even one.
    assert encode_scalar(1.00390625, DTYPES["bf16"]) == (0x3F80).to_bytes(2, "little")
    assert isinstance(scalar_param(0.5, DTYPES["f16"], ast.Param("h", "f16")), np.float16)
    with pytest.raises(ValueError, match="does not fit u8"):
        encode_scalar(300, DTYPES["u8"])
    with pytest.raises(ValueError, match="is 8 bytes"):
        scalar_param(1, u32, ast.Param("k", "u64"))


def test_kernel_args_follow_the_entry_order() -> None:
    spec = load_spec(EXAMPLES / "scale.toml")
    params = prepare(spec).entry("scale").params
    values = kernel_args(bind(spec), params, {"x": 0x1000, "y": 0x2000})
    assert [type(v) for v in values] == [np.uint64, np.uint64, np.float32, np.uint32]
    assert [int(values[0]), int(values[1]), float(values[2]), int(values[3])] == [0x1000, 0x2000, 1.5, 2**20]


def test_summarize_gives_median_quartiles_and_spread() -> None:
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert s is not None
    assert (s.samples, s.median_ns, s.min_ns, s.max_ns) == (5, 3.0, 1.0, 5.0)
    assert (s.q1_ns, s.q3_ns, s.iqr_ns) == (2.0, 4.0, 2.0)
    assert s.mean_ns == 3.0 and s.stdev_ns == pytest.approx(math.sqrt(2.5))
    assert s.rel_stdev == pytest.approx(math.sqrt(2.5) / 3)
    assert summarize([]) is None
    assert summarize([7.0]) is not None


def test_spin_kernel_ptx_assembles_for_current_architectures() -> None:
    from karyamorph.harness.gpu.measurement import SPIN_PTX
    from karyamorph.harness.tools.ptxas import assemble
    from karyamorph.harness.tools.toolchain import discover

    for arch in ("sm_80", "sm_90", "sm_120"):
        assert "karyamorph_spin" in assemble(SPIN_PTX, arch, discover()).functions


def test_peaks_from_device_attributes() -> None:
    h100 = fake_h100()
    # 2 x 2619 MHz x 5120 bits / 8 = 3352 GB/s: the H100 SXM datasheet's 3.35 TB/s.
    assert peak_dram_gbps(h100) == pytest.approx(3352.3, abs=0.1)
    # 132 SMs x 128 lanes x 2 x 1.98 GHz = 66.9 TFLOP/s: the datasheet's 67 TFLOP/s FP32.
    assert peak_fp32_gflops(h100) == pytest.approx(66908, rel=1e-3)
    a100 = dataclasses.replace(h100, compute_capability=(8, 0))
    assert peak_fp32_gflops(a100, clock_mhz=1410) == pytest.approx(132 * 64 * 2 * 1.41, rel=1e-6)
    assert peak_dram_gbps(dataclasses.replace(h100, attributes={})) is None


# ----------------------------------------------------------------------------------------------
# On a GPU


def gpu_stages(*, timeout_s: float = 120.0, options: TimingOptions = FAST) -> list[object]:
    return [CompileStage(), StaticStage(), CorrectnessStage(timeout_s=timeout_s), TimingStage(options)]


def run_gpu(spec: KernelSpec, **kwargs: float) -> RunResult:
    return run_pipeline(spec, device=DEVICE, stages=gpu_stages(**kwargs))  # type: ignore[arg-type]


@functools.cache
def example_run(name: str) -> RunResult:
    return run_gpu(load_spec(EXAMPLES / f"{name}.toml"))


def stage(run: RunResult, name: str) -> StageResult:
    r = run.result(name)
    assert r is not None, f"no {name} stage"
    return r


@gpu
@needs_gpu
@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_example_passes_correctness_and_timing(name: str) -> None:
    run = example_run(name)
    corr = stage(run, "correctness")
    print(f"--- {name}: correctness ---\n{corr.log}\n--- {name}: timing ---\n{stage(run, 'timing').log}")
    assert corr.status == Status.PASS, corr.log
    trials = corr.data["trials"]
    assert len(trials) == 3 and all(t["passed"] for t in trials)
    assert len({t["seed"] for t in trials}) == 3
    timing = stage(run, "timing")
    assert timing.status == Status.PASS, timing.log
    assert len(timing.data["samples_ns"]) >= 10
    assert timing.data["median_ns"] > 0 and timing.data["rel_stdev"] >= 0


@gpu
@needs_gpu
@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_driver_occupancy_matches_the_model(name: str) -> None:
    corr = stage(example_run(name), "correctness")
    assert corr.data["driver_blocks_per_sm"] == corr.data["model_blocks_per_sm"], corr.log
    assert corr.data["occupancy_agrees"] is True


@gpu
@needs_gpu
def test_vadd_timing_reports_samples_spread_and_bandwidth() -> None:
    timing = stage(example_run("vadd"), "timing")
    data = timing.data
    assert len(data["samples_ns"]) >= 10 and len(data["throttled"]) == len(data["samples_ns"])
    for key in ("median_ns", "min_ns", "iqr_ns", "mean_ns", "stdev_ns", "rel_stdev", "throttled_count"):
        assert key in data
    assert data["min_ns"] <= data["median_ns"] <= max(data["samples_ns"])
    assert data["flush_bytes"] >= 2 * DEVICE.attributes["l2_cache_bytes"]  # type: ignore[union-attr]
    assert data["spin_ns"] > 0, data["spin_error"]
    # Moving 12 bytes per element of 2**24 floats cannot beat the DRAM peak.
    assert 0.1 < data["bandwidth_fraction_of_peak"] < 1.05, timing.log
    names = {f.name for f in timing.figures}
    assert {"median_ns", "rel_stdev", "samples", "bandwidth_gbps"} <= names


@gpu
@needs_gpu
def test_out_of_bounds_write_fails_correctness() -> None:
    run = run_gpu(load_spec(DATA / "oob_write.toml"))
    corr = stage(run, "correctness")
    assert corr.status == Status.FAIL, corr.log
    assert "out-of-bounds write" in corr.log
    kinds = {(f["kind"], f["location"]) for f in corr.data["findings"]}
    assert ("out_of_bounds_write", "c") in kinds
    assert stage(run, "timing").status == Status.SKIP


@gpu
@needs_gpu
def test_illegal_address_fails_the_stage_and_the_process_goes_on() -> None:
    run = run_gpu(load_spec(DATA / "illegal_address.toml"))
    corr = stage(run, "correctness")
    assert corr.status == Status.FAIL, corr.log
    assert str(corr.data["cuda_error"]).startswith("CUDA_ERROR_"), corr.log
    assert corr.data["cuda_error"] in corr.log
    assert stage(run, "timing").status == Status.SKIP
    # This process's own CUDA use is untouched: a correct kernel still runs and passes.
    small = dataclasses.replace(load_spec(EXAMPLES / "vadd.toml"), sizes={"n": 1000})
    again = run_gpu(small)
    assert stage(again, "correctness").status == Status.PASS
    assert stage(again, "timing").status == Status.PASS


@gpu
@needs_gpu
def test_endless_kernel_fails_by_timeout() -> None:
    t0 = time.perf_counter()
    run = run_gpu(load_spec(DATA / "hang.toml"), timeout_s=10.0)
    corr = stage(run, "correctness")
    assert corr.status == Status.FAIL
    assert "timed out after 10 s" in corr.log
    assert corr.data["timed_out"] is True
    assert time.perf_counter() - t0 < 60
    assert stage(run, "timing").status == Status.SKIP


@gpu
@needs_gpu
def test_worker_once_mode_launches_with_separate_buffers(tmp_path: Path) -> None:
    from karyamorph.harness.tools.ptxas import assemble
    from karyamorph.harness.tools.toolchain import discover

    spec = dataclasses.replace(load_spec(EXAMPLES / "vadd.toml"), sizes={"n": 4099})
    cubin = tmp_path / "vadd.cubin"
    cubin.write_bytes(assemble(spec.ptx, DEVICE.arch, discover()).cubin)  # type: ignore[union-attr]
    job = Job(str(spec_file(spec, tmp_path)), str(cubin), "vadd", "once", seed=3)
    outcome = run_worker(job, workdir=tmp_path / "w", timeout_s=120)
    assert outcome.returncode == 0, outcome.stderr
    assert outcome.result is not None and outcome.result["launched"] is True
