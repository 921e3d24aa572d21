"""The predict stage on the CPU: the cost model's time for a launch, its reasons when it has none.

The prediction of a streaming kernel is checked against a hand computation from the shipped
microbenchmark table (bytes moved over the measured DRAM bandwidth, plus the launch time), not
against the stage's own arithmetic; counts taken at a scaled-down size are checked against
counts of the full launch.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import statistics
from pathlib import Path

import pytest
from rich.console import Console

from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.pipeline import RunResult, default_stages, run_pipeline, select_stages
from karyamorph.harness.prediction import beside
from karyamorph.harness.session import Outcome
from karyamorph.harness.stages.base import Figure, StageResult, Status
from karyamorph.harness.stages.predict import PredictStage
from karyamorph.isa.arch import Arch
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.cost import machine_for
from karyamorph.model.interp.budget import ModelBudget
from karyamorph.search.templates import template

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "datasets" / "kernels"
SM90_FIGURES = ROOT / "datasets" / "microbench" / "sm_90" / "figures.csv"


def run(spec: KernelSpec, stages: list[str], *, arch: str = "sm_90", predict: PredictStage | None = None,
        sizes: dict[str, int] | None = None) -> RunResult:  # fmt: skip
    chosen = select_stages(default_stages(), stages)
    if predict is not None:
        chosen = [predict if s.name == "predict" else s for s in chosen]
    return run_pipeline(spec, arch=arch, stages=chosen, sizes=sizes)


def predicted(result: RunResult) -> StageResult:
    r = result.result("predict")
    assert r is not None
    return r


def dram_bandwidth_from_table() -> float:
    """The median DRAM bandwidth (bytes/s) over every session of the sm_90 table, read here
    with the csv module: the figure a bandwidth-bound prediction must divide by."""
    with SM90_FIGURES.open(newline="") as f:
        rows = [r for r in csv.DictReader(f)
                if (r["kind"], r["name"], r["status"]) == ("bandwidth", "dram", "ok")]  # fmt: skip
    assert rows and {r["unit"] for r in rows} == {"GB/s"}
    return statistics.median(float(r["value"]) for r in rows) * 1e9


def test_a_streaming_kernel_is_predicted_at_bytes_over_the_measured_dram_bandwidth() -> None:
    # float4 loads, two per input and thread: enough bytes in flight per warp that DRAM
    # bandwidth, not latency, limits the launch.
    t = template("vadd")
    config = {"vec": 4, "items": 2, "block": 256, "sm_threads": 0, "cache": "default"}
    n = 64 * 2**20
    spec = t.spec(config, Arch.parse("sm_90"), {"n": n, "sms": 132})
    r = predicted(run(spec, ["compile", "static", "predict"]))
    assert r.status == Status.PASS, r.log
    launch_s = machine_for("sm_90").launch_s  # the stated launch and drain time of an empty kernel
    dram = 3 * 4 * n / dram_bandwidth_from_table()  # read a and b, write c
    assert r.data["bound"] == "dram" and r.data["terms"]["dram"] == pytest.approx(dram, rel=1e-9)
    # The other bounds add to it as their 4-norm: less than 2% here, where DRAM dominates.
    others = {k: v for k, v in r.data["terms"].items() if k != "dram"}
    assert max(others.values()) < dram
    by_hand = (dram**4 + sum(v**4 for v in others.values())) ** 0.25 + launch_s
    assert r.data["predicted_seconds"] == pytest.approx(by_hand, rel=1e-9)
    assert dram + launch_s <= r.data["predicted_seconds"] < 1.02 * dram + launch_s
    assert "datasets/microbench/sm_90" in r.data["figures"] and r.data["figures_from"] == "tables"
    stored = {f.name: f for f in r.figures}
    assert stored["predicted_seconds"] == Figure("predicted_seconds", r.data["predicted_seconds"], "s")
    assert stored["term_dram_seconds"].value == pytest.approx(3 * 4 * n / dram_bandwidth_from_table())
    # The counts came from a smaller launch of the same kernel, scaled by the ratio of its work.
    small = r.data["interpreted_sizes"]["n"]
    assert small < n and r.data["scale"] == pytest.approx(n / small)


def test_counts_of_a_scaled_down_launch_predict_what_the_full_launch_does() -> None:
    spec = load_spec(EXAMPLES / "vadd.toml")
    sizes = {"n": 2**20 + 3}  # small enough for the model stage to run the whole launch
    full = predicted(run(spec, ["compile", "static", "model", "predict"], sizes=sizes))
    scaled = predicted(run(spec, ["compile", "static", "predict"], sizes=sizes))
    assert full.data["interpreted_by"] == "model stage" and full.data["interpreted_sizes"] == sizes
    assert full.data["scale"] == 1.0
    assert scaled.data["interpreted_by"] == "predict stage"
    assert scaled.data["interpreted_sizes"]["n"] < sizes["n"]
    assert scaled.data["bound"] == full.data["bound"]
    assert scaled.data["predicted_seconds"] == pytest.approx(full.data["predicted_seconds"], rel=0.01)
    assert scaled.data["terms"].keys() == full.data["terms"].keys()
    for name, value in full.data["terms"].items():
        assert scaled.data["terms"][name] == pytest.approx(value, rel=0.01), name


def test_a_gemm_extrapolated_from_two_smaller_runs_predicts_what_the_full_launch_does() -> None:
    # The example SGEMM's epilogue stores its tile of C once whatever k: counts scaled by the
    # work from one smaller run would count those stores 4 times over (k = 256 to 1,024).
    spec = load_spec(EXAMPLES / "sgemm.toml")
    sizes = {"m": 256, "n": 256, "k": 1024}
    full = predicted(run(spec, ["compile", "static", "model", "predict"], sizes=sizes))
    two = predicted(run(spec, ["compile", "static", "predict"], sizes=sizes))
    assert full.data["interpreted_sizes"] == sizes and full.data["also_interpreted_sizes"] is None
    small, smaller = two.data["interpreted_sizes"], two.data["also_interpreted_sizes"]
    assert small["k"] < sizes["k"] and smaller is not None and smaller != small
    assert two.data["predicted_seconds"] == pytest.approx(full.data["predicted_seconds"], rel=1e-3)
    for name, value in full.data["terms"].items():
        assert two.data["terms"][name] == pytest.approx(value, rel=1e-2), name
    # The main loop's SASS: the schedulers' share of issuing cycles and the bytes in flight.
    assert full.data["main_loop_instructions"] > 0 and 0 < full.data["issue_efficiency"] <= 1


def test_an_arch_without_tables_uses_the_defaults_and_says_so() -> None:
    r = predicted(run(load_spec(EXAMPLES / "scale.toml"), ["compile", "static", "predict"], arch="sm_120"))
    assert r.status == Status.PASS
    assert r.data["figures_from"] == "defaults" and r.data["measured_figures"] == []
    assert "no microbenchmark tables for sm_120" in r.data["figures"]
    assert r.data["machine"].startswith("sm_120")


def test_a_prediction_that_cannot_be_made_is_a_skip_with_its_reason() -> None:
    scale = load_spec(EXAMPLES / "scale.toml")
    # No occupancy without the static stage.
    r = predicted(run(scale, ["compile", "predict"]))
    assert r.status == Status.SKIP and "no occupancy" in r.data["reason"]
    # Over the CPU model's budget even at the smallest sizes.
    tiny = PredictStage(budget=ModelBudget(max_thread_instructions=1000))
    r = predicted(run(scale, ["compile", "static", "predict"], predict=tiny))
    assert r.status == Status.SKIP and "too large for the model" in r.data["reason"]
    # Sizes that must shrink, and no [cost] work to scale the counts back by.
    uncosted = dataclasses.replace(scale, cost_bytes=None, cost_flops=None)
    r = predicted(run(uncosted, ["compile", "static", "predict"]))
    assert r.status == Status.SKIP and "no [cost] flops or bytes" in r.data["reason"]


def test_a_kernel_the_model_cannot_finish_gives_the_model_stage_reason() -> None:
    # scale without its bounds guard reads past x in the last block: the model stage's run
    # stops there, and the predict stage reports that instead of running the kernel again.
    spec = load_spec(EXAMPLES / "scale.toml")
    unguarded = spec.ptx.replace("@%out_of_range bra  DONE;", "")
    assert unguarded != spec.ptx
    broken = dataclasses.replace(spec, ptx=unguarded)
    result = run(broken, ["compile", "static", "model", "predict"], sizes={"n": 1000})
    r = predicted(result)
    assert r.status == Status.SKIP
    assert r.data["reason"].startswith("the model could not run the kernel:")
    model = result.result("model")
    assert model is not None and model.data["interp"]["error"] in r.data["reason"]


def test_on_a_gpu_the_prediction_takes_its_sm_count_and_sits_beside_the_median() -> None:
    # A device described by numbers only: no stage here launches anything on it.
    half = DeviceInfo(0, "H100 (numbers only)", (9, 0), 13000, 80 * 2**30, {"multiprocessor_count": 66})
    spec = load_spec(EXAMPLES / "scale.toml")
    chosen = select_stages(default_stages(), ["compile", "static", "predict"])
    result = run_pipeline(spec, arch="sm_90", device=half, stages=chosen)
    r = predicted(result)
    assert r.status == Status.PASS and "66 SMs from the device" in r.data["figures"]
    # The timing stage's result as a GPU run gives it: the median in nanoseconds.
    median_ns = 123_456.0
    timing = StageResult(Status.PASS, {}, figures=(Figure("median_ns", median_ns, "ns"),))
    measured = dataclasses.replace(result, stages=(*result.stages, ("timing", timing)))
    text = rendered(Outcome(measured, None).table())
    ratio = median_ns * 1e-9 / r.data["predicted_seconds"]
    assert "measured / predicted" in text and f"{ratio:.2f}" in text and "123.46 us" in text
    assert Outcome(measured, None).as_json()["prediction"]["measured_over_predicted"] == pytest.approx(ratio)


def rendered(renderable: object) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_the_prediction_sits_beside_the_measured_median() -> None:
    made = StageResult(Status.PASS, {"predicted_seconds": 40e-6, "bound": "dram", "terms": {"dram": 37.5e-6},
                                     "figures": "sm_90 tables"})  # fmt: skip
    timed = StageResult(Status.PASS, {}, figures=(Figure("median_ns", 50_000.0, "ns"),))
    shown = beside(made, timed)
    assert shown is not None and shown.measured_seconds == pytest.approx(50e-6)
    assert shown.ratio == pytest.approx(1.25)
    assert dict(shown.rows())["measured / predicted"] == "1.25"
    assert shown.as_dict()["measured_over_predicted"] == pytest.approx(1.25)
    unmeasured = beside(made, StageResult.skip("no CUDA device"))
    assert unmeasured is not None and unmeasured.ratio is None and unmeasured.unmeasured == "no CUDA device"
    assert beside(None, timed) is None
    none = beside(StageResult.skip("unmodeled instructions: brkpt"), timed)
    assert none is not None and none.predicted_seconds is None and "brkpt" in none.reason
