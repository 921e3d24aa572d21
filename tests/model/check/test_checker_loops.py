"""Loops whose trip count varies per thread: the code after them is reached by every thread that
reached the loop, a loop index never takes values its guard excluded before wrapping, and a loop
that may never end hides nothing before it (its exit is assumed only for what comes after)."""

from __future__ import annotations

import pytest

from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.model.check.checker import check
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.check.test_checker import launch_of
from tests.model.kernels.manifest import load_manifest

MANIFEST = load_manifest()


@pytest.mark.parametrize("name", ["block_sum_s", "block_sum_u", "hist_bytes"])
def test_barrier_after_a_per_thread_loop_is_uniform(name: str) -> None:
    """Threads leave the block-stride loop after different numbers of iterations; the barrier
    after it is proved, not refuted (the replay of such a witness found no divergence)."""
    spec = load_spec(MANIFEST.kernel(name).spec_path)
    module, buffers, scalars, _ = launch_of(spec)
    launch = bind(spec).launch
    v = check(module, spec.entry, ptx_machine(), launch, buffers, scalars, properties=("barrier",))[0]
    assert v.verdict == "proved", v
    assert "assuming every loop terminates" in v.reason


def test_signed_index_for_every_n_is_never_proved_in_bounds_without_saying_so() -> None:
    """With n free, a signed block-stride index does wrap for n near 2**31 (i + 256 overflows
    before it reaches n): a proof for every n must state the assumption that it does not
    (tests/model/check/test_signed_loops.py), and an n past it is never proved."""
    spec = load_spec(MANIFEST.kernel("block_sum_s").spec_path)
    module, buffers, scalars, _ = launch_of(spec)
    huge = {k: 1 << 34 for k in buffers}
    free = check(module, spec.entry, ptx_machine(), (1, 256, 0), huge, {}, properties=("bounds",))[0]
    assert free.verdict == "proved" and "<= 2147483392 (the signed index" in free.reason, free
    (n,) = scalars
    wraps = check(
        module, spec.entry, ptx_machine(), (1, 256, 0), huge, {n: 2**31 - 1}, properties=("bounds",)
    )[0]
    assert wraps.verdict in ("unknown", "refuted") and not wraps.passed, wraps
    if wraps.verdict == "unknown":
        assert "loop at line(s) 49 past the first 4096" in wraps.reason
    fixed = check(module, spec.entry, ptx_machine(), (1, 256, 0), huge, scalars, properties=("bounds",))[0]
    assert fixed.verdict == "proved", fixed


SPIN = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry spin(.param .u64 y, .param .u32 n)
{
    .reg .pred %p;
    .reg .b32 %t, %i, %n;
    .reg .b64 %a;
    ld.param.u64 %a, [y];
    ld.param.u32 %n, [n];
    cvta.to.global.u64 %a, %a;
    mov.u32 %t, %tid.x;
    BEFORE
    mov.u32 %i, 0;
LOOP:
    add.u32 %i, %i, 1;
    setp.ne.u32 %p, %n, 0;
    @%p bra LOOP;
    AFTER
    ret;
}
"""
STORE = "st.global.u32 [%a], %t;"


@pytest.mark.parametrize(("before", "after", "line"), [(STORE, "", 14), ("", STORE, 20)])
def test_a_loop_that_may_never_end_hides_no_race(before: str, after: str, line: int) -> None:
    """Every thread stores its id to y[0], before or after a loop that ends only when n == 0.
    Assuming the loop ends would be vacuous for the store before it (no n makes it end...
    except 0): the race before the loop is found for any n, the one after it with n == 0."""
    module = parse(SPIN.replace("BEFORE", before).replace("AFTER", after))
    v = check(module, "spin", ptx_machine(), (1, 64, 0), {"y": 4}, {}, properties=("race",))[0]
    assert v.verdict == "refuted" and v.witness is not None, v
    assert v.witness.lines == (line, line)
    if after:
        assert dict(v.witness.inputs)["n"] == 0
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


HALVING = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry halving(.param .u64 p)
{
    .shared .align 4 .b32 s[1024];
    .reg .pred %q;
    .reg .b32 %t, %i, %a;
    mov.u32 %t, %tid.x;
    mov.u32 %i, %t;
LOOP:
    shr.u32 %i, %i, 1;
    setp.ne.u32 %q, %i, 0;
    @%q bra LOOP;
    bar.sync 0;
    shl.b32 %a, %t, 2;
    mov.u32 %i, s;
    add.u32 %a, %a, %i;
    st.shared.u32 [%a], %i;
    ret;
}
"""


def test_barrier_after_an_unrolled_loop_is_not_refuted_by_a_cut_path() -> None:
    """``i >>= 1`` until 0 is no counted loop: unrolled 4 deep, the threads still looping (tid
    >= 16) are on cut paths, and may yet reach the barrier. Proved up to 4, not refuted."""
    v = check(parse(HALVING), "halving", ptx_machine(), (1, 1024, 0), {"p": 4}, {}, unroll=4)[2]
    assert v.property == "barrier" and v.verdict == "proved-up-to-k" and v.k == 4, v
