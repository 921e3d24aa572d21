"""CTA validation kernels for ``tcgen05.mma`` forms, assembled by ptxas and run by the model.

The kernel keeps the validation kernels' arguments ``(inp, out, rows)`` with one row of 8-byte
words a thread (each 32-bit value in the low half of its word), but runs one case a CTA of
:data:`~karyamorph.validation.tcgen05_forms.THREADS` threads: thread ``t`` copies its row of A and
(``t < N``) of B into shared memory in the K-major, unswizzled core-matrix layout the model runs
(byte ``b`` of row ``r`` at ``(r / 8) SBO + (b / 16) LBO + (r % 8) 16 + b % 16``, with :data:`LBO`
and :data:`SBO`), fences the generic-proxy stores for the async proxy, and stores its row of C into
its TMEM lane (block scaling: and, each warp into its 32 lanes, the scale words of A's rows ``l +
32 c`` in the 4 columns after D and of B's columns after those, so that every lane partition holds
them, as the PTX ISA requires). Thread 0 issues the form's MMA (the form's instruction descriptor,
the case's ``enable_input_d``) and commits it to an mbarrier; every thread waits on it, loads its
lane of D (each warp its lane quarter) and stores it as the output row. Form ``i``'s cases are CTAs
``starts[i] / 128 ..``; the dispatch on the CTA index picks the MMA.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.validation.assembly import Assembled, assemble_dropping
from karyamorph.validation.cta_kernel import LBO, SBO, CtaKernel, kernel_lines, row_pointers, vector
from karyamorph.validation.forms import version_tuple
from karyamorph.validation.microkernel import WORD_BYTES
from karyamorph.validation.tcgen05_forms import ROW_WORDS, THREADS, Tcgen05Form

DESC_FIELDS = (LBO >> 4) << 16 | (SBO >> 4) << 32 | 1 << 46  # all but the start address
COMMIT = "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"
_LABEL = re.compile(r"^\$L__f(\d+):")


Tcgen05Kernel = CtaKernel[Tcgen05Form]
"""One kind's kernel: PTX, its forms, and the rows (128 a case) of each form's cases."""


def _columns(n: int) -> int:
    """TMEM columns to allocate for N: a power of 2, at least 32."""
    return max(32, 1 << (n - 1).bit_length())


def build_tcgen05_kernel(
    name: str, forms: Sequence[Tcgen05Form], cases: Sequence[int], arch: str
) -> Tcgen05Kernel:
    """The kernel of ``forms`` (one kind's, all of one N), with ``cases[i]`` CTAs for form ``i``."""
    if len(forms) != len(cases) or not forms or len({(f.n, f.scale_words) for f in forms}) != 1:
        raise ValueError("build_tcgen05_kernel needs a case count per form, a form, one N and scaling")
    n, in_slots = forms[0].n, forms[0].in_slots
    entry = "validate_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
    counts = [THREADS * c for c in cases]
    starts = [int(s) for s in np.concatenate([[0], np.cumsum(counts)[:-1]])]
    sw = forms[0].scale_words  # block scaling: A's 4 words, then B's, after D's N columns
    cols, c_base = _columns(n + sw), 2 * ROW_WORDS
    body = [
        *row_pointers(in_slots, n),
        *(f"ld.global.b32 %a{j}, [%rd2+{WORD_BYTES * j}];" for j in range(ROW_WORDS)),
        # row t of a K-major operand: (t / 8) SBO + (t % 8) 16, its second 16 bytes LBO further
        "shr.u32 %t4, %t1, 3;", f"mul.lo.u32 %t4, %t4, {SBO};", "and.b32 %t5, %t1, 7;",
        "shl.b32 %t5, %t5, 4;", "add.u32 %t4, %t4, %t5;", "mov.u32 %t6, sa;", "add.u32 %t7, %t6, %t4;",
        f"st.shared.v4.b32 [%t7], {vector('a', 4)};", f"st.shared.v4.b32 [%t7+{LBO}], {vector('a', 4, 4)};",
        f"setp.lt.u32 %p1, %t1, {n};", "mov.u32 %t8, sb;", "@!%p1 bra $L__copied;",
        *(f"ld.global.b32 %b{j}, [%rd2+{WORD_BYTES * (ROW_WORDS + j)}];" for j in range(ROW_WORDS)),
        "add.u32 %t9, %t8, %t4;",
        f"st.shared.v4.b32 [%t9], {vector('b', 4)};", f"st.shared.v4.b32 [%t9+{LBO}], {vector('b', 4, 4)};",
        "$L__copied:",
        *(f"ld.global.b32 %c{j}, [%rd2+{WORD_BYTES * (c_base + j)}];" for j in range(n)),
        *(f"ld.global.b32 %s{j}, [%rd2+{WORD_BYTES * (c_base + n + j)}];" for j in range(sw)),
        f"ld.global.b32 %t10, [%rd2+{WORD_BYTES * (c_base + n + sw)}];", "setp.ne.u32 %p2, %t10, 0;",
        "shr.u32 %t11, %t1, 5;", "setp.eq.u32 %p3, %t11, 0;", "setp.eq.u32 %p4, %t1, 0;",
        "mov.u32 %t12, slot;", "mov.u32 %t13, bar;",
        f"@%p3 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%t12], {cols};",
        "@%p3 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;",
        "@%p4 mbarrier.init.shared::cta.b64 [%t13], 1;",
        # the tensor core reads A and B through the async proxy: make the generic stores visible
        "fence.proxy.async.shared::cta;",
        "tcgen05.fence::before_thread_sync;", "bar.sync 0;", "tcgen05.fence::after_thread_sync;",
        "ld.shared.u32 %t14, [%t12];",
        # warp w reaches TMEM lanes 32 w .. 32 w + 31: lane in bits 31-16 of the address
        "shl.b32 %t15, %t11, 21;", "add.u32 %t15, %t14, %t15;",
        f"tcgen05.st.sync.aligned.32x32b.x{n}.b32 [%t15], {vector('c', n)};",
        *_scale_stores(n, sw),
        "tcgen05.wait::st.sync.aligned;",
        "tcgen05.fence::before_thread_sync;", "bar.sync 0;", "tcgen05.fence::after_thread_sync;",
        "@!%p4 bra $L__issued;",
        # the scale factors' TMEM addresses (lane 0): A's 4 columns after D, then B's
        f"add.u32 %t16, %t14, {n};", f"add.u32 %t17, %t14, {n + 4};",
        "cvt.u64.u32 %rd6, %t6;", "shr.u64 %rd6, %rd6, 4;", f"or.b64 %rd6, %rd6, {DESC_FIELDS};",
        "cvt.u64.u32 %rd7, %t8;", "shr.u64 %rd7, %rd7, 4;", f"or.b64 %rd7, %rd7, {DESC_FIELDS};",
    ]  # fmt: skip
    cta = np.cumsum(cases)
    for i, end in enumerate(cta):
        body += [f"setp.lt.u32 %p5, %t0, {int(end)};", f"@%p5 bra $L__f{i};"]
    body.append("bra $L__commit;")
    for i, form in enumerate(forms):
        scales = "" if form.scaling is None else " [%t16], [%t17],"
        body += [f"$L__f{i}:", f"mov.u32 %t10, {form.idesc};",
                 f"{form.opcode} [%t14], %rd6, %rd7, %t10,{scales} %p2;", "bra $L__commit;"]  # fmt: skip
    body += [
        "$L__commit:", f"{COMMIT} [%t13];", "$L__issued:",
        "$L__wait:", "mbarrier.try_wait.parity.shared::cta.b64 %p6, [%t13], 0;", "@!%p6 bra $L__wait;",
        "tcgen05.fence::after_thread_sync;",
        f"tcgen05.ld.sync.aligned.32x32b.x{n}.b32 {vector('c', n)}, [%t15];",
        "tcgen05.wait::ld.sync.aligned;",
        *(f"st.global.b32 [%rd5+{WORD_BYTES * j}], %c{j};" for j in range(n)),
        # every warp's loads are done before warp 0 frees the columns
        "tcgen05.fence::before_thread_sync;", "bar.sync 0;", "tcgen05.fence::after_thread_sync;",
        f"@%p3 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %t14, {cols};",
        "$L__done:", "ret;",
    ]  # fmt: skip
    version = max(min_ptx_for_target(arch), *(f.instr.min_ptx for f in forms), key=version_tuple)
    head = (f".version {version}\n.target {arch}\n.address_size 64\n\n"
            f".visible .entry {entry}(.param .u64 inp, .param .u64 out, .param .u32 rows)\n"
            f".reqntid {THREADS}, 1, 1\n{{\n"
            f"    .reg .pred %p<7>;\n    .reg .b32 %t<18>;\n    .reg .b64 %rd<8>;\n"
            f"    .reg .b32 %s<{max(sw, 1)}>;\n"
            f"    .reg .b32 %a<{ROW_WORDS}>;\n    .reg .b32 %b<{ROW_WORDS}>;\n    .reg .b32 %c<{n}>;\n"
            f"    .shared .align 128 .b8 sa[{THREADS // 8 * SBO}];\n"
            f"    .shared .align 128 .b8 sb[{-(-n // 8) * SBO}];\n"
            f"    .shared .align 8 .b64 bar;\n    .shared .align 4 .b32 slot;\n")  # fmt: skip
    lines = kernel_lines(head, body)
    ptx = "\n".join(lines) + "\n"
    firsts = {int(m.group(1)): k for k, t in enumerate(lines, 1) if (m := _LABEL.match(t))}
    commit = lines.index("$L__commit:") + 1
    order = [firsts[i] for i in range(len(forms))] + [commit]
    spans = tuple((order[i], order[i + 1] - 1) for i in range(len(forms)))
    return CtaKernel(entry, ptx, arch, tuple(forms), tuple(starts), tuple(counts), in_slots, n, spans)


def _scale_stores(n: int, words: int) -> list[str]:
    """Each warp stores the scale words into its lanes: A's 4 columns from column N, B's after."""
    if not words:
        return []
    st = "tcgen05.st.sync.aligned.32x32b"
    return [f"add.u32 %t16, %t15, {n};", f"{st}.x4.b32 [%t16], {vector('s', 4)};",
            f"add.u32 %t17, %t15, {n + 4};",
            f"{st}.x{words - 4}.b32 [%t17], {vector('s', words - 4, 4)};"]  # fmt: skip


def assemble_tcgen05(
    name: str, forms: Sequence[Tcgen05Form], cases: Sequence[int], arch: str, toolchain: Toolchain
) -> Assembled[Tcgen05Kernel]:
    """Build and assemble the kernel of ``forms``, dropping each form ptxas refuses
    (:func:`~karyamorph.validation.assembly.assemble_dropping`)."""

    def build(keep: list[int]) -> Tcgen05Kernel:
        return build_tcgen05_kernel(name, [forms[i] for i in keep], [cases[i] for i in keep], arch)

    return assemble_dropping(name, len(forms), build, arch, toolchain)
