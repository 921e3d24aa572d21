"""Deliberate slips in Blackwell's tensor memory (tcgen05), one or more for each declaration, for
``tests/model/check/test_semantic_slips.py``."""

from __future__ import annotations

from tests.model.oracle.mutants import Slip

TC, TMEM = "ptx.tcgen05", "interp.tensormem"
MMA, MMA_MATH = "ptx.tcgen05_mma", "interp.tensormem_mma"
SYNCS = ("tcgen05.wait::ld.sync", "tcgen05.wait::st.sync", "tcgen05.fence::before_thread_sync",
         "tcgen05.fence::after_thread_sync")  # fmt: skip

TCGEN05_SLIPS: tuple[Slip, ...] = (
    Slip(
        "tcgen05.alloc writes the address one lane on",
        TC,
        "_alloc",
        ("tcgen05.alloc.sync",),
        'x.store("shared", dst, bits, taddr, U32',
        'x.store("shared", dst, bits, d.add(taddr, d.const(1 << 16, 32), 32), U32',
    ),
    Slip(
        "tcgen05.dealloc frees nothing",
        TC,
        "_dealloc",
        ("tcgen05.dealloc.sync",),
        '_hook(x, "tmem_dealloc")(x.read("taddr", U32), x.read("ncols", U32))',
        '_hook(x, "tmem_dealloc")',
    ),
    Slip(
        "tcgen05.relinquish_alloc_permit keeps the permit",
        TC,
        "_relinquish",
        ("tcgen05.relinquish_alloc_permit.sync",),
        '_hook(x, "tmem_relinquish")()',
        '_hook(x, "tmem_relinquish")',
    ),
    Slip(
        "tcgen05.ld gives every register the first column",
        TC,
        "_ld",
        ("tcgen05.ld.sync",),
        'x.write("d", values[j], B32, elem=j)',
        'x.write("d", values[0], B32, elem=j)',
    ),
    Slip(
        "tcgen05.st stores the registers in reverse",
        TC,
        "_st",
        ("tcgen05.st.sync",),
        'values = [x.read("a", B32, elem=j) for j in range(n)]',
        'values = [x.read("a", B32, elem=n - 1 - j) for j in range(n)]',
    ),
    Slip(
        "tcgen05 waits and fences are all told as wait::st",
        TC,
        "_sync",
        SYNCS,
        "hook(op)",
        'hook("wait::st")',
    ),
    Slip(
        "a warp's TMEM quarter is its rank modulo 2",
        TMEM,
        "TensorMemHooks._quarter",
        ("tcgen05.ld.sync", "tcgen05.st.sync"),
        "// self.geo.warp_size % 4",
        "// self.geo.warp_size % 2",
        decls=TC,
    ),
    Slip(
        "tcgen05.mma always accumulates into D",
        MMA,
        "_mma",
        ("tcgen05.mma",),
        'x.read_pred("enable")',
        "x.D.bconst(True)",
    ),
    Slip(
        "the instruction descriptor's M is read from bit 23",
        MMA,
        "InstrDesc.decode",
        ("tcgen05.mma",),
        "_bits(word, 24, 5) << 4",
        "_bits(word, 23, 5) << 4",
    ),
    Slip(
        "the descriptor's leading and stride byte offsets swap roles",
        MMA_MATH,
        "operand_addresses",
        ("tcgen05.mma",),
        "r // 8 * desc.sbo + b // 16 * desc.lbo",
        "r // 8 * desc.lbo + b // 16 * desc.sbo",
        decls=MMA,
    ),
    Slip(
        "kind::i8 reads signed elements as unsigned",
        MMA_MATH,
        "values",
        ("tcgen05.mma",),
        "return b.view(np.int8).astype(np.int64)",
        "return b.astype(np.int64)",
        decls=MMA,
    ),
    Slip(
        "tcgen05.commit arrives twice",
        MMA,
        "_commit",
        ("tcgen05.commit",),
        "change(x, addr, bits, d.const(1, 64), d.const(0, 64))",
        "change(x, addr, bits, d.const(2, 64), d.const(0, 64))",
    ),
)
