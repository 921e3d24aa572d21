"""Oracle for sm_120's block-scaled ``mma.sync`` (``.kind::mxf8f6f4``, ``.kind::mxf4``, ``.kind::mxf4nvf4``)
against a reference written here from the PTX ISA's tables, not from the model's gather code:

- A, B, C, D fragments: "Matrix Fragments for mma.m16n8k32" (bytes, as for ``.kind::f8f6f4``) and
  "... for mma.m16n8k64" (e2m1 packed eight to a register, low nibble first), ``g = lane >> 2``,
  ``t = lane % 4``;
- scale factors ("Block Scaling for mma.sync", Figures 43-45, Table 37): row ``m`` of A from lane
  ``4 (m % 8) + 2 thread-id-a + m / 8``, column ``n`` of B from lane ``4n + thread-id-b``, block
  ``q`` along K from byte ``byte-id + q``. Every other lane and byte holds random bits, so a model
  that reads the wrong one fails;
- D is ``C + sum_k A[i][k] SF_A[i][q] B[k][j] SF_B[q][j]`` summed exactly (fractions) and rounded
  once to .f32 (the model's stated arithmetic, docs/model.md), NaN/infinity as float64 gives them.
Element and scale values come from ml_dtypes (ue8m0 is ``float8_e8m0fnu``, ue4m3 the e4m3fn of
the low 7 bits)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import ml_dtypes
import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.mma import a_16832_int, b_16832_int, c_16816, pack, scatter
from tests.model.oracle.mma_kinds import KINDS, SHIFT, WIDTH, as_bits, as_values, round_once
from tests.model.oracle.runner import Form

# (kind, scale_vec, scale type): every form ptxas 13 accepts for PTX 8.7
FORMS = [
    ("kind::mxf8f6f4", "scale_vec::1X", "ue8m0"),
    ("kind::mxf4", "scale_vec::2X", "ue8m0"),
    ("kind::mxf4nvf4", "scale_vec::2X", "ue8m0"),
    ("kind::mxf4nvf4", "scale_vec::4X", "ue4m3"),
]
BLOCKS = {"scale_vec::1X": 1, "scale_vec::2X": 2, "scale_vec::4X": 4}
# "when the qualifier .scale_vec_size is not specified": 2X for mxf4, 1X for mxf8f6f4
DEFAULT_VEC = {"kind::mxf8f6f4": "scale_vec::1X", "kind::mxf4": "scale_vec::2X"}


# --- the ISA's tables, written out -------------------------------------------------------------
def a_16864(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    row = g if (i < 8 or 16 <= i < 24) else g + 8
    return row, t * 8 + (i & 7) + (32 if i >= 16 else 0)


def b_16864(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return t * 8 + (i & 7) + (32 if i >= 8 else 0), g


def scale_lane_a(row: int, tid: int) -> int:
    return 4 * (row % 8) + 2 * tid + row // 8


def scale_lane_b(col: int, tid: int) -> int:
    return 4 * col + tid


def scale_registers(
    rng: np.random.Generator,
    sf_a: np.ndarray,
    sf_b: np.ndarray,
    sel_a: tuple[int, int],
    sel_b: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray]:
    """Per lane, the ``sfa`` and ``sfb`` words: the scale bytes where the selectors read them,
    random bytes everywhere else."""
    ra = rng.integers(0, 256, (32, 4)).astype(np.uint8)
    rb = rng.integers(0, 256, (32, 4)).astype(np.uint8)
    for m, q in itertools.product(range(16), range(sf_a.shape[1])):
        ra[scale_lane_a(m, sel_a[1]), sel_a[0] + q] = sf_a[m, q]
    for n, q in itertools.product(range(8), range(sf_b.shape[0])):
        rb[scale_lane_b(n, sel_b[1]), sel_b[0] + q] = sf_b[q, n]
    return ra.view("<u4").reshape(32), rb.view("<u4").reshape(32)


# --- the reference -----------------------------------------------------------------------------
def element_values(codes: np.ndarray, t: str) -> np.ndarray:
    return codes.astype(np.uint8).view(KINDS[t]).astype(np.float64)


def scale_values(codes: np.ndarray, st: str) -> np.ndarray:
    if st == "ue8m0":
        return codes.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    return (codes.astype(np.uint8) & 0x7F).view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def reference(
    at: str, bt: str, st: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, sf_a: np.ndarray, sf_b: np.ndarray
) -> np.ndarray:
    """``C + (A SF_A)(B SF_B)`` (16 x 8), exact and rounded once to .f32."""
    k, blocks = a.shape[1], sf_a.shape[1]
    va, vb, vc = element_values(a, at), element_values(b, bt), c.astype(np.uint32).view(np.float32)
    sa, sb = scale_values(sf_a, st), scale_values(sf_b, st)
    out = np.zeros((16, 8), np.float64)
    for i, j in itertools.product(range(16), range(8)):
        with np.errstate(invalid="ignore", over="ignore"):
            terms = [float(vc[i, j])] + [
                float(va[i, kk] * sa[i, kk * blocks // k] * (vb[kk, j] * sb[kk * blocks // k, j]))
                for kk in range(k)
            ]
            if not all(np.isfinite(terms)):
                out[i, j] = np.sum(terms)
                continue
        out[i, j] = round_once(sum((Fraction(t) for t in terms), Fraction(0)), "f32")
    return out


# --- running the instruction -------------------------------------------------------------------
def form_text(kind: str, vec: str, st: str, at: str, bt: str) -> str:
    shape = "m16n8k32" if kind == "kind::mxf8f6f4" else "m16n8k64"
    return f"{shape}.row.col.{kind}.block_scale.{vec}.f32.{at}.{bt}.f32.{st}"


def kernel(form: str, sel_a: tuple[int, int], sel_b: tuple[int, int]) -> str:
    """Lane ``i`` loads its 4 A, 2 B, 4 C words and its sfa, sfb words, runs the mma, stores D."""
    lines = ["mov.u32 %r1, %tid.x;"]
    for k, (p, n) in enumerate((("a", 4), ("b", 2), ("c", 4), ("s", 2), ("d", 4))):
        lines += [
            f"ld.param.u64 %rd{k}, [p{p}];",
            f"mul.wide.u32 %rd{k + 5}, %r1, {4 * n};",
            f"add.s64 %rd{k + 10}, %rd{k}, %rd{k + 5};",
        ]
    for k, (p, n) in enumerate((("a", 4), ("b", 2), ("c", 4), ("s", 2))):
        lines += [f"ld.global.b32 %{p}{j}, [%rd{k + 10}+{4 * j}];" for j in range(n)]
    lines.append(
        f"mma.sync.aligned.{form} {{%d0, %d1, %d2, %d3}}, {{%a0, %a1, %a2, %a3}}, {{%b0, %b1}}, "
        f"{{%c0, %c1, %c2, %c3}}, %s0, {{{sel_a[0]}, {sel_a[1]}}}, %s1, {{{sel_b[0]}, {sel_b[1]}}};"
    )
    lines += [f"st.global.f32 [%rd14+{4 * j}], %d{j};" for j in range(4)]
    body = "\n    ".join(lines)
    return f"""
