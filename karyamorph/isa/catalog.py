"""The PTX instruction catalog: what each opcode does, its operands, and the ISA it needs.

Sources: the PTX ISA manual (https://docs.nvidia.com/cuda/parallel-thread-execution/), the
"PTX ISA Notes" and "Target ISA Notes" of each instruction. Every requirement from sm_75 / PTX
ISA 6.3 upward was also checked with ptxas 13.5: a small kernel per entry and variant, assembled
for sm_75 ... sm_121a at every ``.version`` from 6.3 to 9.5 (e.g. ``cvt`` to ``.e4m3x2`` needs
PTX 7.8 on sm_90 but 8.1 on sm_89). Older requirements come from the manual alone; ``sm_20``
stands for "every target this catalog knows".

Opcodes match the dotted chain ``opcode.modifier...`` by longest prefix (``ld.global.nc.f32``
finds ``ld.global.nc``). A :class:`Variant` raises the requirement when all its modifiers are
present (``"e4m3|e5m2"``: either). Targets compare by :func:`versions.target_supports`, which
keeps ``a`` and ``f`` targets out of the plain "newer is better" order.

The entries speak the terms of :mod:`karyamorph.isa.requirement`; what an instruction or a whole
module needs, and whether its ``.version`` and ``.target`` provide it, is
:mod:`karyamorph.isa.availability`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from karyamorph.isa.requirement import Alternatives, Requirement, Retirement, Variant


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One opcode (or dotted opcode prefix) of the catalog.

    Attributes
    ----------
    opcode : str
        Dotted name as written in PTX, e.g. ``"cp.async.bulk.tensor"``.
    family : str
        One line on what it does.
    min_ptx, min_target : str
        Requirement of its plainest form; ``also`` lists other (target, min PTX) pairs for it.
    operands : tuple of str
        Short operand kinds in order: ``("d", "a", "b")``; ``[a]`` is an address.
    notes, variants, retired
        Remarks; modifier combinations that need more; a form no longer accepted, if any.
    """

    opcode: str
    family: str
    min_ptx: str
    min_target: str
    operands: tuple[str, ...]
    notes: str = ""
    variants: tuple[Variant, ...] = ()
    also: Alternatives = ()
    retired: Retirement | None = None

    @property
    def requirement(self) -> Requirement:
        """The requirement of the plain form."""
        return Requirement(self.min_ptx, self.min_target, self.opcode, self.also)


# ----------------------------------------------------------------------------------------------
# The table

# Arch-specific features of Blackwell that reached every family later: 'a' targets first, then
# the family targets of PTX 8.8 (sm_101f is the pre-9.0 name of sm_110f; the alias covers both).
_BW_A: Alternatives = (
    ("sm_120a", "8.7"),
    ("sm_101a", "8.6"),
    ("sm_100f", "8.8"),
    ("sm_101f", "8.8"),
    ("sm_120f", "8.8"),
)
# The same for features of the sm_10x/sm_11x datacenter line only (tensor memory, tcgen05).
_DC_A: Alternatives = (("sm_101a", "8.6"), ("sm_100f", "8.8"), ("sm_101f", "8.8"))
# shfl/vote without .sync: ptxas "... not supported on .target sm_70 and higher from PTX ISA 6.4".
_NEEDS_SYNC = Retirement("sync", "6.4", "sm_70")


def _e(
    opcode: str,
    family: str,
    ptx: str,
    target: str,
    operands: str,
    variants: Iterable[Variant] = (),
    notes: str = "",
    also: Alternatives = (),
    retired: Retirement | None = None,
) -> CatalogEntry:
    return CatalogEntry(
        opcode, family, ptx, target, tuple(operands.split()), notes, tuple(variants), also, retired
    )


def _v(
    when: str, ptx: str, target: str, reason: str, also: Alternatives = (), min_operands: int = 0
) -> Variant:
    return Variant(tuple(when.split()), ptx, target, reason, also, min_operands)


