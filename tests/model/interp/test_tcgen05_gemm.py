"""A hand-written Blackwell GEMM (datasets/kernels/blackwell/tcgen05_gemm.{ptx,toml}): C (128 x 64,
f32) = A (128 x 64, f16) @ B (64 x 64, f16) on one CTA with ``tcgen05.mma.kind::f16`` (D in
tensor memory), assembled by ptxas for sm_100a, interpreted equal to its torch reference with
zero tolerance (integer operands: every sum is exact in f32, so the model's single rounding
changes nothing), under the default and randomized warp orders. The checker does not encode
tensor memory, so its three verdicts are ``unknown`` with that reason. Planted bugs are refused
by the interpreter, naming the rule: a warp reading another warp's lane quarter, a read of the
loaded registers before ``tcgen05.wait::ld``, D read or freed while the MMA is still in flight,
tensor memory used before ``alloc`` or after ``dealloc``, and an allocation never freed. A
correct second round on the same D and mbarrier (next phase) is not refused, a wait for the
stale parity is a deadlock, and a missing mbarrier wait shows only as a wrong C in some orders
(the interpreter keeps no happens-before order of tensor memory).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness.model_run import interpret_spec_file, run_model
from karyamorph.harness.stages.model import check_spec
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.proxyorder import ProxyOrderError
from karyamorph.model.interp.tensormem import TensorMemoryError

SPEC = Path(__file__).resolve().parents[3] / "datasets" / "kernels" / "blackwell" / "tcgen05_gemm.toml"
UNENCODED = "tensor memory (tcgen05) is run by the interpreter only"


def _kernel(*edits: tuple[str, str]) -> BoundKernel:
    """The spec's kernel, each ``(old, new)`` edit applied to its PTX (old must occur once)."""
    spec = load_spec(SPEC)
    ptx = spec.ptx
    for old, new in edits:
        assert ptx.count(old) == 1, old
        ptx = ptx.replace(old, new)
    return bind(dataclasses.replace(spec, ptx=ptx))


def _assembles(kernel: BoundKernel) -> None:
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    assert assemble(kernel.spec.ptx, "sm_100a", toolchain, lineinfo=False).cubin


def test_the_gemm_assembles_with_ptxas_for_sm_100a() -> None:
    _assembles(_kernel())


@pytest.mark.parametrize("order", [None, 1, 2, 3])
def test_the_gemm_interprets_equal_to_its_reference(order: int | None) -> None:
    kernel = _kernel()
    assert kernel.spec.atol == 0 and kernel.spec.rtol == 0
    report = interpret_spec_file(kernel, seed=order or 0, randomize_order=order is not None)
    assert report.match, report.outputs
    syncs = report.stats["tmem_syncs"]
    assert syncs["wait::ld"] == 128 and report.stats["proxy_fences"] == 128


def test_the_checker_says_unknown_and_why() -> None:
    # Tensor memory is not encoded in the two-thread checker: no verdict on this kernel is a
    # proof, and none may be a refutation.
    kernel = _kernel()
    verdicts = check_spec(kernel, prepare(kernel.spec))
    assert [v.property for v in verdicts] == ["bounds", "race", "barrier"]
    for v in verdicts:
        assert v.verdict == "unknown" and UNENCODED in v.reason, v


WAIT_LD = "    tcgen05.wait::ld.sync.aligned;\n"
QUARTER = "    shl.b32 %r5, %r2, 21;\n"
NEXT_QUARTER = "    add.u32 %r5, %r2, 1;\n    and.b32 %r5, %r5, 3;\n    shl.b32 %r5, %r5, 21;\n"
COMMIT = "    @%p2 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r9];\n"
WAIT_LOOP = "WAIT:\n    mbarrier.try_wait.parity.shared::cta.b64 %p6, [%r9], 0;\n    @!%p6 bra WAIT;\n"
STORED = "    st.global.v4.f32 [%rd20+240], {%f60, %f61, %f62, %f63};\n"
DEALLOC = "    @%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 64;\n"
ALLOC = "    @%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 64;\n"
LOAD = "    tcgen05.ld.sync.aligned.32x32b.x64.b32"

