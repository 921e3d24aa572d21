"""Slips in sm_120's narrow formats (``ptx.narrow_convert``, ``ptx.mma_kinds``,
``ptx.mma_scaled``), applied by ``tests/model/check/test_semantic_slips.py`` with the others of
:mod:`tests.model.oracle.slips`: a pair packed the wrong way round, a dropped ``.relu``, a
rounding modifier ignored, an fp4 element read from the wrong bits of its byte, an accumulator
left out, a scale factor read from the wrong lane or byte."""

from __future__ import annotations

from tests.model.oracle.mutants import Slip

NARROW, KINDS, SCALED = "ptx.narrow_convert", "ptx.mma_kinds", "ptx.mma_scaled"

NARROW_SLIPS: tuple[Slip, ...] = (
    Slip("cvt packs a into the lower byte", NARROW, "_store_pair", ("cvt",), "d.concat(hi, lo, 8, 8)",
         "d.concat(lo, hi, 8, 8)"),
    Slip("cvt.rn.relu.f16x2 from a pair drops .relu", NARROW, "_to_packed", ("cvt",), 'if x.mod("relu"):',
         "if False:"),
    Slip("cvt to .ue8m0x2 rounds .rp as .rz", NARROW, "_encode", ("cvt",), 'x.mod("rnd") or "rz"', '"rz"'),
    Slip("kind::f8f6f4 reads e2m1 from the low bits of its byte", KINDS, "element", ("mma.sync",),
         "d.lshr(byte, d.const(shift, 8), 8) if shift else byte", "byte"),
    Slip("kind::f8f6f4 leaves C out", KINDS, "_mma", ("mma.sync",), 'd.fcvt(c, ct.name, "f64", "rn")',
         "d.const(0, 64)"),
    Slip("block_scale reads row g + 8's scale from row g's lane", SCALED, "_mma", ("mma.sync",),
         "d.add(pair_a, c32(d, r), 32)", "pair_a"),
    Slip("block_scale scales each block with the first block's byte", SCALED, "_scales", ("mma.sync",),
         "d.add(byte_id, c32(d, q), 32)", "byte_id"),
)  # fmt: skip
