"""Warpgroup validation kernels for ``wgmma.mma_async`` forms, assembled by ptxas and run by the model.

The kernel keeps the validation kernels' arguments ``(inp, out, rows)`` with one row of 8-byte
words a thread (each 32-bit value in the low half of its word) and runs one case a CTA of one
warpgroup (:data:`~karyamorph.validation.wgmma_forms.THREADS` threads): thread ``t`` copies its
row of A (``t < 64``) and of B (``t < N``) into shared memory in the K-major, unswizzled
core-matrix layout (byte ``b`` of row ``r`` at ``(r / 8) SBO + (b / 16) LBO + (r % 8) 16 + b % 16``,
with :data:`LBO` and :data:`SBO`), loads its fragment of C into the D registers, fences the
generic-proxy stores for the async proxy and meets the others at a barrier; then the warpgroup
runs ``wgmma.fence``, the form's ``mma_async`` from the two descriptors (the case's ``scale-d``),
``commit_group`` and ``wait_group 0``, and every thread stores its fragment of D as its output
row. One kernel a form.
"""

from __future__ import annotations

import re

from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.validation.assembly import Assembled, assemble_one
from karyamorph.validation.cta_kernel import LBO, SBO, CtaKernel, kernel_lines, row_pointers, vector
from karyamorph.validation.forms import version_tuple
from karyamorph.validation.microkernel import WORD_BYTES
from karyamorph.validation.wgmma_forms import ROW_WORDS, THREADS, M, WgmmaForm

DESC_FIELDS = (LBO >> 4) << 16 | (SBO >> 4) << 32  # all but the start address: no swizzle
_REGISTER = {"f32": "f32", "s32": "s32", "f16": "b32"}  # D's registers (f16: two a .b32)


WgmmaKernel = CtaKernel[WgmmaForm]
"""One form's kernel: PTX, the form, and the rows (128 a case) of its cases."""


def build_wgmma_kernel(form: WgmmaForm, cases: int, arch: str) -> WgmmaKernel:
    """The kernel of ``form`` with ``cases`` CTAs (``arch``: sm_90a)."""
    n, dw, in_slots = form.n, form.d_words, form.in_slots
    entry = "validate_" + re.sub(r"[^A-Za-z0-9_]", "_", form.opcode)
    c_base = 2 * ROW_WORDS
    immediates = "".join(f", {v}" for v in form.immediates)
    body = [
        *row_pointers(in_slots, dw),
        # row t of a K-major operand: (t / 8) SBO + (t % 8) 16, its second 16 bytes LBO further
        "shr.u32 %t4, %t1, 3;", f"mul.lo.u32 %t4, %t4, {SBO};", "and.b32 %t5, %t1, 7;",
        "shl.b32 %t5, %t5, 4;", "add.u32 %t4, %t4, %t5;", "mov.u32 %t6, sa;", "mov.u32 %t8, sb;",
        f"setp.lt.u32 %p1, %t1, {M};", "@!%p1 bra $L__a_copied;",
        *(f"ld.global.b32 %a{j}, [%rd2+{WORD_BYTES * j}];" for j in range(ROW_WORDS)),
        "add.u32 %t7, %t6, %t4;",
        f"st.shared.v4.b32 [%t7], {vector('a', 4)};", f"st.shared.v4.b32 [%t7+{LBO}], {vector('a', 4, 4)};",
        "$L__a_copied:",
        f"setp.lt.u32 %p1, %t1, {n};", "@!%p1 bra $L__b_copied;",
        *(f"ld.global.b32 %b{j}, [%rd2+{WORD_BYTES * (ROW_WORDS + j)}];" for j in range(ROW_WORDS)),
        "add.u32 %t9, %t8, %t4;",
        f"st.shared.v4.b32 [%t9], {vector('b', 4)};", f"st.shared.v4.b32 [%t9+{LBO}], {vector('b', 4, 4)};",
        "$L__b_copied:",
        *(f"ld.global.b32 %d{j}, [%rd2+{WORD_BYTES * (c_base + j)}];" for j in range(dw)),
        f"ld.global.b32 %t10, [%rd2+{WORD_BYTES * (c_base + dw)}];", "setp.ne.u32 %p2, %t10, 0;",
        # the tensor core reads A and B through the async proxy: make the generic stores visible
        "fence.proxy.async.shared::cta;", "bar.sync 0;",
        "cvt.u64.u32 %rd6, %t6;", "shr.u64 %rd6, %rd6, 4;", "and.b64 %rd6, %rd6, 16383;",
        f"or.b64 %rd6, %rd6, {DESC_FIELDS};",
        "cvt.u64.u32 %rd7, %t8;", "shr.u64 %rd7, %rd7, 4;", "and.b64 %rd7, %rd7, 16383;",
        f"or.b64 %rd7, %rd7, {DESC_FIELDS};",
        "wgmma.fence.sync.aligned;",
    ]  # fmt: skip
    first = len(body)
    body += [f"{form.opcode} {vector('d', dw)}, %rd6, %rd7, %p2{immediates};"]
    body += [
        "wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;",
        *(f"st.global.b32 [%rd5+{WORD_BYTES * j}], %d{j};" for j in range(dw)),
        "$L__done:", "ret;",
    ]  # fmt: skip
    version = max(min_ptx_for_target(arch), form.instr.min_ptx, key=version_tuple)
    head = (f".version {version}\n.target {arch}\n.address_size 64\n\n"
            f".visible .entry {entry}(.param .u64 inp, .param .u64 out, .param .u32 rows)\n"
            f".reqntid {THREADS}, 1, 1\n{{\n"
            f"    .reg .pred %p<3>;\n    .reg .b32 %t<11>;\n    .reg .b64 %rd<8>;\n"
            f"    .reg .b32 %a<{ROW_WORDS}>;\n    .reg .b32 %b<{ROW_WORDS}>;\n"
            f"    .reg .{_REGISTER[form.d]} %d<{dw}>;\n"
            f"    .shared .align 128 .b8 sa[{M // 8 * SBO}];\n"
            f"    .shared .align 128 .b8 sb[{-(-n // 8) * SBO}];\n")  # fmt: skip
    lines = kernel_lines(head, body)
    line = len(head.splitlines()) + first + 1
    rows = THREADS * cases
    ptx = "\n".join(lines) + "\n"
    return CtaKernel(entry, ptx, arch, (form,), (0,), (rows,), in_slots, dw, ((line, line),))


def assemble_wgmma(form: WgmmaForm, cases: int, arch: str, toolchain: Toolchain) -> Assembled[WgmmaKernel]:
    """Build and assemble the kernel of ``form`` (a form ptxas refuses is dropped with its message)."""
    return assemble_one(form.opcode, lambda: build_wgmma_kernel(form, cases, arch), arch, toolchain)
