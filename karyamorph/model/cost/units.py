"""Which execution unit an instruction issues to, from its opcode and type.

Rates (warp-instructions per clock per SM) differ by unit: the CUDA C++ Programming Guide's
"Arithmetic Instructions" throughput table gives, per SM and clock, 128 results for 32-bit float
add/multiply/FMA from compute capability 8.6 on (64 on 8.0), 64 for 32-bit integer
add/shift/logic and multiply-add, 16 for conversions and the special functions (MUFU), 32 for
warp shuffles; loads and stores issue to the load/store units, 32 lanes per clock.
"""

from __future__ import annotations

import re

UNITS = ("fp32", "int", "fp64", "half", "tensor", "sfu", "convert", "memory", "shuffle", "control", "other")

_FLOAT_OPS = {
    "add",
    "sub",
    "mul",
    "fma",
    "mad",
    "min",
    "max",
    "neg",
    "abs",
    "setp",
    "selp",
    "testp",
    "copysign",
}
_INT_OPS = {"add", "sub", "mul", "mad", "mul24", "mad24", "sad", "min", "max", "neg", "abs", "and", "or",
            "xor", "not", "shl", "shr", "shf", "lop3", "setp", "selp", "mov", "cvta", "bfe", "bfi",
            "prmt", "popc", "clz", "brev", "bfind", "set", "slct", "dp4a", "dp2a", "mul.wide"}  # fmt: skip
_SFU = {"ex2", "lg2", "rcp", "rsqrt", "sqrt", "sin", "cos", "tanh", "div"}
_MEMORY = {"ld", "st", "ldu", "atom", "red", "cp", "ldmatrix", "stmatrix", "prefetch", "cvt.pack"}
_CONTROL = {"bra", "ret", "exit", "bar", "barrier", "call", "membar", "fence", "trap"}


_WGMMA_SHAPE = re.compile(r"\.m64n(\d+)k\d+\.")
WGMMA_SPEEDUP = 1.58
"""wgmma's tensor rate over mma.sync's (FMA per clock per SM), where the device's tables do not
measure it: 1.58, measured on an H100 SXM (2026-12-06, ``karyamorph microbench --only tensor``:
wgmma m64n256k16 f16 at 2,046 FMA a clock an SM, the H100 whitepaper's dense rate, and
mma.sync m16n8k16 at 1,292, both in one session; ``datasets/microbench/sm_90/h100``). The H200
has the same SM. A machine's own measured ratio replaces it
(:attr:`~karyamorph.model.cost.device_figures.CostMachine.wgmma_speedup`)."""


def wgmma_work(key: str) -> float:
    """The ``mma.sync m16n8k16``s' worth of work one warp's share of a ``wgmma.mma_async`` of
    ``key`` does: ``N / 8`` (a warp's 16 rows of D times N columns times 16 of K, every kind:
    ``k32`` of 8-bit and ``k8`` of tf32 elements take the time of ``k16`` of f16, their rates
    being twice and half); 0 for any other instruction.

    Examples
    --------
    >>> wgmma_work("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16")
    32.0
    >>> wgmma_work("wgmma.fence.sync.aligned")
    0.0
    """
    if not key.startswith("wgmma.mma_async"):
        return 0.0
    m = _WGMMA_SHAPE.search(key + ".")
    return int(m.group(1)) / 8 if m else 0.0


def issue_weight(key: str, wgmma_speedup: float = WGMMA_SPEEDUP) -> float:
    """How many of its unit's issues one warp-instruction of ``key`` takes: 1, but for
    ``wgmma.mma_async``, whose work grows with its N.

    The tensor unit's rate (``device_figures``) is in ``mma.sync m16n8k16``s (2,048 FMA a warp).
    A warp's share of ``wgmma m64nNk16`` is ``N / 8`` m16n8k16s of work (:func:`wgmma_work`), and
    wgmma reaches ``wgmma_speedup`` times mma.sync's rate (:data:`WGMMA_SPEEDUP` unless
    measured): ``N / 8 / wgmma_speedup`` issues at mma.sync's rate."""
    if not key.startswith("wgmma.mma_async"):
        return 1.0
    work = wgmma_work(key)
    return work / wgmma_speedup if work else 1.0


def unit_of(key: str) -> str:
    """The unit of an interpreter counter key such as ``"fma.rn.f32"`` or ``"ld.global.v4.f32"``."""
    parts = key.split(".")
    op, mods = parts[0], parts[1:]
    types = [m for m in mods if (m[:1] in "fbus" and m[1:].isdigit()) or m in ("f16x2", "bf16x2")]
    last = types[-1] if types else ""
    if op in ("mma", "wmma", "wgmma"):
        return "tensor"
    if op in _MEMORY:
        return "memory"
    if op in ("shfl", "vote", "match", "redux", "activemask"):
        return "shuffle"
    if op in _CONTROL:
        return "control"
    if op in _SFU and ("approx" in mods or op in ("ex2", "lg2", "sin", "cos", "tanh", "rsqrt")):
        return "sfu"
    if op == "cvt":
        return "convert"
    if last == "f64":
        return "fp64"
    if last in ("f16", "bf16", "f16x2", "bf16x2"):
        return "half"
    if last == "f32" and op in _FLOAT_OPS | _SFU:
        return "fp32"
    if op in _INT_OPS:
        return "int"
    return "other"
