"""Deliberate slips in what CUB, cooperative groups and Triton bring (``bmsk``, ``prmt``,
``redux.sync``, ``setp`` on ``.f16``/``.bf16``, vector atomics), one or more for each
declaration, for ``tests/model/check/test_semantic_slips.py``."""

from __future__ import annotations

from tests.model.oracle.mutants import Slip

BITS, REDUX, HALF, DATA = "ptx.bitmask", "ptx.redux", "ptx.half", "ptx.data"
PERMUTE = "ptx.permute"

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
    Slip(
        "prmt replicates the sign when the selector's bit 2 is set",
        PERMUTE,
        "_prmt",
        ("prmt",),
        "replicate = d.bnot(d.eq(d.and_(ctl, _c(d, 8), 32), _c(d, 0), 32))",
        "replicate = d.bnot(d.eq(d.and_(ctl, _c(d, 4), 32), _c(d, 0), 32))",
    ),
    Slip(
        "prmt reads the control nibbles from the top",
        PERMUTE,
        "_prmt",
        ("prmt",),
        "ctl = d.and_(d.lshr(c, _c(d, 4 * i), 32), _c(d, 0xF), 32)",
        "ctl = d.and_(d.lshr(c, _c(d, 12 - 4 * i), 32), _c(d, 0xF), 32)",
    ),
    Slip(
        "prmt.b4e counts forward",
        PERMUTE,
        "_mode_index",
        ("prmt",),
        "return d.and_(d.sub(d.add(s, _c(d, 8), 32), at, 32), _c(d, 7), 32)",
        "return d.and_(d.add(s, at, 32), _c(d, 7), 32)",
    ),
    Slip(
        "prmt.ecl clamps to the right",
        PERMUTE,
        "_mode_index",
        ("prmt",),
        "return d.ite(d.lt(s, at, 32, False), at, s, 32)",
        "return d.ite(d.lt(s, at, 32, False), s, at, 32)",
    ),
)
