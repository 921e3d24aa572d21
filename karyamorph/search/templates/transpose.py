"""The transpose template: ``y[j, i] = x[i, j]`` for a (rows, cols) float matrix, through a
shared-memory tile, with the tile size, the tile rows' padding, the vector width, the rows per
thread and the cache policy as parameters.

A block moves one ``tile x tile`` tile with ``tile * tile / (vec * items)`` threads. Reading, a
thread loads ``vec`` consecutive floats of a row of x (one ``ld.global.vN``), ``items`` rows
``tile / items`` apart, all loads issued before the first store to shared memory; ``tile / vec``
consecutive threads cover a tile row, so each warp reads whole row segments. After the
barrier a thread writes ``vec`` consecutive floats of a row of y (a column of the tile read from
shared memory) the same way. A padded tile row (``pad`` = 1 float) puts the floats of a tile
column in different banks; unpadded rows let the vector of a read land in shared memory with one
``st.shared.vN``.

Edges: neither ``rows`` nor ``cols`` need be a multiple of the tile; accesses outside the matrix
are predicated off. A vector access needs the row length to be a multiple of ``vec`` (its
address is then aligned, and a vector is wholly inside or outside); when it is not, the kernel
takes, uniformly for the launch, a path of scalar accesses instead (the read side tests ``cols``,
the write side ``rows``). Indices are 32-bit: ``(rows + tile) * cols`` and ``(cols + tile) *
rows`` must stay below 2**32.
"""

from __future__ import annotations

from collections.abc import Mapping

from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import KernelBuilder
from karyamorph.isa.operands import Reg
from karyamorph.kernel.spec import DTYPES, ArgSpec, Init, KernelSpec, Launch, Reference
from karyamorph.search.space import Constraint, Parameter, Value
from karyamorph.search.template import Footprint, Template
from karyamorph.search.templates.streaming import CACHE_POLICIES, builder, global_pointers, load, store, zeros

F32 = DTYPES["f32"]

PARAMETERS = (
    Parameter("tile", (16, 32, 64)),
    Parameter("pad", (0, 1)),
    Parameter("vec", (1, 2, 4)),
    Parameter("items", (1, 2, 4, 8, 16)),
    Parameter("cache", tuple(CACHE_POLICIES)),
)

CONSTRAINTS = (
    # A block of at least one warp and at most 1024 threads.
    Constraint("32 <= tile * tile // (vec * items) <= 1024"),
)


def threads(config: Mapping[str, Value]) -> int:
    """Threads per block of ``config``."""
    tile = int(config["tile"])
    return tile * tile // (int(config["vec"]) * int(config["items"]))


def _lg(x: int) -> int:
    return x.bit_length() - 1


def _move(k: KernelBuilder, base: Reg, length: Reg, line: Reg, lines: Reg, at: Reg,
          config: Mapping[str, Value], values: list[tuple[Reg, ...]], space: str, storing: bool
          ) -> None:  # fmt: skip
    """Load (or store, ``storing``) the ``items`` vectors of a thread along lines of ``length``
    floats of a matrix at ``base``: vector j on line ``line + j * tile / items``, at positions
    ``at .. at + vec``. Lines from ``lines`` on and positions from ``length`` on are skipped.
    Vector accesses when ``length`` is a multiple of ``vec``, else scalar ones."""
    vec, items = int(config["vec"]), int(config["items"])
    step = int(config["tile"]) // items
    first = k.add("u64", base, k.mul_wide("u32", k.mad("u32", line, length, at), 4))
    stride = k.mul_wide("u32", length, 4 * step)
    ptrs = [first]
    for _ in range(1, items):
        ptrs.append(k.add("u64", ptrs[-1], stride))
    line_in = [k.setp("lt", "u32", k.add("u32", line, j * step) if j else line, lines) for j in range(items)]

    def access(address: ast.Address, regs: tuple[Reg, ...], guard: Reg) -> None:
        if storing:
            store(k, space, address, regs, guard=guard)
        else:
            load(k, space, address, len(regs), guard=guard, into=regs)

    scalar, joined = k.label("scalar"), k.label("joined")
    if vec > 1:  # uniform for the launch: one path for every thread
        k.bra(scalar, guard=k.setp("ne", "b32", k.and_("b32", length, vec - 1), 0), uni=True)
    for j in range(items):
        access(k.addr(ptrs[j]), values[j], k.setp("lt", "u32", at, length, bool_op="and", c=line_in[j]))
    if vec == 1:
        return
    k.bra(joined, uni=True)
    k.place(scalar)
    for e in range(vec):
        pos = k.add("u32", at, e) if e else at
        for j in range(items):
            guard = k.setp("lt", "u32", pos, length, bool_op="and", c=line_in[j])
            access(k.addr(ptrs[j], 4 * e), values[j][e : e + 1], guard)
    k.place(joined)


