"""Oracle for ``wgmma`` (warpgroup MMA, sm_90a) from the PTX ISA's layouts, against numpy.

Written out here, independently of the semantics (PTX ISA, "Asynchronous Warpgroup Level
Matrix Multiply-Accumulate Instructions"), with ``w`` a thread's warp in its warpgroup,
``g = lane >> 2`` and ``t = lane % 4``:

- "wgmma.mma_async register fragments": D element ``i`` of a thread is row
  ``16 w + g + 8 ((i / 2) % 2)``, column ``8 (i / 4) + 2 t + i % 2`` (``.f16`` D: two a register,
  the first in the low half); A in registers, four ``.b32`` holding K / 8 elements each, the
  first in the low bits: 16-bit (K = 16) row ``16 w + g + 8 ((i / 2) % 2)``, column
  ``2 t + i % 2 + 8 (i / 4)``; ``.tf32`` (K = 8) row ``16 w + g + 8 (i % 2)``, column
  ``t + 4 (i / 2)``; 8-bit (K = 32) row ``16 w + g + 8 ((i / 4) % 2)``, column
  ``4 t + i % 4 + 16 (i / 8)``;
- "Matrix Descriptor Format": start address, LBO and SBO as ``(x & 0x3FFFF) >> 4`` in bits
  0-13, 16-29 and 32-45, the swizzle mode in bits 62-63 (1 128-byte, 2 64-byte, 3 32-byte);
- "Shared Memory Matrix Layout" (canonical layouts, the swizzle atoms): K-major without
  swizzling, 8 x 16-byte core matrices, LBO apart along K and SBO apart along M/N; K-major with
  an S-byte swizzle, 8 rows of S bytes (32 bytes of K used), groups of 8 rows SBO apart;
  MN-major (16-bit types only) with an S-byte swizzle, atoms of 8 rows of K S bytes apart, each
  S/2 elements of M/N, atoms along K SBO apart and along M/N LBO apart; the swizzle XORs the
  16-byte chunk (address bits 4-6) with address bits 7-9 (128-byte; the low two and one bits for
  64 and 32 bytes), patterns starting on a 1024-byte boundary.

The kernel copies an image of shared memory built here from those rules, builds the
descriptors, runs ``wgmma.fence``, ``mma_async``, ``commit_group`` and ``wait_group 0`` and
stores D; the expected D comes from :mod:`tests.model.oracle.wgmma_values` (exact sums rounded
once, or values whose sums are exact in any order).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ModelLimitError, WarpSyncError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form
from tests.model.oracle.wgmma_values import SIZE, decode, expected, plant_edges, random_bits, random_c

THREADS = 128
SWIZZLE_MODE = {0: 0, 128: 1, 64: 2, 32: 3}  # swizzle bytes -> descriptor mode
B_AT = 16384  # byte offset of B's image in shared memory (a multiple of 1024)
NAMES = ("wgmma.mma_async.sync.aligned", "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
         "wgmma.wait_group.sync.aligned")  # fmt: skip


def d_index(thread: int, i: int) -> tuple[int, int]:
    w, lane = divmod(thread, 32)
    g, t = lane >> 2, lane % 4
    return 16 * w + g + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * t + i % 2


def a_index(thread: int, i: int, size: int = 2) -> tuple[int, int]:
    """Row and column of A element ``i`` a thread holds in registers (``size``-byte elements)."""
    w, lane = divmod(thread, 32)
    g, t = lane >> 2, lane % 4
    if size == 4:
        return 16 * w + g + 8 * (i % 2), t + 4 * (i // 2)
    if size == 1:
        return 16 * w + g + 8 * ((i // 4) % 2), 4 * t + i % 4 + 16 * (i // 8)
    return 16 * w + g + 8 * ((i // 2) % 2), 2 * t + i % 2 + 8 * (i // 4)


def swizzled(offset: int, swizzle: int) -> int:
    if swizzle == 0:
        return offset
    mask = {128: 7, 64: 3, 32: 1}[swizzle]
    return offset ^ (((offset >> 7) & mask) << 4)


def offset(mn: int, k: int, swizzle: int, mn_major: bool, lbo: int, sbo: int, size: int = 2) -> int:
    """Byte offset of element ``(mn, k)`` from the matrix start (before the swizzle)."""
    if mn_major:
        atom = swizzle // 2
        return (k // 8) * sbo + (k % 8) * swizzle + (mn // atom) * lbo + 2 * (mn % atom)
    kb = size * k
    if swizzle == 0:
        return (mn // 8) * sbo + (mn % 8) * 16 + (kb // 16) * lbo + kb % 16
    return (mn // 8) * sbo + (mn % 8) * swizzle + kb


@dataclass(frozen=True, slots=True)
class Operand:
    """How one matrix lies in shared memory; MN-major, ``k_outer`` puts the atoms along M/N
    side by side (LBO the atom's bytes) rather than an atom's two K halves (SBO the atom's)."""

    swizzle: int  # bytes: 0, 32, 64 or 128
    mn_major: bool = False
    k_outer: bool = False

    def strides(self, extent: int) -> tuple[int, int]:
        """(LBO, SBO) of a compact layout of ``extent`` rows of M or N and 32 bytes of K."""
        if self.mn_major:
            atom_bytes = 8 * self.swizzle  # 8 rows of K
            if self.k_outer:
                return atom_bytes, atom_bytes * -(-extent // (self.swizzle // 2))
            return 2 * atom_bytes, atom_bytes
        if self.swizzle == 0:
            return 128, 256  # the two core matrices of a group side by side, then the next group
        return 0, 8 * self.swizzle

    def descriptor_bits(self, extent: int) -> int:
        """The descriptor without its start address."""
        lbo, sbo = self.strides(extent)
        return ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (SWIZZLE_MODE[self.swizzle] << 62)

    def image(self, bits: np.ndarray, into: np.ndarray, at: int, size: int = 2) -> None:
        """Write the ``size``-byte elements ``bits`` (``extent`` x K, M/N by K) into ``into`` at ``at``."""
        lbo, sbo = self.strides(bits.shape[0])
        for mn in range(bits.shape[0]):
            for k in range(bits.shape[1]):
                where = offset(mn, k, self.swizzle, self.mn_major, lbo, sbo, size)
                byte = at + swizzled(where, self.swizzle)
                into[byte : byte + size] = np.frombuffer(int(bits[mn, k]).to_bytes(size, "little"), np.uint8)


REG = {"f32": "f32", "f16": "b32", "s32": "s32"}  # D's register type by D type


def kernel(case: Case, a_bits: int, b_bits: int, threads: int = THREADS) -> str:
    """``threads / 128`` warpgroups: copy the image to shared memory, D from ``pc``, the wgmma
    sequence, D to ``pd``."""
    n, dregs, reg = case.n, case.d_registers, REG[case.dt]
    words = (B_AT + 256 * 128) // 4
    vec = "{" + ", ".join(f"%f{i}" for i in range(dregs)) + "}"
    a_operand = "{%a0, %a1, %a2, %a3}" if case.a is None else "%rd20"
    imms = ""
    if case.ty in ("f16", "bf16"):
        ta = "" if case.a is None else f"{int(case.a.mn_major)}, "
        imms = f", {case.scale_a}, {case.scale_b}, {ta}{int(case.b.mn_major)}"
    elif case.dt != "s32":
        imms = f", {case.scale_a}, {case.scale_b}"
    sat = ".satfinite" if case.satfinite else ""
    opcode = f"wgmma.mma_async.sync.aligned.m64n{n}k{case.k}{sat}.{case.dt}.{case.ty}.{case.bty}"
    loads = "\n    ".join(f"ld.global.{reg} %f{i}, [%rd11+{4 * i}];" for i in range(dregs))
    stores = "\n    ".join(f"st.global.{reg} [%rd12+{4 * i}], %f{i};" for i in range(dregs))
    a_loads = "\n    ".join(f"ld.global.b32 %a{j}, [%rd13+{4 * j}];" for j in range(4))
    version = "8.4" if case.ty != case.bty and case.dt == "s32" else "8.0"  # ptxas: mixed integers need 8.4
    return f"""
.version {version}
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 pimg, .param .u64 pa, .param .u64 pc, .param .u64 pd, .param .u32 pscale)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b32 %a<4>;
    .reg .{reg} %f<{dregs}>;
    .reg .b64 %rd<24>;
    .shared .align 1024 .b8 smem[{B_AT + 256 * 128}];
    ld.param.u64 %rd1, [pimg];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %r1;
    mov.u32 %r6, smem;
copy:
    setp.ge.u32 %p1, %r2, {words};
    @%p1 bra copied;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.b32 %r3, [%rd3];
    shl.b32 %r4, %r2, 2;
    add.u32 %r5, %r4, %r6;
    st.shared.b32 [%r5], %r3;
    add.u32 %r2, %r2, {threads};
    bra copy;
copied:
    bar.sync 0;
    fence.proxy.async.shared::cta;
    ld.param.u64 %rd4, [pc];
    ld.param.u64 %rd5, [pd];
    ld.param.u64 %rd6, [pa];
    mul.wide.u32 %rd7, %r1, {4 * dregs};
    add.s64 %rd11, %rd4, %rd7;
    add.s64 %rd12, %rd5, %rd7;
    mul.wide.u32 %rd8, %r1, 16;
    add.s64 %rd13, %rd6, %rd8;
    {loads}
    {a_loads}
    ld.param.u32 %r7, [pscale];
    setp.ne.u32 %p2, %r7, 0;
    shr.u32 %r8, %r6, 4;
    cvt.u64.u32 %rd14, %r8;
    or.b64 %rd20, %rd14, {a_bits};
    add.u32 %r9, %r6, {B_AT};
    shr.u32 %r10, %r9, 4;
    cvt.u64.u32 %rd15, %r10;
    or.b64 %rd21, %rd15, {b_bits};
    wgmma.fence.sync.aligned;
    {opcode} {vec}, {a_operand}, %rd21, %p2{imms};
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    {stores}
    ret;
}}
"""


@dataclass(frozen=True, slots=True)
class Case:
    """One run: N, A's element type, A's and B's layouts (``a`` None: A in registers), the
    immediate scales, whether D accumulates, D's type, B's element type (A's by default),
    ``.satfinite`` and whether edge values are planted."""

    n: int
    ty: str
    a: Operand | None
    b: Operand
    scale_a: int = 1
    scale_b: int = 1
    accumulate: bool = True
    dt: str = "f32"
    bt: str = ""
    satfinite: bool = False
    edges: bool = False

    @property
    def bty(self) -> str:
        return self.bt or self.ty

    @property
    def size(self) -> int:
        return SIZE[self.ty]

    @property
    def k(self) -> int:
        return 32 // self.size

    @property
    def d_registers(self) -> int:
        return self.n // 4 if self.dt == "f16" else self.n // 2

    def ptx(self, threads: int = THREADS) -> str:
        a_bits = 0 if self.a is None else self.a.descriptor_bits(64)
        return kernel(self, a_bits, self.b.descriptor_bits(self.n), threads)


def _words(values: np.ndarray, dt: str) -> np.ndarray:
    """D's values (threads x N/2 elements) as the 32-bit words of its registers."""
    if dt == "f32":
        return values.astype(np.float32).view(np.uint32)
    if dt == "s32":
        return values.astype(np.int64).astype(np.uint32)
    halves = values.astype(np.float16).view(np.uint16).astype(np.uint32)
    return halves[:, 0::2] | (halves[:, 1::2] << 16)


def _values(words: np.ndarray, dt: str) -> np.ndarray:
    if dt == "f32":
        return words.astype(np.uint32).view(np.float32).astype(np.float64)
    if dt == "s32":
        return words.astype(np.uint32).view(np.int32).astype(np.int64)
    w = words.astype(np.uint32)
    halves = np.stack([w & 0xFFFF, w >> 16], axis=-1).reshape(w.shape[0], -1).astype(np.uint16)
    return halves.view(np.float16).astype(np.float64)


def run(machine: Machine, case: Case, seed: int, randomize: bool = False, warpgroups: int = 1) -> list[str]:
    """Disagreements of the interpreted kernel (``warpgroups`` of them in the block, each computing
    the same D) with ``sa A @ sb B (+ C)`` rounded once (see the module docstring)."""
    rng = np.random.default_rng(seed)
    n, threads, size, k = case.n, THREADS * warpgroups, case.size, case.k
    a_bits, b_bits = random_bits(case.ty, (64, k), rng), random_bits(case.bty, (k, n), rng)
    if case.edges:
        plant_edges(a_bits, b_bits, case.ty, case.bty)
    c = random_c(case.dt, (64, n), rng, case.edges)
    img = np.zeros(B_AT + 256 * 128, np.uint8)
    a_frag: np.ndarray = np.zeros((threads, 4), np.uint32)
    per = 4 // size  # elements a register
    if case.a is None:
        for th in range(threads):
            for i in range(4 * per):
                element = int(a_bits[a_index(th % THREADS, i, size)])
                a_frag[th, i // per] |= element << (8 * size * (i % per))
    else:
        case.a.image(a_bits, img, 0, size)
    case.b.image(b_bits.T, img, B_AT, size)
    c_frag = np.zeros((threads, n // 2))
    for th in range(threads):
        for i in range(n // 2):
            c_frag[th, i] = c[d_index(th % THREADS, i)]
    zeros = np.zeros((threads, case.d_registers), np.uint32)
    args: dict[str, np.ndarray | np.generic] = {
        "pimg": img, "pa": a_frag, "pc": _words(c_frag, case.dt), "pd": zeros,
        "pscale": np.uint32(case.accumulate),
    }  # fmt: skip
    ptx = parse(case.ptx(threads))
    out = interpret(ptx, "k", machine, (1, threads, 0), args, randomize_order=randomize, seed=seed)
    d_frag = _values(np.asarray(out.outputs["pd"]).reshape(threads, case.d_registers), case.dt)
    a, b = decode(a_bits, case.ty), decode(b_bits, case.bty)
    if case.dt != "s32":
        a, b = case.scale_a * a, case.scale_b * b
    want = expected(a, b, c, case.dt, case.accumulate, case.satfinite)
    problems = []
    for group in range(warpgroups):
        got = np.zeros((64, n))
        for th in range(THREADS):
            for i in range(n // 2):
                got[d_index(th, i)] = d_frag[group * THREADS + th, i]
        bad = np.argwhere((got != want) & ~(np.isnan(got) & np.isnan(want)))
        problems += [f"{case} (warpgroup {group}): D[{r}][{col}] = {got[r, col]}, expected {want[r, col]}"
                     for r, col in bad[:4]]  # fmt: skip
    return problems


def knows_wgmma(form: Form) -> None:
    if form.instr.name not in NAMES:
        raise NotCovered(f"{form.instr.name} is not a wgmma form")


def partial_warpgroup(machine: Machine, form: Form) -> list[str]:
    """A ``.sync.aligned`` form that half of a warpgroup executes is refused (the PTX ISA makes
    it undefined): the model must say so, not go on."""
    body = f"{form.text} 0;" if form.instr.name == NAMES[3] else f"{form.text};"
    ptx = f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
{{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, 64;
    @%p1 bra done;
    {body}
done:
    ret;
}}
"""
    try:
        interpret(parse(ptx), "k", machine, (1, THREADS, 0), {})
    except WarpSyncError:
        return []
    return [f"{form.text}: half a warpgroup executed it without an error"]


def stray_tf32(machine: Machine, case: Case) -> list[str]:
    """A tf32 element whose low 13 bits are set (A in registers) is refused: the PTX ISA leaves
    the layout of tf32 data implementation-defined."""
    args: dict[str, np.ndarray | np.generic] = {
        "pimg": np.zeros(B_AT + 256 * 128, np.uint8), "pa": np.full((THREADS, 4), 0x3F800001, np.uint32),
        "pc": np.zeros((THREADS, case.d_registers), np.uint32),
        "pd": np.zeros((THREADS, case.d_registers), np.uint32),
        "pscale": np.uint32(1),
    }  # fmt: skip
    try:
        interpret(parse(case.ptx()), "k", machine, (1, THREADS, 0), args)
    except ModelLimitError:
        return []
    return [f"{case}: a tf32 element 0x3f800001 was read without an error"]


def check_wgmma(machine: Machine, form: Form) -> list[str]:
    """``mma_async`` forms: one shared-memory case (swizzles, scales and scale-d chosen by the
    form) and, for the first shape of each type combination, A from registers with edge values
    and (16-bit types) MN-major B two swizzle atoms wide; the sync forms: a case's kernel, which
    runs them, and their refusal when part of a warpgroup executes them."""
    knows_wgmma(form)
    seed = zlib.crc32(form.text.encode())
    if form.instr.name != NAMES[0]:
        return run(machine, Case(8, "f16", Operand(0), Operand(128)), seed) + partial_warpgroup(machine, form)
    n = int((form.mod("shape") or "").split("n")[1].split("k")[0])
    dt, at, bt = form.types if len(form.types) == 3 else (form.types[0], "tf32", "tf32")
    base = Case(n, at, None, Operand(0), dt=dt, bt=bt, satfinite=form.mod("satfinite") is not None)
    swizzles = (0, 128, 64, 32)
    a_swizzle, b_swizzle = swizzles[seed % 4], swizzles[(seed >> 2) % 4]
    sign = 1 if dt == "s32" else -1
    case = replace(base, a=Operand(a_swizzle), b=Operand(b_swizzle), scale_a=sign, accumulate=bool(seed & 16))
    problems = run(machine, case, seed)
    if n == 8:
        problems += run(machine, replace(base, b=Operand(128), scale_b=sign, edges=True), seed + 1)
        if at == "tf32":
            problems += stray_tf32(machine, base)
        if at in ("f16", "bf16"):
            wide = Operand(32, mn_major=True, k_outer=bool(seed & 32))
            problems += run(machine, replace(base, n=32, a=Operand(64, mn_major=True), b=wide), seed + 2)
    return problems
