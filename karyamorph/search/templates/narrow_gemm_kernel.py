"""The FP8 and FP4 GEMM kernels' shape, their common parts (parameters, lane indices, block
scales, products, epilogue) and the unstaged kernel, whose warps load their fragments straight
from global memory; the staged one is :mod:`karyamorph.search.templates.narrow_gemm_staged`.

``c = a @ b.T`` with a (M, K) and b (N, K) k-contiguous (the "TN" layout fp8 GEMMs take: b
holds B = b.T of shape (K, N) column-major, which is the mma's ``.col`` operand). A block of
``threads`` computes a ``bm x bn`` tile of c; each warp a ``wm x wn`` piece of it, as
``wm / 16 x wn / 8`` mma tiles, ``steps`` k steps a loop iteration (unstaged, all of an
iteration's fragments are loaded before its first product, so the loads of later steps overlap
the earlier products).

Three forms, one data movement. An mma k step is 32 bytes of a row of a and of b: 32 e4m3
(``.kind::f8f6f4``, m16n8k32, one element a byte) or 64 e2m1 (``.kind::mxf4`` and
``.kind::mxf4nvf4``, m16n8k64, two elements a byte, the lower nibble first). In both, lane
``l`` (``g = l / 4``, ``t = l % 4``) holds, in each of its registers, the four bytes ``4t ..
4t + 3`` of a 16-byte half of one row (PTX ISA, "Matrix Fragments for mma.m16n8k32" and
"mma.m16n8k64"): a register ``j`` row ``g + 8 (j % 2)`` of the m tile, half ``j / 2``; b
register ``j`` row ``g`` of the n tile (a column of B), half ``j``. So each register is one
aligned 32-bit load.

Block scales (fp4 only, :mod:`karyamorph.model.ptx.mma_scaled`): sfa (M, K / v) and sfb (N, K / v)
hold one scale a block of ``v`` elements along K (``v = 32`` ue8m0 for mxf4, ``16`` ue4m3 for
nvf4), so a k step of 64 has 2 or 4 scales a row, in consecutive bytes. With the selectors
``{0, 0}`` the mma takes row ``g`` of A's scales from lane ``4g``, row ``g + 8`` from lane
``4g + 1``, and column ``g`` of B's from lane ``4g``: every lane loads those of row ``g + 8 (l %
2)`` and of column ``g`` (lanes 2 and 3 of a quad load what nobody reads, in bounds).

The epilogue of the fp8 form multiplies by the per-tensor scales (``scale_a * scale_b``, one f32
product) and stores f32; the fp4 forms store the mma's f32 sums. The unstaged kernel has no
shared memory and no barrier: no two warps exchange anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.search.templates.gemm_common import PTX_VERSION, log2, offset_pointer, zeros

STEP_BYTES = 32  # bytes of a row an mma k step reads, in every form


@dataclass(frozen=True, slots=True)
class Form:
    """One mma form: its instruction, elements a byte, and its block scales (if any)."""

    name: str
    mma: str
    per_byte: int  # elements a byte
    scale_block: int = 0  # elements along K a scale covers; 0: no block scales
    scale_bytes: int = 0  # scale bytes a row and k step

    @property
    def k_step(self) -> int:
        """Elements along K of one mma."""
        return STEP_BYTES * self.per_byte


FORMS: dict[str, Form] = {
    f.name: f
    for f in (
        Form("e4m3", "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e4m3.f32", 1),
        Form("mxf4", "mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X"
                     ".f32.e2m1.e2m1.f32.ue8m0", 2, 32, 2),
        Form("nvf4", "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X"
                     ".f32.e2m1.e2m1.f32.ue4m3", 2, 16, 4),
    )
}  # fmt: skip
SELECTORS = ast.Vector((ast.Immediate("0"), ast.Immediate("0")))  # byte-id 0, thread-id 0


@dataclass(frozen=True, slots=True)
class NarrowShape:
    """One configuration of a narrow-float GEMM and the figures derived from it."""

    form: str  # a key of FORMS
    wm: int
    wn: int
    warps_m: int
    warps_n: int
    steps: int
    stages: int = 0  # shared-memory ring buffers; 0: fragments straight from global memory

    @property
    def mma(self) -> Form:
        return FORMS[self.form]

    @property
    def bm(self) -> int:
        return self.warps_m * self.wm

    @property
    def bn(self) -> int:
        return self.warps_n * self.wn

    @property
    def bk(self) -> int:
        """Elements along K a loop iteration (a slice) consumes."""
        return self.steps * self.mma.k_step

    @property
    def slice_bytes(self) -> int:
        """Bytes of a row of a and of b a loop iteration consumes."""
        return self.steps * STEP_BYTES

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @property
    def pitch(self) -> int:
        """Bytes a row of a staged slice takes: 16 more than its data, so the eight rows an
        ldmatrix phase reads start in eight different 16-byte bank groups."""
        return self.slice_bytes + 16

    @property
    def a_bytes(self) -> int:
        return self.bm * self.pitch

    @property
    def stage_bytes(self) -> int:
        return (self.bm + self.bn) * self.pitch

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.stage_bytes

    @property
    def entry(self) -> str:
        staged = f"_s{self.stages}" if self.stages else "_g"
        return f"{self.form}_gemm_{self.bm}x{self.bn}_w{self.wm}x{self.wn}_k{self.steps}{staged}"


@dataclass(frozen=True, slots=True)
class Setup:
    """What every kernel of a shape starts with: its builder, pointers and scalars, the lane's
    indices and rows, its scale pointers (fp4) and accumulators.

    ``row_g`` is the lane's first row of c (``g`` of its warp's first m tile), ``col_g`` its
    first row of b (``g`` of the warp's first n tile), ``pitch`` the bytes a row of a and of b.
    """

    kb: KernelBuilder
    a: Reg
    b: Reg
    c: Reg
    n: Reg
    k: Reg
    scale: Reg | None  # scale_a * scale_b (fp8)
    lane: Reg
    g: Reg
    t: Reg
    warp_m: Reg
    warp_n: Reg
    bx: Reg
    by: Reg
    row_g: Reg
    col_g: Reg
    pitch: Reg
    sfa: list[Reg]  # one scale pointer an m tile: row g + 8 (lane % 2)
    sfb: list[Reg]  # one an n tile: row g
    acc: list[list[Reg]]


def row_pointer(kb: KernelBuilder, base: Reg, row: Reg, pitch: Reg, column_bytes: Reg | int) -> Reg:
    """``base + row * pitch + column_bytes`` (u32 row, pitch and column; u64 pointer)."""
    return offset_pointer(kb, base, kb.mad("u32", row, pitch, column_bytes))


def setup(s: NarrowShape, arch: Arch) -> Setup:
    """Declare the parameters (``a, b[, sfa, sfb], c, N, K[, scale_a, scale_b]``) and compute
    what every kernel of ``s`` needs before its loop."""
    form = s.mma
    kb = KernelBuilder(s.entry, target=arch.name, version=PTX_VERSION)
    kb.maxntid(s.threads)
    a_ptr, b_ptr = kb.param_ptr("a"), kb.param_ptr("b")
    sf_ptrs = [kb.param_ptr(n) for n in ("sfa", "sfb")] if form.scale_block else []
    c_ptr = kb.param_ptr("c")
    n_param, k_param = kb.param("N", "u32"), kb.param("K", "u32")
    scale_params = [kb.param(n, "f32") for n in ("scale_a", "scale_b")] if not form.scale_block else []
    a, b, c = (kb.to_global(kb.ld_param(p)) for p in (a_ptr, b_ptr, c_ptr))
    n, k = kb.ld_param(n_param), kb.ld_param(k_param)
    scale = None
    if scale_params:
        sa, sb = (kb.ld_param(p) for p in scale_params)
        scale = kb.mul("f32", sa, sb)

    tid, bx, by = kb.sreg("tid.x"), kb.sreg("ctaid.x"), kb.sreg("ctaid.y")
    warp, lane = kb.shr("u32", tid, 5), kb.and_("b32", tid, 31)
    warp_m, warp_n = kb.shr("u32", warp, log2(s.warps_n)), kb.and_("b32", warp, s.warps_n - 1)
    g, t = kb.shr("u32", lane, 2), kb.and_("b32", lane, 3)
    row_g = kb.mad("u32", by, s.bm, kb.mad("u32", warp_m, s.wm, g))
    col_g = kb.mad("u32", bx, s.bn, kb.mad("u32", warp_n, s.wn, g))
    pitch = kb.shr("u32", k, log2(form.per_byte))
    sfa: list[Reg] = []
    sfb: list[Reg] = []
    if form.scale_block:
        base_a, base_b = (kb.to_global(kb.ld_param(p)) for p in sf_ptrs)
        sf_pitch = kb.shr("u32", k, log2(form.scale_block))
        row_sf = kb.mad("u32", kb.and_("b32", lane, 1), 8, row_g)  # row g + 8 (lane % 2)
        sfa = [row_pointer(kb, base_a, kb.add("u32", row_sf, 16 * i), sf_pitch, 0) for i in range(s.wm // 16)]
        sfb = [row_pointer(kb, base_b, kb.add("u32", col_g, 8 * j), sf_pitch, 0) for j in range(s.wn // 8)]
    acc = [zeros(kb, 4) for _ in range(s.wm // 16 * (s.wn // 8))]
    return Setup(kb, a, b, c, n, k, scale, lane, g, t, warp_m, warp_n, bx, by, row_g, col_g, pitch, sfa, sfb,
                 acc)  # fmt: skip


def load_scales(x: Setup, s: NarrowShape, step: int) -> tuple[list[Reg], list[Reg]]:
    """The lane's scale registers of k step ``step`` of the slice, an m tile and an n tile each:
    2 ue8m0 bytes (mxf4) or 4 ue4m3 bytes (nvf4); empty for fp8."""
    offset = step * s.mma.scale_bytes

    def load(ptr: Reg) -> Reg:
        if s.mma.scale_bytes == 4:
            return x.kb.ld("global", "b32", x.kb.addr(ptr, offset))
        return x.kb.cvt("u32", "u16", x.kb.ld("global", "u16", x.kb.addr(ptr, offset)))

    return [load(p) for p in x.sfa], [load(p) for p in x.sfb]


def advance_scales(x: Setup, s: NarrowShape) -> None:
    """Move the scale pointers on by a slice."""
    for ptr in (*x.sfa, *x.sfb):
        x.kb.add("u64", ptr, ptr, s.steps * s.mma.scale_bytes)


def multiply(x: Setup, s: NarrowShape, a_regs: list[list[Reg]], b_regs: list[list[Reg]], sa: list[Reg],
             sb: list[Reg]) -> None:  # fmt: skip
    """One k step's ``wm / 16 x wn / 8`` mma products into the accumulators."""
    n_tiles = s.wn // 8
    for i, a_frag in enumerate(a_regs):
        # A serpentine over n reuses the b fragment of the previous product.
        order = range(n_tiles) if i % 2 == 0 else range(n_tiles - 1, -1, -1)
        for j in order:
            d = x.acc[i * n_tiles + j]
            scales = (sa[i], SELECTORS, sb[j], SELECTORS) if s.mma.scale_block else ()
            x.kb.instr(s.mma.mma, d, a_frag, b_regs[j], d, *scales)


def finish(x: Setup, s: NarrowShape) -> str:
    """Store c (each accumulator pair, times ``scale_a * scale_b`` for fp8, as f32x2: lane ``l``
    holds rows ``l / 4`` and ``l / 4 + 8`` of each mma tile, columns ``2 (l % 4)`` and ``2 (l %
    4) + 1``) and return the kernel's PTX."""
    kb, n_tiles = x.kb, s.wn // 8
    col_t = kb.mad("u32", x.bx, s.bn, kb.mad("u32", x.warp_n, s.wn, kb.shl("b32", x.t, 1)))
    for i in range(s.wm // 16):
        for half in range(2):
            row = kb.add("u32", x.row_g, 16 * i + 8 * half)
            ptr = kb.add("u64", x.c, kb.mul_wide("u32", kb.mad("u32", row, x.n, col_t), 4))
            for j in range(n_tiles):
                pair = x.acc[i * n_tiles + j][2 * half : 2 * half + 2]
                if x.scale is not None:
                    pair = [kb.mul("f32", v, x.scale) for v in pair]
                kb.st("global", "f32", kb.addr(ptr, 32 * j), pair)
    kb.ret()
    return kb.ptx()


def global_ptx(s: NarrowShape, arch: Arch) -> str:
    """The PTX of ``s`` (``stages == 0``) for ``arch``: every fragment an aligned 32-bit load
    from global memory, all of a slice's issued before its first product."""
    x = setup(s, arch)
    kb = x.kb
    quad = kb.shl("b32", x.t, 2)
    a_rows = [[row_pointer(kb, x.a, kb.add("u32", x.row_g, 16 * i + 8 * h), x.pitch, quad) for h in range(2)]
              for i in range(s.wm // 16)]  # fmt: skip
    b_rows = [row_pointer(kb, x.b, kb.add("u32", x.col_g, 8 * j), x.pitch, quad) for j in range(s.wn // 8)]
    with kb.for_range(0, kb.shr("u32", x.k, log2(s.bk))):
        steps = []
        for step in range(s.steps):
            base = step * STEP_BYTES
            a_regs = [[kb.ld("global", "b32", kb.addr(pair[j % 2], base + 16 * (j // 2))) for j in range(4)]
                      for pair in a_rows]  # fmt: skip
            b_regs = [[kb.ld("global", "b32", kb.addr(p, base + 16 * h)) for h in range(2)] for p in b_rows]
            steps.append((a_regs, b_regs, *load_scales(x, s, step)))
        for a_regs, b_regs, sa, sb in steps:
            multiply(x, s, a_regs, b_regs, sa, sb)
        for ptr in (*(p for pair in a_rows for p in pair), *b_rows):
            kb.add("u64", ptr, ptr, s.slice_bytes)
        advance_scales(x, s)
    return finish(x, s)
