"""Proofs for every launch (``check --any-launch``): the example kernels are proved for every
block they accept, a kernel written for 256 threads a block is refuted at a launch that breaks
it, with a witness the interpreter replays, and a loop whose depth the launch decides is unknown."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from karyamorph.harness.stages.model import check_inputs, check_spec, proved_blocks
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec, spec_from_dict
from karyamorph.kernel.spec import KernelSpec, LaunchRanges
from karyamorph.model.check.anylaunch import check_any_launch
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine

KERNELS = Path(__file__).parents[3] / "datasets" / "kernels"

# out[ctaid.x] = the sum of the block's inputs, by a shared-memory tree written for exactly 256
# threads: 256 slots, the tree starts at 128. Safe at 256 threads or fewer; a wider block
# stores past the end of buf.
BLOCK_SUM = """
.version 7.0
.target sm_80
.address_size 64

.visible .entry block_sum(.param .u64 x, .param .u64 out, .param .u32 n, .param .u32 nout)
{
    .reg .pred  %p<5>;
    .reg .b32   %r<16>;
    .reg .f32   %f<4>;
    .reg .b64   %rd<8>;
    .shared .align 4 .f32 buf[256];

    ld.param.u64        %rd1, [x];
    ld.param.u64        %rd2, [out];
    ld.param.u32        %r1, [n];
    ld.param.u32        %r12, [nout];
    cvta.to.global.u64  %rd1, %rd1;
    cvta.to.global.u64  %rd2, %rd2;
    mov.u32             %r2, %tid.x;
    mov.u32             %r3, %ctaid.x;
    mov.u32             %r4, %ntid.x;
    mad.lo.u32          %r5, %r3, %r4, %r2;
    mov.f32             %f1, 0f00000000;
    setp.ge.u32         %p1, %r5, %r1;
    @%p1 bra            STORE;
    mul.wide.u32        %rd3, %r5, 4;
    add.u64             %rd4, %rd1, %rd3;
    ld.global.f32       %f1, [%rd4];
STORE:
    mov.u32             %r6, buf;
    shl.b32             %r7, %r2, 2;
    add.u32             %r8, %r6, %r7;
    st.shared.f32       [%r8], %f1;
    bar.sync            0;
    mov.u32             %r9, 128;
LOOP:
    setp.ge.u32         %p2, %r2, %r9;
    @%p2 bra            NEXT;
    shl.b32             %r10, %r9, 2;
    add.u32             %r11, %r8, %r10;
    ld.shared.f32       %f2, [%r11];
    ld.shared.f32       %f3, [%r8];
    add.f32             %f3, %f3, %f2;
    st.shared.f32       [%r8], %f3;
NEXT:
    bar.sync            0;
    shr.u32             %r9, %r9, 1;
    setp.ne.u32         %p3, %r9, 0;
    @%p3 bra            LOOP;
    setp.ne.u32         %p1, %r2, 0;
    setp.ge.u32         %p4, %r3, %r12;
    or.pred             %p1, %p1, %p4;
    @%p1 bra            DONE;
    ld.shared.f32       %f1, [buf];
    mul.wide.u32        %rd5, %r3, 4;
    add.u64             %rd6, %rd2, %rd5;
    st.global.f32       [%rd6], %f1;
DONE:
    ret;
}
"""

# The same tree over a block of any size up to 1024 (buf has 1024 slots), starting at
# ntid.x / 2: its depth is log2 of the block, which a symbolic block leaves open.
HALVING = """
.version 7.0
.target sm_80
.address_size 64

