"""Hopper's warpgroup MMA: ``wgmma``'s descriptors, fragments and ``.f16``/``.bf16`` kind.

PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions" (PTX 8.0,
sm_90a)::

    wgmma.mma_async.sync.aligned.m64nNk16.dtype.atype.btype d, a-desc, b-desc, scale-d,
                                          imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b;
    wgmma.mma_async.sync.aligned.m64nNk16.dtype.atype.btype d, a, b-desc, scale-d,
                                          imm-scale-a, imm-scale-b, imm-trans-b;
    wgmma.fence.sync.aligned;  wgmma.commit_group.sync.aligned;  wgmma.wait_group.sync.aligned N;

with ``.atype == .btype`` one of ``.f16``/``.bf16``, ``.dtype`` ``.f32`` (or ``.f16`` for
``.f16`` multiplicands) and N a multiple of 8 from 8 to 256; the ``.tf32``, ``.e4m3``/``.e5m2``
and ``.s8``/``.u8`` kinds, which share the fragments and descriptors below, are in
:mod:`karyamorph.model.ptx.wgmma_kinds`. The unit is the warpgroup: four contiguous warps of a
CTA, the first of rank a multiple of four, 128 threads. ``D = A B + D`` (or ``A B`` when the
predicate ``scale-d`` is false) for a 64 x K matrix A, a K x N matrix B and a 64 x N matrix D
(K = 16 here, and 32 bytes of elements of every kind); ``imm-scale-a``/``imm-scale-b`` (1 or -1)
negate A or B.

Fragments ("wgmma.mma_async register fragments"), with ``w`` the warp's rank in the warpgroup,
``g = lane >> 2`` and ``t = lane % 4``:

- D (N/2 elements: ``.f32``/``.s32`` one a register, ``.f16`` two a ``.b32`` register, the first
  in the low half): element ``i`` is row ``16 w + g + 8 ((i / 2) % 2)``, column
  ``8 (i / 4) + 2 t + i % 2``;
- A in registers (four ``.b32``): warp ``w`` holds rows ``16 w`` to ``16 w + 15`` in the layout of
  the ``mma`` A fragment of its element size (:mod:`karyamorph.model.ptx.mma`: ``m16n8k16`` for
  16-bit, ``m16n8k8`` for ``.tf32``, ``m16n8k32`` for 8-bit elements).

Matrices in shared memory ("Matrix Descriptor Format", "Shared Memory Matrix Layout"): a 64-bit
descriptor holds the start address, the leading dimension byte offset (LBO) and the stride
dimension byte offset (SBO), each encoded as ``(x & 0x3FFFF) >> 4`` in bits 0-13, 16-29 and
32-45, the base offset in bits 49-51 and the swizzle mode in bits 62-63 (0 none, 1 128-byte,
2 64-byte, 3 32-byte). K-major (``imm-trans`` 0, and the only layout of the other kinds: A as
M x K, B as N x K, K contiguous): rows of A (columns of B) come in groups of eight, SBO bytes
apart. Without swizzling a group is two core matrices of eight 16-byte rows, the second LBO
bytes after the first; with an S-byte swizzle row ``r`` of a group starts ``S r`` bytes in and
holds all 32 bytes of K, so LBO is unused. MN-major (``imm-trans`` 1, swizzled; the PTX ISA's
swizzle atom is S/2 elements of M or N by 8 of K): row ``k % 8`` of an atom starts ``S (k % 8)``
bytes in and holds S/2 consecutive rows of A (columns of B); the atoms of the next eight K are
SBO bytes on and those of the next S/2 rows of M or N LBO bytes on (CUTLASS's canonical
``((T, S/16, m), (8, k)) : ((1, T, LBO), (S/16 T, SBO))``, T elements a 16-byte unit). Every
swizzle XORs the 16-byte chunk index (address bits 4-6) with address bits 7-9 (all three for
128-byte, the low two for 64-byte, one for 32-byte), the pattern starting on 1024-, 512- and
256-byte boundaries when the base offset is 0. The model refuses a non-zero base offset and an
MN-major matrix without swizzling.

Arithmetic: the PTX ISA does not document the tensor core's internal precision or the order of
its additions, and neither is known to the model. What the model computes: every product of two
``.f16``/``.bf16`` elements is exact in float64, C and the 16 products are added in float64 in
order ``c + a0 b0 + ... + a15 b15`` (exact whenever the terms span at most 53 bits) and the sum
is rounded once to ``.f32`` or ``.f16``, to nearest even. A GPU may differ in the last bits (it
may truncate or accumulate in fewer bits): compare floating-point results with a tolerance. The
asynchronous completion is not modeled apart: each warp computes its 16 rows of D when it issues
``mma_async`` (A and B from the shared memory of that moment), which is one execution the PTX ISA
allows a kernel that fences with ``wgmma.fence``, commits and waits with ``wait_group`` before
touching D; ``fence``, ``commit_group`` and ``wait_group`` then order nothing further, and the
interpreter checks that every thread of the warpgroup executes each of them (``.sync.aligned``).
Drivers run the instructions through the optional hook ``warpgroup_rank(valid, why)``, which a
driver without warpgroups lacks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic

from karyamorph.model.ptx.mma import gather_a, read_accumulator, registers, write_accumulator
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Semantics, Slot
from karyamorph.model.semantics.types import B32, TYPES, PtxType

SHAPES = tuple(f"m64n{n}k16" for n in range(8, 257, 8))
K = 16
K_BYTES = 32
"""Bytes of K that one ``mma_async`` reads of a row of A (column of B), in every kind."""
SWIZZLE_BYTES = (16, 128, 64, 32)
"""Bytes of one row of a core-matrix group by swizzle mode (none: a core matrix's 16 bytes)."""
SWIZZLE_MASK = (0, 7, 3, 1)
"""Bits of the 16-byte chunk index that the swizzle XORs, by mode."""
_LOG_SWIZZLE = (4, 7, 6, 5)  # log2 of SWIZZLE_BYTES
TRANSPOSABLE = ("f16", "bf16")
"""The element types that may be MN-major (``imm-trans``); the PTX ISA makes the others K-major."""
_B64 = TYPES["b64"]
_ELEMENT = {1: TYPES["b8"], 2: TYPES["b16"], 4: B32}
_SIGN64 = 1 << 63


def width(shape: str) -> int:
    """N of an ``m64nNkK`` shape."""
    return int(shape.split("n")[1].split("k")[0])


def _field(d: Domain[V, B], desc: V, lo: int, bits: int) -> V:
    return d.and_(d.lshr(desc, d.const(lo, 64), 64), d.const((1 << bits) - 1, 64), 64)


def _pick(d: Domain[V, B], m: Layout[V, B], values: tuple[int, ...]) -> V:
    """``values[mode]`` for the 64-bit swizzle ``mode`` of ``m`` (0..3)."""
    if m.known_mode is not None:
        return d.const(values[m.known_mode], 64)
    mode = m.mode
    out = d.const(values[3], 64)
    for i in (2, 1, 0):
        out = d.ite(d.eq(mode, d.const(i, 64), 64), d.const(values[i], 64), out, 64)
    return out


@dataclass(frozen=True, slots=True)
class Layout(Generic[V, B]):
    """The fields of a matrix descriptor (64-bit values; byte counts decoded)."""

    start: V
    lbo: V
    sbo: V
    base_offset: V
    mode: V
    known_mode: int | None = None  # ``mode`` where a driver knows it is that constant


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


def readable(d: Domain[V, B], m: Layout[V, B], mn_major: bool) -> B:
    """Whether the model reads the matrix: base offset 0 and, MN-major, a swizzled layout."""
    ok = d.eq(m.base_offset, d.const(0, 64), 64)
    if not mn_major:
        return ok
    return d.band(ok, d.bnot(d.eq(m.mode, d.const(0, 64), 64)))


def address(d: Domain[V, B], m: Layout[V, B], mn: V, k: int, mn_major: bool, size: int = 2) -> V:
    """The 32-bit shared address of element ``(mn, k)`` (row ``mn`` of A or column of B, a
    64-bit value; ``k`` below ``32 / size``) of ``size``-byte elements (MN-major: 2 bytes)."""
    pitch = _pick(d, m, SWIZZLE_BYTES)
    seven, three = d.const(7, 64), d.const(3, 64)
    if mn_major:  # atoms of 8 rows of K, each ``pitch`` bytes of consecutive M or N
        shift = _pick(d, m, tuple(s - size.bit_length() + 1 for s in _LOG_SWIZZLE))
        atom = d.lshr(mn, shift, 64)  # which atom along M or N, LBO apart
        inside = d.sub(mn, d.shl(atom, shift, 64), 64)
        at = d.add(d.mul(d.const(k // 8, 64), m.sbo, 64), d.mul(d.const(k % 8, 64), pitch, 64), 64)
        at = d.add(at, d.add(d.mul(atom, m.lbo, 64), d.mul(inside, d.const(size, 64), 64), 64), 64)
        at = d.add(m.start, at, 64)
    else:  # core-matrix groups of 8 rows of M or N, SBO apart
        kb = size * k
        plain_k = d.add(d.mul(d.const(kb // 16, 64), m.lbo, 64), d.const(kb % 16, 64), 64)
        if m.known_mode is None:
            k_bytes = d.ite(d.eq(m.mode, d.const(0, 64), 64), plain_k, d.const(kb, 64), 64)
        else:
            k_bytes = plain_k if m.known_mode == 0 else d.const(kb, 64)
        group, row = d.lshr(mn, three, 64), d.and_(mn, seven, 64)
        at = d.add(m.start, d.add(d.mul(group, m.sbo, 64), d.mul(row, pitch, 64), 64), 64)
        at = d.add(at, k_bytes, 64)
    chunk = d.and_(d.lshr(at, seven, 64), _pick(d, m, SWIZZLE_MASK), 64)
    return d.trunc(d.xor(at, d.shl(chunk, d.const(4, 64), 64), 64), 64, 32)


def fragment(i: int) -> tuple[int, int]:
    """``(r, col)`` of D element ``i``: row ``16 w + g + 8 r``, column ``8 (col / 2) + 2 t + col % 2``."""
    return (i // 2) % 2, 2 * (i // 4) + i % 2


def _scale(x: Exec[V, B], slot: str) -> bool:
    """Whether the ``imm-scale`` operand ``slot`` negates its matrix (1 keeps, -1 negates)."""
    value = x.imm(slot)
    if value not in (1, -1):
        raise x.operand_error(f"operand {slot} must be 1 or -1, got {value}")
    return value == -1


def scales(x: Exec[V, B]) -> tuple[bool, bool]:
    """Whether ``imm-scale-a`` and ``imm-scale-b`` negate A and B."""
    return _scale(x, "sa"), _scale(x, "sb")


def _transposed(x: Exec[V, B], slot: str) -> bool:
    """Whether ``imm-trans`` operand ``slot`` asks for the MN-major layout (0 K-major, 1 MN-major)."""
    value = x.imm(slot)
    if value not in (0, 1):
        raise x.operand_error(f"operand {slot} must be 0 or 1, got {value}")
    return value == 1


@dataclass(frozen=True, slots=True)
class Operands:
    """How an ``mma_async`` takes its matrices: N, A from registers, A and B MN-major."""

    n: int
    from_registers: bool
    trans_a: bool
    trans_b: bool


def multiplicand(x: Exec[V, B]) -> tuple[str, int]:
    """A's element type and its bytes: the second type, or the ``.tf32`` modifier (tf32 is a
    container format, not a register type)."""
    if x.mod("atype") == "tf32":
        return "tf32", 4
    at = x.types[1]
    return at.name, at.bits // 8


def operands(x: Exec[V, B]) -> Operands:
    """The matrices' operands of an ``mma_async`` (its ``imm-trans`` operands, where its kind
    has them), with D's register count checked."""
    dt, (at, _) = x.types[0], multiplicand(x)
    n = width(x.mod("shape") or "")
    if x.count("d") != registers(dt, n // 2):
        raise x.operand_error(
            f"operand d needs {registers(dt, n // 2)} registers in braces, got {x.count('d')}"
        )
    from_registers = x.count("a") > 1
    if from_registers and x.count("a") != 4:
        raise x.operand_error(f"operand a needs a descriptor or 4 registers in braces, got {x.count('a')}")
    if at not in TRANSPOSABLE:
        return Operands(n, from_registers, False, False)
    if from_registers == x.has("tb"):
        raise x.operand_error("A from registers takes imm-trans-b alone, A from a descriptor both imm-trans")
    trans_b = _transposed(x, "ta" if from_registers else "tb")
    trans_a = False if from_registers else _transposed(x, "ta")
    return Operands(n, from_registers, trans_a, trans_b)


def in_warpgroup(x: Exec[V, B], valid: B, why: str) -> V:
    """The thread's warp's rank in its warpgroup (a 32-bit value), through the driver's hook,
    which also requires ``valid`` of every thread (``why``: what it requires)."""
    hook = getattr(x, "warpgroup_rank", None)  # optional: drivers that run warpgroups
    if hook is None:
        raise x.operand_error("needs a driver that runs warpgroups (hook warpgroup_rank)")
    rank: V = hook(valid, why)
    return rank


Elements = dict[tuple[int, int], V]


def fetch(x: Exec[V, B], ops: Operands) -> tuple[Elements[V], Elements[V]]:
    """The elements of A and B the thread needs, as bit patterns of their types:
    ``(r, kk) -> A[16 w + g + 8 r][kk]`` and ``(col, kk) -> B[kk][8 (col / 2) + 2 t + col % 2]``."""
    d = x.D
    _, size = multiplicand(x)
    k = K_BYTES // size
    b_layout = layout(d, x.read("b", _B64))
    a_layout = None if ops.from_registers else layout(d, x.read("a", _B64))
    valid = readable(d, b_layout, ops.trans_b)
    if a_layout is not None:
        valid = d.band(readable(d, a_layout, ops.trans_a), valid)
    why = "a descriptor with a base offset, or an MN-major matrix without swizzling"
    warp = d.zext(in_warpgroup(x, valid, why), 32, 64)
    lane = d.zext(x.lane(), 32, 64)
    g, t = d.lshr(lane, d.const(2, 64), 64), d.and_(lane, d.const(3, 64), 64)
    a: Elements[V] = {}
    if a_layout is None:
        a = gather_a(x, [x.read("a", B32, j) for j in range(4)], _ELEMENT[size], k)
    else:
        for r in range(2):
            row = d.add(d.shl(warp, d.const(4, 64), 64), d.add(g, d.const(8 * r, 64), 64), 64)
            for kk, at in enumerate(_row(d, a_layout, row, k, ops.trans_a, size)):
                a[(r, kk)] = x.load("shared", at, 32, _ELEMENT[size])
    b: Elements[V] = {}
    for col in range(ops.n // 4):
        column = d.add(d.shl(t, d.const(1, 64), 64), d.const(8 * (col // 2) + col % 2, 64), 64)
        for kk, at in enumerate(_row(d, b_layout, column, k, ops.trans_b, size)):
            b[(col, kk)] = x.load("shared", at, 32, _ELEMENT[size])
    return a, b


def _row(d: Domain[V, B], m: Layout[V, B], mn: V, k: int, mn_major: bool, size: int) -> list[V]:
    """The addresses of elements 0 to ``k - 1`` of row ``mn`` of A (column of B). A K-major row
    is 16-byte chunks, each 16-byte aligned and moved whole by a swizzle: one address a chunk,
    the rest by offsets (which the domains compute faster than an address each)."""
    if mn_major:
        return [address(d, m, mn, kk, True, size) for kk in range(k)]
    per = 16 // size
    firsts = [address(d, m, mn, kk, False, size) for kk in range(0, k, per)]
    return [d.add(firsts[kk // per], d.const(size * (kk % per), 32), 32) if kk % per else firsts[kk // per]
            for kk in range(k)]  # fmt: skip


def as_f64(x: Exec[V, B], v: V, t: PtxType, negate: bool) -> V:
    """The float64 bit pattern of the ``.f16``/``.bf16``/``.f32`` element ``v``, negated or not."""
    d = x.D
    f = d.fcvt(v, t.name, "f64", "rn")
    return d.xor(f, d.const(_SIGN64, 64), 64) if negate else f


def ordered_sum(x: Exec[V, B], a: Elements[V], b: Elements[V], n: int, k: int, dt: PtxType) -> None:
    """D (``.f32`` or ``.f16``) from float64 elements: ``c + a0 b0 + ... + a(k-1) b(k-1)`` in
    float64 in that order, rounded once to ``dt`` (C left out where ``scale-d`` is false)."""
    d = x.D
    keep = x.read_pred("scale_d")
    out = []
    for i, held in enumerate(read_accumulator(x, "d", dt, 0, n // 2)):
        r, col = fragment(i)
        first = d.fmul(a[(r, 0)], b[(col, 0)], "f64", "rn")
        c = d.fcvt(held, dt.name, "f64", "rn")
        acc = d.ite(keep, d.fadd(c, first, "f64", "rn"), first, 64)
        for kk in range(1, k):
            acc = d.fadd(acc, d.fmul(a[(r, kk)], b[(col, kk)], "f64", "rn"), "f64", "rn")
        out.append(d.fcvt(acc, "f64", dt.name, "rn"))
    write_accumulator(x, "d", dt, out)


def _mma_async(x: Exec[V, B]) -> None:
    dt, at, bt = x.types
    ops = operands(x)
    neg_a, neg_b = scales(x)
    raw_a, raw_b = fetch(x, ops)
    a = {rk: as_f64(x, v, at, neg_a) for rk, v in raw_a.items()}
    b = {ck: as_f64(x, v, bt, neg_b) for ck, v in raw_b.items()}
    ordered_sum(x, a, b, ops.n, K, dt)


def _aligned(x: Exec[V, B]) -> None:
    # D is complete when mma_async is issued (see the module docstring): what is left of fence,
    # commit_group and wait_group is that the whole warpgroup executes them.
    in_warpgroup(x, x.D.bconst(True), "")


def _wait_group(x: Exec[V, B]) -> None:
    x.imm("n")  # the number of groups left pending: an immediate (every group is complete here)
    _aligned(x)


def _rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    dt, at, bt = types
    if at != bt or at not in TRANSPOSABLE:
        return f"wgmma ...k16 multiplies .f16.f16 or .bf16.bf16, not .{at}.{bt}"
    if dt != "f32" and not (dt == "f16" and at == "f16"):
        return f"wgmma accumulates .{at} in .f32{' or .f16' if at == 'f16' else ''}, not .{dt}"
    return None


AS = ("mma_async", "sync", "aligned")


def _sync(op: str, sem: Semantics, slots: tuple[Slot, ...], doc: str) -> Instr:
    return Instr("wgmma", (), slots, sem, fixed=(op, *AS[1:]), ntypes=0, kind="warp", min_ptx="8.0",
                 min_target="sm_90a", doc=doc)  # fmt: skip


MATRICES = (Slot("d", dest=True), Slot("a"), Slot("b"), Slot("scale_d", "pred"))
"""The operands every ``mma_async`` kind takes, before its immediates."""
TypeRule = Callable[[tuple[str, ...], dict[str, str]], "str | None"]


def declare(
    types: tuple[str, ...],
    imms: tuple[Slot, ...],
    sem: Semantics,
    groups: dict[str, tuple[str, ...]],
    rule: TypeRule,
    doc: str,
    ntypes: int = 3,
    min_ptx: str = "8.0",
) -> Instr:
    """An ``mma_async`` declaration: D, A, B, scale-d and the kind's immediates ``imms``; every
    group but ``satfinite`` required."""
    required = tuple(g for g in groups if g != "satfinite")
    return Instr("wgmma", types, (*MATRICES, *imms), sem, groups, required=required, fixed=AS, ntypes=ntypes,
                 kind="warp", min_ptx=min_ptx, min_target="sm_90a", type_rule=rule, doc=doc)  # fmt: skip


WGMMA: tuple[Instr, ...] = (
    declare(("f32", "f16", "bf16"), (Slot("sa", "imm"), Slot("sb", "imm"), Slot("ta", "imm"),
            Slot("tb", "imm", optional=True)), _mma_async, {"shape": SHAPES}, _rule,
            "warpgroup D = A * B (+ D) on 64xNx16 tiles, A and B from shared memory descriptors (A also "
            "from registers), f16/bf16 -> f32, f16 -> f16"),
    _sync("fence", _aligned, (), "order register accesses before wgmma.mma_async (a warpgroup instruction)"),
    _sync("commit_group", _aligned, (), "commit the warpgroup's pending mma_async operations as a group"),
    _sync("wait_group", _wait_group, (Slot("n", "imm"),), "wait until at most N wgmma groups are pending"),
)  # fmt: skip
