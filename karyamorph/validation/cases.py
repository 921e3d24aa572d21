"""Operand rows for GPU validation (edge cases and random values per type) and the model's results.

Every value is a bit pattern held in a ``uint64`` array, whatever the operand's width. The
forms of one instruction that read the same operands (slot and type) share one table of rows:
the cross product of each type's edge values (cut down, largest list first, to at most
``cross_limit`` rows) followed by ``samples`` random rows. Rows are seeded by a stable hash of
the instruction and the operand signature, so a table is the same on every machine. A packed
type (``f16x2``, ``f32x2``: element format and count read from its name) takes its element
format's values in every element.

Warp forms (shuffles, votes) take whole warps: 32 rows per case, the member mask full, the
operands in :data:`WARP_UNIFORM` one value per warp, and every other operand per lane in one of
three patterns (one value in every lane, random lanes, one lane different from the rest). The
model's results for them come from the interpreter running the form's own microkernel.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.check.isa_check import RegisterExec
from karyamorph.model.interp.interpreter import KernelArg, interpret
from karyamorph.model.semantics.concrete import UINT, ConcreteDomain, float_bits
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.model.semantics.types import FLOAT_FORMAT, PtxType
from karyamorph.validation.assembly import BLOCK_THREADS
from karyamorph.validation.forms import Form, Operand, decode_form
from karyamorph.validation.microkernel import (
    build_microkernel,
    pack_inputs,
    unpack_outputs,
)

_PACKED = re.compile(r"([a-z]+\d+)x(\d+)")
CROSS_LIMIT = 2048
SAMPLES = 128
WARP = 32
FULL_MASK = 0xFFFF_FFFF
# Warp operands that hold one value per warp (instruction name -> slot -> the values to try), as
# compilers emit them: shfl's c packs the segment mask (bits 8-12) and the clamp lane (bits 0-4)
# of a sub-warp width (PTX ISA, "shfl.sync"), 0 or 31 as the clamp, plus odd clamps.
WARP_UNIFORM: dict[str, dict[str, tuple[int, ...]]] = {
    "shfl.sync": {"c": (*((32 - w) << 8 | clamp for w in (32, 16, 8, 4, 2, 1) for clamp in (0, 0x1F)),
                        0x05, 0x1C, 0x1803, 0xFFFF_FFFF)},
}  # fmt: skip
MASK_SLOT = "mask"  # a warp form's member-mask operand: every lane of the warp takes part

# Integers: small values, every shift amount around 8/16/32/64 (so amounts >= the width occur
# for every width), bit-field pos/len pairs, and alternating patterns. Masked to the width.
_INT_SMALL = (0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256, 0x1FF,
              0x0804, 0x1010, 0x2008)  # fmt: skip
# Float values (rounded to nearest into the format): signs, halves (ties of rounding to an
# integer), the edges of integer conversions with saturation, and a few irrational-looking ones.
_FLOAT_VALUES = (1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, 0.1, -1 / 3, 3.14159265,
                 127.5, -128.5, 255.5, 32767.5, -32768.5, 65535.5, 2.0**31, -(2.0**31), 2.0**32,
                 2.0**63, -(2.0**63), 2.0**64, 1e10, -1e10, 128.0, -126.0, -150.0, 1e-3)  # fmt: skip


def int_edges(bits: int) -> list[int]:
    """Edge bit patterns of an integer of ``bits``: 0, 1, -1, the signed min and max, shift amounts."""
    ones = (1 << bits) - 1
    top = 1 << (bits - 1)
    alternating = [0x5555_5555_5555_5555 & ones, 0xAAAA_AAAA_AAAA_AAAA & ones]
    pattern = [ones, top, top - 1, top + 1, ones - 1, *alternating]
    return _unique([*(v & ones for v in _INT_SMALL), *pattern])


def float_edges(ft: str) -> list[int]:
    """Edge bit patterns of a float format: +-0, +-1, +-inf, NaNs with payloads, subnormals, extremes."""
    e, m = FLOAT_FORMAT[ft]
    n = 1 + e + m
    sign = 1 << (n - 1)
    exp_all = ((1 << e) - 1) << m
    bias = (1 << (e - 1)) - 1
    one = bias << m
    special = [
        0, sign, one, sign | one,  # +-0, +-1
        exp_all, sign | exp_all,  # +-inf
        exp_all | (1 << (m - 1)), sign | exp_all | (1 << (m - 1)),  # quiet NaNs, both signs
        exp_all | (1 << (m - 1)) | 0x2A,  # quiet NaN with a payload
        exp_all | 1,  # signalling NaN
        (1 << (n - 1)) - 1, (1 << n) - 1,  # NaN with every mantissa bit set, both signs
        1, sign | 1, (1 << m) - 1, sign | ((1 << m) - 1),  # smallest and largest subnormals
        1 << m, sign | (1 << m),  # smallest normals
        exp_all - 1, sign | (exp_all - 1),  # largest finite
        one + 1, one - 1,  # 1 + ulp, the largest value below 1
        (bias - m - 1) << m, ((bias - m - 2) << m) | (1 << (m - 1)),  # half an ulp of 1 and 3/4 of it
    ]  # fmt: skip
    values = [float_bits(v, ft) for v in _FLOAT_VALUES]
    return _unique([*special, *values])


def packed(type_name: str) -> tuple[str, int] | None:
    """``("f16", 2)`` for a packed type such as ``f16x2`` (the element format and count), else None."""
    m = _PACKED.fullmatch(type_name)
    if m is None or m.group(1) not in FLOAT_FORMAT:
        return None
    return m.group(1), int(m.group(2))


def edges(ty: PtxType | None) -> list[int]:
    """The edge bit patterns of an operand type (``None``: a predicate, 0 and 1); a packed type's
    elements each take the element format's edges, the other elements shifted along the list."""
    if ty is None:
        return [0, 1]
    if ty.name in FLOAT_FORMAT:
        return float_edges(ty.name)
    pack = packed(ty.name)
    if pack is None:
        return int_edges(ty.bits)
    ft, count = pack
    e = float_edges(ft)
    width = ty.bits // count
    return _unique([sum(e[(i + 7 * k) % len(e)] << (width * k) for k in range(count)) for i in range(len(e))])


