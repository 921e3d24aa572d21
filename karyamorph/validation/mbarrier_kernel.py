"""Phase-sequence kernels for ``mbarrier`` forms, assembled by ptxas and run by the model.

The kernel keeps the validation kernels' arguments ``(inp, out, rows)`` with one row of 8-byte
words a thread (each 32-bit value in the low half of its word) and runs one case a CTA of
:data:`~karyamorph.validation.mbarrier_sequences.THREADS` threads around one mbarrier in shared
memory: thread 0 initialises it with the expected count of its row's first word, and the CTA
meets at ``bar.sync``. Then, a round at a time (a loop of
:data:`~karyamorph.validation.mbarrier_sequences.STEPS`), each thread performs the operation
its op word names with its operand (branching on the code; the form's operations only), meets
the others at ``bar.sync``, records its wait word (``test_wait.parity`` of parities 0 and 1, and
the form's own waits: ``try_wait.parity``, or a wait on its last token where the op word's
token flag is set) and pending word (``pending_count`` of its ``noComplete`` token, for that
form), and meets them again before the next round's operations change the object. No thread
loops on a wait: every wait is one ``test_wait`` or ``try_wait``, whose answer is recorded.
One kernel a form.
"""

from __future__ import annotations

import re

from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.validation.assembly import Assembled, assemble_one
from karyamorph.validation.cta_kernel import CtaKernel, kernel_lines, row_pointers
from karyamorph.validation.forms import version_tuple
from karyamorph.validation.mbarrier_forms import SPACE, MbarrierForm
from karyamorph.validation.mbarrier_sequences import (
    IN_SLOTS,
    NO_PENDING,
    OUT_SLOTS,
    STEPS,
    THREADS,
    TOKEN_FLAG,
    WAIT_BITS,
    Op,
)
from karyamorph.validation.microkernel import WORD_BYTES

COUNT_PTX = "7.8"  # PTX ISA: arrive's count operand and try_wait from 7.8 (sm_90)
# What a thread does for each operation: %rd6 its token, %t5 the mbarrier, %t8 the operand.
ACTION: dict[Op, str] = {
    Op.ARRIVE: f"mbarrier.arrive{SPACE} %rd6, [%t5];",
    Op.ARRIVE_COUNT: f"mbarrier.arrive{SPACE} %rd6, [%t5], %t8;",
    Op.NO_COMPLETE: f"mbarrier.arrive.noComplete{SPACE} %rd6, [%t5], %t8;",
    Op.EXPECT_TX: f"mbarrier.expect_tx.relaxed.cta{SPACE} [%t5], %t8;",
    Op.COMPLETE_TX: f"mbarrier.complete_tx.relaxed.cta{SPACE} [%t5], %t8;",
    Op.ARRIVE_EXPECT_TX: f"mbarrier.arrive.expect_tx{SPACE} %rd6, [%t5], %t8;",
}
PARITY_WAIT = {"test_parity": "test_wait.parity", "try_parity": "try_wait.parity"}
TOKEN_WAIT = {"test_token": "test_wait", "try_token": "try_wait"}


MbarrierKernel = CtaKernel[MbarrierForm]
"""One form's kernel: PTX, the form, and the rows (128 a case) of its cases."""


def _operations(form: MbarrierForm) -> list[str]:
    """Branch to the code of the op word's operation; each joins at ``$L__acted``."""
    lines = ["and.b32 %t9, %t7, 255;"]
    for op in form.ops:
        lines += [f"setp.eq.u32 %p2, %t9, {int(op)};", f"@%p2 bra $L__{op.name.lower()};"]
    lines.append("bra $L__acted;")
    for op in form.ops:
        lines += [f"$L__{op.name.lower()}:", ACTION[op]]
        if op == Op.NO_COMPLETE and "pending" in form.observes:
            lines.append("mbarrier.pending_count.b64 %t12, %rd6;")
        lines.append("bra $L__acted;")
    return [*lines, "$L__acted:"]