_F16 = _v("f16|f16x2", "4.2", "sm_53", "half precision")
_BF16 = _v("bf16|bf16x2", "7.8", "sm_90", "bf16")
_BF16_80 = _v("bf16|bf16x2", "7.0", "sm_80", "bf16")
_F32X2 = _v("f32x2", "8.6", "sm_100", "packed .f32x2")
_MIXED = _v("f32 f16|bf16", "8.6", "sm_100", "mixed precision .f32 with .f16/.bf16")
_MEM_ORDER = _v("relaxed|acquire|release|acq_rel", "6.0", "sm_70", "memory-model semantics")
_CACHE_HINT = _v("L2::cache_hint", "7.4", "sm_80", ".L2::cache_hint")
_CLUSTER = _v("shared::cluster|cluster", "7.8", "sm_90", "cluster scope")
_B128 = _v("b128", "8.3", "sm_70", ".b128")
_WIDE = _v("v8", "8.8", "sm_100", "256-bit vectors")
_WIDE64 = _v("v4 b64|u64|s64|f64", "8.8", "sm_100", "256-bit vectors")
_L2_SIZE = _v("L2::64B|L2::128B", "7.4", "sm_75", "L2 prefetch size")
_L2_256 = _v("L2::256B", "7.4", "sm_80", "L2 prefetch size 256B")
_MIN_MAX = (
    _v("f16|f16x2|bf16|bf16x2|NaN", "7.0", "sm_80", "half precision or .NaN"),
    _v("xorsign", "7.2", "sm_86", ".xorsign.abs"),
    _v("relu", "8.0", "sm_90", "integer .relu"),
    _v("f32", "8.8", "sm_100", "three inputs", min_operands=4),
)
_ATOMIC = (
    _v("f64", "5.0", "sm_60", ".f64 add"),
    _v("sys|cta", "5.0", "sm_60", "scope"),
    _MEM_ORDER,
    _v("f16|f16x2", "6.3", "sm_70", ".f16 add"),
    _CACHE_HINT,
    _CLUSTER,
    _v("bf16|bf16x2", "7.8", "sm_90", ".bf16 add"),
    _v("v2|v4|v8", "8.1", "sm_90", "vectors"),
    _v("b128", "8.3", "sm_90", ".b128"),
)

