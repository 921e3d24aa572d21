"""Oracle for ``tcgen05.mma`` (``kind::f16``, ``::tf32``, ``::f8f6f4``, ``::i8``) and
``tcgen05.commit``, from the PTX ISA's statements, computed here in numpy: ``D = A * B + D`` for
a 128 x N x K tile (K: 32 bytes of elements), A (128 x K) and B (K x N) laid out in shared memory
as K-major core matrices (8 rows of 16 bytes; byte ``b = k e`` of row ``r``, for elements of
``e`` bytes, at ``(r / 8) SBO + (b / 16) LBO + (r % 8) 16 + b % 16``), D read back from TMEM lane
``i`` (row ``i``), column ``j``; the commit's mbarrier phase completes (one arrival) once it is
done. The element formats are decoded here from their definitions (sign, exponent bits, bias,
mantissa bits; an e2m1 element in bits 5..2 of its byte, e3m2 and e2m3 in bits 5..0, the
padding random), and the format codes of the instruction descriptor are the ISA's table. The
values are chosen so that float64 holds every sum exactly: the reference is that sum rounded once
to f32; integer sums are exact, wrapped modulo 2**32 or (saturate) clamped to s32.
"""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import InterpResult, interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form

THREADS, M = 128, 128
LBO, SBO = 128, 256  # the two 16-byte halves of a row side by side, row groups 256 bytes apart
NAMES = ("tcgen05.mma", "tcgen05.commit")
# PTX ISA, "Instruction descriptor": the A/B format codes of each kind, and D's.
CODES = {
    "f16": 0,
    "bf16": 1,
    "tf32": 2,
    "e4m3": 0,
    "e5m2": 1,
    "e2m3": 3,
    "e3m2": 4,
    "e2m1": 5,
    "u8": 0,
    "s8": 1,
}
KIND = {"f16": "f16", "bf16": "f16", "tf32": "tf32", "u8": "i8", "s8": "i8"}  # the rest: f8f6f4
BYTES = {"f16": 2, "bf16": 2, "tf32": 4}  # the rest: one byte
# (exponent bits, mantissa bits, bias, whether the top exponent is inf/NaN) of the narrow floats;
# e4m3 has no infinities and one NaN code per sign (S.1111.111).
NARROW = {"e4m3": (4, 3, 7, False), "e5m2": (5, 2, 15, True), "e2m3": (2, 3, 1, False),
          "e3m2": (3, 2, 3, False), "e2m1": (2, 1, 1, False)}  # fmt: skip


def kind_of(fmt: str) -> str:
    return "kind::" + KIND.get(fmt, "f8f6f4")


def width(fmt: str) -> int:
    """Bytes of one element's container."""
    return BYTES.get(fmt, 1)


def depth(fmt: str) -> int:
    """K of one MMA: 32 bytes of elements."""
    return 32 // width(fmt)


def idesc(n: int, a: str = "f16", b: str | None = None, m: int = M, saturate: bool = False) -> int:
    """The instruction descriptor: D f32 (s32 for the integer kind), K-major, ``m x n``."""
    d = 2 if a in ("u8", "s8") else 1
    b = b or a
    return (
        (int(saturate) << 3)
        | (d << 4)
        | (CODES[a] << 7)
        | (CODES[b] << 10)
        | ((n >> 3) << 17)
        | ((m >> 4) << 24)
    )


def smem_desc_bits(swizzle: int = 0) -> int:
    """The shared-memory descriptor's fields but the start address."""
    return ((LBO >> 4) << 16) | ((SBO >> 4) << 32) | (1 << 46) | (swizzle << 61)


