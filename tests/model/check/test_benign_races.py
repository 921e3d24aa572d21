"""Stores of one value to one address by threads of different warps (Triton's replicated layouts,
GPUVerify's "every thread writes the same constant"): benign with a note when z3 proves the
values equal for every input, a race under ``strict``, and a race whenever the values may differ
or one side reads."""

from __future__ import annotations

import pytest

from karyamorph.harness.session import load_bound
from karyamorph.harness.stages.model import check_spec
from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.kernels.manifest import load_manifest

MANIFEST = load_manifest()

# Threads t and t + 32 (two warps) both compute 2 * x[t & 31] and store it to s[t & 31]; after a
# barrier the first warp copies s to y. INDEX picks the element loaded: %l (t & 31) is the
# replicated layout, %t makes the two warps store different values.
REPLICATED = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry rep(.param .u64 x, .param .u64 y)
{
    .reg .pred %p;
    .reg .b32 %t, %l, %o, %s;
    .reg .f32 %v;
    .reg .b64 %a, %b, %c;
    .shared .align 4 .b8 s[128];
    ld.param.u64 %a, [x];
    ld.param.u64 %b, [y];
    cvta.to.global.u64 %a, %a;
    cvta.to.global.u64 %b, %b;
    mov.u32 %t, %tid.x;
    and.b32 %l, %t, 31;
    mul.wide.u32 %c, INDEX, 4;
    add.s64 %c, %a, %c;
    ld.global.f32 %v, [%c];
    mul.f32 %v, %v, 0f40000000;
    shl.b32 %o, %l, 2;
    mov.u32 %s, s;
    add.s32 %o, %s, %o;
    st.shared.f32 [%o], %v;
    bar.sync 0;
    setp.ge.u32 %p, %t, 32;
    @%p bra DONE;
    ld.shared.f32 %v, [%o];
    mul.wide.u32 %c, %t, 4;
    add.s64 %c, %b, %c;
    st.global.f32 [%c], %v;
DONE:
    ret;
}
"""
STORE_LINE = 25  # st.shared.f32 in REPLICATED

# Every thread of every block stores VALUE to flag[0] (a global race across blocks and warps).
FLAG = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry flag(.param .u64 f, .param .u32 k)
{
    .reg .b32 %t, %k, %v;
    .reg .b64 %a;
    ld.param.u64 %a, [f];
    ld.param.u32 %k, [k];
    cvta.to.global.u64 %a, %a;
    mov.u32 %t, %tid.x;
    VALUE
    st.global.u32 [%a], %v;
    READ
    ret;
}
"""


def _race(ptx: str, entry: str, launch: tuple[int, int, int], buffers: dict[str, int], **kw: bool) -> Verdict:
    return check(parse(ptx), entry, ptx_machine(), launch, buffers, {}, properties=("race",), **kw)[0]


def _replicated(index: str, strict: bool = False) -> Verdict:
    return _race(REPLICATED.replace("INDEX", index), "rep", (1, 64, 0), {"x": 256, "y": 128}, strict=strict)


def test_replicated_shared_store_across_warps_is_benign_with_a_note() -> None:
    v = _replicated("%l")
    assert v.verdict == "proved", v
    assert f"threads store one value to one address at line(s) {STORE_LINE}" in v.reason, v.reason
    assert "--strict" in v.reason


def test_strict_counts_the_replicated_store_as_a_race_between_warps() -> None:
    v = _replicated("%l", strict=True)
    assert v.verdict == "refuted" and v.witness is not None, v
    a, b = v.witness.threads
    assert v.witness.lines == (STORE_LINE, STORE_LINE) and v.witness.buffer == "s"
    assert a.thread[0] % 32 == b.thread[0] % 32 and a.thread[0] // 32 != b.thread[0] // 32


def test_warps_storing_different_values_race() -> None:
    v = _replicated("%t")
    assert v.verdict == "refuted" and v.witness is not None, v
    assert v.witness.lines == (STORE_LINE, STORE_LINE)
    assert "benign" not in v.reason


@pytest.mark.parametrize(
    ("value", "benign"),
    [
        ("mov.u32 %v, 42;", True),  # every thread writes one constant
        ("mul.lo.u32 %v, %k, 3;", True),  # one value for every input k
        ("mov.u32 %v, %t;", False),  # each thread its own id
        ("add.u32 %v, %k, %t;", False),
    ],
)
def test_same_constant_from_every_thread_of_the_grid(value: str, benign: bool) -> None:
    ptx = FLAG.replace("VALUE", value).replace("READ", "")
    v = _race(ptx, "flag", (4, 128, 0), {"f": 4})
    if benign:
        assert v.verdict == "proved" and "benign" in v.reason and "line(s) 14" in v.reason, v
        assert _race(ptx, "flag", (4, 128, 0), {"f": 4}, strict=True).verdict == "refuted"
    else:
        assert v.verdict == "refuted" and v.witness is not None and v.witness.lines == (14, 14), v


def test_a_read_of_the_same_value_is_still_a_race() -> None:
    """Only write-write conflicts can be benign: a thread reading flag[0] while another stores
    there races, whatever value is stored."""
    ptx = FLAG.replace("VALUE", "mov.u32 %v, 42;").replace("READ", "ld.global.u32 %k, [%a];")
    v = _race(ptx, "flag", (4, 128, 0), {"f": 4})
    assert v.verdict == "refuted" and v.witness is not None, v
    assert sorted(v.witness.lines) == [14, 15], v.witness


def test_blocks_storing_one_value_are_benign_and_a_race_under_strict() -> None:
    """``double_tidonly`` (x[t] * 2 to y[t] from block 0 and block 1): one value, proved equal
    through the read-only input, so benign; --strict gives the cross-block race (40, 40)."""
    spec = MANIFEST.kernel("double_tidonly").spec_path
    default = check_spec(*load_bound(spec), properties=("race",))[0]
    assert default.verdict == "proved" and "line(s) 40" in default.reason, default
    strict = check_spec(*load_bound(spec), properties=("race",), strict=True)[0]
    assert strict.verdict == "refuted" and strict.witness is not None, strict
    a, b = strict.witness.threads
    assert strict.witness.lines == (40, 40) and a.block != b.block and a.thread == b.thread
