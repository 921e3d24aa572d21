"""Whole-warp validation kernels for matrix-fragment forms, assembled by ptxas and run by the model.

The kernel keeps the microkernels' launch (:mod:`karyamorph.validation.microkernel`): arguments
``(inp, out, rows)``, one row of 8-byte words a thread, ``BLOCK_THREADS`` threads a block. Here
a row holds one lane's registers (each 32-bit register in the low half of its word, in the
form's read order: ``a``, ``b``, ``c``, then ``sfa``, ``sfb``), and the output row its ``d``
registers. Form ``i``'s cases are warps ``starts[i] / 32 ..``: every form starts on a warp
boundary, so the dispatch on the thread's row keeps each warp together, as ``mma.sync.aligned``
requires. The model's answer comes from the interpreter running the same PTX.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa.parser import parse
from karyamorph.model.interp.interpreter import KernelArg, interpret
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.assembly import BLOCK_THREADS, Assembled, FormRows, assemble_dropping
from karyamorph.validation.cta_kernel import kernel_lines
from karyamorph.validation.fragments import WARP, FragmentForm, kernel_ptx_version
from karyamorph.validation.microkernel import WORD_BYTES

_LABEL = re.compile(r"^\$L__f(\d+):")


@dataclass(frozen=True, slots=True)
class FragmentKernel(FormRows):
    """One declaration's fragment kernel: PTX, its forms, and the rows of each form's cases."""

    entry: str
    ptx: str
    arch: str
    forms: tuple[FragmentForm, ...]
    starts: tuple[int, ...]
    counts: tuple[int, ...]
    in_slots: int
    out_slots: int
    form_lines: tuple[tuple[int, int], ...]

    def inputs(self, tables: Sequence[np.ndarray]) -> np.ndarray:
        """The ``rows x in_slots`` input words from each form's case table."""
        words = np.zeros((self.rows, self.in_slots), dtype=np.uint64)
        for start, count, table in zip(self.starts, self.counts, tables, strict=True):
            words[start : start + count, : table.shape[1]] = table
        return words

    def outputs(self, words: np.ndarray) -> list[np.ndarray]:
        """Each form's ``d`` registers (``cases*32 x registers``, the low 32 bits of each word)."""
        words = np.asarray(words, dtype=np.uint64).reshape(self.rows, self.out_slots) & np.uint64(0xFFFF_FFFF)
        return [words[s : s + c, : f.registers()["d"]].copy()
                for f, s, c in zip(self.forms, self.starts, self.counts, strict=True)]  # fmt: skip


def _vector(name: str, n: int) -> str:
    return "{" + ", ".join(f"%{name}{i}" for i in range(n)) + "}"


def _instruction(form: FragmentForm) -> str:
    regs = form.registers()
    ops = [_vector(s, regs[s]) for s in ("d", "a", "b", "c")]
    if form.selectors is not None:
        ba, ta, bb, tb = form.selectors
        ops += ["%sfa0", f"{{{ba}, {ta}}}", "%sfb0", f"{{{bb}, {tb}}}"]
    return f"{form.opcode} {', '.join(ops)};"


