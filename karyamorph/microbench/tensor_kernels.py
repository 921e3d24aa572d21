"""The PTX of the tensor-core throughput kernels (isa builder): ``wgmma.mma_async`` from shared-memory
descriptors (sm_90a) and ``mma.sync.m16n8k16`` from registers, each in a kept loop between two
clock reads.

Both entries take ``(out, clocks, smids, one, iterations)``: ``one`` is a 32-bit word of the
element 1 of the form's input type (f16 ``0x3C003C00``, bf16 ``0x3F803F80``, e4m3 ``0x38383838``:
:data:`ONES`), which ptxas cannot know; ``clocks`` and ``smids`` get each warp's
``[start, end]`` and SM (:func:`~karyamorph.microbench.loops.store_clocks`); ``out`` gets each
thread's sum of its f32 accumulators. With all-ones operands every accumulator ends at
``iterations * unroll * K`` (per chain, for mma.sync), so the sum says whether the tensor cores
ran every instruction that was timed (:func:`expected_sum`).

wgmma (``tensor_wgmma_*``): the block (one or more warpgroups of 128 threads) fills
:func:`operand_bytes` of shared memory with ``one``, fences those generic-proxy stores for the
async proxy (``fence.proxy.async.shared::cta``; the tensor core reads its operands through it)
and meets at a barrier. Each warpgroup builds two matrix descriptors (PTX ISA, "Matrix Descriptor
Format": start address ``>> 4`` in bits 0-13, leading byte offset ``>> 4`` in bits 16-29, stride
byte offset ``>> 4`` in bits 32-45, no swizzle; K-major core matrices of 8 rows of 16 bytes,
:data:`LBO` between a row's two 16-byte halves and :data:`SBO` between groups of eight rows), A at
the buffer's start and B after A's 64 rows. ``wgmma.fence`` once, then every iteration issues
:data:`WGMMA_UNROLL` ``mma_async`` into the same accumulators (the PTX ISA orders accumulator
accesses between wgmma of one shape without a fence), commits them as one group and waits until
at most :data:`WGMMA_DEPTH` groups are pending: the tensor pipe holds the next group while one
drains. ``wait_group 0`` comes before the closing clock read, so the last group's time counts.

mma.sync (``tensor_mma_*``): each warp runs :data:`MMA_CHAINS` independent accumulator chains,
:data:`MMA_UNROLL` ``mma.sync`` an iteration taken round-robin over them, its A and B fragments
all ``one``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.isa.versions import min_ptx_for_target, parse_version
from karyamorph.microbench.loops import kept_loop, store_clocks

WARPGROUP = 128
M = 64  # rows of D a wgmma computes (its A's rows)
LBO, SBO = 128, 256  # K-major, unswizzled: a row's 16-byte halves 128 B apart, 8-row groups 256 B
DESC_FIELDS = (LBO >> 4) << 16 | (SBO >> 4) << 32
"""A descriptor's fields but its start address (no swizzle, base offset 0)."""
WGMMA_UNROLL = 4
WGMMA_DEPTH = 1
MMA_CHAINS = 4
MMA_UNROLL = 16
MMA_FMA = 16 * 8 * 16
"""FMA one warp's ``mma.sync.m16n8k16`` computes: the unit of the cost model's tensor rate."""
ONES: dict[str, int] = {"f16": 0x3C003C00, "bf16": 0x3F803F80, "e4m3": 0x38383838}
"""A 32-bit word of ones of each input type."""


@dataclass(frozen=True, slots=True)
class TensorForm:
    """One measured tensor instruction: ``wgmma`` ``m64nNkK`` or ``mma`` ``m16n8k16``, with f32
    accumulators and inputs of ``dtype``."""

    op: str
    n: int
    k: int
    dtype: str

    @property
    def name(self) -> str:
        """The figure's name (``wgmma.m64n128k16.f32.f16.f16``, ``mma.sync.m16n8k16.f32.f16.f16.f32``)."""
        if self.op == "wgmma":
            return f"wgmma.m64n{self.n}k{self.k}.f32.{self.dtype}.{self.dtype}"
        return f"mma.sync.m16n8k{self.k}.f32.{self.dtype}.{self.dtype}.f32"

    @property
    def opcode(self) -> str:
        if self.op == "wgmma":
            return f"wgmma.mma_async.sync.aligned.m64n{self.n}k{self.k}.f32.{self.dtype}.{self.dtype}"
        return f"mma.sync.aligned.m16n8k{self.k}.row.col.f32.{self.dtype}.{self.dtype}.f32"

    @property
    def entry(self) -> str:
        return "tensor_" + re.sub(r"[^A-Za-z0-9]", "_", self.name)

    @property
    def threads(self) -> int:
        """Threads that issue one instruction together: a warpgroup, or a warp."""
        return WARPGROUP if self.op == "wgmma" else 32

    @property
    def fma(self) -> int:
        """FMA one instruction computes (over its warpgroup or warp)."""
        return (M if self.op == "wgmma" else 16) * self.n * self.k

    @property
    def unroll(self) -> int:
        """Instructions an issuing group runs per iteration."""
        return WGMMA_UNROLL if self.op == "wgmma" else MMA_UNROLL

    @property
    def accumulators(self) -> int:
        """f32 accumulator registers a thread holds."""
        return self.n // 2 if self.op == "wgmma" else 4 * MMA_CHAINS

    @property
    def sass(self) -> str:
        """The SASS opcode the timed loop must hold :attr:`unroll` of."""
        if self.op == "mma":
            return "HMMA"
        return "QGMMA" if self.dtype == "e4m3" else "HGMMA"


