"""Occupancy model: hand-derived cases, NVIDIA's cuda_occupancy.h as reference, and the driver."""

from __future__ import annotations

import ctypes
import itertools
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from karyamorph.kernel.limits import ARCHES, KIB, ArchResources, resources_for
from karyamorph.model.resources.occupancy import BlockLimits, OccupancyError, occupancy


# --------------------------------------------------------------------------- the table
@pytest.mark.parametrize("spelling", ["sm_90", "sm_90a", "SM_90", "compute_90", "90", "9.0", 90, (9, 0)])
def test_resources_for_accepts_every_spelling(spelling: str | int | tuple[int, int]) -> None:
    assert resources_for(spelling).name == "sm_90"
    if not isinstance(spelling, int):  # occupancy() takes the same spellings, or the resources
        assert occupancy(spelling, 256, 64) == occupancy(resources_for("sm_90"), 256, 64)


def test_suffixes_and_renamed_targets_resolve_to_the_base() -> None:
    assert resources_for("sm_120f").name == "sm_120"
    assert resources_for("sm_100a").name == "sm_100"
    assert resources_for("103").compute_capability == (10, 3)
    # CUDA 13 renamed Thor from sm_101 to sm_110.
    assert resources_for("sm_101").name == "sm_110"


def test_unknown_arch_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown GPU architecture 'sm_70'.*sm_75, sm_80"):
        resources_for("sm_70")
    with pytest.raises(ValueError, match="unknown GPU architecture"):
        resources_for("hopper")


def test_anchor_arch_figures() -> None:
    # sm_120 (RTX 50): 1536 threads, 24 blocks, 100 KB shared per SM, 99 KB per block.
    blackwell = resources_for("sm_120")
    assert (blackwell.max_threads_per_sm, blackwell.max_blocks_per_sm) == (1536, 24)
    assert blackwell.shared_memory_per_sm_bytes == 102400
    assert blackwell.max_shared_memory_per_block_bytes == 101376
    # sm_90 (H100/H200): 2048 threads, 32 blocks, 228 KB per SM, 227 KB per block.
    hopper = resources_for("sm_90")
    assert (hopper.max_threads_per_sm, hopper.max_blocks_per_sm) == (2048, 32)
    assert hopper.shared_memory_per_sm_bytes == 233472
    assert hopper.max_shared_memory_per_block_bytes == 232448
    # Every arch: the largest carveout is the SM's shared memory, one block's share is 1 KB less
    # from sm_80 on (the reserved KB), and the Turing unit is 256 B with nothing reserved.
    for res in ARCHES.values():
        assert res.shared_carveouts_bytes[-1] == res.shared_memory_per_sm_bytes
        assert (
            res.max_shared_memory_per_block_bytes + res.reserved_shared_memory_per_block_bytes
            == res.shared_memory_per_sm_bytes
        )
    turing = resources_for("sm_75")
    assert turing.shared_memory_allocation_unit_bytes == 256
    assert turing.reserved_shared_memory_per_block_bytes == 0


def test_carveout_rounds_up_to_a_supported_size() -> None:
    hopper = resources_for("sm_90")
    assert hopper.align_carveout(0) == 0
    assert hopper.align_carveout(1) == 8 * KIB
    assert hopper.align_carveout(50176) == 64 * KIB
    assert hopper.align_carveout(228 * KIB) == 228 * KIB
    # The driver's percentage: 25 % of 228 KB is 57 KB -> 64 KB; 50 % -> 114 KB -> 132 KB.
    assert hopper.carveout_for_percent(25) == 64 * KIB
    assert hopper.carveout_for_percent(50) == 132 * KIB
    assert resources_for("sm_75").align_carveout(0) == 32 * KIB  # Turing's smallest is 32 KB
    with pytest.raises(ValueError, match="exceeds the largest"):
        hopper.align_carveout(228 * KIB + 1)