.version 8.7
.target sm_120a
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 ps, .param .u64 pd)
{{
    .reg .b32 %r<4>;
    .reg .b64 %rd<16>;
    .reg .b32 %a<4>;
    .reg .b32 %b<2>;
    .reg .f32 %c<4>;
    .reg .b32 %s<2>;
    .reg .f32 %d<4>;
    {body}
    ret;
}}
"""


def run(
    machine: Machine,
    form: tuple[str, str, str],
    at: str,
    bt: str,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    sf_a: np.ndarray,
    sf_b: np.ndarray,
    sel_a: tuple[int, int],
    sel_b: tuple[int, int],
    seed: int = 0,
) -> np.ndarray:
    """D (16 x 8 .f32 values) from A, B codes, C bit patterns and scale codes."""
    kind, vec, st = form
    if kind == "kind::mxf8f6f4":  # a byte a code, e2m1 in the central bits
        box_a = (a.astype(np.uint64) << np.uint64(SHIFT[at])).astype(np.uint8)
        box_b = (b.astype(np.uint64) << np.uint64(SHIFT[bt])).astype(np.uint8)
        a_regs, b_regs = pack(scatter(box_a, a_16832_int, 16), 8), pack(scatter(box_b, b_16832_int, 8), 8)
    else:
        a_regs, b_regs = pack(scatter(a, a_16864, 32), 4), pack(scatter(b, b_16864, 16), 4)
    sfa, sfb = scale_registers(np.random.default_rng(seed), sf_a, sf_b, sel_a, sel_b)
    args = {
        "pa": a_regs,
        "pb": b_regs,
        "pc": pack(scatter(c, c_16816, 4), 32),
        "ps": np.stack([sfa, sfb], axis=1),
        "pd": np.zeros((32, 4), np.uint32),
    }
    ptx = kernel(form_text(kind, vec, st, at, bt), sel_a, sel_b)
    d_regs = interpret(parse(ptx), "k", machine, (1, 32, 0), args).outputs["pd"]
    out = np.zeros((16, 8), np.uint64)
    for lane, i in itertools.product(range(32), range(4)):
        out[c_16816(lane, i)] = d_regs[lane, i]
    return as_values(out, "f32")


def check(
    machine: Machine,
    form: tuple[str, str, str],
    at: str,
    bt: str,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    sf_a: np.ndarray,
    sf_b: np.ndarray,
    sel_a: tuple[int, int],
    sel_b: tuple[int, int],
) -> np.ndarray:
    got = run(machine, form, at, bt, a, b, c, sf_a, sf_b, sel_a, sel_b)
    want = reference(at, bt, form[2], a, b, c, sf_a, sf_b)
    bad = np.argwhere(~((got == want) | (np.isnan(got) & np.isnan(want))))
    assert not bad.size, [(int(i), int(j), got[i, j], want[i, j]) for i, j in bad[:4]]
    return got


def random_operands(
    rng: np.random.Generator, form: tuple[str, str, str], at: str, bt: str, scale_codes: tuple[int, int]
) -> tuple[np.ndarray, ...]:
    k = 32 if form[0] == "kind::mxf8f6f4" else 64
    blocks = BLOCKS[form[1]]
    a = rng.integers(0, 1 << WIDTH[at], (16, k)).astype(np.uint8)
    b = rng.integers(0, 1 << WIDTH[bt], (k, 8)).astype(np.uint8)
    c = as_bits(rng.standard_normal((16, 8)) * 8, "f32")
    lo, hi = scale_codes
    return (
        a,
        b,
        c,
        rng.integers(lo, hi, (16, blocks)).astype(np.uint8),
        rng.integers(lo, hi, (blocks, 8)).astype(np.uint8),
    )


def random_selectors(rng: np.random.Generator, vec: str) -> tuple[tuple[int, int], tuple[int, int]]:
    bytes_ = {"scale_vec::1X": [0, 1, 2, 3], "scale_vec::2X": [0, 2], "scale_vec::4X": [0]}[vec]
    return (
        (int(rng.choice(bytes_)), int(rng.integers(0, 2))),
        (int(rng.choice(bytes_)), int(rng.integers(0, 4))),
    )


def knows_scaled(form: Form) -> None:
    kind, vec = form.mod("kind") or "", form.mod("scale_vec") or DEFAULT_VEC.get(form.mod("kind") or "")
    dt, at, bt, ct, st = form.types
    elements = KINDS if kind == "kind::mxf8f6f4" else ("e2m1",)
    if (kind, vec, st) not in FORMS or dt != "f32" or ct != "f32" or at not in elements or bt not in elements:
        raise NotCovered(f"{form.text}: the block-scaled oracle knows {FORMS}, .f32.f32")


def scaled_problems(machine: Machine, form: Form, seed: int) -> list[str]:
    """The form on random codes (NaN and infinities included), scales and selectors, then on
    codes without NaN or infinity: D bit for bit."""
    knows_scaled(form)
    kind, vec = form.mod("kind") or "", form.mod("scale_vec") or DEFAULT_VEC[form.mod("kind") or ""]
    _, at, bt, _, st = form.types
    shape = (kind, vec, st)
    rng = np.random.default_rng(seed)
    problems = []
    for name in ("any codes", "finite"):
        a, b, c, sf_a, sf_b = random_operands(rng, shape, at, bt, (110, 145) if st == "ue8m0" else (0, 0x7F))
        if name == "finite":
            a = np.where(np.isfinite(element_values(a, at)), a, 0).astype(np.uint8)
            b = np.where(np.isfinite(element_values(b, bt)), b, 0).astype(np.uint8)
        sel_a, sel_b = random_selectors(rng, vec)
        try:
            got = run(machine, shape, at, bt, a, b, c, sf_a, sf_b, sel_a, sel_b, seed)
        except ExecutionError as exc:
            return [f"{form.text}: {exc}"]
        want = reference(at, bt, st, a, b, c, sf_a, sf_b)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        problems += [
            f"{form.text}: {name}: D[{i}, {j}] = {float(got[i, j])!r}, exact and rounded once = "
            f"{float(want[i, j])!r}"
            for i, j in np.argwhere(~same)[:3]
        ]
    return problems
