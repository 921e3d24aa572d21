"""Oracle for ``tcgen05.mma...kind::f16`` and ``tcgen05.commit``, from the PTX ISA's statements,
computed here in numpy: ``D = A * B + D`` for a 128 x N x 16 tile, A (128 x 16) and B (16 x N)
laid out in shared memory as K-major core matrices (8 rows of 16 bytes; element ``(r, k)`` at
``(r / 8) SBO + (k / 8) LBO + (r % 8) 16 + (k % 8) 2``), D read back from TMEM lane ``i``
(row ``i``), column ``j``; the commit's mbarrier phase completes (one arrival) once it is done.
The values are chosen so that float64 holds every sum exactly: the reference is that sum
rounded once to f32.
"""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import InterpResult, interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form

THREADS, M, K = 128, 128, 16
LBO, SBO = 128, 256  # the two core matrices of a row group side by side, row groups 256 bytes apart
NAMES = ("tcgen05.mma", "tcgen05.commit")


def idesc(n: int, bf16: bool = False, m: int = M) -> int:
    """The instruction descriptor: D f32, A and B f16 (or bf16), K-major, ``m x n``."""
    fmt = 1 if bf16 else 0
    return (1 << 4) | (fmt << 7) | (fmt << 10) | ((n >> 3) << 17) | ((m >> 4) << 24)


def smem_desc_bits(swizzle: int = 0) -> int:
    """The shared-memory descriptor's fields but the start address."""
    return ((LBO >> 4) << 16) | ((SBO >> 4) << 32) | (1 << 46) | (swizzle << 61)


def layout(mat: np.ndarray) -> np.ndarray:
    """A (rows x 16) matrix of 16-bit patterns as the bytes of its K-major core matrices."""
    rows = mat.shape[0]
    out = np.zeros(rows // 8 * SBO, np.uint8)
    r, k = np.meshgrid(np.arange(rows), np.arange(K), indexing="ij")
    at = r // 8 * SBO + k // 8 * LBO + r % 8 * 16 + k % 8 * 2
    out[at] = (mat & 0xFF).astype(np.uint8)
    out[at + 1] = (mat >> 8).astype(np.uint8)
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


def operands(n: int, bf16: bool, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A (128 x 16), B (16 x N) and C (128 x N) whose exact sums float64 holds: A and B small
    multiples of 1/8 in f16/bf16, C multiples of 1/4."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-24, 25, (M, K)) / 8.0
    b = rng.integers(-24, 25, (K, n)) / 8.0
    c = rng.integers(-400, 401, (M, n)) / 4.0
    return a, b, c.astype(np.float32)


def bits16(v: np.ndarray, bf16: bool) -> np.ndarray:
    if bf16:
        return (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return v.astype(np.float16).view(np.uint16)


def launch(machine: Machine, ptx: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, bf16: bool,
           accumulate: bool = True, seed: int | None = None) -> InterpResult:  # fmt: skip
    args = {
        "a": layout(bits16(a, bf16).astype(np.int64)),
        "b": layout(bits16(b.T, bf16).astype(np.int64)),  # B is K-major: its N rows of K
        "c": c,
        "out": np.zeros_like(c),
        "acc": int(accumulate),
    }
    return interpret(parse(ptx), "k", machine, (1, THREADS, 0), args,
                     randomize_order=seed is not None, seed=seed or 0)  # fmt: skip


def reference(a: np.ndarray, b: np.ndarray, c: np.ndarray, accumulate: bool = True) -> np.ndarray:
    return (a @ b + (c.astype(np.float64) if accumulate else 0.0)).astype(np.float32)


def _problems(machine: Machine, form: Form) -> list[str]:
    problems = []
    for k, (n, bf16, accumulate) in enumerate(((64, False, True), (32, True, True), (16, False, False))):
        a, b, c = operands(n, bf16, k)
        res = launch(machine, kernel(n, idesc(n, bf16)), a, b, c, bf16, accumulate, seed=k if k else None)
        got, want = res.outputs["out"], reference(a, b, c, accumulate)
        bad = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
        if bad.size:
            i, j = (int(v) for v in bad[0])
            kind = "bf16" if bf16 else "f16"
            problems.append(f"128x{n}x16 {kind}: D[{i},{j}] = {got[i, j]}, want {want[i, j]}")
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
