"""Oracle for ``mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4``: the PTX ISA's fragment table for
"Matrix Fragments for mma.m16n8k32" (8-bit elements; :mod:`tests.model.oracle.mma`) and an exact
reference.

Every element takes a byte (PTX ISA, "mma": "The matrix element of type .e2m1 resides in central
4 bits of the 8-bit container ... When the matrix element is of type .e3m2 or .e2m3, the matrix
element resides in the lower 6 bits"); element values come from ml_dtypes. The model states
(docs/model.md) that D is ``C + sum A B`` computed exactly and rounded once to nearest even in
the accumulator type: the reference sums exact fractions and rounds with integer arithmetic, so
D must equal it bit for bit; NaN where the float64 sum of the terms is NaN.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import ml_dtypes
import numpy as np

from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.mma import run_mma
from tests.model.oracle.runner import Form

KIND = "kind::f8f6f4"
KINDS = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2, "e3m2": ml_dtypes.float6_e3m2fn,
         "e2m3": ml_dtypes.float6_e2m3fn, "e2m1": ml_dtypes.float4_e2m1fn}  # fmt: skip
SHIFT = {"e4m3": 0, "e5m2": 0, "e3m2": 0, "e2m3": 0, "e2m1": 2}  # where the code sits in its byte
WIDTH = {"e4m3": 8, "e5m2": 8, "e3m2": 6, "e2m3": 6, "e2m1": 4}

Types = tuple[str, str, str, str]


def run(machine: Machine, types: Types, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D (16 x 8 bit patterns) for A (16 x 32), B (32 x 8) codes and C (16 x 8) bit patterns, the
    codes put in their byte containers."""
    _, at, bt, _ = types
    box_a = (a.astype(np.uint64) << np.uint64(SHIFT[at])).astype(np.uint8)
    box_b = (b.astype(np.uint64) << np.uint64(SHIFT[bt])).astype(np.uint8)
    return run_mma(machine, "m16n8k32", types, box_a, box_b, c, kind=KIND)


def round_once(q: Fraction, ft: str) -> float:
    """``q`` rounded to nearest even in binary32/binary16, exactly (no float64 step)."""
    mant, emin, emax = (24, -149, 127) if ft == "f32" else (11, -24, 15)
    if q == 0:
        return 0.0
    mag = abs(q)
    e = max(mag.numerator.bit_length() - mag.denominator.bit_length() - mant, emin)
    while mag >= Fraction(2) ** (e + mant):
        e += 1
    while e > emin and mag < Fraction(2) ** (e + mant - 1):
        e -= 1
    n = round(mag / Fraction(2) ** e)  # Fraction rounds half to even
    value = float(n) * 2.0**e
    if value >= 2.0 ** (emax + 1):
        value = float("inf")
    return value if q > 0 else -value


def values(codes: np.ndarray, t: str) -> np.ndarray:
    """The float64 values of ``t`` codes (without their container shift)."""
    return codes.astype(np.uint8).view(KINDS[t]).astype(np.float64)


def reference(types: Types, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``C + A B`` (16 x 8 values) summed exactly and rounded once to the accumulator type."""
    dt, at, bt, ct = types
    va, vb = values(a, at), values(b, bt)
    vc = c.astype(np.uint32).view(np.float32) if ct == "f32" else c.astype(np.uint16).view(np.float16)
    out = np.zeros((16, 8), np.float64)
    for i, j in itertools.product(range(16), range(8)):
        with np.errstate(invalid="ignore"):  # inf * 0 and inf - inf are NaN, as in IEEE
            terms = [float(vc[i, j])] + [float(va[i, k] * vb[k, j]) for k in range(32)]
            if not all(np.isfinite(terms)):
                out[i, j] = np.sum(terms)
                continue
        out[i, j] = round_once(sum((Fraction(t) for t in terms), Fraction(0)), dt)
    return out


def as_values(bits: np.ndarray, t: str) -> np.ndarray:
    """Accumulator bit patterns (.f32 or .f16) as float64 values."""
    narrow = (
        bits.astype(np.uint32).view(np.float32) if t == "f32" else bits.astype(np.uint16).view(np.float16)
    )
    return narrow.astype(np.float64)


def as_bits(vals: np.ndarray, t: str) -> np.ndarray:
    """float64 values (rounded by numpy) as .f32 or .f16 bit patterns."""
    return vals.astype(np.float32).view(np.uint32) if t == "f32" else vals.astype(np.float16).view(np.uint16)


def knows_kind(form: Form) -> None:
    dt, at, bt, ct = form.types
    ok = form.mod("shape") == "m16n8k32" and form.mod("alayout") == "row" and form.mod("blayout") == "col"
    if not ok or at not in KINDS or bt not in KINDS or dt != ct or dt not in ("f16", "f32"):
        raise NotCovered(f"{form.text}: the {KIND} oracle knows m16n8k32.row.col, .f16.f16/.f32.f32")


def kind_problems(machine: Machine, form: Form, seed: int) -> list[str]:
    """The form on random codes (every pattern of the widths: NaN, infinities, subnormals), then
    on codes without NaN or infinity and a C large enough to matter: D bit for bit."""
    knows_kind(form)
    types: Types = form.types  # type: ignore[assignment]
    dt, at, bt, ct = types
    rng = np.random.default_rng(seed)
    problems = []
    for name in ("any codes", "finite"):
        a = rng.integers(0, 1 << WIDTH[at], (16, 32)).astype(np.uint8)
        b = rng.integers(0, 1 << WIDTH[bt], (32, 8)).astype(np.uint8)
        if name == "finite":
            a = np.where(np.isfinite(values(a, at)), a, 0).astype(np.uint8)
            b = np.where(np.isfinite(values(b, bt)), b, 0).astype(np.uint8)
        c = as_bits(rng.standard_normal((16, 8)) * (4 if name == "any codes" else 100), ct)
        try:
            got = as_values(run(machine, types, a, b, c), dt)
        except ExecutionError as exc:
            return [f"{form.text}: {exc}"]
        want = reference(types, a, b, c)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        problems += [f"{form.text}: {name}: D[{i}, {j}] = {float(got[i, j])!r}, C + A B rounded once = "
                     f"{float(want[i, j])!r}" for i, j in np.argwhere(~same)[:3]]  # fmt: skip
    return problems