# --------------------------------------------------------------------------- hand-derived cases
def test_sm90_256_threads_32_regs_is_full_and_tied() -> None:
    # 8 warps/block. Warps: 64 // 8 = 8. Registers: 32*32 = 1024 per warp; 16384 per
    # sub-partition / 1024 = 16 warps, x4 = 64 warps // 8 = 8. Shared: only the reserved 1 KB,
    # 233472 // 1024 = 228. Blocks: 32. Barriers: 64. So 8 blocks, warps and registers tie.
    occ = occupancy("sm_90", 256, 32)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.threads_per_sm) == (8, 64, 2048)
    assert occ.occupancy == 1.0
    assert occ.limiters == ("warps", "registers") and occ.limiter == "warps"
    assert occ.limits == BlockLimits(warps=8, registers=8, shared_memory=228, blocks=32, barriers=64)
    assert occ.shared_per_block_bytes == 1024 and occ.min_shared_carveout_bytes == 8 * KIB


def test_sm90_128_regs_is_register_limited() -> None:
    # 128*32 = 4096 registers per warp; 16384 // 4096 = 4 warps per sub-partition -> 16 warps
    # -> 16 // 8 = 2 blocks of 256 threads: a quarter of the 64 warp slots.
    occ = occupancy("sm_90", 256, 128)
    assert (occ.blocks_per_sm, occ.limiter, occ.occupancy) == (2, "registers", 0.25)
    assert occ.registers_per_block == 8 * 4096


def test_sm90_255_regs_rounds_each_warp_up_to_8192() -> None:
    # 255*32 = 8160 registers, rounded up to the 256-register unit: 8192 per warp. 16384 // 8192
    # = 2 warps per sub-partition -> 8 warps -> one block of 8 warps, exactly 65536 registers.
    occ = occupancy("sm_90", 256, 255)
    assert (occ.blocks_per_sm, occ.limiter, occ.registers_per_block) == (1, "registers", 65536)
    assert occ.occupancy == 0.125


def test_sm80_1024_threads_64_regs_one_block() -> None:
    # 64*32 = 2048 per warp; 16384 // 2048 = 8 per sub-partition -> 32 warps = one 32-warp block.
    # Warps would allow 64 // 32 = 2.
    occ = occupancy("sm_80", 1024, 64)
    assert (occ.blocks_per_sm, occ.limiter, occ.occupancy) == (1, "registers", 0.5)
    assert occ.limits.warps == 2


def test_sm86_is_capped_at_48_warps() -> None:
    # 48 // 8 = 6 blocks by warps; registers would allow 64 warps // 8 = 8; blocks 16.
    occ = occupancy("sm_86", 256, 32)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter, occ.occupancy) == (6, 48, "warps", 1.0)


def test_registers_fill_each_sub_partition_separately() -> None:
    # 48 regs: 1536 per warp. Each sub-partition holds 16384 // 1536 = 10 warps (not 10.67), so
    # 40 warps -> 20 blocks of 2 warps; dividing the whole file (65536 // 3072) would say 21.
    occ = occupancy("sm_90", 64, 48)
    assert (occ.blocks_per_sm, occ.limiter) == (20, "registers")


def test_sm80_48k_static_shared_three_blocks() -> None:
    # 49152 + 1024 reserved = 50176 B (already a multiple of 128). The default carveout is the
    # largest, 164 KB = 167936 B: 167936 // 50176 = 3. Three blocks need 150528 B, more than the
    # 132 KB carveout, so 164 KB is also the smallest one that keeps them.
    occ = occupancy("sm_80", 128, 32, static_shared_bytes=48 * KIB)
    assert (occ.blocks_per_sm, occ.limiter) == (3, "shared_memory")
    assert occ.shared_per_block_bytes == 50176
    assert occ.shared_carveout_bytes == occ.min_shared_carveout_bytes == 164 * KIB


