"""The reduction template: ``out[0] += sum(x)`` over ``n`` floats, with block size, vector width,
items per thread, the block's combining step (warp shuffles or a shared-memory tree) and a
one-pass or grid-stride grid as parameters.

Each thread keeps ``vec`` running sums. A step of a block covers ``block * items`` vectors of
``vec`` floats, those of one thread ``block`` apart, so every load instruction of a warp is
coalesced; a thread issues all ``items`` loads of a step before its first add. ``sm_threads``
0 launches a block per chunk; otherwise ``sm_threads / block`` blocks per SM (``sms`` is a
size) walk the array in a grid-stride loop, which leaves one atomic per block instead of one
per chunk. The ``n mod vec`` floats past the last whole vector go to the first threads of the
grid. The block then combines its threads' sums, and its thread 0 adds the block's sum to
``out[0]`` with ``red.global.add.f32``; ``out`` starts at zero. Indices are 32-bit: ``n`` must
stay below 2**31.

``config["planted_race"]`` (not a parameter of the grid) drops one ``bar.sync`` of the block's
combining step, a data race on shared memory the model checker must refute; it exists to test
that a racy variant is rejected before it reaches a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import KernelBuilder
from karyamorph.isa.operands import Reg
from karyamorph.kernel.spec import DTYPES, ArgSpec, Init, KernelSpec, Launch, Reference
from karyamorph.search.space import Constraint, Parameter, Value
from karyamorph.search.template import Footprint, Template
from karyamorph.search.templates.streaming import (
    CACHE_POLICIES,
    builder,
    global_pointers,
    load,
    stride_grid,
    zeros,
)

F32 = DTYPES["f32"]
UNIT_ROUNDOFF = 2.0**-24  # fp32, round to nearest

PARAMETERS = (
    Parameter("block", (128, 256, 512, 1024)),
    Parameter("vec", (1, 2, 4)),
    Parameter("items", (1, 2, 4, 8, 16)),
    Parameter("combine", ("shfl", "smem")),
    # Threads per SM of a grid-stride grid (0: one pass); sm_120 SMs hold 1536, sm_90 ones 2048.
    Parameter("sm_threads", (0, 1024, 1536, 2048)),
    Parameter("cache", ("default", "nc", "nc256")),
)

CONSTRAINTS = (
    Constraint("vec * items <= 32"),  # at most 128 bytes in flight per thread and step
    Constraint("sm_threads % block == 0"),
)


def _accumulate(k: KernelBuilder, x: Reg, v: Reg, nv: Reg, acc: tuple[Reg, ...], vec: int, items: int,
                block: int, space: str) -> None:  # fmt: skip
    """acc[e] += x[vec * (v + j * block) + e] for the j < items whose vector is below ``nv``."""
    base = k.add("u64", x, k.mul_wide("u32", v, 4 * vec))
    guards = [k.setp("lt", "u32", k.add("u32", v, j * block) if j else v, nv) for j in range(items)]
    step = 4 * vec * block
    loaded = [load(k, space, k.addr(base, j * step), vec, guard=g) for j, g in enumerate(guards)]
    for g, values in zip(guards, loaded, strict=True):
        for a, value in zip(acc, values, strict=True):
            k.instr("add.f32", a, a, value, guard=g)


def _tail(k: KernelBuilder, x: Reg, n: Reg, acc: Reg, vec: int, block: int) -> None:
    """acc += x[n - n mod vec + g] for the thread of grid index g, when g < n mod vec."""
    rest = k.and_("b32", n, vec - 1)
    g = k.mad("u32", k.sreg("ctaid.x"), block, k.sreg("tid.x"))
    with k.if_(k.setp("lt", "u32", g, rest)):
        at = k.add("u64", x, k.mul_wide("u32", k.add("u32", k.sub("u32", n, rest), g), 4))
        k.add("f32", acc, acc, k.ld("global", "f32", at))


def _pairwise(k: KernelBuilder, values: tuple[Reg, ...]) -> Reg:
    """The sum of ``values`` (a power of two of them) as a balanced tree of adds."""
    while len(values) > 1:
        values = tuple(k.add("f32", values[i], values[i + 1]) for i in range(0, len(values), 2))
    return values[0]


def _warp_sum(k: KernelBuilder, value: Reg, lanes: int) -> Reg:
    """The sum over ``lanes`` (a power of two) consecutive lanes, in every one of them."""
    offset = lanes // 2
    while offset:
        value = k.add("f32", value, k.shfl_sync("bfly", value, offset))
        offset //= 2
    return value


def _combine_shfl(k: KernelBuilder, total: Reg, out: Reg, block: int, planted: bool) -> None:
    """Warp sums by butterfly shuffles, one per warp into shared memory, then warp 0 adds those."""
    warps = block // 32
    partials = k.shared("warp_sums", "f32", warps, align=4)
    tid = k.sreg("tid.x")
    lane, warp = k.and_("b32", tid, 31), k.shr("u32", tid, 5)
    s = _warp_sum(k, total, 32)
    base = k.mov("u32", partials)
    with k.if_(k.setp("eq", "u32", lane, 0)):
        k.st("shared", "f32", k.mad("u32", warp, 4, base), s)
    if not planted:  # warp 0 reads what the other warps' lane 0 wrote
        k.bar_sync(0)
    with k.if_(k.setp("eq", "u32", warp, 0)):
        mine = k.mov("f32", 0.0)
        k.ld("shared", "f32", k.mad("u32", lane, 4, base), out=mine, guard=k.setp("lt", "u32", lane, warps))
        s = _warp_sum(k, mine, warps)
        with k.if_(k.setp("eq", "u32", lane, 0)):
            k.red("global", "add", "f32", out, s)


def _combine_smem(k: KernelBuilder, total: Reg, out: Reg, block: int, planted: bool) -> None:
    """A shared-memory tree: at each level the lower half adds the upper half, a barrier between."""
    sums = k.shared("thread_sums", "f32", block, align=4)
    tid = k.sreg("tid.x")
    base = k.mov("u32", sums)
    mine = k.mad("u32", tid, 4, base)
    k.st("shared", "f32", mine, total)
    k.bar_sync(0)
    half = block // 2
    while half:
        with k.if_(k.setp("lt", "u32", tid, half)):
            k.add("f32", total, total, k.ld("shared", "f32", k.addr(mine, 4 * half)))
            if half > 1:  # thread 0 keeps the last level's sum in its register
                k.st("shared", "f32", mine, total)
        # Thread 0 reads only its own writes after the last level; the planted race drops the
        # barrier after the first level, so its readers race with its writers.
        if half > 1 and not (planted and half == block // 2):
            k.bar_sync(0)
        half //= 2
    with k.if_(k.setp("eq", "u32", tid, 0)):
        k.red("global", "add", "f32", out, total)


def _grid(config: Mapping[str, Value]) -> tuple[int, str]:
    """Floats one block covers per step, and the grid expression."""
    block, vec, items = int(config["block"]), int(config["vec"]), int(config["items"])
    per_block = block * items * vec
    return per_block, stride_grid(int(config["sm_threads"]), block, f"ceildiv(n, {per_block})")


def tolerance(config: Mapping[str, Value], sizes: Mapping[str, int]) -> float:
    """The absolute tolerance of ``out[0]`` for randn inputs, from a rounding-error model.

    The variants add in other orders than torch, so the results differ by rounding alone. With
    zero-mean inputs of unit variance, the k-th add of a chain of dependent adds rounds a
    partial sum of about sqrt(k * m) magnitude (m floats under it) by a relative error below
    u = 2**-24, and independent errors add in quadrature: the error over every chain of a
    summation of ``n`` floats with longest chain ``d`` has a standard deviation near
    ``u * sqrt(n * d / 6)``. Here ``d`` is a thread's own chain (its floats per running sum),
    the ``log2(vec)`` adds that join its running sums, the ``log2(block)`` levels of the block
    and one atomic add per block into ``out`` (in the worst order, a chain as long as the
    grid). torch's own order gets an allowance of ``sqrt(n)`` more adds in the chain. The
    tolerance is 4 u sqrt(n d), about ten standard deviations; for the benchmark's 64 Mi floats
    that is 0.1-0.3 against a sum of typical size 8192 (sqrt(n)), while one lost or repeated
    float moves it by |x| (0.8 on average) and a lost block by tens.
    """
    n = sizes["n"]
    per_block, _ = _grid(config)
    block, vec = int(config["block"]), int(config["vec"])
    sm_threads = int(config["sm_threads"])
    grid = math.ceil(n / per_block) if sm_threads == 0 else sm_threads // block * sizes["sms"]
    chain = math.ceil(n / (grid * block * vec)) + 1  # the tail adds one more float to a sum
    d = chain + math.log2(vec) + math.log2(block) + grid + math.sqrt(n)
    return 4 * UNIT_ROUNDOFF * math.sqrt(n * d)


def build(config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int]) -> KernelSpec:
    """The variant ``config`` of the reduction for ``arch`` at ``sizes`` (``n``, ``sms``)."""
    block, vec, items = int(config["block"]), int(config["vec"]), int(config["items"])
    planted = bool(config.get("planted_race", False))
    k = builder("reduce_sum", arch, (block,))
    x, out = global_pointers(k, "x", "out")
    n = k.ld_param(k.param("n", "u32"))
    tid = k.sreg("tid.x")
    space = CACHE_POLICIES[str(config.get("cache", "default"))][0]
    acc = zeros(k, vec)
    nv = k.shr("u32", n, vec.bit_length() - 1) if vec > 1 else n
    chunk = block * items  # vectors per block and step
    first = k.mul("u32", k.sreg("ctaid.x"), chunk)
    if int(config["sm_threads"]) == 0:
        _accumulate(k, x, k.add("u32", first, tid), nv, acc, vec, items, block, space)
    else:
        # The loop test is on the block's chunk, so a block's threads leave the loop together.
        with k.for_range(first, nv, k.mul("u32", k.sreg("nctaid.x"), chunk)) as c:
            _accumulate(k, x, k.add("u32", c, tid), nv, acc, vec, items, block, space)
    if vec > 1:
        _tail(k, x, n, acc[0], vec, block)
    total = _pairwise(k, acc)
    combine = _combine_shfl if config["combine"] == "shfl" else _combine_smem
    combine(k, total, out, block, planted)
    k.ret()
    _, grid = _grid(config)
    args = (
        ArgSpec("x", "in", F32, ("n",), Init("randn")),
        # inout: the kernel adds to out[0], so it must start at zero, not at the poison pattern.
        ArgSpec("out", "inout", F32, (1,), Init("zeros")),
        ArgSpec("n", "scalar", DTYPES["u32"], value="n"),
    )
    return KernelSpec(
        ptx=k.ptx(), entry="reduce_sum", sizes=dict(sizes), launch=Launch((grid,), (block,)),
        args=args, reference=Reference(torch="x.sum()"), atol=tolerance(config, sizes), rtol=0.0,
        cost_bytes="4 * n", cost_flops="n",
    )  # fmt: skip


def footprint(config: Mapping[str, Value]) -> Footprint:
    """``block`` threads; shared memory: a float per warp (shuffles) or per thread (tree);
    registers: a step's loaded floats and the running sums besides about 24 others."""
    block, vec, items = int(config["block"]), int(config["vec"]), int(config["items"])
    shared = 4 * (block // 32 if config["combine"] == "shfl" else block)
    return Footprint(threads=block, shared_bytes=shared, registers=24 + vec * items + vec)


TEMPLATE = Template(
    name="reduction",
    summary="out[0] = sum(x) over n floats (block, vector width, items, shuffles or tree, grid)",
    parameters=PARAMETERS,
    constraints=CONSTRAINTS,
    build=build,
    footprint=footprint,
    sizes={"n": 64 * 2**20, "sms": 132},  # 256 MiB; sms is the H200's SM count
    # n = 3 mod 4 leaves a scalar tail for every vector width; with one SM the grid-stride grids
    # loop up to 20 times (fewer the more floats a step takes), and one-pass grids end in a
    # partial chunk.
    check_sizes={"n": 20003, "sms": 1},
    baseline={"block": 256, "vec": 1, "items": 1, "combine": "smem", "sm_threads": 0, "cache": "default"},
    torch_baseline="x.sum()",
)
