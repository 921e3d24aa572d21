"""Deliberate slips in what CUB, cooperative groups and Triton's split-K bring (``bmsk``,
``redux.sync``, ``setp`` on ``.f16``/``.bf16``, vector atomics), one or more for each
declaration, for ``tests/model/check/test_semantic_slips.py``."""

from __future__ import annotations

from tests.model.oracle.mutants import Slip

BITS, REDUX, HALF, DATA = "ptx.bitmask", "ptx.redux", "ptx.half", "ptx.data"

LIBRARY_SLIPS: tuple[Slip, ...] = (
    Slip(
        "bmsk.clamp keeps a position of 32 or more",
        BITS,
        "_bmsk",
        ("bmsk",),
        "mask0 = d.ite(big_a, zero, mask0, 32)",
        "mask0 = mask0",
    ),
    Slip(
        "bmsk counts its width from bit 1",
        BITS,
        "_bmsk",
        ("bmsk",),
        "total = d.add(a1, b1, 32)  # at most 62: no wrap",
        "total = d.add(a1, d.add(b1, _c(d, 1), 32), 32)",
    ),
    Slip(
        "redux.sync leaves out the last lane",
        REDUX,
        "_redux",
        ("redux.sync",),
        "for k in range(WARP):",
        "for k in range(WARP - 1):",
    ),
    Slip(
        "redux.sync.min compares unsigned",
        REDUX,
        "_combine",
        ("redux.sync",),
        "less = d.lt(u, v, 32, signed)",
        "less = d.lt(u, v, 32, False)",
    ),
    Slip(
        "setp.f16 answers the opposite",
        HALF,
        "_setp",
        ("setp",),
        'p = compare(d, x.mod("cmp") or "eq", a, b, x.ty)',
        'p = d.bnot(compare(d, x.mod("cmp") or "eq", a, b, x.ty))',
    ),
    Slip(
        "setp.f16 combines with or where and is asked",
        HALF,
        "_setp",
        ("setp",),
        '{"and": d.band, "or": d.bor',
        '{"and": d.bor, "or": d.bor',
    ),
    Slip(
        "atom.v4 adds every element to the first word",
        DATA,
        "_atom",
        ("atom",),
        "at = addr if k == 0 else d.add(addr, d.const(k * t.bytes, abits), abits)",
        "at = addr",
    ),
    Slip(
        "red.v2 adds the first element twice",
        DATA,
        "_red",
        ("red",),
        'x.read("b", t, k)',
        'x.read("b", t, 0)',
    ),
)
