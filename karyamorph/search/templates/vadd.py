"""The vector-add template: ``c = a + b`` over ``n`` floats, with vector width, items per thread,
block size, a one-pass or grid-stride grid and the cache policy as parameters.

A thread moves ``items`` vectors of ``vec`` floats per step, ``block`` vectors apart, so each
load instruction of a warp reads consecutive 4 * vec-byte pieces (fully coalesced), and every
load of a step is issued before the first add (``items`` loads of each input in flight per
thread). ``sm_threads`` 0 launches one block per chunk of ``block * items`` vectors; otherwise
``sm_threads / block`` blocks per SM (``sms``, a size, is the GPU's SM count) walk the array in
a grid-stride loop. The ``n mod vec`` floats past the last whole vector are added one by one by
the first threads of the grid, so any ``n`` is handled. Indices are 32-bit: ``n`` must stay
below 2**31 (a step past the end is computed before it is compared with ``n``).
"""

from __future__ import annotations

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
    store,
    stride_grid,
)

F32 = DTYPES["f32"]

PARAMETERS = (
    Parameter("vec", (1, 2, 4)),
    Parameter("items", (1, 2, 4, 8)),
    Parameter("block", (128, 256, 512, 1024)),
    # Threads per SM of a grid-stride grid (0: one pass): half or all of an sm_90 SM's 2048.
    Parameter("sm_threads", (0, 1024, 2048)),
    Parameter("cache", tuple(CACHE_POLICIES)),
)

CONSTRAINTS = (
    # At most 16 floats (64 bytes) of each input per thread and step, 58 registers at most.
    Constraint("vec * items <= 16"),
    Constraint("sm_threads % block == 0"),
)


def _step(k: KernelBuilder, ptrs: tuple[Reg, ...], v: Reg, nv: Reg, config: Mapping[str, Value],
          first_in_range: bool) -> None:  # fmt: skip
    """One step of a thread: vectors ``v + j * block`` (j < items) of c = a + b, those past
    ``nv`` (whole vectors) left alone; ``first_in_range`` when ``v < nv`` is already known."""
    vec, items, block = int(config["vec"]), int(config["items"]), int(config["block"])
    ld_space, st_space = CACHE_POLICIES[str(config["cache"])]
    off = k.mul_wide("u32", v, 4 * vec)
    pa, pb, pc = (k.add("u64", p, off) for p in ptrs)
    guards: list[Reg | None] = []
    for j in range(items):
        if j == 0 and first_in_range:
            guards.append(None)
        else:
            guards.append(k.setp("lt", "u32", k.add("u32", v, j * block) if j else v, nv))
    step = 4 * vec * block
    xs = [load(k, ld_space, k.addr(pa, j * step), vec, guard=g) for j, g in enumerate(guards)]
    ys = [load(k, ld_space, k.addr(pb, j * step), vec, guard=g) for j, g in enumerate(guards)]
    for j, g in enumerate(guards):
        sums = tuple(k.add("f32", x, y) for x, y in zip(xs[j], ys[j], strict=True))
        store(k, st_space, k.addr(pc, j * step), sums, guard=g)


def _tail(k: KernelBuilder, ptrs: tuple[Reg, ...], n: Reg, vec: int, block: int) -> None:
    """The ``n mod vec`` floats after the last whole vector, one per thread of the first block."""
    rest = k.and_("b32", n, vec - 1)
    g = k.mad("u32", k.sreg("ctaid.x"), block, k.sreg("tid.x"))
    with k.if_(k.setp("lt", "u32", g, rest)):
        off = k.mul_wide("u32", k.add("u32", k.sub("u32", n, rest), g), 4)
        pa, pb, pc = (k.add("u64", p, off) for p in ptrs)
        k.st("global", "f32", k.addr(pc), k.add("f32", k.ld("global", "f32", pa), k.ld("global", "f32", pb)))


def build(config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int]) -> KernelSpec:
    """The variant ``config`` of vector add for ``arch`` at ``sizes`` (``n``, ``sms``)."""
    vec, items, block = int(config["vec"]), int(config["items"]), int(config["block"])
    sm_threads = int(config["sm_threads"])
    k = builder("vadd", arch, (block,))
    ptrs = global_pointers(k, "a", "b", "c")
    n = k.ld_param(k.param("n", "u32"))
    chunk = block * items  # vectors per block and step
    nv = k.shr("u32", n, vec.bit_length() - 1) if vec > 1 else n
    start = k.mad("u32", k.sreg("ctaid.x"), chunk, k.sreg("tid.x"))
    if sm_threads == 0:
        _step(k, ptrs, start, nv, config, first_in_range=False)
    else:
        stride = k.mul("u32", k.sreg("nctaid.x"), chunk)
        with k.for_range(start, nv, stride) as v:
            _step(k, ptrs, v, nv, config, first_in_range=True)
    if vec > 1:
        _tail(k, ptrs, n, vec, block)
    k.ret()
    grid = stride_grid(sm_threads, block, f"ceildiv(n, {chunk * vec})")
    args = (
        ArgSpec("a", "in", F32, ("n",), Init("randn")),
        ArgSpec("b", "in", F32, ("n",), Init("randn")),
        ArgSpec("c", "out", F32, ("n",), Init("zeros")),
        ArgSpec("n", "scalar", DTYPES["u32"], value="n"),
    )
    # fp32 addition is correctly rounded on the GPU and in torch: the sums are bit-identical.
    return KernelSpec(
        ptx=k.ptx(), entry="vadd", sizes=dict(sizes), launch=Launch((grid,), (block,)), args=args,
        reference=Reference(torch="a + b"), atol=0.0, rtol=0.0, cost_bytes="12 * n", cost_flops="n",
    )  # fmt: skip


def footprint(config: Mapping[str, Value]) -> Footprint:
    """A block of ``block`` threads, no shared memory; registers: both inputs of a step live at
    once (2 * vec * items floats) besides about 26 for addresses, indices and guards."""
    live = 2 * int(config["vec"]) * int(config["items"])
    return Footprint(threads=int(config["block"]), registers=26 + live)


TEMPLATE = Template(
    name="vadd",
    summary="c = a + b over n floats (vector width, items per thread, block, grid, cache policy)",
    parameters=PARAMETERS,
    constraints=CONSTRAINTS,
    build=build,
    footprint=footprint,
    # 256 MiB per array; sms is the H200's SM count.
    sizes={"n": 64 * 2**20, "sms": 132},
    # n = 3 mod 4, so every vector width leaves a scalar tail and the last chunk is partial; with
    # one SM the grid-stride grids of the smaller steps loop several times.
    check_sizes={"n": 4099, "sms": 1},
    equivalent_to_baseline=True,
    equivalence_sizes={"n": 259, "sms": 1},
    baseline={"vec": 1, "items": 1, "block": 256, "sm_threads": 0, "cache": "default"},
    torch_baseline="a + b",
)