.visible .entry halving(.param .u64 out)
{
    .reg .pred  %p<4>;
    .reg .b32   %r<16>;
    .reg .f32   %f<4>;
    .reg .b64   %rd<4>;
    .shared .align 4 .f32 buf[1024];

    mov.u32             %r2, %tid.x;
    mov.u32             %r6, buf;
    shl.b32             %r7, %r2, 2;
    add.u32             %r8, %r6, %r7;
    cvt.rn.f32.u32      %f1, %r2;
    st.shared.f32       [%r8], %f1;
    bar.sync            0;
    mov.u32             %r9, %ntid.x;
    shr.u32             %r9, %r9, 1;
    setp.eq.u32         %p3, %r9, 0;
    @%p3 bra            END;
LOOP:
    setp.ge.u32         %p2, %r2, %r9;
    @%p2 bra            NEXT;
    shl.b32             %r10, %r9, 2;
    add.u32             %r11, %r8, %r10;
    ld.shared.f32       %f2, [%r11];
    ld.shared.f32       %f3, [%r8];
    add.f32             %f3, %f3, %f2;
    st.shared.f32       [%r8], %f3;
NEXT:
    bar.sync            0;
    shr.u32             %r9, %r9, 1;
    setp.ne.u32         %p3, %r9, 0;
    @%p3 bra            LOOP;
END:
    ret;
}
"""


def _block_sum_spec(check: dict[str, Any] | None = None) -> KernelSpec:
    doc: dict[str, Any] = {
        "kernel": {"source": BLOCK_SUM, "entry": "block_sum"},
        "sizes": {"n": 1024},
        "launch": {"grid": ["ceildiv(n, 256)"], "block": [256]},
        "args": [
            {"name": "x", "role": "in", "dtype": "f32", "shape": ["n"]},
            {"name": "out", "role": "out", "dtype": "f32", "shape": ["ceildiv(n, 256)"]},
            {"name": "n", "role": "scalar", "dtype": "u32", "value": "n"},
            {"name": "nout", "role": "scalar", "dtype": "u32", "value": "ceildiv(n, 256)"},
        ],
        "reference": {"torch": "x.view(-1, 256).sum(1)"},
    }
    if check is not None:
        doc["check"] = check
    return spec_from_dict(doc)


def _check(spec: KernelSpec, ranges: LaunchRanges, **kw: Any) -> dict[str, Verdict]:
    kernel = bind(spec)
    verdicts = check_spec(kernel, parse(spec.ptx), ranges=ranges, deadline_s=60, **kw)
    return {v.property: v for v in verdicts}


def _proved(verdicts: dict[str, Verdict]) -> None:
    assert {p: v.verdict for p, v in verdicts.items()} == dict.fromkeys(verdicts, "proved"), {
        p: v.reason for p, v in verdicts.items()
    }


@pytest.mark.parametrize("name", ["vadd", "scale"])
def test_guarded_examples_are_proved_for_every_block_and_grid(name: str) -> None:
    verdicts = _check(load_spec(KERNELS / f"{name}.toml"), LaunchRanges("any"))
    _proved(verdicts)
    assert all("for every block 1..1024 x grid 1..65535" in v.reason for v in verdicts.values())


@pytest.mark.parametrize("name", ["reduce_sum", "transpose", "sgemm"])
def test_reqntid_examples_are_proved_for_the_one_block_they_accept(name: str) -> None:
    """Their grids are fixed by their sizes (no edge handling past them), so the spec's grid."""
    spec = load_spec(KERNELS / f"{name}.toml")
    verdicts = _check(spec, LaunchRanges("any", grid=None))
    _proved(verdicts)
    req = parse(spec.ptx).entry(spec.entry).attribute("reqntid")
    assert req is not None
    shape = "x".join(map(str, (*req, 1, 1)[:3]))
    assert all(f"block {shape} (.reqntid)" in v.reason for v in verdicts.values())


def test_a_grid_past_the_data_is_refuted_with_its_launch() -> None:
    """reduce_sum writes partial[ctaid.x] unguarded: 4097 blocks and more overrun the 4096."""
    verdicts = _check(load_spec(KERNELS / "reduce_sum.toml"), LaunchRanges("any"), properties=("bounds",))
    v = verdicts["bounds"]
    assert v.verdict == "refuted" and v.witness is not None and v.witness.launch is not None
    grid, block = v.witness.launch
    assert block == (256, 1, 1)
    assert math.prod(grid) > 4096 and v.witness.threads[0].block[0] >= 4096
    assert v.witness.buffer == "partial"


def test_a_kernel_for_256_threads_is_refuted_at_a_wider_block_and_the_witness_replays() -> None:
    verdicts = _check(_block_sum_spec(), LaunchRanges("any"))
    assert verdicts["race"].verdict == "proved" and verdicts["barrier"].verdict == "proved"
    v = verdicts["bounds"]
    assert v.verdict == "refuted", v.reason
    w = v.witness
    assert w is not None and w.launch is not None
    grid, block = w.launch
    assert 256 < math.prod(block) <= 1024 and 1 <= math.prod(grid) <= 65535
    assert w.space == "shared" and w.buffer == "buf" and w.address is not None and w.address >= 1024
    assert w.threads[0].thread[0] >= 256
    assert v.replay is not None and v.replay.status == "confirmed", v.replay
    assert w.as_dict()["launch"] == {"grid": list(grid), "block": list(block)}
    assert f"block ({block[0]},{block[1]},{block[2]})" in str(w)


@pytest.mark.parametrize("block", [(256, 256), (1, 256), (32, 256)])
def test_the_same_kernel_is_proved_for_blocks_up_to_256(block: tuple[int, int]) -> None:
    _proved(_check(_block_sum_spec(), LaunchRanges("any", block=block)))


def test_whole_warps_only_still_refuted_at_a_multiple_of_32() -> None:
    v = _check(_block_sum_spec(), LaunchRanges("any", block_multiple=32), properties=("bounds",))["bounds"]
    assert v.verdict == "refuted" and v.witness is not None and v.witness.launch is not None
    assert math.prod(v.witness.launch[1]) % 32 == 0 and math.prod(v.witness.launch[1]) > 256


