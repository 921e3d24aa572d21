"""mma.sync against numpy: A, B, C are scattered into fragments with the PTX ISA's index formulas
(written out below, independently of the implementation), the interpreter runs the instruction,
and the D fragments gathered back with the same formulas must equal ``A @ B + C``.

Formulas: PTX ISA sections "Matrix Fragments for mma.m16n8k8", "Matrix Fragments for
mma.m16n8k16 with floating point type", "... with integer type" and "Matrix Fragments for
mma.m16n8k32"; ``g = lane >> 2`` (groupID), ``t = lane % 4`` (threadID_in_group).

Floating point: the model rounds the exact sum once (see karyamorph.model.ptx.mma); the tolerance
is one unit in the last place of the accumulator type. A GPU may be less exact than that.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.machine import ptx_machine
from karyamorph.model.semantics.decode import Unmodeled, decode_or_reason

M = ptx_machine("sm_90")
Index = Callable[[int, int], tuple[int, int]]  # (lane, element i) -> (row, column)


# --- the PTX ISA's fragment tables, as formulas -------------------------------------------------
def a_16816_float(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    row = g if (0 <= i < 2 or 4 <= i < 6) else g + 8
    col = t * 2 + (i & 1) if i < 4 else t * 2 + (i & 1) + 8
    return row, col


def b_16816_float(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return (t * 2 + (i & 1) if i < 2 else t * 2 + (i & 1) + 8), g


def a_1688_float(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


def b_1688_float(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return t * 2 + i, g


def a_16816_int(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return (g if i < 4 else g + 8), t * 4 + (i & 3)


def b_16816_int(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return t * 4 + i, g


def a_16832_int(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    row = g if (0 <= i < 4 or 8 <= i < 12) else g + 8
    return row, (t * 4 + (i & 3) if i < 8 else t * 4 + (i & 3) + 16)


def b_16832_int(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return (t * 4 + (i & 3) if i < 4 else t * 4 + (i & 3) + 16), g


def c_16816(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


LAYOUTS: dict[tuple[str, str], tuple[Index, Index]] = {
    ("m16n8k8", "float"): (a_1688_float, b_1688_float),
    ("m16n8k16", "float"): (a_16816_float, b_16816_float),
    ("m16n8k16", "int"): (a_16816_int, b_16816_int),
    ("m16n8k32", "int"): (a_16832_int, b_16832_int),
}


# --- scatter / gather --------------------------------------------------------------------------
def scatter(mat: np.ndarray, index: Index, count: int) -> np.ndarray:
    """Per lane, the ``count`` elements of ``mat`` (any 8/16/32-bit unsigned bit patterns)."""
    return np.array([[mat[index(lane, i)] for i in range(count)] for lane in range(32)])


def pack(elems: np.ndarray, bits: int) -> np.ndarray:
    """Elements (lane x count) packed low-first into 32-bit registers."""
    per = 32 // bits
    lanes, count = elems.shape
    words = np.zeros((lanes, count // per), np.uint64)
    for i in range(count):
        words[:, i // per] |= elems[:, i].astype(np.uint64) << np.uint64(bits * (i % per))
    return words.astype(np.uint32)


def unpack(words: np.ndarray, bits: int, count: int) -> np.ndarray:
    per = 32 // bits
    out = np.zeros((words.shape[0], count), np.uint64)
    for i in range(count):
        out[:, i] = (words[:, i // per].astype(np.uint64) >> np.uint64(bits * (i % per))) & np.uint64(
            (1 << bits) - 1
        )
    return out


def _kernel(form: str, na: int, nb: int, nc: int, nd: int, f32c: bool, f32d: bool) -> str:
    """Lane ``i`` loads registers ``i * n .. i * n + n - 1`` of each operand array, runs the mma and
    stores its D registers the same way."""

    def vec(p: str, n: int) -> str:
        return "{" + ", ".join(f"%{p}{j}" for j in range(n)) + "}"

    lines = []
    for k, (p, n) in enumerate((("a", na), ("b", nb), ("c", nc), ("d", nd))):
        lines += [
            f"ld.param.u64 %rd{k}, [p{p}];",
            f"mul.wide.u32 %rd{k + 4}, %r1, {4 * n};",
            f"add.s64 %rd{k + 8}, %rd{k}, %rd{k + 4};",
        ]
    for k, (p, n) in enumerate((("a", na), ("b", nb), ("c", nc))):
        lines += [f"ld.global.b32 %{p}{j}, [%rd{k + 8}+{4 * j}];" for j in range(n)]
    lines.append(f"mma.sync.aligned.{form} {vec('d', nd)}, {vec('a', na)}, {vec('b', nb)}, {vec('c', nc)};")
    lines += [f"st.global.b32 [%rd11+{4 * j}], %d{j};" for j in range(nd)]
    body = "\n    ".join(lines)
    return f"""
