"""Oracle for the block-scaled ``tcgen05.mma`` (``kind::mxf8f6f4``, ``::mxf4``, ``::mxf4nvf4``) and
``tcgen05.cp``, from the PTX ISA's statements, computed here in numpy.

``D = (A * scale_A) * (B * scale_B) + D`` for a 128 x N x K tile: A and B as K-major core matrices
in shared memory (:mod:`tests.model.oracle.tcgen05_mma`'s layout), one byte an element for
mxf8f6f4, two e2m1 a byte (low nibble first) for the e2m1 kinds; each row of A and column of B cut
into 1, 2 or 4 blocks along K, each times its scale factor. The scale bytes are decoded here from
their definitions (ue8m0 ``2**(e - 127)``, NaN at 0xff; ue4m3 the unsigned e4m3, bias 7, NaN at
0x7f) and placed where the ISA's figures put them, as the model reads them: thread 0 copies a
scale-factor atom (32 rows of 16 bytes) with ``tcgen05.cp.cta_group::1.32x128b.warpx4`` into every
32-lane partition, so that row ``r + 32 c`` of A (column ``r + 32 c`` of B) finds block ``q`` in
byte ``ID + q`` of lane ``r``, column ``c``. The instruction descriptor is written from Tables 43
and 44. Values are chosen so that float64 holds every sum exactly (scales 2**-3 .. 2**3 unless a
test sets extremes): the reference is that sum rounded once to f32.
"""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import InterpResult, interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form
from tests.model.oracle.tcgen05_copy import copy_problems
from tests.model.oracle.tcgen05_mma import NAMES as MMA_NAMES
from tests.model.oracle.tcgen05_mma import (
    SBO,
    THREADS,
    check_tcgen05_mma,
    containers,
    layout,
    narrow_value,
    smem_desc_bits,
)

M = 128
SF_COL = 256  # scale factors of A from this TMEM column, B's four columns on
# PTX ISA, Tables 43 and 44: the A/B format codes of each block-scaled kind.
MX_CODES = {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}
BLOCKS = {"scale_vec::1X": 1, "scale_vec::2X": 2, "scale_vec::4X": 4}
KIND_K = {"kind::mxf8f6f4": 32, "kind::mxf4": 64, "kind::mxf4nvf4": 64}
PTX_OF = {"kind::mxf4nvf4": "8.7"}  # the others from 8.6


def idesc(kind: str, n: int, a: str = "e2m1", b: str | None = None, sfa: int = 0, sfb: int = 0,
          ue4m3: bool = False, m: int = M) -> int:  # fmt: skip
    """The block-scaled instruction descriptor (K-major, dense, no negation)."""
    b = b or a
    codes = (1, 1) if kind != "kind::mxf8f6f4" else (MX_CODES[a], MX_CODES[b])
    return ((sfb << 4) | (codes[0] << 7) | (codes[1] << 10) | ((n >> 3) << 17) | (int(not ue4m3) << 23)
            | ((m >> 7) << 27) | (sfa << 29))  # fmt: skip


def ue8m0(code: int) -> float:
    return np.nan if code == 0xFF else 2.0 ** (code - 127)


def ue4m3(code: int) -> float:
    code &= 0x7F
    if code == 0x7F:
        return np.nan
    e, m = code >> 3, code & 7
    return m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)


