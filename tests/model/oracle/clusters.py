"""Oracle for ``mapa`` from what the PTX ISA says a thread observes: "d holds the address in CTA
b corresponding to operand a", so a load through the mapped address reads the word that CTA b
keeps at a's offset of its own shared memory (a ``.shared::cluster`` address for the
``.shared::cluster`` forms, a generic one otherwise).

Each check runs a cluster of two CTAs through the interpreter (lockstep, and randomized orders):
every thread stores ``ctaid * 1000 + tid`` in its CTA's word ``tid``, the CTAs meet at
``barrier.cluster``, and each thread reads its word through the address mapped into the other
rank; the values are computed here, not by the model.
"""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form

THREADS = 32
GRID = 4  # two clusters of two CTAs
NAMES = ("mapa",)

# The mapped read of each form: %r4 is the thread's shared (cta) address, %r5 the other rank.
_READS = {
    "shared::cluster.u32": "    mapa.shared::cluster.u32 %r6, %r4, %r5;\n"
    "    ld.shared::cluster.u32 %r7, [%r6];",
    "shared::cluster.u64": "    cvt.u64.u32 %rd4, %r4;\n    mapa.shared::cluster.u64 %rd5, %rd4, %r5;\n"
    "    ld.shared::cluster.u32 %r7, [%rd5];",
    "u64": "    cvt.u64.u32 %rd4, %r4;\n    cvta.shared.u64 %rd4, %rd4;\n    mapa.u64 %rd5, %rd4, %r5;\n"
    "    ld.u32 %r7, [%rd5];",
}


def _kernel(read: str) -> str:
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
.reqnctapercluster 2, 1, 1
{{
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .shared .align 4 .b8 buf[{4 * THREADS}];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mad.lo.u32 %r3, %r2, 1000, %r1;
    mov.u32 %r4, buf;
    shl.b32 %r8, %r1, 2;
    add.u32 %r4, %r4, %r8;
    st.shared.u32 [%r4], %r3;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    mov.u32 %r5, %cluster_ctarank;
    xor.b32 %r5, %r5, 1;
{read}
    barrier.cluster.arrive;
    barrier.cluster.wait;
    mad.lo.u32 %r9, %r2, {THREADS}, %r1;
    mul.wide.u32 %rd2, %r9, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r7;
    ret;
}}
"""


def knows_mapa(form: Form) -> None:
    if form.instr.name not in NAMES or form.text.removeprefix("mapa.") not in _READS:
        raise NotCovered(form.text)


def check_mapa(machine: Machine, form: Form) -> list[str]:
    """Problems of one mapa form (empty: it agrees with the PTX ISA)."""
    knows_mapa(form)
    module = parse(_kernel(_READS[form.text.removeprefix("mapa.")]))
    cta, tid = np.divmod(np.arange(GRID * THREADS), THREADS)
    want = (cta ^ 1) * 1000 + tid  # the other CTA of the pair (ranks 0 and 1 are CTAs 2c, 2c+1)
    for seed in (None, 0, 1, 2):
        try:
            out = {"out": np.zeros(GRID * THREADS, np.uint32)}
            got = interpret(module, "k", machine, (GRID, THREADS, 0), out,
                            randomize_order=seed is not None, seed=seed or 0).outputs["out"]  # fmt: skip
        except ExecutionError as exc:
            return [f"{form.text}: {exc}"]
        if not np.array_equal(got, want):
            k = int(np.flatnonzero(got != want)[0])
            return [f"{form.text} (seed {seed}): thread {k} read {got[k]}, want {want[k]}"]
    return []
