"""Vector atomics (``atom``/``red`` ``.global.add.v2/.v4.f32``, PTX ISA 8.1, sm_90; Triton's split-K
emits them): each element is its own atomic on consecutive words, the old values come back in the
vector destination, and forms the ISA does not define are refused."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.stages.model import check_spec
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import spec_from_dict
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import unmodeled

# Every thread adds (tid, 2 tid, 3 tid, 4 tid) to the same four words with one vector atom and
# keeps the four old values it saw; a red.v2 adds (1, 1) to two more words.
KERNEL = """
.version 8.7
.target sm_90
.address_size 64

.visible .entry vatom(.param .u64 sums, .param .u64 olds)
{
  .reg .b32 %r<16>;
  .reg .f32 %f<16>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [sums];
  ld.param.u64 %rd2, [olds];
  mov.u32 %r1, %tid.x;
  cvt.rn.f32.u32 %f1, %r1;
  add.f32 %f2, %f1, %f1;
  add.f32 %f3, %f2, %f1;
  add.f32 %f4, %f3, %f1;
  atom.global.gpu.acq_rel.add.v4.f32 {%f5, %f6, %f7, %f8}, [%rd1], {%f1, %f2, %f3, %f4};
  mov.f32 %f9, 0f3F800000;
  red.global.add.v2.f32 [%rd1+16], {%f9, %f9};
  mul.wide.u32 %rd3, %r1, 16;
  add.u64 %rd4, %rd2, %rd3;
  st.global.v4.f32 [%rd4], {%f5, %f6, %f7, %f8};
  ret;
}
"""


def test_each_element_is_an_atomic_add_and_the_olds_are_a_running_sum() -> None:
    threads = 64
    sums, olds = np.zeros(6, np.float32), np.full(4 * threads, np.nan, np.float32)
    module = parse(KERNEL, "vatom.ptx")
    assert not unmodeled(module, ptx_machine("sm_90"))
    r = interpret(module, "vatom", ptx_machine("sm_90"), ((1,), (threads,), 0), {"sums": sums, "olds": olds})
    t = np.arange(threads, dtype=np.float64)
    total = t.sum()
    assert r.outputs["sums"].tolist() == [total, 2 * total, 3 * total, 4 * total, threads, threads]
    seen = r.outputs["olds"].reshape(threads, 4)
    # In the launch order threads take turns by index: each saw the sum of the threads before it.
    before = np.concatenate([[0.0], np.cumsum(t)[:-1]])
    assert np.array_equal(seen, np.outer(before, [1, 2, 3, 4]).astype(np.float32))
    assert r.stats.atomics == threads * (4 + 2)


def _spec(blocks: int) -> KernelSpec:
    return spec_from_dict({
        "kernel": {"source": KERNEL, "entry": "vatom"}, "sizes": {"n": 64},
        "launch": {"grid": [blocks], "block": ["n"]},
        "args": [{"name": "sums", "role": "inout", "dtype": "f32", "shape": [6], "init": "zeros"},
                 {"name": "olds", "role": "out", "dtype": "f32", "shape": ["4 * n"]}],
    })  # fmt: skip


def test_colliding_vector_atomics_are_no_race() -> None:
    module = parse(KERNEL, "vatom.ptx")
    verdicts = {v.property: v.verdict for v in check_spec(bind(_spec(1)), module)}
    assert verdicts == {"bounds": "proved", "race": "proved", "barrier": "proved"}
    # Two blocks store their olds over each other's (the same slot for the same tid): that race is
    # found; the atomics, which every thread of both blocks aims at the same words, are none.
    (race,) = check_spec(bind(_spec(2)), module, properties=("race",))
    assert race.verdict == "refuted" and race.witness is not None
    assert race.witness.instructions == ("st.global.v4.f32", "st.global.v4.f32")


@pytest.mark.parametrize(
    "form",
    ["atom.shared.add.v4.f32", "atom.global.add.v4.u32", "atom.global.exch.v2.f32", "red.global.min.v2.f32"],
)
def test_forms_the_isa_does_not_define_are_refused(form: str) -> None:
    text = (
        KERNEL.replace("atom.global.gpu.acq_rel.add.v4.f32", form)
        if form.startswith("atom")
        else (KERNEL.replace("red.global.add.v2.f32", form))
    )
    assert [u.text for u in unmodeled(parse(text, "bad.ptx"), ptx_machine("sm_90"))] == [form]
