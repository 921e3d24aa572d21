"""Signed block- and grid-stride loops (``for (int i = tid; i < n; i += stride)``, nvcc's
``setp.lt.s32`` / ``add.s32``): in bounds for a free ``n`` under the stated assumption
``n <= INT_MAX - stride + 1`` (C's int may not overflow), exactly while that holds for a given
``n``, and never proved where the stride is unknown."""

from __future__ import annotations

import pytest

from karyamorph.isa.parser import parse
from karyamorph.kernel.loader import load_spec
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.check.test_checker import launch_of
from tests.model.kernels.manifest import load_manifest

INT_MAX = 2**31 - 1
STRIDE = 256  # block_sum_s: one block of 256 threads; GRID_STRIDE: 2 blocks of 128
HUGE = 1 << 34  # bytes: room for every non-negative int index of 4-byte elements

# for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
#     y[i] = 2 * x[i] + 1;  (the shape of nvcc's output for int i, n)
GRID_STRIDE = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry gs(.param .u64 x, .param .u64 y, .param .u32 n, .param .u32 s)
{
    .reg .pred %p<3>;
    .reg .f32 %f<3>;
    .reg .b32 %r<11>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd3, [x];
    ld.param.u64 %rd4, [y];
    ld.param.u32 %r6, [n];
    mov.u32 %r1, %ntid.x;
    mov.u32 %r7, %ctaid.x;
    mov.u32 %r8, %tid.x;
    mad.lo.s32 %r10, %r7, %r1, %r8;
    setp.ge.s32 %p1, %r10, %r6;
    @%p1 bra DONE;
    mov.u32 %r9, %nctaid.x;
    STRIDE
    cvta.to.global.u64 %rd1, %rd3;
    cvta.to.global.u64 %rd2, %rd4;
LOOP:
    mul.wide.s32 %rd5, %r10, 4;
    add.s64 %rd6, %rd1, %rd5;
    ld.global.f32 %f1, [%rd6];
    fma.rn.f32 %f2, %f1, 0f40000000, 0f3F800000;
    add.s64 %rd7, %rd2, %rd5;
    st.global.f32 [%rd7], %f2;
    add.s32 %r10, %r10, %r3;
    TEST
    @%p2 bra LOOP;
DONE:
    ret;
}
"""
GRID = "mul.lo.s32 %r3, %r9, %r1;"
LESS = "setp.lt.s32 %p2, %r10, %r6;"


def _block_sum(n: int | None) -> Verdict:
    spec = load_spec(load_manifest().kernel("block_sum_s").spec_path)
    module, buffers, scalars, _ = launch_of(spec)
    huge = {k: HUGE for k in buffers}
    given = {k: n for k in scalars} if n is not None else {}
    return check(module, spec.entry, ptx_machine(), (1, STRIDE, 0), huge, given, properties=("bounds",))[0]  # type: ignore[no-any-return]


def _grid_stride(stride: str = GRID, test: str = LESS, size: int = HUGE, **scalars: int) -> Verdict:
    module = parse(GRID_STRIDE.replace("STRIDE", stride).replace("TEST", test))
    return check(
        module, "gs", ptx_machine(), (2, 128, 0), {"x": size, "y": size}, scalars, properties=("bounds",)
    )[0]  # type: ignore[arg-type]


def test_nvcc_block_stride_loop_is_proved_for_every_n_under_the_stated_assumption() -> None:
    v = _block_sum(None)
    assert v.verdict == "proved", v
    bound = INT_MAX - STRIDE + 1
    assert f"assuming block_sum_s_param_2 <= {bound} (the signed index %r26" in v.reason, v.reason


@pytest.mark.parametrize("n", [1000, INT_MAX - STRIDE, INT_MAX - STRIDE + 1])
def test_a_given_n_that_keeps_the_index_from_wrapping_is_proved(n: int) -> None:
    """The last i a thread computes is below n + STRIDE, at most INT_MAX: no wrap, and nothing
    assumed."""
    v = _block_sum(n)
    assert v.verdict == "proved" and "does not overflow" not in v.reason, v


@pytest.mark.parametrize("n", [INT_MAX - STRIDE + 2, INT_MAX])
def test_a_given_n_past_the_bound_is_never_proved(n: int) -> None:
    """i + STRIDE passes INT_MAX, turns negative, still compares below n: x[i] leaves x."""
    v = _block_sum(n)
    assert v.verdict in ("unknown", "refuted") and not v.passed, v


@pytest.mark.parametrize(
    ("test", "bound"), [(LESS, INT_MAX - 255), ("setp.le.s32 %p2, %r10, %r6;", INT_MAX - 256)]
)
def test_grid_stride_loop_states_its_bound(test: str, bound: int) -> None:
    v = _grid_stride(test=test)
    assert v.verdict == "proved", v
    assert f"assuming n <= {bound} (the signed index %r10 of the loop at line 33" in v.reason, v.reason


def test_the_assumption_leaves_real_bugs_found() -> None:
    """x holds 1000 elements: any n from 1001 up (well inside the assumption) reads past it."""
    v = _grid_stride(size=4000)
    assert v.verdict == "refuted" and v.witness is not None and v.witness.lines == (27,), v


def test_a_stride_of_unknown_size_is_never_proved() -> None:
    """With the stride a free parameter s, i + s may wrap for any n: nothing to assume, no proof;
    the same kernel with s given is proved under the assumption."""
    free = _grid_stride(stride="ld.param.u32 %r3, [s];")
    assert not free.passed and free.verdict in ("unknown", "refuted"), free
    given = _grid_stride(stride="ld.param.u32 %r3, [s];", s=256)
    assert given.verdict == "proved" and f"n <= {INT_MAX - 255}" in given.reason, given


def test_an_unsigned_test_assumes_nothing() -> None:
    v = _grid_stride(test="setp.lt.u32 %p2, %r10, %r6;")
    assert v.verdict == "proved" and "does not overflow" not in v.reason, v
