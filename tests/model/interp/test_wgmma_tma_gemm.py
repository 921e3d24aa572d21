"""A hand-written Hopper GEMM (datasets/kernels/hopper/wgmma_tma_gemm.{ptx,toml}): C = A B^T in f32
from f16 A (M x K) and B (N x K), TMA boxes on an mbarrier, four ``wgmma.mma_async m64n128k16`` a
slice from K-major 128-byte-swizzled descriptors. It assembles for sm_90a, interprets equal to
its torch reference at its sizes and check sizes (boxes over every edge) in the default and
randomized warp orders, and gets ``unknown`` from the checks (its wgmma descriptors address the
shared window, across three shared variables, which the checker keeps apart).
A descriptor off by one field (the stride between row groups, the step along K) or a box
landed without the swizzle the descriptors read gives a wrong C; a mbarrier armed with fewer
bytes than the boxes bring lets wgmma read B's box before its phase; one armed with more hangs (a deadlock
in the order where every warp takes its turn); a wait on a stale parity or on the preceding phase
hangs in that order, and with no wait wgmma reads a box before the reader saw its phase complete."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from karyamorph.harness.model_run import interpret_spec_file
from karyamorph.harness.stages.model import check_spec
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import TensorMapSpec
from karyamorph.model.interp.asyncproxy import DeadlockError
from karyamorph.model.interp.landing import LandingError

SPEC = Path(__file__).resolve().parents[3] / "datasets" / "kernels" / "hopper" / "wgmma_tma_gemm.toml"
SIZES = [{}, {"m": 64, "n": 128, "k": 64}, {"m": 200, "n": 300, "k": 136}]


def _kernel(*edits: tuple[str, str], sizes: dict[str, int] | None = None, swizzle: int = 128) -> BoundKernel:
    spec = load_spec(SPEC)
    ptx = spec.ptx
    for old, new in edits:
        assert ptx.count(old) >= 1, old
        ptx = ptx.replace(old, new)
    args = tuple(
        dataclasses.replace(a, tensormap=dataclasses.replace(a.tensormap, swizzle=swizzle))
        if isinstance(a.tensormap, TensorMapSpec)
        else a
        for a in spec.args
    )
    return bind(dataclasses.replace(spec, ptx=ptx, args=args), "sm_90a", sizes or {})


def test_the_gemm_assembles_with_ptxas_for_sm_90a() -> None:
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    assert assemble(_kernel().spec.ptx, "sm_90a", toolchain, lineinfo=False).cubin


@pytest.mark.parametrize("sizes", SIZES, ids=str)
@pytest.mark.parametrize("order", [None, 1])
def test_the_gemm_interprets_equal_to_its_reference(sizes: dict[str, int], order: int | None) -> None:
    report = interpret_spec_file(_kernel(sizes=sizes), seed=order or 0, randomize_order=order is not None)
    assert report.match, report.outputs
    assert report.stats["thread_instructions"]["wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"] > 0


def test_the_checks_say_unknown_and_why() -> None:
    kernel = _kernel()
    for v in check_spec(kernel, prepare(kernel.spec)):
        # (the checks follow its tensor copies; its descriptors address three shared variables)
        assert v.verdict == "unknown" and "the kernel has 3 shared variables" in v.reason, v


SBO = "4611686293305294848"  # 128-byte swizzle, 1024 bytes between groups of eight rows


@pytest.mark.parametrize(
    ("edits", "swizzle"),
    [
        (((SBO, "4611686224585818112"),), 128),  # groups 512 bytes apart
        ((("add.s64 %rd20, %rd10, 2;", "add.s64 %rd20, %rd10, 4;"),), 128),  # A's second k step 64 bytes in
        ((), 0),  # boxes landed unswizzled under 128-byte-swizzle descriptors
    ],
    ids=["stride", "k step", "swizzle"],
)
def test_a_layout_slip_gives_a_wrong_c(edits: tuple[tuple[str, str], ...], swizzle: int) -> None:
    assert not interpret_spec_file(_kernel(*edits, swizzle=swizzle)).match


def test_an_mbarrier_armed_for_fewer_bytes_lets_the_wgmma_read_a_box_too_early() -> None:
    # Armed for A's 8192 bytes alone, the phase completes once A's box lands: the wait passes
    # and wgmma reads B's box, whose bytes complete the next phase.
    kernel = _kernel(("_, [%r12], 24576;", "_, [%r12], 8192;"))
    with pytest.raises(LandingError, match=r"wgmma\.mma_async.* lands in, before the reader .* \(parity 1\)"):
        interpret_spec_file(kernel)


def test_an_mbarrier_armed_for_more_bytes_hangs() -> None:
    # The phase completes when the transaction count is back at zero: more bytes armed than
    # the two boxes bring leave it above; no wait ever passes.
    kernel = _kernel(("_, [%r12], 24576;", "_, [%r12], 32768;"))
    with pytest.raises(DeadlockError, match="deadlock: in a run where every warp takes its turn"):
        interpret_spec_file(kernel, randomize_order=True)


@pytest.mark.parametrize(
    ("edit", "refusal"),
    [
        # Every slice waits for parity 0: in the order where a box lands as it is issued, the
        # second slice's phase has completed before its wait, which then names the next one.
        (("    xor.b32 %r14, %r14, 1;\n", ""), DeadlockError),
        (("    mov.u32 %r14, 0;", "    mov.u32 %r14, 1;"), DeadlockError),  # the preceding phase first
        # One try, failed, ignored: warps that reach it before warp 0 issued the copies read the
        # boxes of the slice before.
        (("    @!%p3 bra $L_wait;\n", ""), LandingError),
    ],
    ids=["stale parity", "parity of the preceding phase", "no wait"],
)
def test_a_wrong_wait_is_refused_in_a_run_where_every_warp_takes_turns(
    edit: tuple[str, str], refusal: type[Exception]
) -> None:
    words = "lands in, before the reader" if refusal is LandingError else "every warp takes its turn"
    with pytest.raises(refusal, match=words):
        interpret_spec_file(_kernel(edit, sizes={"m": 64, "n": 128, "k": 136}), randomize_order=True)