def test_sm90_48k_static_shared_and_explicit_carveouts() -> None:
    # 233472 // 50176 = 4 blocks; they need 200704 B = exactly the 196 KB carveout.
    occ = occupancy("sm_90", 128, 32, static_shared_bytes=48 * KIB)
    assert (occ.blocks_per_sm, occ.min_shared_carveout_bytes) == (4, 196 * KIB)
    # A 100 KB carveout holds 102400 // 50176 = 2 blocks.
    assert occupancy("sm_90", 128, 32, 48 * KIB, 0, 100 * KIB).blocks_per_sm == 2
    # 50000 B is no carveout size: it rounds up to 64 KB, which holds one block.
    assert occupancy("sm_90", 128, 32, 48 * KIB, 0, 50000).shared_carveout_bytes == 64 * KIB
    # 32 KB cannot hold one 50176 B block: the carveout is raised to 64 KB, one block fits.
    small = occupancy("sm_90", 128, 32, 48 * KIB, 0, 32 * KIB)
    assert (small.blocks_per_sm, small.shared_carveout_bytes) == (1, 64 * KIB)
    with pytest.raises(OccupancyError, match="exceeds the largest"):
        occupancy("sm_90", 128, 32, 0, 0, 300 * KIB)


def test_shared_memory_rounds_to_128_bytes_after_the_reserved_kb() -> None:
    # 7000 + 1024 = 8024 B -> 8064 B (63 x 128). 233472 // 8064 = 28. Without the reserved KB
    # it would be 33, without the rounding 29. Warps and registers allow 32, blocks 32.
    occ = occupancy("sm_90", 64, 32, dynamic_shared_bytes=7000)
    assert (occ.blocks_per_sm, occ.limiter, occ.shared_per_block_bytes) == (28, "shared_memory", 8064)


def test_turing_rounds_to_256_bytes_with_nothing_reserved() -> None:
    # 7000 B -> 7168 B (28 x 256); 65536 // 7168 = 9. Warps allow 32 // 2 = 16, blocks 16.
    occ = occupancy("sm_75", 64, 32, static_shared_bytes=7000)
    assert (occ.blocks_per_sm, occ.limiter, occ.shared_per_block_bytes) == (9, "shared_memory", 7168)


def test_block_count_limit() -> None:
    # One warp of 16 registers: registers allow 128 blocks, warps 64; sm_90 stops at 32 blocks.
    occ = occupancy("sm_90", 32, 16)
    assert (occ.blocks_per_sm, occ.limiter, occ.occupancy) == (32, "blocks", 0.5)
    # sm_120 holds 24 blocks and 24 barriers: both bind at 24 of 48 warps.
    occ = occupancy("sm_120", 32, 16)
    assert (occ.blocks_per_sm, occ.limiters, occ.occupancy) == (24, ("blocks", "barriers"), 0.5)


def test_named_barriers_limit_blocks_from_sm90_on_and_unused_resources_do_not() -> None:
    # 16 barriers per block: sm_90 has 64 per SM -> 4 blocks. sm_86 is not counted (None).
    occ = occupancy("sm_90", 32, 16, block_barriers=16)
    assert (occ.blocks_per_sm, occ.limiter) == (4, "barriers")
    assert occupancy("sm_86", 32, 16, block_barriers=16).limits.barriers is None
    assert occupancy("sm_90", 32, 16, block_barriers=0).limits.barriers is None
    # Likewise a kernel without registers puts no register limit.
    assert occupancy("sm_90", 128, 0).limits.registers is None


def test_launches_that_do_not_fit() -> None:
    # 25 warps x 80 regs (2560 per warp) = 64000 <= 65536, but each sub-partition holds only
    # 6 such warps (24 < 25), and the hardware's check rounds 25 warps up to 28 (71680).
    occ = occupancy("sm_90", 800, 80)
    assert (occ.blocks_per_sm, occ.limiter, occ.fits) == (0, "registers", False)
    assert occ.reason is not None and "71680" in occ.reason
    too_big = occupancy("sm_90", 1025, 32)
    assert (too_big.blocks_per_sm, too_big.limiter) == (0, "block_size")
    assert "1025 threads per block exceed the maximum of 1024" in (too_big.reason or "")
    assert occupancy("sm_90", 2048, 64).limiters == ("block_size", "registers")
    assert "maximum of 255" in (occupancy("sm_90", 32, 256).reason or "")