def _unique(values: Sequence[int]) -> list[int]:
    return list(dict.fromkeys(values))


def random_bits(ty: PtxType | None, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` random patterns: raw bits for a third, moderate values (floats) or small ints for the rest."""
    if ty is None:
        return rng.integers(0, 2, n).astype(np.uint64)
    bits = ty.bits
    pack = packed(ty.name)
    if pack is not None:
        ft, count = pack
        width = bits // count
        parts = [random_bits(PtxType(ft, width, "f"), n, rng) << np.uint64(width * j) for j in range(count)]
        return np.bitwise_or.reduce(parts)
    # Two draws, because numpy's integers() stops below 2**63: 62 high bits and 2 low bits.
    raw = rng.integers(0, 1 << 62, n, dtype=np.uint64) << np.uint64(2)
    raw |= rng.integers(0, 4, n, dtype=np.uint64)
    if bits < 64:
        raw &= np.uint64((1 << bits) - 1)
    k = n // 3
    if ty.name in FLOAT_FORMAT:
        e, m = FLOAT_FORMAT[ty.name]
        span = min((1 << (e - 1)) - 2, 24)
        sig = rng.integers(0, 1 << min(m, 52), n - k, dtype=np.uint64)
        exp = rng.integers(-span, span + 1, n - k).astype(np.int64) + (1 << (e - 1)) - 1
        neg = rng.integers(0, 2, n - k).astype(np.uint64)
        moderate = (neg << np.uint64(bits - 1)) | (exp.astype(np.uint64) << np.uint64(m)) | sig
        return np.concatenate([raw[:k], moderate])
    small = rng.integers(-300, 301, n - k).astype(np.int64).view(np.uint64)
    if bits < 64:
        small &= np.uint64((1 << bits) - 1)
    return np.concatenate([raw[:k], small])


def _cut(lists: list[list[int]], limit: int) -> list[list[int]]:
    """Shorten the longest list (keeping its head) until the product is at most ``limit``."""
    lists = [list(x) for x in lists]
    while int(np.prod([len(x) for x in lists])) > limit:
        longest = max(range(len(lists)), key=lambda i: len(lists[i]))
        if len(lists[longest]) <= 2:
            break
        lists[longest].pop()
    return lists


@dataclass(frozen=True, slots=True)
class CaseTable:
    """Operand rows shared by the forms of one instruction that read the same operands.

    ``operands[slot]`` is a ``uint64`` array of bit patterns, one element per case.
    """

    instruction: str
    reads: tuple[Operand, ...]
    operands: dict[str, np.ndarray]

    @property
    def signature(self) -> str:
        """``a:f32,b:u32,c:pred``: what the forms sharing this table read."""
        return signature(self.reads)

    @property
    def size(self) -> int:
        return len(next(iter(self.operands.values()))) if self.operands else 0


def signature(reads: Sequence[Operand]) -> str:
    return ",".join(f"{r.slot}:{r.type_name}" for r in reads)


def make_cases(
    instruction: str, reads: Sequence[Operand], *, samples: int = SAMPLES, cross_limit: int = CROSS_LIMIT,
    seed: int = 0,
) -> CaseTable:  # fmt: skip
    """The operand rows for forms of ``instruction`` reading ``reads``: edge cross product, then random."""
    key = f"{instruction}|{signature(reads)}|{seed}".encode()
    rng = np.random.default_rng(zlib.crc32(key))
    lists = _cut([edges(r.type) for r in reads], cross_limit)
    rows = np.array(list(product(*lists)), dtype=np.uint64).reshape(-1, len(reads))
    randoms = np.stack([random_bits(r.type, samples, rng) for r in reads], axis=1) if reads else rows[:0]
    table = np.concatenate([rows, randoms.reshape(-1, len(reads))])
    return CaseTable(instruction, tuple(reads), {r.slot: table[:, i].copy() for i, r in enumerate(reads)})


def make_warp_cases(
    instruction: str, reads: Sequence[Operand], *, samples: int = SAMPLES, cross_limit: int = CROSS_LIMIT,
    seed: int = 0,
) -> CaseTable:  # fmt: skip
    """Whole-warp rows for a warp form: uniform operands crossed by warp, lane operands in patterns."""
    rng = np.random.default_rng(zlib.crc32(f"{instruction}|{signature(reads)}|{seed}|warp".encode()))
    table = WARP_UNIFORM.get(instruction, {})
    uniform = [r for r in reads if r.slot in table and r.slot != MASK_SLOT]
    combos = list(product(*_cut([list(table[r.slot]) for r in uniform], max(1, cross_limit // (3 * WARP)))))
    warps = 3 * len(combos) + max(6, samples // WARP)
    n = warps * WARP
    out: dict[str, np.ndarray] = {}
    for r in reads:
        if r.slot == MASK_SLOT:
            out[r.slot] = np.full(n, FULL_MASK, dtype=np.uint64)
        elif r in uniform:
            j = uniform.index(r)
            crossed = np.repeat(np.array([c[j] for c in combos], dtype=np.uint64), 3)
            per_warp = np.concatenate([crossed, random_bits(r.type, warps - len(crossed), rng)])
            out[r.slot] = np.repeat(per_warp, WARP)
        else:
            out[r.slot] = _lane_patterns(r, warps, rng)
    return CaseTable(instruction, tuple(reads), out)


def _lane_patterns(r: Operand, warps: int, rng: np.random.Generator) -> np.ndarray:
    """Warp ``w``: an edge value in every lane (w % 3 == 0), random lanes (1), or an edge value in
    every lane but lane ``w % 32``, whose lowest bit is flipped (2)."""
    e = np.array(edges(r.type), dtype=np.uint64)
    w = np.arange(warps)
    same = np.repeat(e[(w // 3) % len(e)], WARP).reshape(warps, WARP)
    rand = random_bits(r.type, warps * WARP, rng).reshape(warps, WARP)
    odd = same.copy()
    odd[w, w % WARP] ^= np.uint64(1)
    kind = (w % 3)[:, None]
    return np.where(kind == 0, same, np.where(kind == 1, rand, odd)).reshape(-1)


def case_tables(forms: Sequence[Form], *, samples: int = SAMPLES, cross_limit: int = CROSS_LIMIT,
                seed: int = 0) -> dict[str, CaseTable]:  # fmt: skip
    """One table per (instruction, operand signature) of ``forms``, keyed ``instr|signature``."""
    out: dict[str, CaseTable] = {}
    for f in forms:
        k = table_key(f)
        if k not in out:
            make = make_warp_cases if f.warp else make_cases
            out[k] = make(f.instr.name, f.reads, samples=samples, cross_limit=cross_limit, seed=seed)
    return out


def table_key(form: Form) -> str:
    """The key of the case table a form uses."""
    return f"{form.instr.name}|{signature(form.reads)}"


def model_results(form: Form, machine: Machine, operands: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model's result bits for every destination of ``form`` (``uint64``; predicates 0 or 1).

    The semantics run once on the numpy domain over all cases, each source truncated to the
    width the semantics read it at. Warp forms run in the interpreter, as their microkernel
    (their cases are whole warps, and lanes read each other).
    """
    n = len(next(iter(operands.values()))) if operands else 1
    if form.warp:
        return _interpreted(form, machine, operands, n)

    def src(slot: str, ty: PtxType) -> np.ndarray:
        return operands[slot].astype(UINT[ty.bits])

    def pred(slot: str) -> np.ndarray:
        return operands[slot] != 0

    x = RegisterExec(ConcreteDomain(), decode_form(form, machine), src, pred, dict(form.imms))
    with np.errstate(all="ignore"):
        form.instr.semantics(x)
    out: dict[str, np.ndarray] = {}
    for w in form.writes:
        value, _ = x.writes[w.slot]
        out[w.slot] = np.broadcast_to(np.asarray(value), (n,)).astype(np.uint64)
    return out


def _interpreted(
    form: Form, machine: Machine, operands: dict[str, np.ndarray], n: int
) -> dict[str, np.ndarray]:
    if n % WARP:
        raise ValueError(f"{form.key}: {n} cases is not a whole number of warps")
    kernel = build_microkernel(form.instr.name, [form], [n], "sm_80")  # the interpreter ignores .target
    words = np.zeros((kernel.rows, kernel.out_slots), dtype=np.uint64)
    args: dict[str, KernelArg] = {"inp": pack_inputs(kernel, [operands]), "out": words, "rows": np.uint32(n)}
    result = interpret(parse(kernel.ptx), kernel.entry, machine, (kernel.grid, BLOCK_THREADS, 0), args)
    return unpack_outputs(kernel, result.outputs["out"])[0]