def test_proved_blocks_keeps_the_safe_candidates() -> None:
    spec = _block_sum_spec({"grid": "launch"})
    out = proved_blocks(bind(spec), parse(spec.ptx), [64, 128, 256, 512, 1024], deadline_s=60)
    proved = [b for b, vs in out.items() if all(v.verdict == "proved" for v in vs)]
    assert proved == [64, 128, 256]
    for b in (512, 1024):
        bounds = next(v for v in out[b] if v.property == "bounds")
        assert bounds.verdict == "refuted" and bounds.witness is not None
        assert bounds.witness.launch is not None and bounds.witness.launch[1] == (b, 1, 1)


def test_reqntid_rules_out_every_other_block() -> None:
    spec = dataclasses.replace(load_spec(KERNELS / "reduce_sum.toml"), check_launch=LaunchRanges(grid=None))
    out = proved_blocks(bind(spec), parse(spec.ptx), [128, 256])
    assert all(v.verdict == "proved" for v in out[256])
    assert all(v.verdict == "unknown" and ".reqntid" in v.reason for v in out[128])


def test_a_loop_whose_depth_the_launch_decides_is_unknown_not_proved() -> None:
    module = parse(HALVING)
    launch = (1, 256, 0)
    ranges = LaunchRanges("any", block=(1, 1024), grid=None)
    verdicts = check_any_launch(
        module, "halving", ptx_machine(), launch, {"out": 4}, {}, ranges, deadline_s=60
    )
    for v in verdicts:
        assert v.verdict == "unknown", (v.property, v.verdict, v.reason)
        assert "launch" in v.reason
    # Up to 256 threads, eight iterations cover every block: proved.
    small = dataclasses.replace(ranges, block=(1, 256))
    verdicts = check_any_launch(
        module, "halving", ptx_machine(), launch, {"out": 4}, {}, small, deadline_s=60
    )
    assert [v.verdict for v in verdicts] == ["proved"] * 3, [v.reason for v in verdicts]


def test_the_spec_check_table_turns_the_model_stage_to_every_launch() -> None:
    spec = _block_sum_spec({"launch": "any", "block": [1, 256]})
    assert spec.check_launch == LaunchRanges("any", (1, 256))
    kernel = bind(spec)
    verdicts = check_spec(kernel, parse(spec.ptx), deadline_s=60)
    assert all(v.verdict == "proved" and "for every block 1..256" in v.reason for v in verdicts)


def test_inputs_of_the_spec_still_checked_for_the_symbolic_launch() -> None:
    """The block assumption is the only defect: the inputs are the spec's (n = 1024)."""
    kernel = bind(_block_sum_spec())
    buffers, scalars = check_inputs(kernel, parse(kernel.spec.ptx).entry("block_sum"))
    assert scalars == {"n": 1024, "nout": 4} and buffers == {"x": 4096, "out": 16}


def test_maxntid_caps_the_blocks_checked() -> None:
    """Declared at most 256 threads, the kernel is proved: no launch of more may run it."""
    capped = BLOCK_SUM.replace("{\n    .reg .pred", ".maxntid 256, 1, 1\n{\n    .reg .pred", 1)
    assert ".maxntid" in capped
    spec = dataclasses.replace(_block_sum_spec(), ptx=capped)
    verdicts = _check(spec, LaunchRanges("any"))
    _proved(verdicts)
    assert all("for every block 1..256 (.maxntid) x grid 1..65535" in v.reason for v in verdicts.values())


def test_a_range_of_one_launch_is_that_launchs_check() -> None:
    """block_sum fixed at 512 threads (``.reqntid``) at the spec's grid: one launch, checked as
    such. Its tree overruns ``buf``: refuted, the witness naming that launch and replayed there;
    its race and barrier proofs name the range."""
    ptx = BLOCK_SUM.replace(".param .u32 nout)\n{", ".param .u32 nout)\n.reqntid 512\n{")
    assert ".reqntid 512" in ptx
    spec = _block_sum_spec()
    doc_launch = dataclasses.replace(spec.launch, grid=("ceildiv(n, 512)",), block=(512,))
    spec = dataclasses.replace(spec, ptx=ptx, launch=doc_launch)
    verdicts = _check(spec, LaunchRanges("any", grid=None))
    v = verdicts["bounds"]
    assert v.verdict == "refuted" and v.witness is not None, v
    assert v.witness.launch == ((2, 1, 1), (512, 1, 1)), v.witness
    assert v.replay is not None and v.replay.status == "confirmed", v.replay
    for p in ("race", "barrier"):
        assert verdicts[p].verdict == "proved", verdicts[p]
        assert "for every block 512x1x1 (.reqntid) x the spec's grid" in verdicts[p].reason, verdicts[p]