def test_opt_in_shared_memory_edge() -> None:
    # 227 KB dynamic + 1 KB reserved = 228 KB: one block. One byte more rounds past it.
    assert occupancy("sm_90", 128, 32, dynamic_shared_bytes=227 * KIB).blocks_per_sm == 1
    over = occupancy("sm_90", 128, 32, dynamic_shared_bytes=227 * KIB + 1)
    assert (over.blocks_per_sm, over.limiter) == (0, "shared_memory")
    assert occupancy("sm_86", 128, 32, dynamic_shared_bytes=99 * KIB).blocks_per_sm == 1
    assert occupancy("sm_86", 128, 32, dynamic_shared_bytes=99 * KIB + 1).blocks_per_sm == 0
    # Without opt-in (the kernel attribute left at 48 KB), 64 KB dynamic fits no block.
    capped = occupancy("sm_90", 128, 32, dynamic_shared_bytes=64 * KIB, max_dynamic_shared_bytes=48 * KIB)
    assert (capped.blocks_per_sm, capped.limiter) == (0, "shared_memory")


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0, 32), {}, "block_threads must be positive"),
        ((128, -1), {}, "registers_per_thread must not be negative"),
        ((128, 32, -4), {}, "static_shared_bytes must not be negative"),
        ((128, 32, 0, -4), {}, "dynamic_shared_bytes must not be negative"),
        ((128, 32), {"block_barriers": -1}, "block_barriers must not be negative"),
    ],
)
def test_nonsensical_input_raises(args: tuple[int, ...], kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(OccupancyError, match=message) as info:
        occupancy("sm_90", *args, **kwargs)
    assert isinstance(info.value, ValueError)


# --------------------------------------------------------------------------- NVIDIA's calculator

# Reads one launch per line and prints cudaOccMaxActiveBlocksPerMultiprocessor's answer.
_REFERENCE_CPP = r"""
#include <cstdio>
#include "cuda_occupancy.h"
int main() {
    int major, minor, threads_sm, smem_sm, optin, reserved, block, regs, stat, dyn, maxdyn, pct, bars;
    while (std::scanf("%d %d %d %d %d %d %d %d %d %d %d %d %d", &major, &minor, &threads_sm,
                      &smem_sm, &optin, &reserved, &block, &regs, &stat, &dyn, &maxdyn, &pct,
                      &bars) == 13) {
        cudaOccDeviceProp prop;
        prop.computeMajor = major; prop.computeMinor = minor;
        prop.maxThreadsPerBlock = 1024; prop.maxThreadsPerMultiprocessor = threads_sm;
        prop.regsPerBlock = 65536; prop.regsPerMultiprocessor = 65536; prop.warpSize = 32;
        prop.sharedMemPerBlock = 49152; prop.sharedMemPerMultiprocessor = smem_sm;
        prop.numSms = 1; prop.sharedMemPerBlockOptin = optin;
        prop.reservedSharedMemPerBlock = reserved;
        cudaOccFuncAttributes attr;
        attr.maxThreadsPerBlock = 1024; attr.numRegs = regs; attr.sharedSizeBytes = stat;
        attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN; attr.maxDynamicSharedSizeBytes = maxdyn;
        attr.numBlockBarriers = bars;
        cudaOccDeviceState state;
        state.carveoutConfig = pct;
        cudaOccResult r;
        int err = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &prop, &attr, &state, block, dyn);
        std::printf("%d %d %d %d %d %d %d %u %d %d\n", err, r.activeBlocksPerMultiprocessor,
                    r.blockLimitWarps, r.blockLimitRegs, r.blockLimitSharedMem, r.blockLimitBlocks,
                    r.blockLimitBarriers, r.limitingFactors, r.allocatedRegistersPerBlock,
                    (int)r.allocatedSharedMemPerBlock);
    }
    return 0;
}
"""
_INT_MAX = 2**31 - 1
_FLAGS = {"warps": 1, "registers": 2, "shared_memory": 4, "blocks": 8, "barriers": 16}


# cuda_occupancy.h of CUDA 13.0 gives sm_103 two block barriers per block slot (64 per SM); that
# of CUDA 13.5, which the table follows, one (32). Older headers are not compared on sm_103.
_SM103_TABLE_FROM = 13050


@pytest.fixture(scope="module")
def reference_calculator(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The compiled reference program and the CUDA runtime version of its header."""
    pathfinder = pytest.importorskip("cuda.pathfinder")
    include = pathfinder.find_nvidia_header_directory("cudart")
    compiler = shutil.which("g++") or shutil.which("c++")
    if include is None or not (Path(include) / "cuda_occupancy.h").is_file():
        pytest.skip("cuda_occupancy.h not found (nvidia-cuda-runtime wheel not installed)")
    if compiler is None:
        pytest.skip("no C++ compiler to build the cuda_occupancy.h reference")
    folder = tmp_path_factory.mktemp("occ")
    source, binary = folder / "reference.cpp", folder / "reference"
    source.write_text(_REFERENCE_CPP)
    subprocess.run([compiler, "-O1", "-I", include, str(source), "-o", str(binary)], check=True)
    found = re.search(r"#define CUDART_VERSION\s+(\d+)", (Path(include) / "cuda_runtime_api.h").read_text())
    return binary, int(found.group(1)) if found else 0


def _launches(count: int) -> list[tuple[ArchResources, int, int, int, int, int | None, int, int]]:
    """Random launches biased toward edges: (arch, threads, regs, static, dynamic, max_dyn, %, bars)."""
    rng = random.Random(20260101)
    threads = [1, 31, 32, 33, 64, 96, 100, 128, 192, 256, 288, 384, 512, 640, 768, 800, 992, 1024, 1025]
    shared = [0, 1, 127, 128, 7000, 4096, 12345, 48 * KIB, 64 * KIB, 99 * KIB, 99 * KIB + 1, 100 * KIB]
    shared += [163 * KIB, 163 * KIB + 1, 196 * KIB, 227 * KIB, 227 * KIB + 1]
    launches = []
    for _ in range(count):
        res = rng.choice(list(ARCHES.values()))
        block = rng.choice(threads) if rng.random() < 0.6 else rng.randint(1, 1024)
        regs = rng.choice([0, 8, 16, 32, 40, 48, 64, 96, 128]) if rng.random() < 0.5 else rng.randint(0, 255)
        static = rng.choice([0, 0, 1024, 4096, 12000, 48 * KIB])
        dynamic = rng.choice(shared) if rng.random() < 0.7 else rng.randint(0, 228 * KIB)
        max_dyn = rng.choice([None, None, None, 48 * KIB, 100 * KIB])
        percent = rng.choice([-1, -1, 0, 10, 25, 50, 75, 100])
        bars = rng.choice([1, 1, 0, 2, 3, 8, 16])
        launches.append((res, block, regs, static, dynamic, max_dyn, percent, bars))
    return launches


def test_model_matches_cuda_occupancy_h(reference_calculator: tuple[Path, int]) -> None:
    # 20000 random launches over every arch: blocks, each per-resource limit, the limiting
    # factors, and the registers and shared memory allocated per block must all be equal.
    binary, header_version = reference_calculator
    launches = _launches(20000)
    if header_version < _SM103_TABLE_FROM:
        launches = [launch for launch in launches if launch[0].name != "sm_103"]
    lines = [
        f"{res.compute_capability[0]} {res.compute_capability[1]} {res.max_threads_per_sm} "
        f"{res.shared_memory_per_sm_bytes} {res.max_shared_memory_per_block_bytes} "
        f"{res.reserved_shared_memory_per_block_bytes} {block} {regs} {static} {dynamic} "
        f"{dynamic if max_dyn is None else max_dyn} {percent} {bars}"
        for res, block, regs, static, dynamic, max_dyn, percent, bars in launches
    ]
    answers = subprocess.run(
        [str(binary)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(answers) == len(launches)
    mismatches = []
    for (res, block, regs, static, dynamic, max_dyn, percent, bars), line, answer in zip(
        launches, lines, answers, strict=True
    ):
        theirs = tuple(int(word) for word in answer.split())
        carveout = None if percent < 0 else res.carveout_for_percent(percent)
        occ = occupancy(
            res, block, regs, static, dynamic, carveout,
            block_barriers=bars, max_dynamic_shared_bytes=max_dyn,
        )  # fmt: skip
        limits = tuple(_INT_MAX if n is None else n for _, n in occ.limits.items())
        flags = sum(_FLAGS[name] for name in occ.limiters) if occ.fits else theirs[7]
        # The header keeps the flags of limits that bound before it applied the barrier limit,
        # also when barriers then bind alone; the model names only the binding ones.
        if limits[4] < min(limits[:4]):
            theirs = (*theirs[:7], _FLAGS["barriers"], *theirs[8:])
        mine = (
            0,
            occ.blocks_per_sm,
            *limits,
            flags,
            occ.registers_per_block,
            occ.shared_per_block_bytes,
        )
        if mine != theirs:
            mismatches.append(f"{res.name} [{line}]: model {mine} vs cuda_occupancy.h {theirs}")
    assert not mismatches, f"{len(mismatches)} mismatches, first: " + "\n".join(mismatches[:5])


# --------------------------------------------------------------------------- the driver (GPU)
class _Device:
    """Device 0 through cuda.bindings.driver with its primary context current; skips without one."""

    def __init__(self) -> None:
        try:
            from cuda.bindings import driver
        except ImportError:
            pytest.skip("cuda-python (cuda.bindings) is not installed")
        try:
            (err,) = driver.cuInit(0)
        except RuntimeError as exc:  # the driver library itself is missing
            pytest.skip(f"no CUDA driver: {exc}")
        if err != driver.CUresult.CUDA_SUCCESS:
            pytest.skip(f"no CUDA device: cuInit returned {err}")
        self.driver = driver
        self.device = self.call(driver.cuDeviceGet, 0)
        self.call(driver.cuCtxSetCurrent, self.call(driver.cuDevicePrimaryCtxRetain, self.device))
        self.cc = (self.attr("COMPUTE_CAPABILITY_MAJOR"), self.attr("COMPUTE_CAPABILITY_MINOR"))

    def call(self, fn, *args):  # type: ignore[no-untyped-def]
        err, *values = fn(*args)
        assert err == self.driver.CUresult.CUDA_SUCCESS, f"{fn.__name__}{args}: {err}"
        return values[0] if values else None

    def attr(self, name: str) -> int:
        kind = getattr(self.driver.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(self.call(self.driver.cuDeviceGetAttribute, kind, self.device))

    def func_attr(self, func: object, name: str, value: int | None = None) -> int:
        kind = getattr(self.driver.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
        if value is not None:
            self.call(self.driver.cuFuncSetAttribute, func, kind, value)
        return int(self.call(self.driver.cuFuncGetAttribute, kind, func))


def _pressure_ptx(target: str, version: str, live: int, static_bytes: int, barrier: int) -> str:
    """A kernel that keeps ``live`` volatile loads alive at once, so ptxas needs about that many
    registers; optionally static shared memory and a named barrier ``barrier`` (0: none)."""
    loads = "\n".join(f"  ld.volatile.global.f32 %f{i}, [%rd2+{4 * i}];" for i in range(live))
    # Use the values in reverse load order: all of them are live after the last load.
    chain = "\n".join(f"  fma.rn.f32 %f{live}, %f{live}, %f{i}, %f{i};" for i in reversed(range(live - 1)))
    shared = f".shared .align 4 .b8 buf[{static_bytes}];" if static_bytes else ""
    use_shared = f"st.shared.f32 [buf], %f{live};" if static_bytes else ""
    sync = f"barrier.sync {barrier};" if barrier else ""
    return f"""
.version {version}
.target {target}
.address_size 64
{shared}
.visible .entry k(.param .u64 p)
{{
  .reg .f32 %f<{live + 1}>; .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p]; cvta.to.global.u64 %rd2, %rd1;
{loads}
  mov.f32 %f{live}, %f{live - 1};
{chain}
  {use_shared} {sync} st.global.f32 [%rd2], %f{live}; ret;
}}
"""


@pytest.mark.gpu
def test_table_matches_the_device() -> None:
    gpu = _Device()
    res = resources_for(gpu.cc)
    expected = {
        "MAX_THREADS_PER_MULTIPROCESSOR": res.max_threads_per_sm,
        "MAX_BLOCKS_PER_MULTIPROCESSOR": res.max_blocks_per_sm,
        "MAX_REGISTERS_PER_MULTIPROCESSOR": res.registers_per_sm,
        "MAX_REGISTERS_PER_BLOCK": res.max_registers_per_block,
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": res.shared_memory_per_sm_bytes,
        "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": res.max_shared_memory_per_block_bytes,
        "MAX_SHARED_MEMORY_PER_BLOCK": res.default_shared_memory_per_block_bytes,
        "RESERVED_SHARED_MEMORY_PER_BLOCK": res.reserved_shared_memory_per_block_bytes,
        "MAX_THREADS_PER_BLOCK": res.max_threads_per_block,
        "WARP_SIZE": res.warp_size,
    }
    assert {name: gpu.attr(name) for name in expected} == expected


_PTX_VERSION = {(10, 0): "8.6", (10, 3): "8.8", (11, 0): "9.0", (12, 0): "8.7", (12, 1): "8.8"}
_DYNAMIC = (0, 1, 7000, 20000, 48 * KIB, 100 * KIB)
_BLOCKS = (32, 64, 96, 128, 160, 192, 256, 384, 512, 640, 768, 800, 1024, 1056)


@pytest.mark.gpu
@pytest.mark.parametrize("barrier", [0, 7], ids=["no-named-barrier", "barrier-7"])
def test_model_matches_the_driver_occupancy_api(barrier: int) -> None:
    # Kernels of 4..~250 registers and 0 / 4 KB / 48 KB static shared memory, JIT-compiled by
    # the driver; every block size, dynamic size (up to one byte past the opt-in limit) and
    # preferred carveout is asked of cuOccupancyMaxActiveBlocksPerMultiprocessor and the model.
    gpu = _Device()
    res, driver = resources_for(gpu.cc), gpu.driver
    target, version = f"sm_{gpu.cc[0]}{gpu.cc[1]}", _PTX_VERSION.get(gpu.cc, "7.8")
    mismatches, seen, compared = [], set(), 0
    for live, static in itertools.product((4, 24, 40, 56, 72, 100, 128, 168, 200, 240), (0, 4096, 48 * KIB)):
        image = ctypes.create_string_buffer(_pressure_ptx(target, version, live, static, barrier).encode())
        module = gpu.call(driver.cuModuleLoadData, ctypes.addressof(image))
        func = gpu.call(driver.cuModuleGetFunction, module, b"k")
        regs, static_bytes = gpu.func_attr(func, "NUM_REGS"), gpu.func_attr(func, "SHARED_SIZE_BYTES")
        max_dyn = gpu.func_attr(
            func, "MAX_DYNAMIC_SHARED_SIZE_BYTES", res.max_shared_memory_per_block_bytes - static_bytes
        )
        for percent in (-1, 0, 25, 50, 100):
            gpu.func_attr(func, "PREFERRED_SHARED_MEMORY_CARVEOUT", percent)
            carveout = None if percent < 0 else res.carveout_for_percent(percent)
            for block, dynamic in itertools.product(_BLOCKS, (*_DYNAMIC, max_dyn, max_dyn + 1)):
                err, theirs = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(func, block, dynamic)
                if err != driver.CUresult.CUDA_SUCCESS:
                    theirs = 0  # the driver refuses a launch that cannot run at all
                occ = occupancy(
                    res, block, regs, static_bytes, dynamic, carveout,
                    block_barriers=barrier + 1, max_dynamic_shared_bytes=max_dyn,
                )  # fmt: skip
                compared += 1
                seen.add(occ.limiter)
                if occ.blocks_per_sm != theirs:
                    mismatches.append(
                        f"regs={regs} static={static_bytes} carveout={percent}% block={block} "
                        f"dynamic={dynamic}: model {occ.blocks_per_sm} ({occ.limiters}) vs driver "
                        f"{theirs} ({err})"
                    )
        gpu.call(driver.cuModuleUnload, module)
    assert not mismatches, f"{len(mismatches)}/{compared} differ:\n" + "\n".join(mismatches[:20])
    # The sweep must have exercised every limit, or agreeing would prove little.
    must_bind = {"warps", "registers", "shared_memory", "block_size"}
    assert must_bind | ({"barriers"} if barrier else {"blocks"}) <= seen, seen
