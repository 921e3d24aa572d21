"""The PTX of a form's chain benchmark (isa builder): two timed loops of ``ilp`` dependent chains.

Layout of one entry ``(inp, out, clocks, smids, iterations)``:

- ``inp``: 8-byte words, :data:`OPERAND_SETS` sets of the form's sources in read order (word
  ``set * reads + i``, each value in the word's low bits; a predicate is ``word != 0``). Every
  unrolled step takes the next set, so that no two neighbouring steps share a source register:
  ptxas cannot fold ``x ^ b ^ b`` to ``x`` or ``min(min(x, b), b)`` to ``min(x, b)``. The chains
  start from set 0's value of the chained source with the lane index xor-ed into its bits: a
  value that is the same in every lane lets ptxas drop shuffles of it altogether (it did, for
  every ``shfl.sync`` form) or move integer work to the uniform datapath. Lane 0 starts from
  the word itself.
- two timed loops, each ``bar.sync``, clock, ``iterations`` times an unrolled body, clock: the
  first body applies the form ``depth / 2`` times, the second ``depth`` times (split over the
  ``ilp`` independent chains). The loops differ only in their bodies, so everything else a loop
  costs (counter, branch, clock reads) cancels in the difference of the two times.
- ``clocks``: lane 0 of each warp writes ``start0, end0, start1, end1`` (4 words) at
  ``warp * 4``, the warp's index in the grid; ``smids``: its SM (u32 at ``warp``).
- ``out``: thread 0 of the grid writes each chain's final value (word ``c``), so that nothing
  is dead code; the model interpreter checks these against the arithmetic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.microbench.chains import ChainPlan, register_bits, register_class
from karyamorph.microbench.loops import timed_loop
from karyamorph.validation.forms import Operand, kernel_ptx_version

OPERAND_SETS = 4
WORD_BYTES = 8
CLOCK_WORDS = 4  # start and end of both timed loops, per warp


@dataclass(frozen=True, slots=True)
class ChainKernel:
    """One chain benchmark entry: its plan, chains, depth, and the module holding it."""

    entry: str
    plan: ChainPlan
    ilp: int
    depth: int
    module: ast.Module

    @property
    def input_words(self) -> int:
        return OPERAND_SETS * len(self.plan.form.reads)

    @property
    def half(self) -> int:
        """The first loop's depth; the second loop's is :attr:`depth`."""
        return self.depth // 2


def input_words(plan: ChainPlan) -> list[int]:
    """The ``inp`` words of a chain kernel of ``plan``: every set holds the form's start values."""
    one_set = [plan.value(op) for op in plan.form.reads]
    return one_set * OPERAND_SETS


def entry_name(prefix: str, plan: ChainPlan, index: int) -> str:
    return f"{prefix}_{index}_{re.sub(r'[^A-Za-z0-9]', '_', plan.form.opcode)}"


class _Chain:
    """The registers of one chain: its state (the chained source), its destination, spare outputs."""

    def __init__(self, k: KernelBuilder, plan: ChainPlan, start: Reg) -> None:
        self.plan = plan
        w_class = register_class(plan.write)
        if plan.link == "direct":
            self.read = k.reg(w_class)
            k.mov(_mov_type(plan.write), start, out=self.read)
            self.write = self.read
        else:
            self.read = k.reg(register_class(plan.read))
            k.mov(_mov_type(plan.read), start, out=self.read)
            self.write = k.reg(w_class)
        self.spare = {w.slot: k.reg(register_class(w)) for w in plan.form.writes if w.slot != plan.write.slot}

    def link(self, k: KernelBuilder) -> None:
        """Carry the destination's bits into the chained source (nothing for a direct chain)."""
        plan, w, r = self.plan, self.write, self.read
        if plan.link == "direct":
            return
        if plan.link == "mov":
            k.instr(f"mov.b{register_bits(plan.read)}", r, w)
        elif plan.link == "unpack":
            pieces = register_bits(plan.write) // register_bits(plan.read)
            rest = [k.reg(f"b{register_bits(plan.read)}") for _ in range(pieces - 1)]
            k.instr(f"mov.b{register_bits(plan.write)}", [r, *rest], w)
        elif plan.link == "pack":
            pieces = register_bits(plan.read) // register_bits(plan.write)
            k.instr(f"mov.b{register_bits(plan.read)}", r, [w] * pieces)
        elif plan.link == "selp":
            bits = register_bits(plan.read)
            k.instr(f"selp.b{bits}", r, plan.value(plan.read), 0, w)
        elif plan.link == "setp":
            k.instr(f"setp.ne.b{register_bits(plan.write)}", r, w, 0)
        else:
            raise ValueError(f"unknown link {plan.link!r}")


def _mov_type(op: Operand) -> str:
    return "pred" if op.type is None else f"b{register_bits(op)}"


