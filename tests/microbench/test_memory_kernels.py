"""The memory benchmarks' kernels, on CPU: the model interpreter runs small instances and their
results are held to Python's arithmetic (a chase visits the permutation it was given, atomics
count, every lane of a bank-conflict warp stays on its word, the bandwidth kernels read what they
claim); ptxas's SASS shows the timed loops keep every load, atomic and barrier (sm_90, sm_120)."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.toolchain import discover
from karyamorph.microbench import atomics, bandwidth, banks, barriers, chase
from karyamorph.microbench.compiled import compile_modules
from tests.microbench.on_model import run

M32 = (1 << 32) - 1


def follow(offsets: np.ndarray, stride: int, hops: int) -> int:
    """Where ``hops`` links from entry 0 lead (a byte offset), by walking the offsets."""
    at = 0
    for _ in range(hops):
        at = int(offsets[at // stride])
    return at


def test_offsets_form_one_cycle_through_every_entry() -> None:
    for n, seed in ((2, 0), (13, 1), (1000, 7)):
        offsets = chase.chase_offsets(n, 64, seed)
        seen, at = [], 0
        for _ in range(n):
            seen.append(at // 64)
            at = int(offsets[at // 64])
        assert at == 0 and sorted(seen) == list(range(n))  # back at the start after exactly n links
        assert seen == [int(x) for x in chase.chase_order(n, seed)]


@pytest.mark.parametrize("variant", ["global.ca", "global.cg", "shared"])
def test_chase_ends_where_the_permutation_says(variant: str) -> None:
    n, stride = 13, 64  # 13 is prime: 2 * hops mod 13 for hops = 16, 32, ... reaches every entry
    module = chase.build_chase("e", chase.VARIANTS[variant], "sm_90")
    offsets = chase.chase_offsets(n, stride, 3)
    shared = variant == "shared"
    ends = []
    for k in range(1, 14):
        hops = 16 * k
        args = {
            "offsets": offsets,
            "chain": np.zeros(1 if shared else n * stride // 8, np.uint64),
            "out": np.zeros(2, np.uint64),
            "entries": np.uint32(n),
            "stride": np.uint32(stride),
            "hops": np.uint32(hops),
        }
        out = run(module, "e", 1, 64, args, shared=n * stride if shared else 0)
        assert int(out["out"][0]) == follow(offsets, stride, 2 * hops)  # a warm pass, then the timed one
        ends.append(int(out["out"][0]) // stride)
        if not shared:
            chain = out["chain"].view(np.uint64)[:: stride // 8]
            base = chain - offsets  # every entry was turned into an address: one base for all
            assert (base == base[0]).all() and int(base[0]) != 0
    assert sorted(ends) == list(range(n))  # every entry was an end: the whole cycle was followed


def test_working_sets_double_per_octave() -> None:
    sizes = chase.working_sets(1024, 64 * 1024, 4)
    assert sizes[0] == 1024 and sizes[-1] == 64 * 1024 and len(sizes) == 25
    assert all(s % 256 == 0 for s in sizes) and sizes == sorted(set(sizes))
    assert chase.working_sets(1024, 8 * 1024, 1) == [1024, 2048, 4096, 8192]


@pytest.mark.parametrize("stride", [1, 2, 3, 32])
def test_bank_conflict_lanes_stay_on_their_words(stride: int) -> None:
    module = banks.build_banks("sm_90")
    out = run(
        module,
        "banks",
        1,
        32,
        {"out": np.zeros(33, np.uint64), "stride": np.uint32(stride), "hops": np.uint32(32)},
    )
    assert [int(x) for x in out["out"][:32]] == [4 * stride * lane for lane in range(32)]


def test_conflict_degree_counts_lanes_per_bank() -> None:
    for stride in range(1, 33):
        banks_hit: dict[int, set[int]] = {}
        for lane in range(32):
            banks_hit.setdefault(lane * stride % 32, set()).add(lane * stride)
        assert banks.conflict_degree(stride) == max(len(w) for w in banks_hit.values())


def fibonacci(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@pytest.mark.parametrize("space", atomics.SPACES)
def test_atomic_latency_chain_runs_in_order(space: str) -> None:
    module = atomics.build_latency(space, "sm_90")
    hops = 16
    out = run(
        module,
        f"atom_lat_{space}",
        1,
        32,
        {"buf": np.zeros(1, np.uint32), "out": np.zeros(3, np.uint64), "hops": np.uint32(hops)},
    )
    # w = r = 1, then (w, r) <- (w + r, w): w is the Fibonacci number F(n + 2) after n atomics.
    n = 2 * hops
    assert (int(out["out"][0]), int(out["out"][1])) == (fibonacci(n + 1) & M32, fibonacci(n + 2) & M32)
    assert atomics.fibonacci_chain(n) == (fibonacci(n + 1) & M32, fibonacci(n + 2) & M32)


@pytest.mark.parametrize(("space", "mode", "type_"), atomics.throughput_forms())
def test_atomic_throughput_counts_every_update(space: str, mode: str, type_: str) -> None:
    module = atomics.build_throughput(space, mode, "sm_90", type_)
    grid, block, iterations = 2, 64, 3
    warps = grid * block // 32
    out = run(
        module,
        atomics.throughput_entry(space, mode, type_),
        grid,
        block,
        {
            "buf": np.zeros(grid * block, np.float32 if type_ == "f32" else np.uint32),
            "clocks": np.full(2 * warps, M32, np.uint64),
            "smids": np.full(warps, 9, np.uint32),
            "iterations": np.uint32(iterations),
        },
    )
    each = iterations * atomics.UNROLL  # every add is 1 (1.0 in f32: the sums stay exact, < 2^24)
    got = out["buf"]
    if mode == "distinct":
        want = np.full(block if space == "shared" else grid * block, each)
        assert (got[: want.size] == want).all()
    else:
        assert got[0] == each * (block if space == "shared" else grid * block)
    assert (out["clocks"] == 0).all() and (out["smids"] == 0).all()


def test_barrier_kernel_passes_every_barrier() -> None:
    warps = 4
    out = run(
        barriers.build_barrier("sm_90"),
        "bar_sync",
        1,
        32 * warps,
        {
            "clocks": np.full(2 * warps, M32, np.uint64),
            "smids": np.full(warps, 9, np.uint32),
            "iterations": np.uint32(2),
        },
    )
    assert (out["clocks"] == 0).all() and (out["smids"] == 0).all()


def test_shared_bandwidth_kernel_reads_its_vectors() -> None:
    block, iterations = 64, 3
    out = run(
        bandwidth.build_shared("sm_90"),
        "bw_shared",
        1,
        block,
        {
            "out": np.zeros(block, np.uint32),
            "clocks": np.full(4, M32, np.uint64),
            "smids": np.zeros(2, np.uint32),
            "iterations": np.uint32(iterations),
        },
    )
    slots = bandwidth.SHARED_BYTES // bandwidth.VECTOR
    for t in range(block):
        acc = 0
        for _ in range(iterations):
            for u in range(bandwidth.UNROLL):
                acc ^= (block * u + t) % slots  # the slot's first word holds its index, the others 0
        assert int(out["out"][t]) == acc


def test_global_bandwidth_kernel_walks_the_grid_stride_and_wraps() -> None:
    grid, block, vectors, steps = 2, 32, 256, 2 * bandwidth.UNROLL
    data = np.arange(4 * vectors, dtype=np.uint32)
    out = run(
        bandwidth.build_global("sm_90"),
        "bw_global",
        grid,
        block,
        {
            "data": data,
            "out": np.zeros(grid * block, np.uint32),
            "cycles": np.zeros(1, np.uint64),
            "mask": np.uint32(vectors - 1),
            "steps": np.uint32(steps),
        },
    )
    for g in range(grid * block):
        acc, idx = 0, g
        for _ in range(steps):
            for w in data[4 * idx : 4 * idx + 4]:
                acc ^= int(w)
            idx = (idx + grid * block) % vectors
        assert int(out["out"][g]) == acc


TIMED = {  # entry -> (SASS opcode, how many the timed loop must hold)
    "chase_global_ca": ("LDG", chase.UNROLL),
    "chase_global_cg": ("LDG", chase.UNROLL),
    "chase_shared": ("LDS", chase.UNROLL),
    "banks": ("LDS", banks.UNROLL),
    "bw_shared": ("LDS", bandwidth.UNROLL),
    "bw_global": ("LDG", bandwidth.UNROLL),
    "atom_lat_shared": ("ATOMS", atomics.UNROLL),
    "atom_lat_global": ("ATOMG", atomics.UNROLL),
    "atom_shared_contended": ("ATOMS", atomics.UNROLL),
    "atom_shared_distinct": ("ATOMS", atomics.UNROLL),
    "atom_global_distinct": ("REDG", atomics.UNROLL),
    "atom_global_contended": ("REDG", atomics.UNROLL),
    "atom_global_contended_f32": ("REDG", atomics.UNROLL),
    "bar_sync": ("BAR", barriers.UNROLL),
}


@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
def test_timed_loops_keep_every_access(arch: str) -> None:
    modules = {}
    for bench in (
        chase.ChaseBench(),
        bandwidth.BandwidthBench(),
        banks.BankBench(),
        atomics.AtomicBench(),
        barriers.BarrierBench(),
    ):
        modules.update(bench.modules(arch))
    compiled = compile_modules(modules, arch, discover())
    seen = set()
    for c in compiled.values():
        assert c.ok, c.error
        for entry, regions in c.regions.items():
            opcode, count = TIMED[entry]
            assert len(regions) == 1 and regions[0].get(opcode) == count, (arch, entry, regions)
            seen.add(entry)
    assert seen == set(TIMED)
    # ptxas folds a warp's integer adds to one word into one REDG of their count (VOTEU, POPC);
    # float adds it cannot fold, so the f32 kernel sends every thread's add to L2.
    sass = {e: r[0] for c in compiled.values() for e, r in c.regions.items()}
    assert "POPC" in sass["atom_global_contended"] and "POPC" not in sass["atom_global_contended_f32"]
