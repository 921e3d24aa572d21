"""The scheduling ptxas encodes in each SASS instruction, read from its encoding (``nvdisasm
-hex``: :attr:`~karyamorph.harness.tools.nvdisasm.SassInstruction.high_word`), and the main loop a
warp spends its time in.

Every instruction of sm_70 and later is 128 bits; bits 105-125 are its control information
(Jia et al. 2018, "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking",
section 2.1): stall cycles (105-108), yield (109), write barrier (110-112, 7: none), read
barrier (113-115, 7: none), wait-barrier mask (116-121) and operand reuse flags (122-125).
nvdisasm prints the two 64-bit words of each instruction as comments, low word first; the
control bits are bits 41-61 of the high word. Checked on ptxas 13 output for sm_90 and sm_120
(tests/harness/tools/test_sass_control.py): every wait bit names a barrier that some instruction sets,
a load's first consumer waits on the load's barrier, and a ``cp.async`` pipeline's ``DEPBAR``
leaves its stages less one groups pending.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from karyamorph.harness.tools.nvdisasm import SassError, SassFunction, branch_target, disassemble
from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.model.cost.issue import Slot

_NONE = 7
_DEPBAR = re.compile(r"\s*SB(?P<sb>\d)\s*,\s*(?P<n>0x[0-9a-fA-F]+|\d+)")


@dataclass(frozen=True, slots=True)
class Scheduled:
    """One instruction with its offset, its branch target if it branches to a label or an
    address (None otherwise), and its control bits."""

    offset: int
    opcode: str
    operands: str
    target: int | None
    slot: Slot


def control(high: int, opcode: str, operands: str = "", full: str = "") -> Slot:
    """The control bits of an instruction's high 64-bit word, as a :class:`Slot` of ``opcode``
    (a ``DEPBAR``'s ``operands``, ``SB0, 0x1``, give the count it waits for; the ``full``
    opcode with its modifiers, a load's width).

    Examples
    --------
    The ``LDG.E.128`` of an SGEMM (high word ``0x000ee4000c1e9d00``): two stall cycles, barrier 3:

    >>> control(0x000EE4000C1E9D00, "LDG", full="LDG.E.128.CONSTANT")  # doctest: +NORMALIZE_WHITESPACE
    Slot(opcode='LDG', stall=2, write_barrier=3, read_barrier=None, wait_mask=0, wait_count=None,
         load_bytes=16)
    """
    write, read = (high >> 46) & 7, (high >> 49) & 7
    count = _DEPBAR.match(operands) if opcode == "DEPBAR" else None
    return Slot(opcode, stall=(high >> 41) & 0xF, write_barrier=None if write == _NONE else write,
                read_barrier=None if read == _NONE else read, wait_mask=(high >> 52) & 0x3F,
                wait_count=(int(count["sb"]), int(count["n"], 0)) if count else None,
                load_bytes=load_bytes(full or opcode))  # fmt: skip


def load_bytes(opcode: str) -> int:
    """Bytes a thread reads from global memory with a SASS load (``LDG.E.128`` 16, ``LDG.E.64`` 8,
    ``LDG.E.U8`` 1, ``LDG.E`` 4, ``LDGSTS.E.BYPASS.LTC128B.128`` 16); 0 for anything else.

    Examples
    --------
    >>> [load_bytes(op) for op in ("LDG.E.128.CONSTANT", "LDG.E.S16", "LDGSTS.E.64", "LDS.128")]
    [16, 2, 8, 0]
    """
    parts = opcode.split(".")
    if parts[0] not in ("LDG", "LDGSTS"):
        return 0
    for part, size in (("256", 32), ("128", 16), ("64", 8), ("U16", 2), ("S16", 2), ("U8", 1), ("S8", 1)):
        if part in parts[1:]:
            return size
    return 4


def scheduled(
    cubin: bytes, toolchain: Toolchain, timeout_s: float = 120.0
) -> dict[str, tuple[Scheduled, ...]]:
    """Each function of ``cubin`` with its instructions' control bits, the trailing self-branch
    and padding left out (the disassembly with encodings: nvdisasm ``-hex``, cached).

    Raises
    ------
    SassError
        No disassembler, it fails, or its text has no encodings.
    """
    dis = disassemble(cubin, toolchain, with_lineinfo=False, with_encoding=True, timeout_s=timeout_s)
    return {name: _scheduled(fn, dis.labels.get(name, {})) for name, fn in dis.functions.items()}


def _scheduled(function: SassFunction, labels: dict[str, int]) -> tuple[Scheduled, ...]:
    out = []
    for ins in function.body:
        if ins.high_word is None:
            raise SassError(f"{function.name}: no encoding beside {ins.opcode} at {ins.offset:#x}")
        target = branch_target(ins, labels) if ins.base == "BRA" else None
        slot = control(ins.high_word, ins.base, ins.operands, ins.opcode)
        out.append(Scheduled(ins.offset, ins.opcode, ins.operands, target, slot))
    return tuple(out)


def main_loop(body: tuple[Scheduled, ...]) -> tuple[Slot, ...]:
    """The slots of the loop a warp spends its time in: the largest innermost loop (a backward
    branch whose body holds no other), else the function up to its last exit (a kernel without
    loops)."""
    loops = []
    for end, ins in enumerate(body):
        if ins.target is None:
            continue
        start = next((i for i, x in enumerate(body) if x.offset == ins.target), None)
        if start is not None and start < end:
            loops.append((start, end))
    inner = [(s, e) for s, e in loops if not any(s <= a and b <= e and (a, b) != (s, e) for a, b in loops)]
    if inner:
        start, end = max(inner, key=lambda se: se[1] - se[0])
        return tuple(x.slot for x in body[start : end + 1])
    exits = [i for i, x in enumerate(body) if x.opcode.split(".")[0] in ("EXIT", "RET")]
    return tuple(x.slot for x in body[: (exits[-1] if exits else len(body) - 1) + 1])
