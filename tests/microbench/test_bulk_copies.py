"""The bulk-copy (TMA) bandwidth benchmark on CPU: its kernels assemble with the copy engine's
SASS (UBLKCP, UTMALDG); on the model every block sums the words of exactly the chunks the
arithmetic gives it, through a ring that wraps and an array that wraps; its plans fit the SM and
read the DRAM array once; its figures recover a synthetic device's bandwidth and fail when the
copies did not land."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.nvdisasm import disassemble
from karyamorph.harness.tools.toolchain import discover
from karyamorph.kernel.tensormap import TensorMapArg
from karyamorph.microbench import bulk_kernels
from karyamorph.microbench.benchmark import PlanOptions
from karyamorph.microbench.bulk_copies import MODULE, BulkCopyBench, Config, tile_map
from karyamorph.microbench.compiled import Compiled, compile_modules
from karyamorph.microbench.launches import LaunchResult, Scalar, TileMap
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import KIB, MIB, DeviceShape
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.microbench.on_model import run, without_hardware_reads

SHAPE = DeviceShape(
    "sm_90", sm_count=4, l2_bytes=2 * MIB, max_warps_per_sm=64, max_shared_per_block=227 * KIB,
    clock_khz=1_500_000,
)  # fmt: skip


@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
def test_the_copies_are_the_copy_engines(arch: str) -> None:
    compiled = compile_modules(BulkCopyBench().modules(arch), arch, discover(), sass=False)[MODULE]
    assert compiled.ok, compiled.error
    sass = disassemble(compiled.cubin, discover())
    opcodes = {name: {i.base for i in fn.body} for name, fn in sass.functions.items()}
    assert "UBLKCP" in opcodes["bulk_copy"] and "UTMALDG" in opcodes["tile_copy"]
    assert "LDG" not in opcodes["bulk_copy"] | opcodes["tile_copy"]  # no thread loads global memory


def test_no_bulk_copies_before_hopper() -> None:
    bench = BulkCopyBench()
    assert bench.modules("sm_89") == {}
    rows = bench.figures({}, BatchOutcome(), DeviceShape.stand_in("sm_89"), PlanOptions())
    assert {(r.name, r.status) for r in rows} == {("dram", "unmeasured"), ("l2", "unmeasured")}
    assert "sm_90" in rows[0].detail["reason"]


@pytest.mark.parametrize("copy", ["bulk", "tile"])
@pytest.mark.parametrize(("chunks", "steps", "stages"), [(8, 5, 2), (4, 9, 4), (16, 3, 8)])
def test_blocks_sum_the_chunks_they_copied_on_the_model(
    copy: str, chunks: int, steps: int, stages: int
) -> None:
    grid, chunk = 3, 256
    size = chunks * chunk
    words = bulk_kernels.array_words(size)
    scalars = {"mask": chunks - 1, "steps": steps, "chunk": chunk, "log2_stages": stages.bit_length() - 1}
    args: dict[str, object] = {"out": np.zeros(grid, np.uint32)}
    args.update((k, np.uint32(v)) for k, v in scalars.items())
    if copy == "bulk":
        args["src"] = words
    else:
        args["map"] = TensorMapArg(words, tile_map(size, chunk).map)
    module = bulk_kernels.build("sm_90", copy)
    out = run(module, bulk_kernels.ENTRIES[copy], grid, 32, args, shared=chunk * stages)
    want = bulk_kernels.expected_sums(grid, steps, chunks - 1, chunk)
    assert (out["out"] == want).all()
    # Python's own walk: block b copies chunks b, b + grid, ... of the array, wrapping
    for b in range(grid):
        total = 0
        for j in range(steps):
            c = (b + j * grid) % chunks
            total += int(words[c * chunk // 4]) + int(words[(c + 1) * chunk // 4 - 1])
        assert int(want[b]) == total % 2**32


def test_the_model_counts_the_copy_engines_bytes() -> None:
    grid, chunk, chunks, steps = 2, 512, 4, 6
    args = {"src": bulk_kernels.array_words(chunks * chunk), "out": np.zeros(grid, np.uint32),
            "mask": np.uint32(chunks - 1), "steps": np.uint32(steps), "chunk": np.uint32(chunk),
            "log2_stages": np.uint32(1)}  # fmt: skip
    module = without_hardware_reads(bulk_kernels.build("sm_90", "bulk"))
    stats = interpret(module, "bulk_copy", ptx_machine(), (grid, 32, 2 * chunk), args).stats
    assert stats.bulk_bytes == {"global.shared": grid * steps * chunk}
    assert stats.as_dict()["bulk_bytes"] == {"global.shared": grid * steps * chunk}
    assert "global.ld" not in stats.traffic.as_dict()["sectors"]  # no load request of a thread


def test_plans_read_the_dram_array_once_and_fit_the_sm() -> None:
    bench = BulkCopyBench()
    dram = bench.plan(Config("dram", "bulk", 16 * KIB, 4, 2), SHAPE, 30)
    assert dram is not None and dram.grid == 8
    array = SHAPE.dram_array_bytes
    assert dram.bytes_copied <= array < dram.bytes_copied + dram.grid * 16 * KIB  # every chunk, once
    assert (dram.mask + 1) * 16 * KIB == array
    l2 = bench.plan(Config("l2", "bulk", 16 * KIB, 4, 2), SHAPE, 30)
    assert l2 is not None and l2.bytes_copied > 8 * SHAPE.l2_array_bytes  # the array many times over
    assert bench.plan(Config("dram", "bulk", 32 * KIB, 8, 1), SHAPE, 30) is None  # 256 KiB of stages
    assert bench.plan(Config("dram", "bulk", 32 * KIB, 4, 2), SHAPE, 30) is None  # 2 x 128 KiB an SM
    assert bench.plan(Config("dram", "bulk", 16 * KIB, 4, 2), SHAPE, 30) is not None


def _bench() -> tuple[BulkCopyBench, dict[str, Compiled]]:
    bench = BulkCopyBench()
    modules = bench.modules("sm_90")
    compiled = {k: Compiled(k, "", "sm_90", b"cubin", {"bulk_copy": 30, "tile_copy": 29}) for k in modules}
    return bench, compiled


def _outcome(bench: BulkCopyBench, compiled: dict[str, Compiled], options: PlanOptions,
             bytes_per_ns: dict[str, float], wrong: str = "") -> BatchOutcome:  # fmt: skip
    results = {}
    for spec in bench.launches(compiled, SHAPE, options):
        mask, steps, chunk = (a.value for a in spec.args[2:5] if isinstance(a, Scalar))
        level = spec.key.split("/")[1].split(".")[0]
        moved = spec.grid * steps * chunk
        out = bulk_kernels.expected_sums(spec.grid, steps, mask, chunk)
        if spec.key == wrong:
            out = out + np.uint32(1)
        ns = tuple(moved / bytes_per_ns[level] * f for f in (1.0, 1.01, 0.99))
        outputs = ({"out": out.view(np.uint8)},) * spec.repeats
        results[spec.key] = LaunchResult(spec.key, outputs, ns[: spec.repeats], (1500.0, 1500.0))
    return BatchOutcome(results)


def test_figures_recover_a_synthetic_device() -> None:
    bench, compiled = _bench()
    options = PlanOptions(repeats=3)
    specs = bench.launches(compiled, SHAPE, options)
    tiles = [s for s in specs if s.entry == "tile_copy"]
    assert tiles and all(isinstance(s.args[0], TileMap) and s.args[0].buffer == "src" for s in tiles)
    for s in specs:  # the ring: chunk * 2 ** log2_stages bytes of dynamic shared memory
        chunk, log2_stages = (a.value for a in s.args[4:] if isinstance(a, Scalar))
        assert s.shared_bytes == chunk << log2_stages
    outcome = _outcome(bench, compiled, options, {"dram": 3000.0, "l2": 9000.0})
    rows = bench.figures(compiled, outcome, SHAPE, options)
    ok = [r for r in rows if r.status == "ok"]
    assert {r.name.split(".")[1] for r in ok} == {"bulk", "tile"} and len(ok) == len(specs)
    for r in ok:
        level = r.name.split(".")[0]
        assert r.value == pytest.approx({"dram": 3000.0, "l2": 9000.0}[level]) and r.unit == "GB/s"
        assert r.spread == pytest.approx(1 / 0.99 - 1 / 1.01, rel=1e-6)
        # bytes a cycle an SM: GB/s over 4 SMs at the 1500 MHz read around the launches
        assert r.detail["bytes_per_cycle_per_sm"] == pytest.approx(r.value / 4 / 1.5)
        assert r.parameter == "blocks_per_sm" and r.detail["blocks_per_sm"] == r.parameter_value
    unfit = [r for r in rows if r.status == "unmeasured"]
    assert unfit and all("do not fit" in r.detail["reason"] for r in unfit)
    assert {r.name for r in unfit} >= {"dram.bulk.32K.s8", "l2.bulk.32K.s8"}


def test_copies_that_did_not_land_fail_the_figure() -> None:
    bench, compiled = _bench()
    options = PlanOptions(repeats=1, quick=True)
    key = "bulk/dram.tile.4K.s4/2"
    rows = bench.figures(
        compiled, _outcome(bench, compiled, options, {"dram": 1.0, "l2": 1.0}, wrong=key), SHAPE, options
    )
    failed = [r for r in rows if r.status != "ok"]
    assert [(r.name, r.parameter_value) for r in failed] == [("dram.tile.4K.s4", 2.0)]
    assert "did not land" in failed[0].detail["reason"]
