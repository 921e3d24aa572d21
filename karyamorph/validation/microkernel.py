"""PTX microkernels that apply every form of one instruction to per-thread operands (isa builder).

Layout: one row of ``in_slots`` 8-byte words per case (each operand's bits in the low bytes of
its word, in the form's read order) and one row of ``out_slots`` words for its results. The
cases of form ``i`` are rows ``starts[i] .. starts[i] + counts[i] - 1``; thread ``gid`` takes
row ``gid``, finds its form by comparing ``gid`` with each form's end, loads its operands,
applies the form once, and stores each destination's bits (a predicate as the word 0 or 1).
Every form's code starts at its own label, so a ptxas error at a line names its form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.isa.operands import REGISTER_CLASSES, WIDEN8, BuilderError
from karyamorph.validation.assembly import FormRows
from karyamorph.validation.forms import Form, Operand, kernel_ptx_version

WORD_BYTES = 8
_FORM_LABEL = re.compile(r"^\s*\$L__f(\d+)_0:")


@dataclass(frozen=True, slots=True)
class Microkernel(FormRows):
    """One instruction's validation kernel: PTX, its forms, and where each form's cases are.

    Launch with ``grid = ceil(rows / BLOCK_THREADS)``, ``block = BLOCK_THREADS`` and the
    arguments ``(inp, out, rows)``: two ``uint64`` buffers of ``rows x in_slots`` and
    ``rows x out_slots`` words, and the row count as a ``u32``.
    """

    entry: str
    ptx: str
    arch: str
    forms: tuple[Form, ...]
    starts: tuple[int, ...]
    counts: tuple[int, ...]
    in_slots: int
    out_slots: int
    form_lines: tuple[tuple[int, int], ...]


def register_type(op: Operand) -> str:
    """The builder register type that holds an operand: its own class, else the bit class of its
    width (a packed ``.f32x2`` lives in a ``.b64`` register); 8-bit types live in 16-bit ones."""
    name = WIDEN8.get(op.type_name, op.type_name)
    if name in REGISTER_CLASSES:
        return name
    by_width = {16: "b16", 32: "b32", 64: "b64"}.get(op.bits)
    if by_width is None:
        raise BuilderError(f"no register holds .{op.type_name} ({op.bits} bits, operand {op.slot})")
    return by_width


def _bits_type(op: Operand) -> str:
    return f"b{op.bits}"


class _Registers:
    """Registers reused across forms: one per (type, operand position), so the PTX stays small."""

    def __init__(self, k: KernelBuilder) -> None:
        self.k = k
        self.regs: dict[tuple[str, str, int], Reg] = {}

    def get(self, role: str, i: int, ty: str) -> Reg:
        key = (ty, role, i)
        if key not in self.regs:
            self.regs[key] = self.k.reg(ty)
        return self.regs[key]


def _emit_form(k: KernelBuilder, regs: _Registers, form: Form, pin: Reg, pout: Reg) -> None:
    by_slot: dict[str, Reg] = {}
    for i, op in enumerate(form.reads):
        at = k.addr(pin, WORD_BYTES * i)
        if op.type is None:
            word = k.ld("global", "b32", at, out=regs.get("w", 0, "b32"))
            by_slot[op.slot] = k.setp("ne", "b32", word, 0, out=regs.get("p", i, "pred"))
        else:
            by_slot[op.slot] = k.ld("global", _bits_type(op), at, out=regs.get("a", i, register_type(op)))
    for i, op in enumerate(form.writes):
        ty = "pred" if op.type is None else register_type(op)
        by_slot[op.slot] = regs.get("d", i, ty)
    operands: list[Reg | int | ast.Operand] = []
    imms = dict(form.imms)
    for slot in form.instr.slots[: len(form.operands)]:
        if slot.kind == "imm":
            operands.append(imms[slot.name])
        elif slot.pair:
            first, second = by_slot[slot.name], by_slot[slot.pair]
            operands.append(ast.Pair(ast.Register(first.name), ast.Register(second.name)))
        else:
            operands.append(by_slot[slot.name])
    k.instr(form.opcode, *operands)
    for i, op in enumerate(form.writes):
        at = k.addr(pout, WORD_BYTES * i)
        if op.type is None:
            word = k.selp("b32", 1, 0, by_slot[op.slot], out=regs.get("w", 0, "b32"))
            k.st("global", "b32", at, word)
        else:
            k.st("global", _bits_type(op), at, by_slot[op.slot])


def build_microkernel(name: str, forms: Sequence[Form], counts: Sequence[int], arch: str) -> Microkernel:
    """The validation kernel of ``forms`` (one instruction's), with ``counts[i]`` cases for form ``i``.

    Raises
    ------
    BuilderError
        A form's operand type has no register class.
    """
    if len(forms) != len(counts) or not forms:
        raise ValueError("build_microkernel needs one case count per form, and at least one form")
    entry = "validate_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
    k = KernelBuilder(entry, target=arch, version=kernel_ptx_version(arch, list(forms)))
    inp, out, n = k.param_ptr("inp"), k.param_ptr("out"), k.param("rows", "u32")
    in_slots = max(1, *(len(f.reads) for f in forms))
    out_slots = max(1, *(len(f.writes) for f in forms))
    gid = k.global_thread_id_x()
    done = k.label("done")
    k.bra(done, guard=k.setp("ge", "u32", gid, k.ld_param(n)))
    pin = k.add("u64", k.to_global(k.ld_param(inp)), k.mul_wide("u32", gid, in_slots * WORD_BYTES))
    pout = k.add("u64", k.to_global(k.ld_param(out)), k.mul_wide("u32", gid, out_slots * WORD_BYTES))
    starts = tuple(int(s) for s in np.concatenate([[0], np.cumsum(counts)[:-1]]))
    labels = [k.label(f"f{i}") for i in range(len(forms))]
    picked = k.reg("pred")
    for label, start, count in zip(labels, starts, counts, strict=True):
        k.bra(label, guard=k.setp("lt", "u32", gid, start + count, out=picked))
    k.bra(done)
    regs = _Registers(k)
    for label, form in zip(labels, forms, strict=True):
        k.place(label)
        _emit_form(k, regs, form, pin, pout)
        k.bra(done)
    k.place(done)
    k.ret()
    ptx = k.ptx()
    return Microkernel(entry, ptx, arch, tuple(forms), starts, tuple(int(c) for c in counts), in_slots,
                       out_slots, _form_lines(ptx, len(forms)))  # fmt: skip


def _form_lines(ptx: str, n: int) -> tuple[tuple[int, int], ...]:
    firsts: dict[int, int] = {}
    lines = ptx.splitlines()
    for number, text in enumerate(lines, start=1):
        m = _FORM_LABEL.match(text)
        if m:
            firsts[int(m.group(1))] = number
    order = [firsts[i] for i in range(n)]
    return tuple((first, (order[i + 1] - 1) if i + 1 < n else len(lines)) for i, first in enumerate(order))


def pack_inputs(kernel: Microkernel, operands: Sequence[dict[str, np.ndarray]]) -> np.ndarray:
    """The ``rows x in_slots`` input words: form ``i``'s operands (by slot) in its rows."""
    words = np.zeros((kernel.rows, kernel.in_slots), dtype=np.uint64)
    for form, start, count, ops in zip(kernel.forms, kernel.starts, kernel.counts, operands, strict=True):
        for j, r in enumerate(form.reads):
            words[start : start + count, j] = ops[r.slot]
    return words


def unpack_outputs(kernel: Microkernel, words: np.ndarray) -> list[dict[str, np.ndarray]]:
    """Each form's destination bits (by slot) from the ``rows x out_slots`` output words."""
    words = np.asarray(words, dtype=np.uint64).reshape(kernel.rows, kernel.out_slots)
    out = []
    for form, start, count in zip(kernel.forms, kernel.starts, kernel.counts, strict=True):
        out.append({w.slot: words[start : start + count, j].copy() for j, w in enumerate(form.writes)})
    return out