WGMMA_FORMS = (
    TensorForm("wgmma", 64, 16, "f16"),
    TensorForm("wgmma", 128, 16, "f16"),
    TensorForm("wgmma", 256, 16, "f16"),
    TensorForm("wgmma", 128, 16, "bf16"),
    TensorForm("wgmma", 128, 32, "e4m3"),
)
MMA_FORM = TensorForm("mma", 8, 16, "f16")


def operand_bytes(form: TensorForm) -> int:
    """Shared memory a wgmma form's A (64 rows) and B (N rows) take in the core-matrix layout
    (32 bytes of K a row, two core matrices: k16 of 16-bit types, k32 of 8-bit ones)."""
    return (M + form.n) // 8 * SBO


def ptx_version(arch: str) -> str:
    """The ``.version`` of a kernel for ``arch``: the target's, and at least 8.0 (wgmma)."""
    return max(min_ptx_for_target(arch), "8.0", key=parse_version)


def expected_sum(form: TensorForm, iterations: int) -> float:
    """What each thread stores: its accumulators' sum, every product being 1 * 1."""
    per_accumulator = iterations * form.unroll * form.k
    if form.op == "mma":
        per_accumulator //= MMA_CHAINS  # the unrolled instructions go round the chains
    return float(per_accumulator * form.accumulators)


def _epilogue(
    k: KernelBuilder, slot: Reg, acc: list[Reg], tid: Reg, times: list[Reg], clocks: ast.Symbol,
    smids: ast.Symbol,
) -> None:  # fmt: skip
    """Store the sum of the accumulators at ``slot`` and the warp's clock readings and SM."""
    total = k.mov("f32", 0.0)
    for a in acc:
        k.add("f32", total, total, a)
    k.st("global", "f32", k.addr(slot), total)
    store_clocks(k, clocks, smids, tid, times)
    k.ret()


def _opening(form: TensorForm, arch: str) -> tuple[KernelBuilder, ast.Symbol, ast.Symbol, Reg, Reg, Reg, Reg]:
    """Both kernels' parameters ``(out, clocks, smids, one, iterations)`` and first lines: the
    builder, the clock and SM pointers, ``%tid.x``, the word ``one``, the iterations and the
    thread's ``out`` slot."""
    k = KernelBuilder(form.entry, target=arch, version=ptx_version(arch))
    out, clocks, smids = (k.param_ptr(n) for n in ("out", "clocks", "smids"))
    one, iterations = k.param("one", "b32"), k.param("iterations", "u32")
    tid = k.sreg("tid.x")
    word = k.ld_param(one)
    n = k.ld_param(iterations)
    slot = k.add("u64", k.to_global(k.ld_param(out)), k.mul_wide("u32", k.global_thread_id_x(), 4))
    return k, clocks, smids, tid, word, n, slot


def build_wgmma(form: TensorForm, arch: str) -> ast.Module:
    """``tensor_wgmma_*(out, clocks, smids, one, iterations)``: see the module's description."""
    k, clocks, smids, tid, word, n, slot = _opening(form, arch)
    size = operand_bytes(form)
    buf = k.shared("operands", "b8", size, align=128)
    base = k.mov("u32", buf)
    with k.for_range(tid, size // 4, k.sreg("ntid.x")) as i:
        k.st("shared", "b32", k.addr(k.mad("u32", i, 4, base)), word)
    # The tensor core reads A and B through the async proxy: make the generic stores visible.
    k.instr("fence.proxy.async.shared::cta")
    k.bar_sync(0)
    descriptors = []
    for start in (base, k.add("u32", base, M // 8 * SBO)):
        field = k.and_("b64", k.shr("u64", k.cvt("u64", "u32", start), 4), 0x3FFF)
        descriptors.append(k.or_("b64", field, DESC_FIELDS))
    acc = [k.mov("f32", 0.0) for _ in range(form.accumulators)]
    accumulate = k.setp("ne", "u32", n, 0)  # scale-d: D = A B + D (true whenever the loop runs)
    # imm-scale-a, imm-scale-b (1: as they are); 16-bit types also take imm-trans-a/b (0: K-major)
    immediates = ("1", "1") if form.dtype == "e4m3" else ("1", "1", "0", "0")
    k.instr("wgmma.fence.sync.aligned")
    times = [k.sreg("clock64")]
    with kept_loop(k, n):
        for _ in range(WGMMA_UNROLL):
            k.instr(form.opcode, acc, *descriptors, accumulate, *(ast.Immediate(v) for v in immediates))
        k.instr("wgmma.commit_group.sync.aligned")
        k.instr("wgmma.wait_group.sync.aligned", ast.Immediate(str(WGMMA_DEPTH)))
    k.instr("wgmma.wait_group.sync.aligned", ast.Immediate("0"))
    times.append(k.sreg("clock64"))
    _epilogue(k, slot, acc, tid, times, clocks, smids)
    return k.build()


def build_mma(form: TensorForm, arch: str) -> ast.Module:
    """``tensor_mma_*(out, clocks, smids, one, iterations)``: see the module's description."""
    k, clocks, smids, tid, word, n, slot = _opening(form, arch)
    a = [k.mov("b32", word) for _ in range(4)]
    b = [k.mov("b32", word) for _ in range(2)]
    chains = [[k.mov("f32", 0.0) for _ in range(4)] for _ in range(MMA_CHAINS)]
    k.bar_sync(0)
    times = [k.sreg("clock64")]
    with kept_loop(k, n):
        for i in range(MMA_UNROLL):
            d = chains[i % MMA_CHAINS]
            k.instr(form.opcode, d, a, b, d)
    times.append(k.sreg("clock64"))
    _epilogue(k, slot, [r for chain in chains for r in chain], tid, times, clocks, smids)
    return k.build()
