"""Blackwell's copy from shared memory to tensor memory: ``tcgen05.cp.cta_group::1`` (sm_100a).

PTX ISA, "tcgen05.cp" and "Data Movement Shape"::

    tcgen05.cp.cta_group::1.shape{.multicast} [taddr], s-desc;
    .shape = { .128x256b, .4x256b, .128x128b, .64x128b, .32x128b }
    .multicast = { .warpx2::02_13, .warpx2::01_23 (both .64x128b only), .warpx4 (.32x128b only) }

One thread issues an asynchronous copy of a ``lanes x bits`` matrix, described in shared memory by
the 64-bit matrix descriptor ``s-desc`` (the ``tcgen05.mma`` one:
:class:`~karyamorph.model.ptx.tcgen05_mma.SmemDesc`), to tensor memory at ``taddr``: row ``r``
to a TMEM lane, its bytes to the columns from ``column(taddr)`` on, four to a 32-bit cell, lowest
byte first. ``.warpx4`` multicasts the 32 rows into all four warps' lanes (row ``r`` to lanes
``r``, ``32 + r``, ``64 + r`` and ``96 + r``): the copy that places scale factors for the
block-scaled ``tcgen05.mma``. The copy reads shared memory through the async proxy and completes
as the issuing thread's later ``tcgen05.commit`` says; the ``tcgen05.mma`` of the same thread
after it is ordered behind it (the ISA's implicitly pipelined pairs).

Without swizzling, byte ``b`` of row ``r`` is at ``start + (r / 8) SBO + (b / 16) LBO + (r % 8) 16
+ b % 16``, the core-matrix layout of the MMA operands.

What the model runs: ``.128x256b``, ``.128x128b`` and ``.32x128b.warpx4``, unswizzled. ``.4x256b``
(the lanes of its four rows are drawn, not said) and ``.64x128b.warpx2`` (the text, "each warp in
the warp pair receive half of the data", admits two placements of the 64 rows) are declared and
refused at run time as the model's limit; the decompressing forms (``.b8x16.b6x16_p32``,
``.b8x16.b4x16_p64``) and ``cta_group::2`` are not declared.
"""

from __future__ import annotations

from karyamorph.model.ptx.tcgen05 import PTX, TARGET
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import U64

# shape -> (rows, bytes a row); the multicast a shape requires, if any
SHAPES: dict[str, tuple[int, int]] = {
    "128x256b": (128, 32),
    "4x256b": (4, 32),
    "128x128b": (128, 16),
    "64x128b": (64, 16),
    "32x128b": (32, 16),
}
MULTICAST: dict[str, tuple[str, ...]] = {
    "64x128b": ("warpx2::02_13", "warpx2::01_23"),
    "32x128b": ("warpx4",),
}
UNMODELED: dict[str, str] = {
    "4x256b": "the TMEM lanes of .4x256b's four rows are given by a figure only",
    "64x128b": ".64x128b.warpx2: the PTX ISA's text admits two placements of the 64 rows in the warp pairs",
}


def _cp(x: Exec[V, B]) -> None:
    hook = getattr(x, "tmem_copy", None)
    if hook is None:
        raise x.operand_error("tensor memory (tcgen05) is run by the interpreter only")
    addr, bits = x.address("taddr")
    taddr = addr if bits == 32 else x.D.trunc(addr, bits, 32)
    hook(taddr, x.read("sdesc", U64), str(x.mod("shape")))


def _rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    shape, need = mods.get("shape", ""), MULTICAST.get(mods.get("shape", ""), ())
    cast = mods.get("multicast")
    if need and cast not in need:
        return f".{shape} requires {' or '.join('.' + m for m in need)}"
    if not need and cast:
        return f".{shape} takes no .{cast}"
    return None


TCGEN05_COPY: tuple[Instr, ...] = (
    Instr("tcgen05", (), (Slot("taddr", "addr"), Slot("sdesc")), _cp,
          {"cta_group": ("cta_group::1",), "shape": tuple(SHAPES),
           "multicast": ("warpx2::02_13", "warpx2::01_23", "warpx4")},
          required=("cta_group", "shape"), fixed=("cp",), ntypes=0, kind="memory", min_ptx=PTX,
          min_target=TARGET, type_rule=_rule,
          doc="copy a matrix from shared memory (a descriptor) to tensor memory"),
)  # fmt: skip
