"""A validation kernel that runs one case a CTA (``tcgen05.mma``, ``wgmma``): its rows, its
launch, how its input and output words are laid out, and the model's run of it.

The kernel keeps the validation kernels' arguments ``(inp, out, rows)`` with one row of 8-byte
words a thread (each 32-bit value in the low half of its word); form ``i``'s cases are the rows
``starts[i] ..`` (a whole number of CTAs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.interpreter import KernelArg, interpret
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.assembly import FormRows, Keyed
from karyamorph.validation.microkernel import WORD_BYTES

F = TypeVar("F", bound=Keyed)
THREADS = 128  # a CTA: 128 TMEM lanes (tcgen05.mma), a warpgroup (wgmma)
LBO, SBO = 128, 256  # K-major, unswizzled: a row's two 16-byte halves side by side; 8-row groups 256 B apart


def vector(name: str, n: int, first: int = 0) -> str:
    """A brace list of ``n`` registers ``%name<first> ..``."""
    return "{" + ", ".join(f"%{name}{i}" for i in range(first, first + n)) + "}"


def kernel_lines(head: str, body: Sequence[str]) -> list[str]:
    """A kernel's lines: ``head`` (its directives, entry and declarations, through the opening
    brace), the ``body`` indented (labels at the margin) and the closing brace."""
    return [*head.splitlines(), *(b if b.startswith("$") else f"    {b}" for b in body), "}"]


def row_pointers(in_slots: int, out_slots: int) -> list[str]:
    """The kernel's opening lines: thread ``t`` of the launch (``%t2``; ``%t0`` its CTA, ``%t1``
    its index in it) returns past ``rows`` (a whole number of CTAs, as the collectives need), and
    ``%rd2``/``%rd5`` point at its input and output rows of 8-byte words."""
    return [
        "mov.u32 %t0, %ctaid.x;", "mov.u32 %t1, %tid.x;", f"mad.lo.u32 %t2, %t0, {THREADS}, %t1;",
        "ld.param.u32 %t3, [rows];", "setp.ge.u32 %p0, %t2, %t3;", "@%p0 bra $L__done;",
        "ld.param.u64 %rd0, [inp];", "cvta.to.global.u64 %rd0, %rd0;",
        f"mul.wide.u32 %rd1, %t2, {in_slots * WORD_BYTES};", "add.s64 %rd2, %rd0, %rd1;",
        "ld.param.u64 %rd3, [out];", "cvta.to.global.u64 %rd3, %rd3;",
        f"mul.wide.u32 %rd4, %t2, {out_slots * WORD_BYTES};", "add.s64 %rd5, %rd3, %rd4;",
    ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class CtaKernel(FormRows, Generic[F]):
    """A kernel of ``forms``: PTX, and the rows (:data:`THREADS` a case) of each form's cases."""

    entry: str
    ptx: str
    arch: str
    forms: tuple[F, ...]
    starts: tuple[int, ...]
    counts: tuple[int, ...]
    in_slots: int
    out_slots: int
    form_lines: tuple[tuple[int, int], ...]

    @property
    def grid(self) -> int:
        return self.rows // THREADS

    @property
    def block(self) -> int:
        return THREADS

    def inputs(self, tables: Sequence[np.ndarray]) -> np.ndarray:
        """The ``rows x in_slots`` input words from each form's case table."""
        words = np.zeros((self.rows, self.in_slots), dtype=np.uint64)
        for start, count, table in zip(self.starts, self.counts, tables, strict=True):
            words[start : start + count] = table
        return words

    def outputs(self, words: np.ndarray) -> list[np.ndarray]:
        """Each form's output words (``cases * 128 x out_slots``, a row a thread, low 32 bits)."""
        words = np.asarray(words, dtype=np.uint64).reshape(self.rows, self.out_slots) & np.uint64(0xFFFF_FFFF)
        return [words[s : s + c].copy() for s, c in zip(self.starts, self.counts, strict=True)]

    def interpret(
        self, machine: Machine, inputs: np.ndarray, extra: Mapping[str, KernelArg] | None = None
    ) -> np.ndarray:
        """The model's output words for ``inputs``: the interpreter running the kernel's own PTX
        (``extra``: arguments past ``rows``, such as a tensor map)."""
        out = np.zeros((self.rows, self.out_slots), dtype=np.uint64)
        args: dict[str, KernelArg] = {"inp": np.asarray(inputs, dtype=np.uint64), "out": out,
                                      "rows": np.uint32(self.rows), **(extra or {})}  # fmt: skip
        result = interpret(parse(self.ptx), self.entry, machine, (self.grid, self.block, 0), args,
                           max_steps=10**8)  # fmt: skip
        return np.asarray(result.outputs["out"], dtype=np.uint64).reshape(self.rows, self.out_slots)
