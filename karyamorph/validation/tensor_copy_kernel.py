"""Tensor-copy kernels (``cp.async.bulk.tensor``, tile mode), assembled by ptxas and run by the model.

The kernel takes the validation kernels' arguments ``(inp, out, rows)`` and a fourth, the tensor
map ``tmap`` (``.param .align 64 .b8 tmap[128]``: on the GPU the map the driver encodes over the
form's tensor, for the model its fields, :class:`~karyamorph.kernel.tensormap.TensorMapArg`). It
runs one case a CTA of 128 threads: every thread fills its share of a 1024-byte aligned shared
buffer with :data:`POISON` (so that bytes the copy leaves alone show as such, and the zeros of
the out-of-bounds fill as zeros) and fences them from the async proxy; the CTA meets; one
thread initialises an mbarrier, arms it with the box's bytes (``arrive.expect_tx``) and issues
the copy at its case's coordinates (its input row); every thread waits for the phase
(``try_wait.parity`` in a loop) and stores its share of the buffer, 4 bytes a word, to its
output row: thread ``t``'s word ``j`` is the buffer's bytes ``4 (t * out_slots + j) ..``, the
box's shared layout as the hardware lays it (swizzle, padded rows and fill included). One kernel
a form.
"""

from __future__ import annotations

import re

from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.validation.assembly import Assembled, assemble_one
from karyamorph.validation.cta_kernel import CtaKernel, kernel_lines, row_pointers
from karyamorph.validation.forms import version_tuple
from karyamorph.validation.microkernel import WORD_BYTES
from karyamorph.validation.tensor_copy_forms import THREADS, TensorCopyForm

POISON = 0xA5C3_5A3C  # a word the copy never writes: neither zero nor any fold of an index nearby
MBARRIER_PTX = "8.0"  # PTX ISA: mbarrier.arrive.expect_tx from 8.0 (sm_90)
SPACE = ".shared::cta.b64"

TensorCopyKernel = CtaKernel[TensorCopyForm]
"""One form's kernel: PTX, the form, and the rows (128 a case) of its cases."""


def kernel_version(form: TensorCopyForm, arch: str) -> str:
    """The lowest ``.version`` that has ``arch`` and every instruction the form's kernel runs."""
    return max(min_ptx_for_target(arch), MBARRIER_PTX, form.min_ptx, key=version_tuple)


def build_tensor_copy_kernel(form: TensorCopyForm, cases: int, arch: str) -> TensorCopyKernel:
    """The kernel of ``form`` with ``cases`` CTAs (``arch``: sm_90 or later)."""
    entry = "validate_" + re.sub(r"[^A-Za-z0-9_]", "_", form.key)
    slots = form.out_slots
    coords = ", ".join(f"%t{10 + d}" for d in range(form.rank))
    body = [
        *row_pointers(form.rank, slots),
        "mov.u32 %t4, box;", "mov.u32 %t5, mbar;", f"mul.lo.u32 %t6, %t1, {4 * slots};",
        "add.u32 %t6, %t4, %t6;",  # this thread's share of the buffer
        *(f"st.shared.b32 [%t6+{4 * j}], {POISON};" for j in range(slots)),
        "fence.proxy.async.shared::cta;",  # the poison is written before the copy's bytes
        "setp.eq.u32 %p1, %t1, 0;", f"@%p1 mbarrier.init{SPACE} [%t5], 1;", "bar.sync 0;",
        *(f"ld.global.b32 %t{10 + d}, [%rd2+{d * WORD_BYTES}];" for d in range(form.rank)),
        "mov.b32 %t7, tmap;", "cvt.u64.u32 %rd6, %t7;", "cvta.param.u64 %rd6, %rd6;",
        f"@%p1 mbarrier.arrive.expect_tx{SPACE} _, [%t5], {form.map.box_bytes};",
    ]  # fmt: skip
    body.append(f"@%p1 {form.opcode} [%t4], [%rd6, {{{coords}}}], [%t5];")
    body += [
        "$L__wait:", f"mbarrier.try_wait.parity{SPACE} %p2, [%t5], 0;", "@!%p2 bra $L__wait;",
        *(line for j in range(slots)
          for line in (f"ld.shared.b32 %t8, [%t6+{4 * j}];", f"st.global.b32 [%rd5+{j * WORD_BYTES}], %t8;")),
        "$L__done:", "ret;",
    ]  # fmt: skip
    head = (f".version {kernel_version(form, arch)}\n.target {arch}\n.address_size 64\n\n"
            f".visible .entry {entry}(.param .u64 inp, .param .u64 out, .param .u32 rows,\n"
            f"    .param .align 64 .b8 tmap[128])\n"
            f".reqntid {THREADS}, 1, 1\n{{\n"
            f"    .reg .pred %p<3>;\n    .reg .b32 %t<{10 + form.rank}>;\n    .reg .b64 %rd<7>;\n"
            f"    .shared .align 1024 .b8 box[{4 * slots * THREADS}];\n"
            f"    .shared .align 8 .b64 mbar;\n")  # fmt: skip
    lines = kernel_lines(head, body)
    ptx = "\n".join(lines) + "\n"
    return CtaKernel(entry, ptx, arch, (form,), (0,), (THREADS * cases,), form.rank, slots,
                     ((len(head.splitlines()) + 1, len(lines) - 1),))  # fmt: skip


def assemble_tensor_copy(
    form: TensorCopyForm, cases: int, arch: str, toolchain: Toolchain
) -> Assembled[TensorCopyKernel]:
    """Build and assemble the kernel of ``form`` (a form ptxas refuses is dropped with its message)."""
    return assemble_one(form.key, lambda: build_tensor_copy_kernel(form, cases, arch), arch, toolchain)