def layout(containers: np.ndarray, size: int) -> np.ndarray:
    """A (rows x K) matrix of ``size``-byte containers as the bytes of its K-major core matrices."""
    rows, k = containers.shape
    out = np.zeros(rows // 8 * SBO, np.uint8)
    r, kk = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    b = kk * size
    at = r // 8 * SBO + b // 16 * LBO + r % 8 * 16 + b % 16
    c = containers.astype(np.uint64)
    for j in range(size):  # little-endian
        out[at + j] = ((c >> np.uint64(8 * j)) & np.uint64(0xFF)).astype(np.uint8)
    return out


def kernel(n: int, desc_word: int, mma: str = "", commit: str = "", swizzle: int = 0) -> str:
    """Load A, B (laid out) and C (128 x n f32) from global memory, D := C in TMEM, thread 0
    issues the MMA and the commit, every thread waits on the mbarrier and stores its row of D."""
    mma = mma or "tcgen05.mma.cta_group::1.kind::f16"
    commit = commit or "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"
    cols = max(32, n)
    regs = "{" + ", ".join(f"%f{j}" for j in range(n)) + "}"
    load_c = "\n".join(f"    ld.global.f32 %f{j}, [%rd7+{4 * j}];" for j in range(n))
    keep = "\n".join(f"    st.global.f32 [%rd8+{4 * j}], %f{j};" for j in range(n))
    desc = smem_desc_bits(swizzle)
    return f"""
.version 8.6
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 out, .param .u32 acc)
{{
    .reg .pred %p<8>;
    .reg .b32 %r<40>;
    .reg .f32 %f<260>;
    .reg .b64 %rd<24>;
    .shared .align 128 .b8 sa[{M // 8 * SBO}];
    .shared .align 128 .b8 sb[{n // 8 * SBO}];
    .shared .align 8 .b64 bar;
    .shared .align 4 .b32 slot;
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    ld.param.u64 %rd3, [c];
    ld.param.u64 %rd4, [out];
    ld.param.u32 %r30, [acc];
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;
    setp.eq.u32 %p1, %r2, 0;
    setp.eq.u32 %p2, %r1, 0;
    setp.ne.u32 %p3, %r30, 0;
    mov.u32 %r10, sa;
    mov.u32 %r11, sb;
    mov.u32 %r12, %r1;
COPY_A:
    mul.wide.u32 %rd10, %r12, 4;
    add.s64 %rd11, %rd1, %rd10;
    ld.global.u32 %r13, [%rd11];
    shl.b32 %r14, %r12, 2;
    add.u32 %r14, %r10, %r14;
    st.shared.u32 [%r14], %r13;
    add.u32 %r12, %r12, {THREADS};
    setp.lt.u32 %p5, %r12, {M // 8 * SBO // 4};
    @%p5 bra COPY_A;
    mov.u32 %r12, %r1;
COPY_B:
    setp.ge.u32 %p5, %r12, {n // 8 * SBO // 4};
    @%p5 bra COPIED;
    mul.wide.u32 %rd10, %r12, 4;
    add.s64 %rd11, %rd2, %rd10;
    ld.global.u32 %r13, [%rd11];
    shl.b32 %r14, %r12, 2;
    add.u32 %r14, %r11, %r14;
    st.shared.u32 [%r14], %r13;
    add.u32 %r12, %r12, {THREADS};
    bra COPY_B;
COPIED:
    // The tensor core reads A and B through the async proxy: fence the generic stores.
    fence.proxy.async.shared::cta;
    mov.u32 %r3, slot;
    mov.u32 %r9, bar;
    @%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], {cols};
    @%p2 mbarrier.init.shared::cta.b64 [%r9], 1;
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    tcgen05.fence::after_thread_sync;
    ld.shared.u32 %r4, [%r3];
    and.b32 %r5, %r2, 3;
    shl.b32 %r5, %r5, 21;
    add.u32 %r6, %r4, %r5;
    mul.wide.u32 %rd6, %r1, {4 * n};
    add.s64 %rd7, %rd3, %rd6;
    add.s64 %rd8, %rd4, %rd6;
{load_c}
    tcgen05.st.sync.aligned.32x32b.x{n}.b32 [%r6], {regs};
    tcgen05.wait::st.sync.aligned;
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    tcgen05.fence::after_thread_sync;
    shr.u32 %r20, %r10, 4;
    cvt.u64.u32 %rd12, %r20;
    or.b64 %rd12, %rd12, {desc};
    shr.u32 %r21, %r11, 4;
    cvt.u64.u32 %rd13, %r21;
    or.b64 %rd13, %rd13, {desc};
    mov.u32 %r22, {desc_word};
    @%p2 {mma} [%r4], %rd12, %rd13, %r22, %p3;
    @%p2 {commit} [%r9];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r9], 0;
    @!%p4 bra WAIT;
    tcgen05.fence::after_thread_sync;
    tcgen05.ld.sync.aligned.32x32b.x{n}.b32 {regs}, [%r6];
    tcgen05.wait::ld.sync.aligned;
{keep}
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    @%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, {cols};
    ret;
}}
"""


def narrow_value(byte: int, fmt: str) -> float:
    """The value of a narrow float in its byte container, from the format's definition."""
    eb, mb, bias, ieee = NARROW[fmt]
    code = byte >> 2 & 0xF if fmt == "e2m1" else byte & (0xFF if eb + mb == 7 else 0x3F)
    sign = -1.0 if code >> (eb + mb) & 1 else 1.0
    e, m = code >> mb & ((1 << eb) - 1), code & ((1 << mb) - 1)
    if ieee and e == (1 << eb) - 1:
        return sign * np.inf if m == 0 else np.nan
    if fmt == "e4m3" and e == 15 and m == 7:
        return np.nan
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - mb)
    return sign * (1 + m / 2**mb) * 2.0 ** (e - bias)