.version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{{
    .reg .b32 %r<4>;
    .reg .b64 %rd<12>;
    .reg .b32 %a<{na}>;
    .reg .b32 %b<{nb}>;
    .reg .{"f32" if f32c else "b32"} %c<{nc}>;
    .reg .{"f32" if f32d else "b32"} %d<{nd}>;
    mov.u32 %r1, %tid.x;
    {body}
    ret;
}}
"""


BITS = {"f16": 16, "bf16": 16, "f32": 32, "s8": 8, "u8": 8, "s32": 32}


def run_mma(shape: str, types: tuple[str, str, str, str], a: np.ndarray, b: np.ndarray, c: np.ndarray,
            satfinite: bool = False) -> np.ndarray:  # fmt: skip
    """D (16 x 8, as bit patterns of the D type) for A, B, C given as bit patterns."""
    dt, at, bt, ct = types
    k = int(shape.split("k")[1])
    kind = "float" if at in ("f16", "bf16") else "int"
    a_index, b_index = LAYOUTS[(shape, kind)]
    a_regs = pack(scatter(a, a_index, 16 * k // 32), BITS[at])
    b_regs = pack(scatter(b, b_index, 8 * k // 32), BITS[bt])
    c_regs = pack(scatter(c, c_16816, 4), BITS[ct])
    nd = 4 * BITS[dt] // 32
    form = f"{shape}.row.col{'.satfinite' if satfinite else ''}.{dt}.{at}.{bt}.{ct}"
    ptx = _kernel(form, a_regs.shape[1], b_regs.shape[1], c_regs.shape[1], nd, ct == "f32", dt == "f32")
    args = {"pa": a_regs, "pb": b_regs, "pc": c_regs, "pd": np.zeros((32, nd), np.uint32)}
    d_regs = interpret(parse(ptx), "k", M, (1, 32, 0), args).outputs["pd"]
    d_elems = unpack(d_regs, BITS[dt], 4)
    out = np.zeros((16, 8), np.uint64)
    for lane in range(32):
        for i in range(4):
            out[c_16816(lane, i)] = d_elems[lane, i]
    return out


def f16_bits(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).view(np.uint16)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """bf16 patterns of values chosen representable in bf16 (f32 with the low 16 bits zero)."""
    return (x.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


FLOAT_CASES = [
    ("m16n8k8", ("f32", "f16", "f16", "f32")),
    ("m16n8k16", ("f32", "f16", "f16", "f32")),
    ("m16n8k8", ("f32", "bf16", "bf16", "f32")),
    ("m16n8k16", ("f32", "bf16", "bf16", "f32")),
    ("m16n8k16", ("f16", "f16", "f16", "f16")),
    ("m16n8k16", ("f32", "f16", "f16", "f16")),
    ("m16n8k8", ("f16", "f16", "f16", "f32")),
]


@pytest.mark.parametrize(("shape", "types"), FLOAT_CASES, ids=[f"{s}.{'.'.join(t)}" for s, t in FLOAT_CASES])
def test_float_mma_equals_numpy_matmul(shape: str, types: tuple[str, str, str, str]) -> None:
    dt, at, _, ct = types
    k = int(shape.split("k")[1])
    rng = np.random.default_rng(hash((shape, types)) % 2**32)
    if at == "f16":
        a, b = f16_bits(rng.standard_normal((16, k))), f16_bits(rng.standard_normal((k, 8)))
        av, bv = a.view(np.float16).astype(np.float64), b.view(np.float16).astype(np.float64)
    else:
        a, b = bf16_bits(rng.standard_normal((16, k))), bf16_bits(rng.standard_normal((k, 8)))
        av, bv = bf16_value(a), bf16_value(b)
    cf = rng.standard_normal((16, 8))
    c = cf.astype(np.float32).view(np.uint32) if ct == "f32" else f16_bits(cf)
    cv = c.view(np.float32 if ct == "f32" else np.float16).astype(np.float64)
    d = run_mma(shape, types, a, b, c)
    got = (
        d.astype(np.uint32).view(np.float32) if dt == "f32" else d.astype(np.uint16).view(np.float16)
    ).astype(np.float64)
    exact = av @ bv + cv
    eps = 2.0**-23 if dt == "f32" else 2.0**-10  # one unit in the last place, relative
    np.testing.assert_allclose(got, exact, rtol=eps, atol=0)


@pytest.mark.parametrize(
    ("shape", "at", "bt"), [("m16n8k16", "s8", "s8"), ("m16n8k32", "u8", "s8"), ("m16n8k32", "s8", "u8")]
)
def test_integer_mma_is_exact_and_wraps(shape: str, at: str, bt: str) -> None:
    k = int(shape.split("k")[1])
    rng = np.random.default_rng(k + len(at + bt))
    lo = {"s8": -128, "u8": 0}
    a = rng.integers(lo[at], lo[at] + 256, (16, k))
    b = rng.integers(lo[bt], lo[bt] + 256, (k, 8))
    c = rng.integers(-(2**31), 2**31, (16, 8))
    d = run_mma(shape, ("s32", at, bt, "s32"), a & 0xFF, b & 0xFF, c & 0xFFFFFFFF)
    want = (a @ b + c) & 0xFFFFFFFF  # two's complement wrap of the exact sum
    np.testing.assert_array_equal(d, want)


def test_satfinite_clamps_integer_mma() -> None:
    a = np.full((16, 32), 127)
    b = np.full((32, 8), 127)
    c = np.full((16, 8), 2**31 - 1000)  # 32 * 127 * 127 more overflows .s32
    c[0, 0] = -(2**31) + 5
    b[:, 0] = -128
    d = run_mma("m16n8k32", ("s32", "s8", "s8", "s32"), a & 0xFF, b & 0xFF, c & 0xFFFFFFFF, satfinite=True)
    want = np.clip(a @ b + c, -(2**31), 2**31 - 1) & 0xFFFFFFFF
    np.testing.assert_array_equal(d, want)


def test_mma_rejects_forms_the_ptx_isa_does_not_have() -> None:
    refused = [
        ("m16n8k32.row.col.f32.f16.f16.f32", "shapes"),
        ("m16n8k16.row.col.f16.bf16.bf16.f32", "accumulators"),
        ("m16n8k32.row.col.f32.e4m3.e4m3.f32", "e4m3"),
    ]
    for form, why in refused:
        ins = parse(_kernel(form, 4, 2, 4, 4, True, True)).entry("k").instructions()
        mma = next(i for i in ins if i.opcode == "mma")
        got = decode_or_reason(mma, M)
        assert isinstance(got, Unmodeled) and why in got.reason