def build(config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int]) -> KernelSpec:
    """The variant ``config`` of the transpose for ``arch`` at ``sizes`` (``rows``, ``cols``)."""
    tile, pad, vec, items = (int(config[p]) for p in ("tile", "pad", "vec", "items"))
    ld_space, st_space = CACHE_POLICIES[str(config["cache"])]
    block = threads(config)
    per_line = tile // vec  # threads along one tile row
    step = tile // items  # tile rows between a thread's vectors
    width = tile + pad  # floats per tile row in shared memory
    k = builder("transpose", arch, (block,))
    x, y = global_pointers(k, "x", "y")
    rows, cols = (k.ld_param(k.param(name, "u32")) for name in ("rows", "cols"))
    smem = k.shared("tile", "f32", tile * width, align=16)
    tid = k.sreg("tid.x")
    # The thread's first (row, column) of the tile, the same for both phases.
    tr = k.shr("u32", tid, _lg(per_line))
    tc = k.shl("b32", k.and_("b32", tid, per_line - 1), _lg(vec))
    r0 = k.shl("b32", k.sreg("ctaid.y"), _lg(tile))
    c0 = k.shl("b32", k.sreg("ctaid.x"), _lg(tile))
    base = k.mov("u32", smem)

    # x rows r0 + tr + j * step, columns c0 + tc ..: into tile[tr + j * step][tc ..]
    loaded = [zeros(k, vec) for _ in range(items)]
    _move(k, x, cols, k.add("u32", r0, tr), rows, k.add("u32", c0, tc), config, loaded, ld_space, False)
    put = k.mad("u32", k.mad("u32", tr, width, tc), 4, base)
    for j, values in enumerate(loaded):
        at = 4 * j * step * width
        if pad == 0 and vec > 1:  # unpadded rows keep the vector aligned in shared memory
            store(k, "shared", k.addr(put, at), values)
        else:
            for e, v in enumerate(values):
                k.st("shared", "f32", k.addr(put, at + 4 * e), v)
    k.bar_sync(0)

    # y rows c0 + tr + j * step (tile columns), columns r0 + tc ..: tile[tc + e][tr + j * step]
    get = k.mad("u32", k.mad("u32", tc, width, tr), 4, base)
    gathered = [
        tuple(k.ld("shared", "f32", k.addr(get, 4 * (e * width + j * step))) for e in range(vec))
        for j in range(items)
    ]
    _move(k, y, rows, k.add("u32", c0, tr), cols, k.add("u32", r0, tc), config, gathered, st_space, True)
    k.ret()
    launch = Launch((f"ceildiv(cols, {tile})", f"ceildiv(rows, {tile})"), (block,))
    args = (
        ArgSpec("x", "in", F32, ("rows", "cols"), Init("randn")),
        ArgSpec("y", "out", F32, ("cols", "rows"), Init("zeros")),
        ArgSpec("rows", "scalar", DTYPES["u32"], value="rows"),
        ArgSpec("cols", "scalar", DTYPES["u32"], value="cols"),
    )
    # A pure copy: the result is bit-identical.
    return KernelSpec(
        ptx=k.ptx(), entry="transpose", sizes=dict(sizes), launch=launch, args=args,
        reference=Reference(torch="x.t().contiguous()"), atol=0.0, rtol=0.0,
        cost_bytes="8 * rows * cols", cost_flops=0,
    )  # fmt: skip


def footprint(config: Mapping[str, Value]) -> Footprint:
    """``threads(config)`` threads; the tile in shared memory; registers: the floats a thread
    moves (loaded, then gathered) besides about 32 for indices, addresses and guards."""
    tile, pad = int(config["tile"]), int(config["pad"])
    moved = int(config["vec"]) * int(config["items"])
    return Footprint(threads=threads(config), shared_bytes=4 * tile * (tile + pad), registers=32 + 2 * moved)


TEMPLATE = Template(
    name="transpose",
    summary="y = x.T for a rows x cols float matrix (tile, padding, vector width, rows per thread)",
    parameters=PARAMETERS,
    constraints=CONSTRAINTS,
    build=build,
    footprint=footprint,
    sizes={"rows": 8192, "cols": 8192},  # 256 MiB
    # No tile divides either size, so every edge guard runs; cols = 0 mod 4 takes the vector
    # read path, rows = 2 mod 4 the vector write path for vec 2 and the scalar one for vec 4.
    check_sizes={"rows": 70, "cols": 100},
    equivalent_to_baseline=True,
    equivalence_sizes={"rows": 19, "cols": 13},
    # The timed 8192 x 8192 takes the vector paths only; 128 x 128 is a multiple of every tile
    # and vector width, so the cost model counts the same instructions per element.
    cost_sizes=({"rows": 128, "cols": 128},),
    baseline={"tile": 32, "pad": 1, "vec": 1, "items": 4, "cache": "default"},
    torch_baseline="x.t().contiguous()",
)
