"""redux.sync (warp reductions of 32-bit integers) in the interpreter and the checker, on small
kernels; the form-by-form oracle is ``tests/model/oracle/kernels.py`` (the PTX ISA's definition,
lane by lane). The interpreter is compared with numpy; the checker must prove a kernel that
stores one reduction per warp and refute the one where every warp stores its own sum to one
address."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.interp.errors import WarpSyncError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_90")


def _kernel(op: str, ty: str, *, store_at_warp: bool = True, early_exit: bool = False) -> str:
    """Each thread reduces ``inp[tid]`` over its warp; lane 0 stores the result at
    ``out[warp]`` (or ``out[0]``); ``early_exit`` ends lanes 16..31 before the reduction."""
    exit_ = "setp.ge.u32 %p2, %r5, 16;\n@%p2 exit;" if early_exit else ""
    index = "%r6" if store_at_warp else "0"
    return f""".version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 inp, .param .u64 out)
{{
.reg .pred %p<4>; .reg .b32 %r<12>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [inp]; ld.param.u64 %rd2, [out];
mov.u32 %r1, %tid.x;
and.b32 %r5, %r1, 31;
shr.u32 %r6, %r1, 5;
{exit_}
mul.wide.u32 %rd3, %r1, 4;
add.u64 %rd4, %rd1, %rd3;
ld.global.u32 %r2, [%rd4];
redux.sync.{op}.{ty} %r3, %r2, -1;
setp.ne.u32 %p1, %r5, 0;
@%p1 bra DONE;
mul.wide.u32 %rd5, {index}, 4;
add.u64 %rd6, %rd2, %rd5;
st.global.u32 [%rd6], %r3;
DONE:
ret;
}}
"""


REFERENCE = {
    ("add", "u32"): lambda w: int(w.astype(np.int64).sum()) % 2**32,
    ("min", "s32"): lambda w: int(w.view(np.int32).min()) % 2**32,
    ("max", "s32"): lambda w: int(w.view(np.int32).max()) % 2**32,
    ("min", "u32"): lambda w: int(w.min()),
    ("and", "b32"): lambda w: int(np.bitwise_and.reduce(w)),
    ("or", "b32"): lambda w: int(np.bitwise_or.reduce(w)),
    ("xor", "b32"): lambda w: int(np.bitwise_xor.reduce(w)),
}


@pytest.mark.parametrize(("op", "ty"), list(REFERENCE))
def test_each_warp_gets_its_own_reduction(op: str, ty: str) -> None:
    rng = np.random.default_rng(len(op) + len(ty))
    inp = rng.integers(0, 1 << 32, 96, dtype=np.uint64).astype(np.uint32)
    out = interpret(parse(_kernel(op, ty)), "k", M, (1, 96, 0), {"inp": inp, "out": np.zeros(3, np.uint32)})
    want = [REFERENCE[op, ty](inp[32 * w : 32 * w + 32]) for w in range(3)]
    assert out.outputs["out"].tolist() == want


def test_a_membermask_naming_exited_lanes_is_an_error() -> None:
    args = {"inp": np.arange(32, dtype=np.uint32), "out": np.zeros(1, np.uint32)}
    with pytest.raises(WarpSyncError, match=r"redux\.sync"):
        interpret(parse(_kernel("add", "u32", early_exit=True)), "k", M, (1, 32, 0), args)


def test_checker_proves_per_warp_results_and_refutes_a_shared_slot() -> None:
    buffers = {"inp": 4 * 64, "out": 4 * 2}
    safe = {
        v.property: v.verdict for v in check(parse(_kernel("add", "u32")), "k", M, (1, 64, 0), buffers, {})
    }
    assert safe == {"bounds": "proved", "race": "proved", "barrier": "proved"}
    # Both warps' lane 0 store their own warp's sum to out[0]: the sums differ, a real race.
    racy = check(parse(_kernel("add", "u32", store_at_warp=False)), "k", M, (1, 64, 0), buffers, {})
    assert {v.property: v.verdict for v in racy}["race"] == "refuted"