def sf_atoms(scales: np.ndarray, sf_id: int, rng: np.random.Generator) -> np.ndarray:
    """The shared bytes of the scale-factor atoms for (rows, blocks) scale codes: atom ``a`` holds
    rows ``128 a .. 128 a + 127``; row ``r + 32 c`` of it in byte ``16 r + 4 c + sf_id + q``; the
    bytes no block uses random (the ID must pick the right ones)."""
    rows, blocks = scales.shape
    atoms = -(-rows // 128)
    out = rng.integers(0, 256, atoms * 512).astype(np.uint8)
    for i in range(rows):
        a, rr = divmod(i, 128)
        c, r = divmod(rr, 32)
        for q in range(blocks):
            out[512 * a + 16 * r + 4 * c + sf_id + q] = scales[i, q]
    return out


def operands(kind: str, n: int, a: str, b: str, seed: int) -> tuple[np.ndarray, ...]:
    """A's and B's bytes (rows of K-major data), their values (A 128 x K, B N x K), C."""
    rng = np.random.default_rng(seed)
    k = KIND_K[kind]
    if kind == "kind::mxf8f6f4":
        a_bits, a_vals = containers(a, rng, (M, k))
        b_bits, b_vals = containers(b, rng, (n, k))
    else:
        out = []
        for rows in (M, n):
            codes = rng.integers(0, 16, (rows, k)).astype(np.uint8)
            vals = np.vectorize(lambda c: narrow_value(int(c) << 2, "e2m1"), otypes=[np.float64])(codes)
            out += [(codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8), vals]
        a_bits, a_vals, b_bits, b_vals = out
    c = (rng.integers(-400, 401, (M, n)) / 4.0).astype(np.float32)
    return a_bits, b_bits, a_vals, b_vals, c


def kernel(kind: str, vec: str, n: int, desc_word: int, sf_copy: str = "32x128b.warpx4",
           nb_atoms: int = 1, version: str = "") -> str:  # fmt: skip
    """A, B, the scale-factor atoms (A's, then B's) and C from global memory; thread 0 copies the
    atoms to TMEM (A's at column 256, B's at 260 and 264), issues the MMA and its commit; every
    thread waits on the mbarrier and stores its row of D."""
    chunks = [(j0, min(n - j0, 128)) for j0 in range(0, n, 128)]  # .x128 at most a load or store
    regs = ["{" + ", ".join(f"%f{j}" for j in range(j0, j0 + w)) + "}" for j0, w in chunks]
    st = "\n".join(
        f"    add.u32 %r46, %r6, {j0};\n    tcgen05.st.sync.aligned.32x32b.x{w}.b32 [%r46], {r};"
        for (j0, w), r in zip(chunks, regs, strict=True)
    )
    ld = "\n".join(
        f"    add.u32 %r46, %r6, {j0};\n    tcgen05.ld.sync.aligned.32x32b.x{w}.b32 {r}, [%r46];"
        for (j0, w), r in zip(chunks, regs, strict=True)
    )
    load_c = "\n".join(f"    ld.global.f32 %f{j}, [%rd7+{4 * j}];" for j in range(n))
    keep = "\n".join(f"    st.global.f32 [%rd8+{4 * j}], %f{j};" for j in range(n))
    desc, sf_desc = smem_desc_bits(), (128 >> 4 << 16) | (128 >> 4 << 32) | (1 << 46)
    sf_bytes = 512 * (1 + nb_atoms) if sf_copy != "128x128b" else 2048 * (1 + nb_atoms)
    atom = 512 if sf_copy != "128x128b" else 2048
    copies = "\n".join(
        f"    add.u32 %r44, %r12, {atom * j};\n    shr.u32 %r44, %r44, 4;\n    cvt.u64.u32 %rd14, %r44;\n"
        f"    or.b64 %rd14, %rd14, {sf_desc};\n    add.u32 %r45, %r4, {SF_COL + 4 * j};\n"
        f"    @%p2 tcgen05.cp.cta_group::1.{sf_copy} [%r45], %rd14;"
        for j in range(1 + nb_atoms)
    )
    mma = f"tcgen05.mma.cta_group::1.{kind}.block_scale{'.' + vec if vec else ''}"
    copy = "\n".join(
        f"""    mov.u32 %r12, %r1;
COPY_{name}:
    setp.ge.u32 %p5, %r12, {size // 4};
    @%p5 bra DONE_{name};
    mul.wide.u32 %rd10, %r12, 4;
    add.s64 %rd11, {src}, %rd10;
    ld.global.u32 %r13, [%rd11];
    shl.b32 %r14, %r12, 2;
    add.u32 %r14, {dst}, %r14;
    st.shared.u32 [%r14], %r13;
    add.u32 %r12, %r12, {THREADS};
    bra COPY_{name};
DONE_{name}:"""
        for name, src, dst, size in (
            ("A", "%rd1", "%r10", M // 8 * SBO),
            ("B", "%rd2", "%r11", n // 8 * SBO),
            ("S", "%rd5", "%r15", sf_bytes),
        )
    )
    return f"""
.version {version or PTX_OF.get(kind, "8.6")}
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 out, .param .u32 acc,
                  .param .u64 sf)
{{
    .reg .pred %p<8>;
    .reg .b32 %r<50>;
    .reg .f32 %f<260>;
    .reg .b64 %rd<24>;
    .shared .align 128 .b8 sa[{M // 8 * SBO}];
    .shared .align 128 .b8 sb[{max(n // 8, 1) * SBO}];
    .shared .align 128 .b8 ssf[{sf_bytes}];
    .shared .align 8 .b64 bar;
    .shared .align 4 .b32 slot;
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    ld.param.u64 %rd3, [c];
    ld.param.u64 %rd4, [out];
    ld.param.u64 %rd5, [sf];
    ld.param.u32 %r30, [acc];
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;
    setp.eq.u32 %p1, %r2, 0;
    setp.eq.u32 %p2, %r1, 0;
    setp.ne.u32 %p3, %r30, 0;
    mov.u32 %r10, sa;
    mov.u32 %r11, sb;
    mov.u32 %r15, ssf;
{copy}
    // The tensor core and the copies read shared memory through the async proxy.
    fence.proxy.async.shared::cta;
    mov.u32 %r3, slot;
    mov.u32 %r9, bar;
    @%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 512;
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
{st}
    tcgen05.wait::st.sync.aligned;
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    tcgen05.fence::after_thread_sync;
    mov.u32 %r12, %r15;
{copies}
    shr.u32 %r20, %r10, 4;
    cvt.u64.u32 %rd12, %r20;
    or.b64 %rd12, %rd12, {desc};
    shr.u32 %r21, %r11, 4;
    cvt.u64.u32 %rd13, %r21;
    or.b64 %rd13, %rd13, {desc};
    mov.u32 %r22, {desc_word};
    add.u32 %r40, %r4, {SF_COL};
    add.u32 %r41, %r4, {SF_COL + 4};
    @%p2 {mma} [%r4], %rd12, %rd13, %r22, [%r40], [%r41], %p3;
    @%p2 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r9];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r9], 0;
    @!%p4 bra WAIT;
    tcgen05.fence::after_thread_sync;
{ld}
    tcgen05.wait::ld.sync.aligned;
{keep}
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    @%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 512;
    ret;
}}
"""


def launch(machine: Machine, ptx: str, a_bits: np.ndarray, b_bits: np.ndarray, c: np.ndarray,
           sf: np.ndarray, accumulate: bool = True, seed: int | None = None) -> InterpResult:  # fmt: skip
    args: dict[str, np.ndarray | int] = {
        "a": layout(a_bits, 1),
        "b": layout(b_bits, 1),
        "c": c,
        "out": np.zeros_like(c),
        "acc": int(accumulate),
        "sf": sf,
    }
    return interpret(parse(ptx), "k", machine, (1, THREADS, 0), args,
                     randomize_order=seed is not None, seed=seed or 0)  # fmt: skip


def reference(a: np.ndarray, b: np.ndarray, sa: np.ndarray, sb: np.ndarray, c: np.ndarray,
              accumulate: bool = True) -> np.ndarray:  # fmt: skip
    """D from values: A (128 x K), B (N x K), scale values SA (128 x blocks), SB (N x blocks)."""
    k, blocks = a.shape[1], sa.shape[1]
    span = k // blocks
    with np.errstate(invalid="ignore", over="ignore"):
        sa_k, sb_k = np.repeat(sa, span, axis=1), np.repeat(sb, span, axis=1)
        total = (a * sa_k) @ (b * sb_k).T  # exact in float64 for the values chosen
        return (total + (c.astype(np.float64) if accumulate else 0.0)).astype(np.float32)


def scale_codes(fmt: str, rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Random scale codes of 2**-3 .. 2**3 (ue8m0) or 1/8 .. 8 (ue4m3) and their values."""
    if fmt == "ue8m0":
        codes = rng.integers(124, 131, shape).astype(np.uint8)
        return codes, np.vectorize(ue8m0, otypes=[np.float64])(codes)
    codes = rng.integers(0x20, 0x51, shape).astype(np.uint8)
    return codes, np.vectorize(ue4m3, otypes=[np.float64])(codes)


def run_case(machine: Machine, kind: str, vec: str, n: int, a: str = "e2m1", b: str = "e2m1",
             ue4m3_scales: bool = False, sf_ids: tuple[int, int] = (0, 0), seed: int = 0,
             accumulate: bool = True, order: int | None = None) -> list[str]:  # fmt: skip
    """Problems of one tile (empty: the model agrees with the reference)."""
    rng = np.random.default_rng(1000 + seed)
    a_bits, b_bits, a_vals, b_vals, c = operands(kind, n, a, b, seed)
    blocks = BLOCKS[vec or ("scale_vec::1X" if kind == "kind::mxf8f6f4" else "scale_vec::2X")]
    fmt = "ue4m3" if ue4m3_scales else "ue8m0"
    sa_codes, sa = scale_codes(fmt, rng, (M, blocks))
    sb_codes, sb = scale_codes(fmt, rng, (n, blocks))
    atoms = -(-n // 128)
    sf = np.concatenate([sf_atoms(sa_codes, sf_ids[0], rng), sf_atoms(sb_codes, sf_ids[1], rng)])
    word = idesc(kind, n, a, b, sf_ids[0], sf_ids[1], ue4m3_scales)
    res = launch(
        machine, kernel(kind, vec, n, word, nb_atoms=atoms), a_bits, b_bits, c, sf, accumulate, order
    )
    got, want = res.outputs["out"], reference(a_vals, b_vals, sa, sb, c, accumulate)
    bad = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
    if not bad.size:
        return []
    i, j = (int(v) for v in bad[0])
    return [f"{kind}.{vec} 128x{n} {a} x {b}: D[{i},{j}] = {got[i, j]}, want {want[i, j]}"]


# Per kind and vector size: (N, A format, B format, ue4m3 scales, SF IDs).
CASES: dict[tuple[str, str], tuple[tuple[int, str, str, bool, tuple[int, int]], ...]] = {
    ("kind::mxf8f6f4", "scale_vec::1X"): ((32, "e4m3", "e5m2", False, (1, 3)),
                                          (8, "e2m1", "e3m2", False, (2, 0))),
    ("kind::mxf8f6f4", ""): ((16, "e2m3", "e4m3", False, (0, 1)),),
    ("kind::mxf4", "scale_vec::2X"): ((32, "e2m1", "e2m1", False, (2, 0)),),
    ("kind::mxf4", ""): ((8, "e2m1", "e2m1", False, (0, 2)),),
    ("kind::mxf4nvf4", "scale_vec::2X"): ((64, "e2m1", "e2m1", False, (2, 2)),),
    ("kind::mxf4nvf4", "scale_vec::4X"): ((32, "e2m1", "e2m1", True, (0, 0)),
                                          (16, "e2m1", "e2m1", False, (0, 0))),
}  # fmt: skip


def cp_problems(machine: Machine, form: Form) -> list[str]:
    """A ``tcgen05.cp`` form: the modeled shapes land in TMEM as the ISA places them (checked by
    the block-scaled MMA that reads them, and for the 128-row shapes by a tcgen05.ld); the others
    must be refused as the model's limit (see tests/model/ptx/test_tcgen05_scaled.py)."""
    shape = form.mod("shape") or ""
    if shape == "32x128b":
        return run_case(machine, "kind::mxf4", "scale_vec::2X", 32, sf_ids=(2, 0), seed=11)
    if shape in ("128x128b", "128x256b"):
        return copy_problems(machine, shape)
    return []


def scaled_problems(machine: Machine, form: Form) -> list[str]:
    problems = []
    key = (form.mod("kind") or "", form.mod("scale_vec") or "")
    for k, (n, a, b, small, ids) in enumerate(CASES.get(key, ())):
        problems += run_case(machine, key[0], key[1], n, a, b, small, ids, k, k != 1, k if k else None)
    return problems


NAMES = (*MMA_NAMES, "tcgen05.cp")


def knows_tcgen05_family(form: Form) -> None:
    if form.instr.name not in NAMES:
        raise NotCovered(form.text)


def check_tcgen05_family(machine: Machine, form: Form) -> list[str]:
    """Problems of one ``tcgen05.mma``, ``tcgen05.commit`` or ``tcgen05.cp`` form: the dense
    kinds and the commit by :mod:`tests.model.oracle.tcgen05_mma`, the rest here."""
    knows_tcgen05_family(form)
    if form.instr.name != "tcgen05.cp" and not form.mod("block_scale"):
        return check_tcgen05_mma(machine, form)
    try:
        found = (
            cp_problems(machine, form) if form.instr.name == "tcgen05.cp" else scaled_problems(machine, form)
        )
    except ExecutionError as exc:
        return [f"{form.text}: {exc}"]
    return [f"{form.text}: {p}" for p in found]
