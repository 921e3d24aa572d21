"""Oracle for ``wgmma`` (warpgroup MMA, sm_90a) from the PTX ISA's layouts, against numpy.

Written out here, independently of the semantics (PTX ISA, "Asynchronous Warpgroup Level
Matrix Multiply-Accumulate Instructions"), with ``w`` a thread's warp in its warpgroup,
``g = lane >> 2`` and ``t = lane % 4``:

- "wgmma.mma_async register fragments": D element ``i`` of a thread is row
  ``16 w + g + 8 ((i / 2) % 2)``, column ``8 (i / 4) + 2 t + i % 2``; A in registers (eight
  16-bit elements, two a register, the first in the low half): row ``16 w + g + 8 ((i / 2) % 2)``,
  column ``2 t + i % 2 + 8 (i / 4)``;
- "Matrix Descriptor Format": start address, LBO and SBO as ``(x & 0x3FFFF) >> 4`` in bits
  0-13, 16-29 and 32-45, the swizzle mode in bits 62-63 (1 128-byte, 2 64-byte, 3 32-byte);
- "Shared Memory Matrix Layout" (canonical layouts, Table 38's swizzle atoms): K-major without
  swizzling, 8 x 16-byte core matrices, LBO apart along K and SBO apart along M/N; K-major with
  an S-byte swizzle, 8 rows of S bytes, groups of 8 rows SBO apart; MN-major with an S-byte
  swizzle (one atom of S/2 elements along M/N), 8 rows of K S bytes apart, groups SBO apart;
  the swizzle XORs the 16-byte chunk (address bits 4-6) with address bits 7-9 (128-byte; the
  low two and one bits for 64 and 32 bytes), patterns starting on a 1024-byte boundary.

The kernel copies an image of shared memory built here from those rules, builds the
descriptors, runs ``wgmma.fence``, ``mma_async``, ``commit_group`` and ``wait_group 0`` and
stores D; the expected D is ``sa A @ sb B (+ C)`` with values whose sums are exact in f32, so
that any summation order gives it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import WarpSyncError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form

THREADS = 128
SWIZZLE_MODE = {0: 0, 128: 1, 64: 2, 32: 3}  # swizzle bytes -> descriptor mode
B_AT = 16384  # byte offset of B's image in shared memory (a multiple of 1024)
NAMES = ("wgmma.mma_async.sync.aligned", "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
         "wgmma.wait_group.sync.aligned")  # fmt: skip


def d_index(thread: int, i: int) -> tuple[int, int]:
    w, lane = divmod(thread, 32)
    g, t = lane >> 2, lane % 4
    return 16 * w + g + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * t + i % 2


def a_index(thread: int, i: int) -> tuple[int, int]:
    w, lane = divmod(thread, 32)
    g, t = lane >> 2, lane % 4
    return 16 * w + g + 8 * ((i // 2) % 2), 2 * t + i % 2 + 8 * (i // 4)


def swizzled(offset: int, swizzle: int) -> int:
    if swizzle == 0:
        return offset
    mask = {128: 7, 64: 3, 32: 1}[swizzle]
    return offset ^ (((offset >> 7) & mask) << 4)


def offset(mn: int, k: int, swizzle: int, mn_major: bool, lbo: int, sbo: int) -> int:
    """Byte offset of element ``(mn, k)`` from the matrix start (before the swizzle)."""
    if mn_major:
        return (k // 8) * sbo + (k % 8) * swizzle + 2 * mn
    if swizzle == 0:
        return (mn // 8) * sbo + (mn % 8) * 16 + (k // 8) * lbo + 2 * (k % 8)
    return (mn // 8) * sbo + (mn % 8) * swizzle + 2 * k


@dataclass(frozen=True, slots=True)
class Operand:
    """How one matrix lies in shared memory."""

    swizzle: int  # bytes: 0, 32, 64 or 128
    mn_major: bool = False

    def strides(self, extent: int) -> tuple[int, int]:
        """(LBO, SBO) of a compact layout of ``extent`` rows of M or N and 16 of K."""
        if self.mn_major:
            return 0, 8 * self.swizzle
        if self.swizzle == 0:
            return 128, 256  # the two core matrices of a group side by side, then the next group
        return 0, 8 * self.swizzle

    def descriptor_bits(self, extent: int) -> int:
        """The descriptor without its start address."""
        lbo, sbo = self.strides(extent)
        return ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (SWIZZLE_MODE[self.swizzle] << 62)

    def image(self, bits: np.ndarray, into: np.ndarray, at: int) -> None:
        """Write the 16-bit elements ``bits`` (``extent`` x 16, M/N by K) into ``into`` at ``at``."""
        lbo, sbo = self.strides(bits.shape[0])
        for mn in range(bits.shape[0]):
            for k in range(16):
                byte = at + swizzled(offset(mn, k, self.swizzle, self.mn_major, lbo, sbo), self.swizzle)
                into[byte : byte + 2] = np.frombuffer(int(bits[mn, k]).to_bytes(2, "little"), np.uint8)


def kernel(
    n: int, a_regs: bool, a_bits: int, b_bits: int, scales: tuple[int, int, int, int], threads: int = THREADS
) -> str:
    """``threads / 128`` warpgroups: copy the image to shared memory, D (N/2 f32 a thread) from
    ``pc``, the wgmma sequence, D to ``pd``. ``scales``: imm-scale-a, imm-scale-b, imm-trans-a,
    imm-trans-b."""
    sa, sb, ta, tb = scales
    words = (B_AT + 256 * 128) // 4
    vec = "{" + ", ".join(f"%f{i}" for i in range(n // 2)) + "}"
    a_operand = "{%a0, %a1, %a2, %a3}" if a_regs else "%rd20"
    trans = f"{tb}" if a_regs else f"{ta}, {tb}"
    loads = "\n    ".join(f"ld.global.f32 %f{i}, [%rd11+{4 * i}];" for i in range(n // 2))
    stores = "\n    ".join(f"st.global.f32 [%rd12+{4 * i}], %f{i};" for i in range(n // 2))
    a_loads = "\n    ".join(f"ld.global.b32 %a{j}, [%rd13+{4 * j}];" for j in range(4))
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 pimg, .param .u64 pa, .param .u64 pc, .param .u64 pd, .param .u32 pscale)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b32 %a<4>;
    .reg .f32 %f<{n // 2}>;
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
    mul.wide.u32 %rd7, %r1, {2 * n};
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
    wgmma.mma_async.sync.aligned.m64n{n}k16.f32.TYPE.TYPE {vec}, {a_operand}, %rd21, %p2, {sa}, {sb}, {trans};
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    {stores}
    ret;
}}
"""