def _observations(form: MbarrierForm) -> list[str]:
    """The round's wait word into ``%t10``."""
    lines = ["mov.u32 %t10, 0;"]
    for name, wait in PARITY_WAIT.items():
        if name != "test_parity" and name not in form.observes:
            continue
        for parity in (0, 1):
            bit = 1 << (WAIT_BITS[name] + parity)
            lines += [f"mbarrier.{wait}{SPACE} %p3, [%t5], {parity};", f"selp.b32 %t11, {bit}, 0, %p3;",
                      "or.b32 %t10, %t10, %t11;"]  # fmt: skip
    for name, wait in TOKEN_WAIT.items():
        if name in form.observes:  # only a token of the current or the preceding phase
            lines += [f"and.b32 %t11, %t7, {TOKEN_FLAG};", "setp.eq.u32 %p4, %t11, 0;",
                      f"@%p4 bra $L__observed_{name};", f"mbarrier.{wait}{SPACE} %p3, [%t5], %rd6;",
                      f"selp.b32 %t11, {1 << WAIT_BITS[name]}, 0, %p3;", "or.b32 %t10, %t10, %t11;",
                      f"$L__observed_{name}:"]  # fmt: skip
    return lines


def kernel_version(form: MbarrierForm, arch: str) -> str:
    """The lowest ``.version`` that has ``arch`` and every instruction the form's kernel runs."""
    return max(min_ptx_for_target(arch), COUNT_PTX, form.min_ptx, key=version_tuple)


def build_mbarrier_kernel(form: MbarrierForm, cases: int, arch: str) -> MbarrierKernel:
    """The kernel of ``form`` with ``cases`` CTAs (``arch``: sm_90 or later)."""
    entry = "validate_" + re.sub(r"[^A-Za-z0-9_]", "_", form.key.split(" ")[0])
    body = [
        *row_pointers(IN_SLOTS, OUT_SLOTS),
        "mov.u32 %t5, mbar;", "setp.eq.u32 %p1, %t1, 0;", "ld.global.b32 %t4, [%rd2];",
        f"@%p1 mbarrier.init{SPACE} [%t5], %t4;", "mov.b64 %rd6, 0;", f"add.s64 %rd2, %rd2, {WORD_BYTES};",
        "mov.u32 %t6, 0;", "bar.sync 0;",
        "$L__step:",
        "ld.global.b32 %t7, [%rd2];", f"ld.global.b32 %t8, [%rd2+{WORD_BYTES}];",
        f"mov.u32 %t12, {NO_PENDING};",
    ]  # fmt: skip
    first = len(body)
    body += [*_operations(form), "bar.sync 0;", *_observations(form)]
    body += [
        "st.global.b32 [%rd5], %t10;", f"st.global.b32 [%rd5+{WORD_BYTES}], %t12;",
        "bar.sync 0;",  # the next round's operations wait for every thread's observations
        f"add.s64 %rd2, %rd2, {2 * WORD_BYTES};", f"add.s64 %rd5, %rd5, {2 * WORD_BYTES};",
        "add.u32 %t6, %t6, 1;", f"setp.lt.u32 %p5, %t6, {STEPS};", "@%p5 bra $L__step;",
        "$L__done:", "ret;",
    ]  # fmt: skip
    head = (f".version {kernel_version(form, arch)}\n.target {arch}\n.address_size 64\n\n"
            f".visible .entry {entry}(.param .u64 inp, .param .u64 out, .param .u32 rows)\n"
            f".reqntid {THREADS}, 1, 1\n{{\n"
            f"    .reg .pred %p<6>;\n    .reg .b32 %t<13>;\n    .reg .b64 %rd<7>;\n"
            f"    .shared .align 8 .b64 mbar;\n")  # fmt: skip
    lines = kernel_lines(head, body)
    start = len(head.splitlines()) + first + 1
    ptx = "\n".join(lines) + "\n"
    return CtaKernel(entry, ptx, arch, (form,), (0,), (THREADS * cases,), IN_SLOTS, OUT_SLOTS,
                     ((start, len(lines) - 1),))  # fmt: skip


def assemble_mbarrier(
    form: MbarrierForm, cases: int, arch: str, toolchain: Toolchain
) -> Assembled[MbarrierKernel]:
    """Build and assemble the kernel of ``form`` (a form ptxas refuses is dropped with its message)."""
    return assemble_one(form.key, lambda: build_mbarrier_kernel(form, cases, arch), arch, toolchain)
