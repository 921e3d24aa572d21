"""An oracle for tensor copies (``cp.async.bulk.tensor``, tile mode) written element by element
from the CUDA Programming Guide's description, apart from the model's vectorised one: the box in
shared memory, and a kernel that copies one box and dumps the raw shared bytes it landed in."""

from __future__ import annotations

import itertools

import numpy as np

from karyamorph.kernel.tensormap import TensorMap, TensorMapArg
from karyamorph.model.interp.arguments import KernelArg

SHARED_BYTES = 16384
"""The dump kernel's shared buffer (1024-byte aligned): the largest box it takes."""


def box_bytes(src: np.ndarray, tm: TensorMap, coords: tuple[int, ...]) -> np.ndarray:
    """The bytes the box at ``coords`` (innermost first) leaves in shared memory: elements in
    row-major order of the box, zeros outside the tensor, then the swizzle on whole 16-byte
    chunks (chunk bits 4-6 XOR the row bits 7-9, as many as the swizzle has). Bytes a narrow
    row's padding leaves unwritten are zeros here."""
    flat = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
    counts = [-(-b // s) for b, s in zip(tm.box, tm.element_strides, strict=True)]
    e = tm.elem_bytes
    # A row of the box (its innermost dimension) starts every max(row bytes, swizzle span)
    # bytes: the span pads a narrower row (measured on an H100).
    pitch = max(counts[0] * e, tm.swizzle)
    rows = int(np.prod(counts[1:]))
    linear = bytearray(pitch * rows)
    strides = (e, *tm.strides)
    for row, outer in enumerate(itertools.product(*(range(n) for n in reversed(counts[1:])))):
        for i0 in range(counts[0]):
            idx = (i0, *reversed(outer))
            j = [c + i * s for c, i, s in zip(coords, idx, tm.element_strides, strict=True)]
            if all(0 <= x < d for x, d in zip(j, tm.dims, strict=True)):
                at = sum(x * st for x, st in zip(j, strides, strict=True))
                pos = row * pitch + i0 * e
                linear[pos : pos + e] = bytes(flat[at : at + e])
    bits = {0: 0, 32: 1, 64: 2, 128: 3}[tm.swizzle]
    out = bytearray(len(linear))
    for chunk in range(len(linear) // 16):
        a = chunk * 16
        moved = a ^ (((a >> 7) & ((1 << bits) - 1)) << 4)
        out[moved : moved + 16] = linear[a : a + 16]
    return np.frombuffer(bytes(out), np.uint8)


def dump_args(
    src: np.ndarray,
    tm: TensorMap,
    coords: tuple[int, ...],
    *,
    nbytes: int | None = None,
    span: int | None = None,
) -> dict[str, KernelArg]:
    """The arguments of :func:`dump_ptx`'s kernel: the map of ``src``, the box at ``coords``
    (innermost first), the mbarrier armed for ``nbytes`` (default: the box's bytes) and ``span``
    bytes dumped (default: the shared bytes the box spans)."""
    span = tm.shared_bytes if span is None else span
    args: dict[str, KernelArg] = {
        "tmap": TensorMapArg(src, tm),
        "out": np.zeros(max(span // 4, 1), np.uint32),
        "nbytes": tm.box_bytes if nbytes is None else nbytes,
        "span": span,
    }
    args.update({f"c{d}": c & 0xFFFFFFFF for d, c in enumerate(coords)})
    return args


def dump_ptx(
    rank: int, shared_align: int = 1024, offset: int = 0, multicast: bool = False, copy: str | None = None
) -> str:
    """A kernel that zeroes the first ``span`` bytes of its shared buffer, copies the box at its
    ``c0..`` coordinates there through ``tmap`` with one thread (an mbarrier expecting
    ``nbytes``) and stores those ``span`` bytes, as words, to ``out``. ``offset`` moves the box
    off the buffer's start (alignment tests); ``copy`` replaces the copy's opcode (a form with
    ``.L2::cache_hint`` gets a policy operand; with ``multicast``, the ``ctaMask`` operand names
    the CTA alone)."""
    coords = ", ".join(f"%r{10 + d}" for d in range(rank))
    loads = "\n".join(f"    ld.param.u32 %r{10 + d}, [c{d}];" for d in range(rank))
    params = ", ".join(f".param .u32 c{d}" for d in range(rank))
    cast = ".multicast::cluster" if multicast else ""
    mask = ", %rs1" if multicast else ""
    opcode = (
        copy or f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{cast}"
    )
    if "cache_hint" in opcode:
        mask += ", %rd7"
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry tma_dump(.param .align 64 .b8 tmap[128], .param .u64 out, .param .u32 nbytes,
                         .param .u32 span, {params})
{{
    .reg .pred %p<4>;
    .reg .b16 %rs<2>;
    .reg .b32 %r<24>;
    .reg .b64 %rd<8>;
    .shared .align {shared_align} .b8 box[{SHARED_BYTES + 1024}];
    .shared .align 8 .b64 bar;
    mov.b32 %r1, tmap;
    cvt.u64.u32 %rd1, %r1;
    cvta.param.u64 %rd2, %rd1;
    ld.param.u64 %rd3, [out];
    cvta.to.global.u64 %rd4, %rd3;
    ld.param.u32 %r2, [nbytes];
{loads}
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, box;
    add.u32 %r4, %r4, {offset};
    mov.u32 %r5, bar;
    mov.u16 %rs1, 1;
    mov.u64 %rd7, 0;
    ld.param.u32 %r22, [span];
    shr.u32 %r7, %r22, 2;
    mov.u32 %r8, %r3;
$L_zero:
    setp.ge.u32 %p3, %r8, %r7;
    @%p3 bra $L_zeroed;
    shl.b32 %r9, %r8, 2;
    add.u32 %r20, %r4, %r9;
    st.shared.u32 [%r20], 0;
    add.u32 %r8, %r8, 128;
    bra $L_zero;
$L_zeroed:
    fence.proxy.async.shared::cta;
    setp.eq.u32 %p1, %r3, 0;
    @%p1 mbarrier.init.shared::cta.b64 [%r5], 1;
    bar.sync 0;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r5], %r2;
    @%p1 {opcode} [%r4], [%rd2, {{{coords}}}], [%r5]{mask};
    mov.u32 %r6, 0;
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r5], %r6;
    @!%p2 bra $L_wait;
    mov.u32 %r8, %r3;
$L_copy:
    setp.ge.u32 %p3, %r8, %r7;
    @%p3 bra $L_done;
    shl.b32 %r9, %r8, 2;
    add.u32 %r20, %r4, %r9;
    ld.shared.u32 %r21, [%r20];
    mul.wide.u32 %rd5, %r8, 4;
    add.s64 %rd6, %rd4, %rd5;
    st.global.u32 [%rd6], %r21;
    add.u32 %r8, %r8, 128;
    bra $L_copy;
$L_done:
    ret;
}}
"""


Case = tuple[tuple[int, ...], str, tuple[int, ...], int, tuple[int, ...], tuple[int, ...] | None]
# name: tensor shape, dtype, box (outermost first), swizzle, coordinates (innermost first),
# element strides (outermost first; None: all 1)
CASES: dict[str, Case] = {
    "f32_plain_inside": ((20, 40), "float32", (8, 16), 0, (8, 4), None),
    "f32_over_both_edges": ((20, 40), "float32", (8, 16), 0, (32, 16), None),
    "f32_before_both_starts": ((20, 40), "float32", (8, 16), 0, (-4, -3), None),
    "f16_swizzle_32": ((24, 40), "float16", (16, 16), 32, (8, 3), None),
    "f16_swizzle_64": ((24, 72), "float16", (16, 32), 64, (-8, 5), None),
    "f16_swizzle_128": ((40, 80), "float16", (16, 64), 128, (24, 30), None),
    "u8_swizzle_128": ((33, 208), "uint8", (8, 128), 128, (96, -2), None),
    "f32_narrow_rows_64": ((32, 64), "float32", (16, 8), 64, (8, 3), None),
    "f32_narrow_rows_128": ((32, 64), "float32", (16, 4), 128, (4, 20), None),
    "f32_element_strides": ((30, 48), "float32", (8, 16), 0, (4, 2), (2, 1)),
    "f32_rank3": ((5, 12, 16), "float32", (2, 8, 8), 64, (12, 8, 4), None),
}


def case(name: str, seed: int = 0) -> tuple[np.ndarray, TensorMap, tuple[int, ...]]:
    """The tensor (random bytes), its map and the coordinates of one of :data:`CASES`."""
    shape, dtype, box, swizzle, coords, strides = CASES[name]
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    src = src.view(dtype).reshape(shape)
    is_float = src.dtype.kind == "f"
    tm = TensorMap.of_array(
        shape, src.itemsize, box, swizzle=swizzle, is_float=is_float, element_strides=strides
    )
    return src, tm, coords