@dataclass(frozen=True, slots=True)
class Case:
    """One run: N, the element type, A's and B's layouts (``a`` None: A in registers), the
    immediate scales and whether D accumulates."""

    n: int
    ty: str
    a: Operand | None
    b: Operand
    scale_a: int = 1
    scale_b: int = 1
    accumulate: bool = True

    def ptx(self, threads: int = THREADS) -> str:
        a_bits = 0 if self.a is None else self.a.descriptor_bits(64)
        ta = int(self.a.mn_major) if self.a is not None else 0
        scales = (self.scale_a, self.scale_b, ta, int(self.b.mn_major))
        text = kernel(self.n, self.a is None, a_bits, self.b.descriptor_bits(self.n), scales, threads)
        return text.replace("TYPE", self.ty)


def _bits(x: np.ndarray, ty: str) -> np.ndarray:
    if ty == "f16":
        return x.astype(np.float16).view(np.uint16)
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # exact: few mantissa bits


def run(machine: Machine, case: Case, seed: int, randomize: bool = False, warpgroups: int = 1) -> list[str]:
    """Disagreements of the interpreted kernel (``warpgroups`` of them in the block, each computing
    the same D) with ``sa A @ sb B (+ C)``."""
    rng = np.random.default_rng(seed)
    n, threads = case.n, THREADS * warpgroups
    a = rng.integers(-8, 9, (64, 16)) / 4.0
    b = rng.integers(-8, 9, (16, n)) / 4.0
    c = rng.integers(-64, 65, (64, n)) / 4.0
    img = np.zeros(B_AT + 256 * 128, np.uint8)
    a_frag: np.ndarray = np.zeros((threads, 4), np.uint32)
    if case.a is None:
        halves = np.zeros((threads, 8), np.uint32)
        for th in range(threads):
            for i in range(8):
                halves[th, i] = _bits(np.array([a[a_index(th % THREADS, i)]]), case.ty)[0]
        a_frag = halves[:, 0::2] | (halves[:, 1::2] << 16)
    else:
        case.a.image(_bits(a, case.ty), img, 0)
    case.b.image(_bits(b.T, case.ty), img, B_AT)
    c_frag = np.zeros((threads, n // 2), np.float32)
    for th in range(threads):
        for i in range(n // 2):
            c_frag[th, i] = c[d_index(th % THREADS, i)]
    zeros = np.zeros((threads, n // 2), np.float32)
    args: dict[str, np.ndarray | np.generic] = {
        "pimg": img, "pa": a_frag, "pc": c_frag, "pd": zeros, "pscale": np.uint32(case.accumulate),
    }  # fmt: skip
    ptx = parse(case.ptx(threads))
    out = interpret(ptx, "k", machine, (1, threads, 0), args, randomize_order=randomize, seed=seed)
    d_frag = np.asarray(out.outputs["pd"]).reshape(threads, n // 2)
    want = (case.scale_a * a) @ (case.scale_b * b) + (c if case.accumulate else 0.0)
    problems = []
    for group in range(warpgroups):
        got = np.zeros((64, n))
        for th in range(THREADS):
            for i in range(n // 2):
                got[d_index(th, i)] = d_frag[group * THREADS + th, i]
        bad = np.argwhere(got != want)
        problems += [f"{case} (warpgroup {group}): D[{r}][{col}] = {got[r, col]}, expected {want[r, col]}"
                     for r, col in bad[:4]]  # fmt: skip
    return problems


def knows_wgmma(form: Form) -> None:
    if form.instr.name not in NAMES:
        raise NotCovered(f"{form.instr.name} is not a wgmma form")
    if form.instr.name == NAMES[0] and (form.types[0] != "f32" or form.types[1] not in ("f16", "bf16")):
        raise NotCovered(f"wgmma .{'.'.join(form.types)} is not covered")


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


def check_wgmma(machine: Machine, form: Form) -> list[str]:
    """``mma_async`` forms: one shared-memory case (the swizzle chosen by the form) and, for the
    first shape, A from registers and N-major B; the sync forms: a case's kernel, which runs
    them, and their refusal when part of a warpgroup executes them."""
    knows_wgmma(form)
    seed = zlib.crc32(form.text.encode())
    if form.instr.name != NAMES[0]:
        return run(machine, Case(8, "f16", Operand(0), Operand(128)), seed) + partial_warpgroup(machine, form)
    n, ty = int((form.mod("shape") or "").split("n")[1].split("k")[0]), form.types[1]
    swizzles = (0, 128, 64, 32)
    a_swizzle, b_swizzle = swizzles[seed % 4], swizzles[(seed >> 2) % 4]
    problems = run(machine, Case(n, ty, Operand(a_swizzle), Operand(b_swizzle), -1, 1, bool(seed & 16)), seed)
    if n == 8:
        problems += run(machine, Case(n, ty, None, Operand(128, mn_major=True), 1, -1), seed + 1)
    return problems
