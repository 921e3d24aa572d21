"""Oracle for ``mma.sync``: the PTX ISA's fragment tables as index formulas, and numpy matmul.

A, B, C are scattered into fragments with the formulas of the PTX ISA sections "Matrix Fragments
for mma.m16n8k8", "Matrix Fragments for mma.m16n8k16 with floating point type", "... with
integer type" and "Matrix Fragments for mma.m16n8k32" (``g = lane >> 2``, the groupID, ``t = lane
% 4``, the threadID_in_group), the interpreter runs the form in a one-warp kernel, and the D
fragments gathered back with the same formulas must equal ``A @ B + C``:

- integers exactly, wrapped to 32 bits, or clamped to the ``.s32`` range with ``.satfinite``;
- floats exactly where the exact result is representable in the accumulator type (small
  multiples of powers of two: any correct summation order gives it), and within one unit in the
  last place of the accumulator type for random operands (the model rounds the exact sum once;
  the PTX ISA leaves the internal precision open);
- 8-bit floats (``.e4m3``/``.e5m2``, the 8-bit layouts) on random bit patterns, NaN, infinity and
  subnormals included, their values decoded by torch's ``float8_e4m3fn``/``float8_e5m2``.

sm_120's ``.kind::f8f6f4`` forms use these tables too; their oracle is
:mod:`tests.model.oracle.mma_kinds`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np
import torch

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form

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


def kernel(
    form: str, na: int, nb: int, nc: int, nd: int, f32c: bool, f32d: bool, target: str = "sm_90"
) -> str:
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
.target {target}
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


# .kind::f8f6f4 puts every element, fp6 and fp4 too, in a byte (PTX ISA, "mma")
BITS = {"f16": 16, "bf16": 16, "f32": 32, "s8": 8, "u8": 8, "s32": 32, "e4m3": 8, "e5m2": 8, "e3m2": 8,
        "e2m3": 8, "e2m1": 8}  # fmt: skip
FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def run_mma(machine: Machine, shape: str, types: tuple[str, str, str, str], a: np.ndarray, b: np.ndarray,
            c: np.ndarray, satfinite: bool = False, kind: str = "") -> np.ndarray:  # fmt: skip
    """D (16 x 8, as bit patterns of the D type) for A, B, C given as bit patterns; ``kind``
    (``"kind::f8f6f4"``) runs that form on an sm_120a target, A and B as byte containers."""
    dt, at, bt, ct = types
    k = int(shape.split("k")[1])
    a_index, b_index = LAYOUTS[(shape, "float" if at in ("f16", "bf16") else "int")]
    a_regs = pack(scatter(a, a_index, 16 * k // 32), BITS[at])
    b_regs = pack(scatter(b, b_index, 8 * k // 32), BITS[bt])
    c_regs = pack(scatter(c, c_16816, 4), BITS[ct])
    nd = 4 * BITS[dt] // 32
    form = (
        f"{shape}.row.col{'.satfinite' if satfinite else ''}{'.' + kind if kind else ''}.{dt}.{at}.{bt}.{ct}"
    )
    target = "sm_120a" if kind else "sm_90"
    ptx = kernel(
        form, a_regs.shape[1], b_regs.shape[1], c_regs.shape[1], nd, ct == "f32", dt == "f32", target
    )
    args = {"pa": a_regs, "pb": b_regs, "pc": c_regs, "pd": np.zeros((32, nd), np.uint32)}
    d_regs = interpret(parse(ptx), "k", machine, (1, 32, 0), args).outputs["pd"]
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


def to_bits(x: np.ndarray, t: str) -> np.ndarray:
    """Values (exact in ``t``, or rounded by numpy for .f16/.f32, truncated for .bf16) as bits."""
    if t == "bf16":
        return bf16_bits(x)
    return x.astype(np.float16).view(np.uint16) if t == "f16" else x.astype(np.float32).view(np.uint32)


def to_values(bits: np.ndarray, t: str) -> np.ndarray:
    if t == "bf16":
        return bf16_value(bits)
    dtype = np.float16 if t == "f16" else np.float32
    return bits.astype(np.uint16 if t == "f16" else np.uint32).view(dtype).astype(np.float64)


def float_problems(machine: Machine, shape: str, types: tuple[str, str, str, str], seed: int) -> list[str]:
    """A floating-point form on operands whose exact result the accumulator type holds (it must
    come out exactly), then on random normal operands (within one ulp of the accumulator)."""
    dt, at, bt, ct = types
    k = int(shape.split("k")[1])
    rng = np.random.default_rng(seed)
    # halves times halves plus quarters: every partial sum is exact in .f16 and .f32 alike
    exact = (rng.integers(-3, 4, (16, k)) / 2, rng.integers(-3, 4, (k, 8)) / 2,
             rng.integers(-64, 65, (16, 8)) / 4)  # fmt: skip
    normal = (rng.standard_normal((16, k)), rng.standard_normal((k, 8)), rng.standard_normal((16, 8)))
    problems = []
    for name, (a, b, c) in (("exact", exact), ("random", normal)):
        ab, bb, cb = to_bits(a, at), to_bits(b, bt), to_bits(c, ct)
        want = to_values(ab, at) @ to_values(bb, bt) + to_values(cb, ct)
        got = to_values(run_mma(machine, shape, types, ab, bb, cb).astype(np.uint32), dt)
        eps = 0.0 if name == "exact" else 2.0**-23 if dt == "f32" else 2.0**-10
        bad = np.argwhere(~(np.abs(got - want) <= eps * np.abs(want)))
        problems += [f"{name} operands: D[{i}, {j}] = {float(got[i, j])!r}, A @ B + C = "
                     f"{float(want[i, j])!r}" for i, j in bad[:3]]  # fmt: skip
    return problems


def fp8_values(bits: np.ndarray, t: str) -> np.ndarray:
    """The values of 8-bit float patterns, decoded by torch."""
    return torch.from_numpy(bits.astype(np.uint8)).view(FP8[t]).double().numpy()


def fp8_problems(machine: Machine, shape: str, types: tuple[str, str, str, str], seed: int) -> list[str]:
    """An fp8 form on random bit patterns (every encoding may occur: subnormals, the largest
    values, NaN and for .e5m2 infinities), then on operands without NaN or infinity; D within one
    unit in the last place of the accumulator type (or its rounding to it: an infinity where it
    overflows), NaN exactly where A @ B + C is NaN."""
    dt, at, bt, ct = types
    k = int(shape.split("k")[1])
    rng = np.random.default_rng(seed)
    problems = []
    for name in ("any bits", "finite"):
        ab, bb = rng.integers(0, 256, (16, k)), rng.integers(0, 256, (k, 8))
        if name == "finite":
            ab = np.where(np.isfinite(fp8_values(ab, at)), ab, 0)
            bb = np.where(np.isfinite(fp8_values(bb, bt)), bb, 0)
        cb = to_bits(rng.standard_normal((16, 8)), ct)
        with np.errstate(invalid="ignore", over="ignore"):
            want = fp8_values(ab, at) @ fp8_values(bb, bt) + to_values(cb, ct)
        got = to_values(run_mma(machine, shape, types, ab, bb, cb).astype(np.uint32), dt)
        eps = 2.0**-23 if dt == "f32" else 2.0**-10
        with np.errstate(invalid="ignore", over="ignore"):
            rounded = want.astype(np.float32 if dt == "f32" else np.float16).astype(np.float64)
            close = np.abs(got - want) <= eps * np.abs(want)
            ok = (np.isnan(got) & np.isnan(want)) | (got == rounded) | close
        problems += [f"{name}: D[{i}, {j}] = {float(got[i, j])!r}, A @ B + C = {float(want[i, j])!r}"
                     for i, j in np.argwhere(~ok)[:3]]  # fmt: skip
    return problems


def int_problems(machine: Machine, shape: str, at: str, bt: str, satfinite: bool, seed: int) -> list[str]:
    """An integer form on random operands, then on operands at the limits of their types whose
    sums leave the .s32 range (wrapped, or clamped by ``.satfinite``)."""
    k = int(shape.split("k")[1])
    rng = np.random.default_rng(seed)
    lo = {"s8": -128, "u8": 0}
    a = rng.integers(lo[at], lo[at] + 256, (16, k))
    b = rng.integers(lo[bt], lo[bt] + 256, (k, 8))
    c = rng.integers(-(2**31), 2**31, (16, 8))
    big_a, big_b = np.full((16, k), lo[at] + 255), np.full((k, 8), lo[bt] + 255)
    big_b[:, 0] = lo[bt] if lo[bt] else 1
    big_c = np.full((16, 8), 2**31 - 1000)
    big_c[0, 0] = -(2**31) + 5
    problems = []
    for name, (x, y, z) in (("random", (a, b, c)), ("overflowing", (big_a, big_b, big_c))):
        exact = x @ y + z
        want = (np.clip(exact, -(2**31), 2**31 - 1) if satfinite else exact) & 0xFFFFFFFF
        got = run_mma(machine, shape, ("s32", at, bt, "s32"), x & 0xFF, y & 0xFF, z & 0xFFFFFFFF, satfinite)
        bad = np.argwhere(got.astype(np.int64) != want)
        problems += [f"{name} operands: D[{i}, {j}] = {int(got[i, j]):#x}, want {int(want[i, j]):#x}"
                     for i, j in bad[:3]]  # fmt: skip
    return problems


def knows_mma(form: Form) -> None:
    dt, at, _, ct = form.types
    shape = form.mod("shape") or ""
    if form.mod("alayout") != "row" or form.mod("blayout") != "col" or shape not in SHAPES:
        raise NotCovered(f"{form.text}: the mma oracle knows .row.col {', '.join(SHAPES)}")
    kind = "float" if at in ("f16", "bf16") else "int"
    integer = at not in FP8 and kind == "int"
    if (shape, kind) not in LAYOUTS or (integer and (dt, ct) != ("s32", "s32")):
        raise NotCovered(f"{form.text}: no fragment formulas for these types here")


SHAPES = ("m16n8k8", "m16n8k16", "m16n8k32")


def check_mma(machine: Machine, form: Form) -> list[str]:
    """Problems of one mma.sync form against the fragment formulas and numpy (empty: it agrees)."""
    knows_mma(form)
    dt, at, bt, ct = form.types
    shape = form.mod("shape") or ""
    seed = zlib.crc32(form.text.encode())
    try:
        if at in ("f16", "bf16"):
            problems = float_problems(machine, shape, (dt, at, bt, ct), seed)
        elif at in FP8:
            problems = fp8_problems(machine, shape, (dt, at, bt, ct), seed)
        else:
            problems = int_problems(machine, shape, at, bt, form.mod("satfinite") is not None, seed)
    except ExecutionError as exc:
        problems = [str(exc)]
    return [f"{form.text}: {p}" for p in problems]