def _load(k: KernelBuilder, base: Reg, word: int, op: Operand, lane: Reg | None = None) -> Reg:
    """Source ``op`` from input word ``word``; with ``lane`` (a u32), its bits xor-ed with it."""
    at = k.addr(base, WORD_BYTES * word)
    if op.type is None:
        bits = k.ld("global", "b32", at)
        return k.setp("ne", "b32", k.xor("b32", bits, lane) if lane is not None else bits, 0)
    if lane is None:
        return k.ld("global", f"b{op.bits}", at, out=k.reg(register_class(op)))
    width = register_bits(op)
    bits = k.ld("global", f"b{op.bits}", at, out=k.reg(f"u{width}"))
    mix = lane if width == 32 else k.cvt(f"u{width}", "u32", lane)
    return k.mov(f"b{width}", k.xor(f"b{width}", bits, mix), out=k.reg(register_class(op)))


def _step(k: KernelBuilder, chain: _Chain, sources: dict[str, Reg]) -> None:
    plan = chain.plan
    by_slot: dict[str, Reg] = {**sources, plan.read.slot: chain.read, plan.write.slot: chain.write}
    by_slot.update(chain.spare)
    imms = dict(plan.form.imms)
    operands: list[Reg | int | ast.Operand] = []
    for slot in plan.form.instr.slots[: len(plan.form.operands)]:
        if slot.kind == "imm":
            operands.append(imms[slot.name])
        elif slot.pair:
            first, second = by_slot[slot.name], by_slot[slot.pair]
            operands.append(ast.Pair(ast.Register(first.name), ast.Register(second.name)))
        else:
            operands.append(by_slot[slot.name])
    k.instr(plan.form.opcode, *operands)
    chain.link(k)


def build_chain_kernel(entry: str, plan: ChainPlan, *, ilp: int, depth: int, arch: str) -> ChainKernel:
    """The chain benchmark of ``plan`` with ``ilp`` independent chains and loop bodies of ``depth / 2``
    and ``depth`` applications.

    Raises
    ------
    ValueError
        ``depth`` is not a positive multiple of ``2 * ilp``.
    """
    if ilp < 1 or depth < 2 * ilp or depth % (2 * ilp):
        raise ValueError(f"depth {depth} must be a positive multiple of 2 * ilp ({2 * ilp})")
    form = plan.form
    k = KernelBuilder(entry, target=arch, version=kernel_ptx_version(arch, [form]))
    inp, out, clocks, smids = (k.param_ptr(n) for n in ("inp", "out", "clocks", "smids"))
    iterations = k.param("iterations", "u32")
    pin, pout = k.to_global(k.ld_param(inp)), k.to_global(k.ld_param(out))
    tid = k.sreg("tid.x")
    lane = k.and_("b32", tid, 31)
    lane0 = k.setp("eq", "u32", lane, 0)
    warps_per_block = k.shr("u32", k.sreg("ntid.x"), 5)
    warp = k.mad("u32", k.sreg("ctaid.x"), warps_per_block, k.shr("u32", tid, 5))
    pclk = k.add("u64", k.to_global(k.ld_param(clocks)), k.mul_wide("u32", warp, CLOCK_WORDS * WORD_BYTES))
    psm = k.add("u64", k.to_global(k.ld_param(smids)), k.mul_wide("u32", warp, 4))
    n = k.ld_param(iterations)
    reads = form.reads
    sets = [
        {
            op.slot: _load(k, pin, s * len(reads) + i, op)
            for i, op in enumerate(reads)
            if op.slot != plan.read.slot
        }
        for s in range(OPERAND_SETS)
    ]
    start = _load(k, pin, reads.index(plan.read), plan.read, lane)
    chains = [_Chain(k, plan, start) for _ in range(ilp)]
    for loop, steps in enumerate((depth // 2, depth)):
        k.bar_sync(0)
        with timed_loop(k, n) as (_, times):
            for s in range(steps // ilp):
                for c, chain in enumerate(chains):
                    _step(k, chain, sets[(s + c) % OPERAND_SETS])
        for j, t in enumerate(times):
            k.st("global", "u64", k.addr(pclk, 16 * loop + 8 * j), t, guard=lane0)
    k.st("global", "u32", k.addr(psm), k.sreg("smid"), guard=lane0)
    first = k.setp("eq", "u32", k.global_thread_id_x(), 0)
    for c, chain in enumerate(chains):
        at = k.addr(pout, WORD_BYTES * c)
        if plan.write.type is None:
            k.st("global", "b32", at, k.selp("b32", 1, 0, chain.write), guard=first)
        else:
            k.st("global", f"b{plan.write.bits}", at, chain.write, guard=first)
    k.ret()
    return ChainKernel(entry, plan, ilp, depth, k.build())