_ENTRIES: tuple[CatalogEntry, ...] = (
    # --- data movement and conversion -------------------------------------------------------
    _e("mov", "copy a register, immediate, address or special register", "1.0", "sm_20", "d a", [_B128]),
    _e("ld", "load from a state space", "1.0", "sm_20", "d [a]", variants=[
        _MEM_ORDER, _CACHE_HINT, _CLUSTER, _B128, _WIDE, _WIDE64, _L2_SIZE, _L2_256,
        _v("mmio", "8.2", "sm_70", "memory-mapped I/O")]),
    _e("ld.global.nc", "load through the non-coherent read-only data cache", "3.1", "sm_32",
       "d [a]", variants=[_CACHE_HINT, _WIDE, _WIDE64, _L2_SIZE, _L2_256]),
    _e("ldu", "load a value that is the same for every thread of the warp", "2.0", "sm_20", "d [a]"),
    _e("st", "store to a state space", "1.0", "sm_20", "[a] b", variants=[
        _MEM_ORDER, _CACHE_HINT, _CLUSTER, _B128, _WIDE, _WIDE64,
        _v("mmio", "8.2", "sm_70", "memory-mapped I/O")]),
    _e("st.async", "store to distributed shared memory + mbarrier", "8.1", "sm_90", "[a] b [mbar]"),
    _e("st.bulk", "initialise a shared-memory region in bulk", "8.6", "sm_100", "[a] size init"),
    _e("cvta", "convert an address between generic and a state space", "2.0", "sm_20", "d a",
       variants=[_v("param", "7.7", "sm_70", ".param"), _CLUSTER]),
    _e("cvt", "convert between types, with rounding, saturation and packing", "1.0", "sm_20",
       "d a", variants=[
           _v("bf16|bf16x2|tf32|relu", "7.0", "sm_80", "bf16/tf32 or .relu"),
           # ptxas 13: "Feature 'cvt with .s32.bf16' requires .target sm_90 or higher"; sm_80
           # converts .bf16 only to and from .f32 (PTX ISA, cvt: .bf16 with other types, 7.8).
           _v("bf16 u16|u32|u64|s16|s32|s64|f16|f64", "7.8", "sm_90", ".bf16 with integer, .f16 or .f64"),
           _v("bf16 ftz|rni|rzi|rmi|rpi", "7.8", "sm_90", ".bf16 with .ftz or integer rounding"),
           _v("bf16*2", "7.8", "sm_90", ".bf16 to .bf16"),
           _v("satfinite bf16|bf16x2|tf32|f16|f16x2", "8.1", "sm_80", ".satfinite to f16/bf16/tf32"),
           _v("e4m3x2|e5m2x2", "7.8", "sm_90", "fp8", also=(("sm_89", "8.1"),)),
           _v("e2m1x2|e2m3x2|e3m2x2|ue8m0x2", "8.6", "sm_100a", "fp4/fp6/ue8m0", also=_BW_A),
           _v("rs", "8.7", "sm_100a", "stochastic rounding .rs",
              also=(("sm_103a", "8.8"), ("sm_107a", "9.4")))]),
    _e("cvt.pack", "convert and pack integers into narrower fields", "6.5", "sm_72", "d a b c"),
    _e("shfl", "exchange registers between the threads of a warp", "3.0", "sm_30", "d|p a b c",
       notes="shfl.sync (with a membermask) replaced the unsynchronised form",
       variants=[_v("sync", "6.0", "sm_30", "shfl.sync")], retired=_NEEDS_SYNC),
    _e("prmt", "permute bytes from two registers", "2.0", "sm_20", "d a b c"),
    _e("ldmatrix", "warp-collective load of 8x8 matrices from shared memory", "6.5", "sm_75",
       "d [a]", variants=[_v("m16n16|m8n16", "8.6", "sm_100a", "8/6/4-bit elements", _BW_A)]),
    _e("stmatrix", "warp-collective store of 8x8 matrices to shared memory", "7.8", "sm_90",
       "[a] b", variants=[_v("m16n8", "8.6", "sm_100a", "8-bit elements", _BW_A)]),
    _e("movmatrix", "transpose an 8x8 matrix held across a warp", "7.8", "sm_75", "d a"),
    _e("isspacep", "is a generic address in a state space", "2.0", "sm_20", "p a", [_CLUSTER]),
    _e("mapa", "map a shared address to the same variable in another CTA", "7.8", "sm_90", "d a b"),
    _e("getctarank", "CTA rank in the cluster of a shared::cluster address", "7.8", "sm_90", "d a"),
    _e("prefetch", "prefetch a line into a cache level", "2.0", "sm_20", "[a]", variants=[
        _v("L2::evict_last|L2::evict_normal", "7.4", "sm_80", "eviction priority"),
        _v("tensormap", "8.0", "sm_90", ".tensormap")]),
    _e("applypriority", "change the L2 eviction priority of a line", "7.4", "sm_80", "[a] size"),
    _e("discard", "drop a line from L2 without writing it back", "7.4", "sm_80", "[a] size"),
    _e("createpolicy", "make a cache eviction policy for .L2::cache_hint", "7.4", "sm_80", "d a b"),
    _e("tex", "texture fetch", "1.0", "sm_20", "d [t c]"),
    _e("suld", "surface load", "2.0", "sm_20", "d [s c]"),
    _e("sust", "surface store", "2.0", "sm_20", "[s c] b"),
    _e("multimem", "load-reduce, store or reduce on a multicast (NVLink) address", "8.1", "sm_90",
       "d [a]", variants=[_v("cp", "9.1", "sm_90", "multimem.cp.async.bulk")]),
    # --- arithmetic ----------------------------------------------------------------------------
    _e("add", "addition", "1.0", "sm_20", "d a b", variants=[_F16, _BF16, _F32X2, _MIXED]),
    _e("sub", "subtraction", "1.0", "sm_20", "d a b", variants=[_F16, _BF16, _F32X2, _MIXED]),
    _e("mul", "multiplication (.lo/.hi/.wide)", "1.0", "sm_20", "d a b", [_F16, _BF16, _F32X2]),
    _e("mad", "multiply-add (.lo/.hi/.wide, .cc for carries)", "1.0", "sm_20", "d a b c"),
    _e("mul24", "24-bit integer multiplication", "1.0", "sm_20", "d a b"),
    _e("mad24", "24-bit integer multiply-add", "1.0", "sm_20", "d a b c"),
    _e("fma", "fused multiply-add, one rounding", "1.4", "sm_20", "d a b c", variants=[
        _F16, _v("bf16|bf16x2|relu", "7.0", "sm_80", "bf16 or .relu"),
        _v("oob", "8.1", "sm_90", ".oob"), _F32X2, _MIXED]),
    _e("div", "division", "1.0", "sm_20", "d a b"),
    _e("rem", "integer remainder", "1.0", "sm_20", "d a b"),
    _e("neg", "negation", "1.0", "sm_20", "d a", variants=[
        _v("f16|f16x2", "6.0", "sm_53", "half precision"), _BF16_80]),
    _e("abs", "absolute value", "1.0", "sm_20", "d a", variants=[
        _v("f16|f16x2", "6.5", "sm_53", "half precision"), _BF16_80]),
    _e("min", "minimum", "1.0", "sm_20", "d a b", variants=_MIN_MAX),
    _e("max", "maximum", "1.0", "sm_20", "d a b", variants=_MIN_MAX),
    _e("and", "bitwise and", "1.0", "sm_20", "d a b"),
    _e("or", "bitwise or", "1.0", "sm_20", "d a b"),
    _e("xor", "bitwise exclusive or", "1.0", "sm_20", "d a b"),
    _e("not", "bitwise complement", "1.0", "sm_20", "d a"),
    _e("shl", "shift left", "1.0", "sm_20", "d a b"),
    _e("shr", "shift right (arithmetic for signed types)", "1.0", "sm_20", "d a b"),
    _e("shf", "funnel shift", "3.1", "sm_32", "d a b c"),
    _e("lop3", "any three-input logic function, given as a lookup table", "4.3", "sm_50",
       "d a b c lut", variants=[_v("and|or", "8.2", "sm_70", "predicate output")]),
    _e("popc", "population count", "2.0", "sm_20", "d a"),
    _e("clz", "count leading zeros", "2.0", "sm_20", "d a"),
    _e("brev", "bit reverse", "2.0", "sm_20", "d a"),
    _e("bfe", "bit-field extract", "2.0", "sm_20", "d a b c"),
    _e("bfi", "bit-field insert", "2.0", "sm_20", "f a b c d"),
    _e("bfind", "position of the most significant non-sign bit", "2.0", "sm_20", "d a"),
    _e("fns", "find the n-th set bit", "6.0", "sm_30", "d mask base offset"),
    _e("bmsk", "make a bit-field mask", "7.6", "sm_70", "d a b"),
    _e("szext", "sign- or zero-extend a bit field", "7.6", "sm_70", "d a b"),
    _e("dp4a", "four-way 8-bit dot product with 32-bit accumulate", "5.0", "sm_61", "d a b c"),
    _e("dp2a", "two-way 16x8-bit dot product with 32-bit accumulate", "5.0", "sm_61", "d a b c"),
    _e("testp", "test a floating-point property (finite, nan, ...)", "2.0", "sm_20", "p a"),
    _e("copysign", "copy the sign of one value onto another", "2.0", "sm_20", "d a b"),
    _e("rcp", "reciprocal", "1.0", "sm_20", "d a"),
    _e("sqrt", "square root", "1.0", "sm_20", "d a"),
    _e("rsqrt", "reciprocal square root", "1.0", "sm_20", "d a"),
    _e("ex2", "base-2 exponential", "1.0", "sm_20", "d a", variants=[
        _v("f16|f16x2", "7.0", "sm_75", "half precision"), _BF16]),
    _e("lg2", "base-2 logarithm", "1.0", "sm_20", "d a"),
    _e("sin", "sine", "1.0", "sm_20", "d a", variants=[_v("2pi", "9.5", "sm_20", ".2pi")]),
    _e("cos", "cosine", "1.0", "sm_20", "d a", variants=[_v("2pi", "9.5", "sm_20", ".2pi")]),
    _e("tanh", "hyperbolic tangent", "7.0", "sm_75", "d a", variants=[_BF16]),
    # --- comparison and selection -------------------------------------------------------------
    _e("setp", "compare and set a predicate", "1.0", "sm_20", "p|q a b c", variants=[_F16, _BF16]),
    _e("set", "compare and set a register", "1.0", "sm_20", "d a b c", variants=[_F16]),
    _e("selp", "select on a predicate", "1.0", "sm_20", "d a b c"),
    _e("slct", "select on the sign of a third operand", "1.0", "sm_20", "d a b c"),
    # --- control flow ---------------------------------------------------------------------------
    _e("bra", "branch", "1.0", "sm_20", "target"),
    _e("brx.idx", "indirect branch through a table of labels", "6.0", "sm_30", "index table"),
    _e("call", "call a function", "1.0", "sm_20", "(ret) f (args)"),
    _e("ret", "return from a function", "1.0", "sm_20", ""),
    _e("exit", "terminate the thread", "1.0", "sm_20", ""),
    _e("trap", "abort the kernel with an error", "1.0", "sm_20", ""),
    _e("nanosleep", "suspend the thread for about a number of nanoseconds", "6.3", "sm_70", "t"),
    # --- synchronisation and communication ------------------------------------------------------
    _e("bar", "CTA barrier (bar.sync, bar.arrive, bar.red)", "1.0", "sm_20", "id count",
       variants=[_v("arrive|red", "2.0", "sm_20", "bar.arrive / bar.red")]),
    _e("barrier", "CTA barrier, also for non-converged warps", "6.0", "sm_30", "id count",
       [_v("cta", "7.8", "sm_30", ".cta")]),
    _e("barrier.cluster", "barrier over all threads of a cluster", "7.8", "sm_90", ""),
    _e("bar.warp", "warp barrier (bar.warp.sync)", "6.0", "sm_30", "membermask"),
    _e("membar", "memory barrier", "1.4", "sm_20", "", [_v("sys", "2.0", "sm_20", ".sys")]),
    _e("fence", "memory fence of the PTX memory model", "6.0", "sm_70", "", [_CLUSTER]),
    _e("fence.proxy.alias", "order accesses through aliased virtual addresses", "7.5", "sm_70", ""),
    _e("fence.proxy.async", "order generic accesses with async-proxy (TMA) ones", "8.0", "sm_90", ""),
    _e("fence.proxy.tensormap", "order tensor-map updates with their use", "8.3", "sm_90", ""),
    _e("fence.mbarrier_init", "make mbarrier.init visible to the cluster", "8.0", "sm_90", ""),
    _e("vote", "warp vote (all, any, uni, ballot)", "1.2", "sm_20", "d a",
       variants=[_v("sync", "6.0", "sm_30", "vote.sync")], retired=_NEEDS_SYNC),
    _e("match", "threads of the warp holding the same value", "6.0", "sm_70", "d|p a membermask"),
    _e("redux", "warp-wide reduction in one instruction (redux.sync)", "7.0", "sm_80",
       "d a membermask", variants=[_v("f32", "8.6", "sm_100a", ".f32", (("sm_100f", "8.8"),))]),
    _e("activemask", "mask of the currently active threads of the warp", "6.2", "sm_30", "d"),
    _e("elect", "elect one leader thread of the warp (elect.sync)", "8.0", "sm_90", "d|p mask"),
    _e("atom", "atomic read-modify-write", "1.1", "sm_20", "d [a] b c", variants=_ATOMIC),
    _e("red", "reduction to memory (atom without a result)", "1.2", "sm_20", "[a] b", _ATOMIC),
    _e("red.async", "reduction on distributed shared memory + mbarrier", "8.1", "sm_90", "[a] b [mbar]"),
    _e("mbarrier", "barrier object in shared memory: init, arrive, test_wait, ...", "7.0",
       "sm_80", "[mbar] ...", variants=[
           _v("shared::cluster|cluster", "8.0", "sm_90", "cluster scope"),
           _v("relaxed", "8.6", "sm_90", ".relaxed")]),
    _e("mbarrier.try_wait", "potentially blocking wait on an mbarrier phase", "7.8", "sm_90",
       "p [mbar] state", variants=[_v("cluster|acquire", "8.0", "sm_90", ".acquire or .cluster"),
                                   _v("relaxed", "8.6", "sm_90", ".relaxed")]),
    _e("mbarrier.expect_tx", "expect bytes of async transactions", "8.0", "sm_90", "[mbar] bytes"),
    _e("mbarrier.complete_tx", "complete async transactions", "8.0", "sm_90", "[mbar] bytes"),
    _e("mbarrier.arrive.expect_tx", "arrive, expecting tx bytes", "8.0", "sm_90", "d [mbar] bytes"),
    _e("griddepcontrol", "programmatic dependent launch: wait, launch_dependents", "7.8", "sm_90", ""),
    _e("setmaxnreg", "raise or lower the warpgroup's register budget", "8.0", "sm_90a", "count",
       also=(("sm_100a", "8.6"), *_BW_A)),
    _e("clusterlaunchcontrol", "take over a not-yet-launched cluster", "8.6", "sm_100", "[a] [mbar]"),
    # --- asynchronous copies (cp.async, TMA) ---------------------------------------------------
    _e("cp.async", "asynchronous copy global -> shared", "7.0", "sm_80", "[dst] [src] size srcsize"),
    _e("cp.async.commit_group", "close the current group of cp.async", "7.0", "sm_80", ""),
    _e("cp.async.wait_group", "wait until at most N cp.async groups are pending", "7.0", "sm_80", "n"),
    _e("cp.async.wait_all", "wait for every pending cp.async", "7.0", "sm_80", ""),
    _e("cp.async.mbarrier.arrive", "arrive when prior cp.async complete", "7.0", "sm_80", "[mbar]"),
    _e("cp.async.bulk", "bulk asynchronous copy (TMA)", "8.0", "sm_90", "[dst] [src] size [mbar]"),
    _e("cp.async.bulk.tensor", "bulk asynchronous tensor copy through a tensor map (TMA)", "8.0",
       "sm_90", "[dst] [tmap coords] [mbar]", variants=[
           _v("cta_group::1|cta_group::2|tile::gather4|tile::scatter4", "8.6", "sm_100a",
              "CTA pairs or gather/scatter", _DC_A)]),
    _e("cp.reduce.async.bulk", "bulk asynchronous reduction", "8.0", "sm_90", "[dst] [src] size"),
    _e("tensormap.replace", "modify a field of a tensor map in memory", "8.3", "sm_90a",
       "[tmap] value", also=(("sm_100a", "8.6"), *_BW_A)),
    _e("tensormap.cp_fenceproxy", "copy and fence a tensor map", "8.3", "sm_90", "[dst] [src] size"),
    # --- matrix (tensor core) ------------------------------------------------------------------
    _e("wmma", "warp-level matrix load / store / multiply-accumulate", "6.0", "sm_70",
       "d [a] stride", variants=[
           _v("s8|u8", "6.3", "sm_72", "8-bit integers"),
           _v("s4|u4|b1", "6.3", "sm_75", "sub-byte types"),
           _v("bf16|tf32|f64", "7.0", "sm_80", "bf16/tf32/f64")]),
    _e("mma", "warp-level matrix multiply-accumulate (mma.sync)", "6.4", "sm_70", "d a b c",
       notes="shape and type modifiers decide the requirement; see the variants", variants=[
           _v("m16n8k8", "6.5", "sm_75", ".m16n8k8"),
           _v("m8n8k16|m8n8k32|m8n8k128", "6.5", "sm_75", "integer shapes of sm_75"),
           _v("m16n8k8 bf16|tf32", "7.0", "sm_80", ".bf16/.tf32 .m16n8k8"),
           _v("m16n8k4|m16n8k16|m16n8k32|m16n8k64|m16n8k128|m16n8k256", "7.0", "sm_80",
              "shapes of sm_80"),
           _v("m8n8k4 f64", "7.0", "sm_80", ".f64"),
           _v("sp", "7.1", "sm_80", "sparse .sp"),
           _v("f64 m16n8k4|m16n8k8|m16n8k16", "7.8", "sm_90", ".f64 shapes of sm_90"),
           _v("e4m3|e5m2", "8.4", "sm_89", "fp8 types .e4m3/.e5m2"),
           _v("e4m3|e5m2 m16n8k16", "8.7", "sm_89", "fp8 .m16n8k16"),
           _v("e4m3|e5m2 f16", "8.7", "sm_89", "fp8 with .f16 accumulator"),
           _v("kind::f8f6f4|kind::mxf8f6f4|kind::mxf4|kind::mxf4nvf4|block_scale", "8.7",
              "sm_120a", ".kind::f8f6f4 or block scaling", (("sm_120f", "8.8"),)),
           # ptxas 13: "Feature 'mma with .scale_vec::4X and .ue8m0 scale type' requires PTX ISA
           # .version 9.1 or later"
           _v("scale_vec::4X ue8m0", "9.1", "sm_120a", ".scale_vec::4X with .ue8m0 scales",
              (("sm_120f", "9.1"),))]),
    _e("wgmma", "warpgroup-level asynchronous matrix multiply-accumulate", "8.0", "sm_90a",
       "d a-desc b-desc scale-d ...", notes="sm_90a only: not on sm_100 or sm_120"),
    _e("tcgen05", "5th-generation tensor core: tensor memory, MMA, copies (tcgen05.*)", "8.6",
       "sm_100a", "...", notes="datacenter Blackwell and Thor only; not on sm_120", also=_DC_A),
)  # fmt: skip

CATALOG: dict[str, CatalogEntry] = {e.opcode: e for e in _ENTRIES}  # keyed by dotted opcode
_BY_CHAIN: dict[tuple[str, ...], CatalogEntry] = {tuple(k.split(".")): e for k, e in CATALOG.items()}
FIRST_WORDS = frozenset(k[0] for k in _BY_CHAIN)
"""The first word of every dotted opcode (``cp`` of ``cp.async``): words the catalog knows."""

# ----------------------------------------------------------------------------------------------
# Lookup


def lookup(opcode: str, modifiers: tuple[str, ...] = ()) -> CatalogEntry | None:
    """The catalog entry whose dotted name is the longest prefix of ``opcode.modifiers``.

    ``lookup("cp", ("async", "bulk", "tensor", "2d"))`` gives the ``cp.async.bulk.tensor`` entry,
    ``lookup("cp.async.bulk")`` the ``cp.async.bulk`` one; None when nothing matches.
    """
    chain = (*opcode.split("."), *modifiers)
    for n in range(len(chain), 0, -1):
        entry = _BY_CHAIN.get(chain[:n])
        if entry is not None:
            return entry
    return None