def _narrow_codes(fmt: str, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Random containers of finite values; e5m2 kept within 2**-7 .. 2**8 so that every sum of
    products is exact in float64; the padding bits of the sub-byte formats random."""
    finite = [v for v in range(256) if np.isfinite(narrow_value(v, fmt))]
    if fmt == "e5m2":
        finite = [v for v in finite if 8 <= (v >> 2 & 31) <= 22]
    return rng.choice(np.array(finite, np.uint8), shape)


def containers(fmt: str, rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Random elements of ``fmt``: their containers and values (float64, or int64 for u8/s8)."""
    if fmt in ("f16", "bf16", "tf32"):
        v = rng.integers(-24, 25, shape) / 8.0  # exact in each of them
        if fmt == "f16":
            return v.astype(np.float16).view(np.uint16), v
        bits = v.astype(np.float32).view(np.uint32)
        return (bits >> 16 if fmt == "bf16" else bits), v
    if fmt in ("u8", "s8"):
        ints = rng.integers(0, 256, shape) if fmt == "u8" else rng.integers(-128, 128, shape)
        return (ints & 0xFF).astype(np.uint8), ints.astype(np.int64)
    c = _narrow_codes(fmt, rng, shape)
    return c, np.vectorize(lambda x: narrow_value(int(x), fmt), otypes=[np.float64])(c)


def operands(n: int, a: str, b: str, seed: int) -> tuple[np.ndarray, ...]:
    """A's and B's containers (A: 128 x K, B: N rows of K, as K-major stores them), their values
    (A 128 x K, B K x N) and C (128 x N, f32 or s32)."""
    rng = np.random.default_rng(seed)
    k = depth(a)
    a_bits, a_vals = containers(a, rng, (M, k))
    b_bits, b_vals = containers(b, rng, (n, k))
    if a in ("u8", "s8"):
        c = rng.integers(-(2**20), 2**20, (M, n)).astype(np.int32)
    else:
        c = (rng.integers(-400, 401, (M, n)) / 4.0).astype(np.float32)
    return a_bits, b_bits, a_vals, b_vals.T, c


def launch(machine: Machine, ptx: str, a_bits: np.ndarray, b_bits: np.ndarray, c: np.ndarray, size: int,
           accumulate: bool = True, seed: int | None = None) -> InterpResult:  # fmt: skip
    args: dict[str, np.ndarray | int] = {
        "a": layout(a_bits, size),
        "b": layout(b_bits, size),
        "c": c,
        "out": np.zeros_like(c),
        "acc": int(accumulate),
    }
    return interpret(parse(ptx), "k", machine, (1, THREADS, 0), args,
                     randomize_order=seed is not None, seed=seed or 0)  # fmt: skip


def reference(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, accumulate: bool = True, saturate: bool = False
) -> np.ndarray:
    """D from A's and B's values: f32 for float values (float64 holds the sum exactly), s32
    wrapped (or clamped) for integers."""
    if a.dtype.kind == "i":
        total = a @ b + (c.astype(np.int64) if accumulate else 0)
        if saturate:
            total = np.clip(total, -(2**31), 2**31 - 1)
        return (total & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return (a @ b + (c.astype(np.float64) if accumulate else 0.0)).astype(np.float32)


def run_case(
    machine: Machine, n: int, a: str, b: str, accumulate: bool, seed: int, order: int | None = None
) -> list[str]:
    """Problems of one tile (empty: the model agrees with the reference)."""
    a_bits, b_bits, a_vals, b_vals, c = operands(n, a, b, seed)
    ptx = kernel(n, idesc(n, a, b), mma=f"tcgen05.mma.cta_group::1.{kind_of(a)}")
    res = launch(machine, ptx, a_bits, b_bits, c, width(a), accumulate, order)
    got, want = res.outputs["out"], reference(a_vals, b_vals, c, accumulate)
    bad = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
    if not bad.size:
        return []
    i, j = (int(v) for v in bad[0])
    return [f"128x{n}x{depth(a)} {a} x {b}: D[{i},{j}] = {got[i, j]}, want {want[i, j]}"]


# Per kind, the tiles a form is checked on: (N, A format, B format, accumulate).
CASES = {
    "kind::f16": ((64, "f16", "f16", True), (32, "bf16", "bf16", True), (16, "f16", "f16", False)),
    "kind::tf32": ((32, "tf32", "tf32", True), (16, "tf32", "tf32", False)),
    "kind::f8f6f4": ((32, "e4m3", "e5m2", True), (16, "e2m1", "e2m3", True), (16, "e3m2", "e4m3", False)),
    "kind::i8": ((32, "s8", "s8", True), (16, "u8", "s8", False)),
}


def _problems(machine: Machine, form: Form) -> list[str]:
    problems = []
    for k, (n, a, b, accumulate) in enumerate(CASES[form.mod("kind") or "kind::f16"]):
        problems += run_case(machine, n, a, b, accumulate, k, order=k if k else None)
    return problems


def knows_tcgen05_mma(form: Form) -> None:
    if form.instr.name not in NAMES:
        raise NotCovered(form.text)


def check_tcgen05_mma(machine: Machine, form: Form) -> list[str]:
    """Problems of one form (empty: it agrees with the PTX ISA)."""
    knows_tcgen05_mma(form)
    try:
        return [f"{form.text}: {p}" for p in _problems(machine, form)]
    except ExecutionError as exc:
        return [f"{form.text}: {exc}"]
