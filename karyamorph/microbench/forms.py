"""Which instruction forms to measure: a representative set, or those an ``--instr`` glob selects."""

from __future__ import annotations

from fnmatch import fnmatchcase

from karyamorph.microbench.chains import Unmeasured
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.forms import Form, enumerate_forms

DEFAULT_FORMS = (
    "fma.rn.f32 *",
    "add.f32 *",
    "mul.f32 *",
    "fma.rn.f64 *",
    "add.f64 *",
    "fma.rn.f16 *",
    "fma.rn.f16x2 *",
    "fma.rn.bf16x2 *",
    "add.u32 *",
    "add.u64 *",
    "mad.lo.u32 *",
    "mul.lo.u32 *",
    "mul.wide.u32 *",
    "mul.hi.u32 *",
    "and.b32 *",
    "xor.b32 *",
    "lop3.b32 d,a,b,c,lut=0x96",
    "shl.b32 *",
    "shr.u32 *",
    "min.s32 *",
    "max.f32 *",
    "popc.b32 *",
    "clz.b32 *",
    "brev.b32 *",
    "bfe.u32 *",
    "bfi.b32 *",
    "dp4a.u32.u32 *",
    "div.rn.f32 *",
    "div.approx.f32 *",
    "div.u32 *",
    "rem.u32 *",
    "sqrt.rn.f32 *",
    "sqrt.approx.f32 *",
    "rcp.approx.f32 *",
    "rsqrt.approx.f32 *",
    "ex2.approx.f32 *",
    "lg2.approx.f32 *",
    "cvt.rn.f32.s32 *",
    "cvt.rzi.s32.f32 *",
    "cvt.f64.f32 *",
    "cvt.rn.f32.f64 *",
    "cvt.rn.f16.f32 *",
    "cvt.f32.f16 *",
    "setp.lt.f32 *",
    "setp.lt.and.f32 *",
    "setp.lt.s32 *",
    "selp.b32 *",
    "shfl.sync.up.b32 *",
    "shfl.sync.down.b32 *",
    "shfl.sync.bfly.b32 *",
    "shfl.sync.idx.b32 *",
    "vote.sync.ballot.b32 *",
    "vote.sync.all.pred *",
)
"""The representative forms measured when no ``--instr`` is given (globs over form keys): the FMA
family, integer and logic, the special-function unit, conversions, comparisons, shuffles, votes."""


def select_forms(machine: Machine, arch: str, pattern: str | None) -> tuple[list[Form], list[Unmeasured]]:
    """The forms to measure and the instructions left out with the reason.

    ``pattern`` is ``--instr``'s glob (as ``model validate`` reads it: an instruction name, or a
    form opcode when it has a dot); None selects :data:`DEFAULT_FORMS`.
    """
    if pattern is not None:
        formset = enumerate_forms(machine, arch, pattern)
        return list(formset.forms), [Unmeasured(u.name, u.reason) for u in formset.unvalidated]
    formset = enumerate_forms(machine, arch)
    chosen = [f for f in formset.forms if any(fnmatchcase(f.key, p) for p in DEFAULT_FORMS)]
    return chosen, []