BUGS: dict[str, tuple[tuple[tuple[str, str], ...], str]] = {
    "a warp reads the next warp's lane quarter": (
        ((QUARTER, NEXT_QUARTER),),
        r"TMEM lane \d+ .* is outside the warp's quarter",
    ),
    "D stored without tcgen05.wait::ld": (((WAIT_LD, ""),), r"%f0 is read before tcgen05.wait::ld"),
    "D read before thread 0 commits the MMA (no wait)": (
        ((COMMIT, ""), (WAIT_LOOP, ""), (STORED, STORED + COMMIT)),
        r"columns 0 .. 63 are written by the tcgen05.mma of line \d+ \(thread 0\), still in flight "
        r"\(not committed\)",
    ),
    "D freed while its commit's phase waits for a second arrival": (
        (("[%r9], 1;", "[%r9], 2;"), (DEALLOC, ""), (COMMIT, COMMIT + DEALLOC)),
        r"dealloc while columns 0 .. 63 are written by the tcgen05.mma of line \d+ \(thread 0\), "
        r"still in flight \(its commit's mbarrier phase not complete\)",
    ),
    "tensor memory used without tcgen05.alloc": (
        ((ALLOC, ""),),
        r"tcgen05.mma.*: D at 0x00000000 \(64 columns from lane 0\) is not allocated",
    ),
    "warp 0 frees D before the others read it": (
        ((DEALLOC, ""), (WAIT_LOOP, WAIT_LOOP + DEALLOC)),
        r"not all in one allocation",
    ),
    "the columns are never freed": (((DEALLOC, ""),), r"64 columns of tensor memory .* still allocated"),
}
FENCE = "    fence.proxy.async.shared::cta;\n"


def test_operands_written_without_a_proxy_fence_are_refused() -> None:
    # The threads' st.shared of A and B reach the tensor core's reads (the async proxy) only
    # after a fence.proxy.async; without it the MMA may read the bytes from before the writes.
    kernel = _kernel((FENCE, ""))
    _assembles(kernel)
    with pytest.raises(ProxyOrderError, match=r"tcgen05.mma.* reads byte 0x0 .* no fence.proxy.async"):
        interpret_spec_file(kernel)


@pytest.mark.parametrize("bug", BUGS)
def test_a_planted_bug_is_refused(bug: str) -> None:
    edits, match = BUGS[bug]
    kernel = _kernel(*edits)
    _assembles(kernel)  # valid PTX: the fault is the kernel's use of tensor memory
    with pytest.raises(TensorMemoryError, match=match):
        interpret_spec_file(kernel)


def test_reading_d_without_waiting_for_the_commit_goes_wrong_in_some_order() -> None:
    """Without the mbarrier wait, a warp may read D before thread 0 issues the MMA. That read
    is a race the interpreter does not refuse (it keeps no happens-before order of tensor
    memory: an ld that runs before the MMA's issue is not told from one ordered before it on
    purpose), so the bug shows as a wrong C in some randomized orders, not as a refusal."""
    kernel = _kernel((WAIT_LOOP, ""))
    matches = [interpret_spec_file(kernel, seed=s, randomize_order=True).match for s in range(4)]
    assert not all(matches), matches


def _second_round(first_enable: str) -> tuple[tuple[str, str], ...]:
    """Edits that run the four MMAs, the commit and the loads once more on the same D and
    mbarrier (its next phase, parity 1) after a barrier, the first MMA's enable_input_d
    ``first_enable``."""
    ptx = load_spec(SPEC).ptx
    mmas = ptx[ptx.index("    add.s64 %rd14, %rd12, 0;") : ptx.index(COMMIT) + len(COMMIT)]
    load = ptx[ptx.index(LOAD) : ptx.index(WAIT_LD)]
    again = (
        "    tcgen05.fence::before_thread_sync;\n    bar.sync 0;\n    tcgen05.fence::after_thread_sync;\n"
        + mmas.replace("%r22, %p4;", f"%r22, {first_enable};")
        + WAIT_LOOP.replace("WAIT", "AGAIN").replace("], 0;", "], 1;")
        + "    tcgen05.fence::after_thread_sync;\n"
        + load
        + WAIT_LD
    )
    return ((WAIT_LD, WAIT_LD + again),)


@pytest.mark.parametrize(("enable", "factor"), [("%p4", 1), ("%p5", 2)])
def test_d_reused_for_a_second_round_is_not_refused(enable: str, factor: int) -> None:
    """A correct reuse of D and of the mbarrier's next phase: the MMAs of the second round wait
    for every warp's loads of the first (a barrier), the loads wait for the phase of parity 1.
    Overwriting D gives C again; accumulating gives 2 C."""
    kernel = _kernel(*_second_round(enable))
    _assembles(kernel)
    run = run_model(kernel)
    a, b = (run.inputs[n].double().numpy() for n in ("a", "b"))
    np.testing.assert_array_equal(run.outputs["c"].numpy(), (factor * (a @ b)).astype(np.float32))


@pytest.mark.parametrize("order", [None, 0, 6])
def test_waiting_on_the_first_rounds_parity_again_is_a_deadlock(order: int | None) -> None:
    """After the second commit the current phase has parity 0 again, so a wait for parity 0
    never succeeds: whatever the order (warps that ran before the commit pass it), some warp
    waits forever, and the run stops saying so instead of returning C."""
    ((old, new),) = _second_round("%p5")
    kernel = _kernel((old, new.replace("[%r9], 1;", "[%r9], 0;")))
    with pytest.raises(ExecutionError, match="deadlock"):
        interpret_spec_file(kernel, seed=order or 0, randomize_order=order is not None)
