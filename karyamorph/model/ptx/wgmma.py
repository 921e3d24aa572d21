"""Hopper's warpgroup matrix multiply-accumulate: ``wgmma`` on ``.f16``/``.bf16`` into ``.f32``.

PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions" (PTX 8.0,
sm_90a)::

    wgmma.mma_async.sync.aligned.m64nNk16.f32.atype.btype d, a-desc, b-desc, scale-d,
                                                          imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b;
    wgmma.mma_async.sync.aligned.m64nNk16.f32.atype.btype d, a, b-desc, scale-d,
                                                          imm-scale-a, imm-scale-b, imm-trans-b;
    wgmma.fence.sync.aligned;  wgmma.commit_group.sync.aligned;  wgmma.wait_group.sync.aligned N;

with ``.atype == .btype`` one of ``.f16``/``.bf16`` and N a multiple of 8 from 8 to 256. The unit is
the warpgroup: four contiguous warps of a CTA, the first of rank a multiple of four, 128 threads.
``D = A B + D`` (or ``A B`` when the predicate ``scale-d`` is false) for a 64 x 16 matrix A, a
16 x N matrix B and a 64 x N matrix D; ``imm-scale-a``/``imm-scale-b`` (1 or -1) negate A or B.

Fragments ("wgmma.mma_async register fragments"), with ``w`` the warp's rank in the warpgroup,
``g = lane >> 2`` and ``t = lane % 4``:

- D (N/2 ``.f32`` registers): element ``i`` is row ``16 w + g + 8 ((i / 2) % 2)``, column
  ``8 (i / 4) + 2 t + i % 2``;
- A in registers (four ``.b32``, two elements each): warp ``w`` holds rows ``16 w`` to
  ``16 w + 15`` in the layout of ``mma.m16n8k16``'s A (:mod:`karyamorph.model.ptx.mma`).

Matrices in shared memory ("Matrix Descriptor Format", "Shared Memory Matrix Layout"): a 64-bit
descriptor holds the start address, the leading dimension byte offset (LBO) and the stride
dimension byte offset (SBO), each encoded as ``(x & 0x3FFFF) >> 4`` in bits 0-13, 16-29 and
32-45, the base offset in bits 49-51 and the swizzle mode in bits 62-63 (0 none, 1 128-byte,
2 64-byte, 3 32-byte). K-major (``imm-trans`` 0: A as M x K, B as N x K, K contiguous): rows
of A (columns of B) come in groups of eight, SBO bytes apart. Without swizzling a group is two
core matrices of eight 16-byte rows (eight elements of K each), the second LBO bytes after the
first; with an S-byte swizzle row ``r`` of a group starts ``S r`` bytes in and holds all 16
elements of K (32 bytes), so LBO is unused. MN-major (``imm-trans`` 1, swizzled; the PTX ISA's
swizzle atom is S/2 elements of M or N by 8 of K): row ``k % 8`` of an atom starts ``S (k % 8)``
bytes in and holds consecutive rows of A (columns of B), the atoms of the next eight K SBO bytes
apart; the model reads only matrices one atom wide (M or N at most S/2), where LBO, the step
between atoms along M or N, is unused. Every swizzle XORs the 16-byte chunk index (address bits
4-6) with address bits 7-9 (all three for 128-byte, the low two for 64-byte, one for 32-byte),
the pattern starting on 1024-, 512- and 256-byte boundaries when the base offset is 0. The model
refuses a non-zero base offset, an MN-major matrix without swizzling or wider than its atom.

Arithmetic, as :mod:`karyamorph.model.ptx.mma` states it (the PTX ISA does not document the
tensor core's internal precision or order): every product of two ``.f16``/``.bf16`` elements is
exact in float64, C and the 16 products are added in float64 in order
``c + a0 b0 + ... + a15 b15`` and the sum is rounded once to ``.f32``, to nearest even; a GPU may
differ in the last bits. The asynchronous completion is not modeled apart: each warp computes
its 16 rows of D when it issues ``mma_async`` (A and B from the shared memory of that moment),
which is one execution the PTX ISA allows a kernel that fences with ``wgmma.fence``, commits and
waits with ``wait_group`` before touching D; ``fence``, ``commit_group`` and ``wait_group`` then
order nothing further, and the interpreter checks that every thread of the warpgroup executes
each of them (``.sync.aligned``). Drivers run the instructions through the optional hook
``warpgroup_rank(valid, why)``, which a driver without warpgroups lacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic

from karyamorph.model.ptx.mma import gather_a
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Semantics, Slot
from karyamorph.model.semantics.types import B32, TYPES, PtxType

SHAPES = tuple(f"m64n{n}k16" for n in range(8, 257, 8))
K = 16
SWIZZLE_BYTES = (16, 128, 64, 32)
"""Bytes of one row of a core-matrix group by swizzle mode (none: a core matrix's 16 bytes)."""
SWIZZLE_MASK = (0, 7, 3, 1)
"""Bits of the 16-byte chunk index that the swizzle XORs, by mode."""
_B64, _F32 = TYPES["b64"], TYPES["f32"]
_SIGN64 = 1 << 63


def width(shape: str) -> int:
    """N of an ``m64nNk16`` shape."""
    return int(shape.split("n")[1].split("k")[0])


def _field(d: Domain[V, B], desc: V, lo: int, bits: int) -> V:
    return d.and_(d.lshr(desc, d.const(lo, 64), 64), d.const((1 << bits) - 1, 64), 64)


def _pick(d: Domain[V, B], mode: V, values: tuple[int, ...]) -> V:
    """``values[mode]`` for a 64-bit ``mode`` in 0..3."""
    out = d.const(values[3], 64)
    for m in (2, 1, 0):
        out = d.ite(d.eq(mode, d.const(m, 64), 64), d.const(values[m], 64), out, 64)
    return out


@dataclass(frozen=True, slots=True)
class Layout(Generic[V, B]):
    """The fields of a matrix descriptor (64-bit values; byte counts decoded)."""

    start: V
    lbo: V
    sbo: V
    base_offset: V
    mode: V


def layout(d: Domain[V, B], desc: V) -> Layout[V, B]:
    """The fields of the 64-bit descriptor ``desc``."""
    four = d.const(4, 64)
    return Layout(
        d.shl(_field(d, desc, 0, 14), four, 64),
        d.shl(_field(d, desc, 16, 14), four, 64),
        d.shl(_field(d, desc, 32, 14), four, 64),
        _field(d, desc, 49, 3),
        _field(d, desc, 62, 2),
    )


def readable(d: Domain[V, B], m: Layout[V, B], mn_major: bool, extent: int) -> B:
    """Whether the model reads the matrix: base offset 0 and, MN-major, a swizzled layout whose
    one atom holds all ``extent`` rows of M or N (no LBO step along them)."""
    ok = d.eq(m.base_offset, d.const(0, 64), 64)
    if not mn_major:
        return ok
    one_atom = d.le(d.const(2 * extent, 64), _pick(d, m.mode, SWIZZLE_BYTES), 64, False)
    return d.band(ok, d.band(d.bnot(d.eq(m.mode, d.const(0, 64), 64)), one_atom))


def address(d: Domain[V, B], m: Layout[V, B], mn: V, k: int, mn_major: bool) -> V:
    """The 32-bit shared address of element ``(mn, k)`` (row ``mn`` of A or column of B, a
    64-bit value; ``k`` in 0..15; 2-byte elements)."""
    pitch = _pick(d, m.mode, SWIZZLE_BYTES)
    seven, three = d.const(7, 64), d.const(3, 64)
    if mn_major:  # an atom: 8 rows of K, each ``pitch`` bytes of consecutive M or N
        at = d.add(d.mul(d.const(k // 8, 64), m.sbo, 64), d.mul(d.const(k % 8, 64), pitch, 64), 64)
        at = d.add(d.add(m.start, at, 64), d.shl(mn, d.const(1, 64), 64), 64)
    else:  # core-matrix groups of 8 rows of M or N, SBO apart
        plain_k = d.add(d.mul(d.const(k // 8, 64), m.lbo, 64), d.const(2 * (k % 8), 64), 64)
        k_bytes = d.ite(d.eq(m.mode, d.const(0, 64), 64), plain_k, d.const(2 * k, 64), 64)
        group, row = d.lshr(mn, three, 64), d.and_(mn, seven, 64)
        at = d.add(m.start, d.add(d.mul(group, m.sbo, 64), d.mul(row, pitch, 64), 64), 64)
        at = d.add(at, k_bytes, 64)
    chunk = d.and_(d.lshr(at, seven, 64), _pick(d, m.mode, SWIZZLE_MASK), 64)
    return d.trunc(d.xor(at, d.shl(chunk, d.const(4, 64), 64), 64), 64, 32)


def _to_f64(x: Exec[V, B], v: V, t: PtxType, negate: bool) -> V:
    d = x.D
    f = d.fcvt(v, t.name, "f64", "rn")
    return d.xor(f, d.const(_SIGN64, 64), 64) if negate else f


def _scale(x: Exec[V, B], slot: str) -> bool:
    """Whether the ``imm-scale`` operand ``slot`` negates its matrix (1 keeps, -1 negates)."""
    value = x.imm(slot)
    if value not in (1, -1):
        raise x.operand_error(f"operand {slot} must be 1 or -1, got {value}")
    return value == -1


def _transposed(x: Exec[V, B], slot: str) -> bool:
    """Whether ``imm-trans`` operand ``slot`` asks for the MN-major layout (0 K-major, 1 MN-major)."""
    value = x.imm(slot)
    if value not in (0, 1):
        raise x.operand_error(f"operand {slot} must be 0 or 1, got {value}")
    return value == 1


def _mma_async(x: Exec[V, B]) -> None:
    d = x.D
    _, at, bt = x.types
    n = width(x.mod("shape") or "")
    from_registers = x.count("a") > 1
    if x.count("d") != n // 2:
        raise x.operand_error(f"operand d needs {n // 2} registers in braces, got {x.count('d')}")
    if from_registers and x.count("a") != 4:
        raise x.operand_error(f"operand a needs a descriptor or 4 registers in braces, got {x.count('a')}")
    if from_registers == x.has("tb"):
        raise x.operand_error("A from registers takes imm-trans-b alone, A from a descriptor both imm-trans")
    neg_a, neg_b = _scale(x, "sa"), _scale(x, "sb")
    trans_b = _transposed(x, "ta" if from_registers else "tb")
    trans_a = False if from_registers else _transposed(x, "ta")
    b_layout = layout(d, x.read("b", _B64))
    a_layout = None if from_registers else layout(d, x.read("a", _B64))
    valid = readable(d, b_layout, trans_b, n)
    if a_layout is not None:
        valid = d.band(readable(d, a_layout, trans_a, 64), valid)
    hook = getattr(x, "warpgroup_rank", None)  # optional: drivers that run warpgroups
    if hook is None:
        raise x.operand_error("needs a driver that runs warpgroups (hook warpgroup_rank)")
    why = "a descriptor with a base offset, or an MN-major matrix other than one swizzle atom wide"
    warp = d.zext(hook(valid, why), 32, 64)
    lane = d.zext(x.lane(), 32, 64)
    g, t = d.lshr(lane, d.const(2, 64), 64), d.and_(lane, d.const(3, 64), 64)

    # A[16 w + g + 8 r][kk] and B[kk][2 t + col % 2 + 8 (col / 2)], as float64 with the scale applied.
    a: dict[tuple[int, int], V] = {}
    if a_layout is None:
        held = gather_a(x, [x.read("a", B32, j) for j in range(4)], at, K)
        a = {rk: _to_f64(x, v, at, neg_a) for rk, v in held.items()}
    else:
        for r in range(2):
            row = d.add(d.shl(warp, d.const(4, 64), 64), d.add(g, d.const(8 * r, 64), 64), 64)
            for kk in range(K):
                v = x.load("shared", address(d, a_layout, row, kk, trans_a), 32, at)
                a[(r, kk)] = _to_f64(x, v, at, neg_a)
    b: dict[tuple[int, int], V] = {}
    for col in range(n // 4):
        column = d.add(d.shl(t, d.const(1, 64), 64), d.const(8 * (col // 2) + col % 2, 64), 64)
        for kk in range(K):
            v = x.load("shared", address(d, b_layout, column, kk, trans_b), 32, bt)
            b[(col, kk)] = _to_f64(x, v, bt, neg_b)

    keep = x.read_pred("scale_d")
    for i in range(n // 2):
        r, col = (i // 2) % 2, 2 * (i // 4) + i % 2
        first = d.fmul(a[(r, 0)], b[(col, 0)], "f64", "rn")
        c = d.fcvt(x.read("d", _F32, i), "f32", "f64", "rn")
        acc = d.ite(keep, d.fadd(c, first, "f64", "rn"), first, 64)
        for kk in range(1, K):
            acc = d.fadd(acc, d.fmul(a[(r, kk)], b[(col, kk)], "f64", "rn"), "f64", "rn")
        x.write("d", d.fcvt(acc, "f64", "f32", "rn"), _F32, i)


def _aligned(x: Exec[V, B]) -> None:
    # D is complete when mma_async is issued (see the module docstring): what is left of fence,
    # commit_group and wait_group is that the whole warpgroup executes them.
    hook = getattr(x, "warpgroup_rank", None)
    if hook is None:
        raise x.operand_error("needs a driver that runs warpgroups (hook warpgroup_rank)")
    hook(x.D.bconst(True), "")


def _wait_group(x: Exec[V, B]) -> None:
    x.imm("n")  # the number of groups left pending: an immediate (every group is complete here)
    _aligned(x)


def _rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    dt, at, bt = types
    if dt != "f32" or at != bt or at not in ("f16", "bf16"):
        return f"wgmma is modeled for .f32.f16.f16 and .f32.bf16.bf16, not .{dt}.{at}.{bt}"
    return None


_AS = ("sync", "aligned")


def _sync(op: str, sem: Semantics, slots: tuple[Slot, ...], doc: str) -> Instr:
    return Instr("wgmma", (), slots, sem, fixed=(op, *_AS), ntypes=0, kind="warp", min_ptx="8.0",
                 min_target="sm_90a", doc=doc)  # fmt: skip


WGMMA: tuple[Instr, ...] = (
    Instr("wgmma", ("f32", "f16", "bf16"),
          (Slot("d", dest=True), Slot("a"), Slot("b"), Slot("scale_d", "pred"), Slot("sa", "imm"),
           Slot("sb", "imm"), Slot("ta", "imm"), Slot("tb", "imm", optional=True)),
          _mma_async, {"shape": SHAPES}, required=("shape",), fixed=("mma_async", *_AS), ntypes=3,
          kind="warp", min_ptx="8.0", min_target="sm_90a", type_rule=_rule,
          doc="warpgroup D = A * B (+ D) on 64xNx16 tiles, A and B from shared memory descriptors "
              "(A also from registers), f16/bf16 -> f32"),
    _sync("fence", _aligned, (), "order register accesses before wgmma.mma_async (a warpgroup instruction)"),
    _sync("commit_group", _aligned, (), "commit the warpgroup's pending mma_async operations as a group"),
    _sync("wait_group", _wait_group, (Slot("n", "imm"),), "wait until at most N wgmma groups are pending"),
)  # fmt: skip
