"""Kernels that copy a warp's 16-byte chunks into shared memory with ``cp.async`` in a given
pattern: where the chunks land decides how many shared-memory wavefronts the copies cost
(benchmarks/ldgsts_wavefronts.py counts them with Nsight Compute; the interpreter's rule for
them, :func:`karyamorph.model.interp.traffic.copy_wavefronts`, is held to those counts by
tests/model/interp/test_copy_wavefronts.py).

Pattern ``(row, pitch, offset, xor)``: lane ``l`` copies chunk ``l % (row / 16)`` of row
``l // (row / 16)``, read from a 4 KiB-aligned global row and written at ``offset + row_index *
pitch + chunk * 16`` in shared memory (``xor``: the chunk index is exclusive-or'ed with the row
index modulo the chunks a 128-byte line holds, the GEMM templates' swizzle).
"""

from __future__ import annotations

from karyamorph.isa.builder import KernelBuilder
from karyamorph.kernel.spec import DTYPES, ArgSpec, Init, KernelSpec, Launch

CHUNK = 16
REPEATS = 64
PATTERNS: tuple[tuple[int, int, int, bool], ...] = tuple(
    dict.fromkeys(
        (row, pitch, offset, swizzle)
        for row in (32, 64, 128)
        for pitch, swizzle in (
            (row, False),
            (row, True),
            (row + 16, False),
            (row + 32, False),
            (row + 64, False),
            (2 * row, False),
            (256, False),
        )
        for offset in (0, 16)
        if not (swizzle and offset)
    )
)


def copy_kernel(arch: str, row: int, pitch: int, offset: int, swizzle: bool) -> tuple[str, str]:
    """The PTX and entry of one pattern's kernel: ``REPEATS`` rounds of one copy a lane."""
    name = f"cp_r{row}_p{pitch}_o{offset}{'_xor' if swizzle else ''}"
    k = KernelBuilder(name, target=arch, version="8.0")
    src, out = k.param_ptr("src"), k.param_ptr("out")
    rows = 32 // (row // CHUNK)
    buf = k.shared("buf", "b8", offset + rows * max(pitch, row) + 128, align=128)
    base = k.to_global(k.ld_param(src))
    lane = k.and_("b32", k.sreg("tid.x"), 31)
    r, c = k.shr("u32", lane, (row // CHUNK).bit_length() - 1), k.and_("b32", lane, row // CHUNK - 1)
    if swizzle:  # chunk ^ (row mod the chunks of a 128-byte line)
        c = k.xor("b32", c, k.and_("b32", r, 128 // CHUNK - 1))
        c = k.and_("b32", c, row // CHUNK - 1) if row < 128 else c
    dst = k.add("u32", k.mov("u32", buf), k.mad("u32", r, pitch, k.mad("u32", c, CHUNK, offset)))
    block = k.mul_wide("u32", k.sreg("ctaid.x"), 4096 * 32)
    row_start = k.mul_wide("u32", k.mad("u32", r, 4096, k.mul("u32", c, CHUNK)), 1)
    g = k.add("u64", k.add("u64", base, block), row_start)
    with k.for_range(0, REPEATS) as i:
        k.pragma("nounroll")
        at = k.add("u64", g, k.mul_wide("u32", i, 128))
        k.instr("cp.async.cg.shared.global", k.addr(dst), k.addr(at), CHUNK)
        k.instr("cp.async.commit_group")
        k.instr("cp.async.wait_all")
    value = k.ld("shared", "u32", k.addr(dst))
    slot = k.add("u64", k.to_global(k.ld_param(out)), k.mul_wide("u32", lane, 4))
    k.st("global", "u32", k.addr(slot), value)
    k.ret()
    return k.ptx(), name


def copy_spec(arch: str, pattern: tuple[int, int, int, bool]) -> KernelSpec:
    """The spec of one pattern's kernel: 528 blocks of one warp (4 an SM of an H200)."""
    ptx, entry = copy_kernel(arch, *pattern)
    blocks = 132 * 4
    args = (ArgSpec("src", "in", DTYPES["u32"], (str(blocks * 32 * 1024 + REPEATS * 32),), Init("zeros")),
            ArgSpec("out", "out", DTYPES["u32"], ("32",), Init("zeros")))  # fmt: skip
    return KernelSpec(ptx=ptx, entry=entry, sizes={}, launch=Launch((blocks,), (32,)), args=args)