def build_fragment_kernel(
    name: str, forms: Sequence[FragmentForm], warps: Sequence[int], arch: str
) -> FragmentKernel:
    """The kernel of ``forms`` (one declaration's), with ``warps[i]`` cases (warps) for form ``i``."""
    if len(forms) != len(warps) or not forms:
        raise ValueError("build_fragment_kernel needs one case count per form, and at least one form")
    entry = "validate_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
    counts = [WARP * w for w in warps]
    starts = [int(s) for s in np.concatenate([[0], np.cumsum(counts)[:-1]])]
    in_slots = max(sum(n for s, n in f.registers().items() if s != "d") for f in forms)
    out_slots = max(f.registers()["d"] for f in forms)
    width = {s: max(f.registers().get(s, 0) for f in forms) for s in ("a", "b", "c", "d", "sfa", "sfb")}
    body = [
        "mov.u32 %t0, %ctaid.x;", "mov.u32 %t1, %ntid.x;", "mov.u32 %t2, %tid.x;",
        "mad.lo.u32 %t3, %t0, %t1, %t2;", "ld.param.u32 %t0, [rows];", "setp.ge.u32 %p0, %t3, %t0;",
        "@%p0 bra $L__done;",
        "ld.param.u64 %rd0, [inp];", "cvta.to.global.u64 %rd0, %rd0;",
        f"mul.wide.u32 %rd1, %t3, {in_slots * WORD_BYTES};", "add.s64 %rd2, %rd0, %rd1;",
        "ld.param.u64 %rd3, [out];", "cvta.to.global.u64 %rd3, %rd3;",
        f"mul.wide.u32 %rd4, %t3, {out_slots * WORD_BYTES};", "add.s64 %rd5, %rd3, %rd4;",
    ]  # fmt: skip
    for i, (start, count) in enumerate(zip(starts, counts, strict=True)):
        body += [f"setp.lt.u32 %p1, %t3, {start + count};", f"@%p1 bra $L__f{i};"]
    body.append("bra $L__done;")
    for i, form in enumerate(forms):
        body.append(f"$L__f{i}:")
        word = 0
        for slot, n in form.registers().items():
            if slot == "d":
                continue
            for j in range(n):
                body.append(f"ld.global.b32 %{slot}{j}, [%rd2+{WORD_BYTES * word}];")
                word += 1
        body.append(_instruction(form))
        body += [f"st.global.b32 [%rd5+{WORD_BYTES * j}], %d{j};" for j in range(form.registers()["d"])]
        body.append("bra $L__done;")
    body += ["$L__done:", "ret;"]
    regs = "".join(f"    .reg .b32 %{s}<{n}>;\n" for s, n in width.items() if n)
    head = (f".version {kernel_ptx_version(arch, list(forms))}\n.target {arch}\n.address_size 64\n\n"
            f".visible .entry {entry}(.param .u64 inp, .param .u64 out, .param .u32 rows)\n{{\n"
            f"    .reg .pred %p<2>;\n    .reg .b32 %t<4>;\n    .reg .b64 %rd<6>;\n{regs}")  # fmt: skip
    lines = kernel_lines(head, body)
    ptx = "\n".join(lines) + "\n"
    firsts = {int(m.group(1)): n for n, t in enumerate(lines, 1) if (m := _LABEL.match(t))}
    order = [firsts[i] for i in range(len(forms))]
    spans = tuple((a, (order[i + 1] - 1) if i + 1 < len(order) else len(lines)) for i, a in enumerate(order))
    return FragmentKernel(entry, ptx, arch, tuple(forms), tuple(starts), tuple(counts), in_slots, out_slots,
                          spans)  # fmt: skip


def assemble_fragments(
    name: str, forms: Sequence[FragmentForm], warps: Sequence[int], arch: str, toolchain: Toolchain
) -> Assembled[FragmentKernel]:
    """Build and assemble the kernel of ``forms``, dropping each form ptxas refuses
    (:func:`~karyamorph.validation.assembly.assemble_dropping`)."""

    def build(keep: list[int]) -> FragmentKernel:
        return build_fragment_kernel(name, [forms[i] for i in keep], [warps[i] for i in keep], arch)

    return assemble_dropping(name, len(forms), build, arch, toolchain)


def interpret_kernel(kernel: FragmentKernel, machine: Machine, inputs: np.ndarray) -> np.ndarray:
    """The model's output words for ``inputs``: the interpreter running the kernel's own PTX."""
    out = np.zeros((kernel.rows, kernel.out_slots), dtype=np.uint64)
    args: dict[str, KernelArg] = {"inp": np.asarray(inputs, dtype=np.uint64), "out": out,
                                  "rows": np.uint32(kernel.rows)}  # fmt: skip
    result = interpret(parse(kernel.ptx), kernel.entry, machine, (kernel.grid, BLOCK_THREADS, 0), args,
                       max_steps=10**8)  # fmt: skip
    return np.asarray(result.outputs["out"], dtype=np.uint64).reshape(kernel.rows, kernel.out_slots)
