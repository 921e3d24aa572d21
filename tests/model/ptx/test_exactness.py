"""Which kernels the model computes bit for bit: the forms named in the PTX text decide (checked
against what each corpus file is known to hold)."""

from __future__ import annotations

from pathlib import Path

from karyamorph.isa.parser import parse
from karyamorph.model.ptx.exactness import inexact_reasons, nondeterministic_reasons

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


def reasons(relative: str) -> list[str]:
    return inexact_reasons(parse((CORPUS / relative).read_text()))


def test_integer_and_correctly_rounded_kernels_are_exact() -> None:
    for name in ("triton/vector_add.sm_90a.ptx", "nvcc/scan_block.sm_90.ptx",
                 "nvcc/transpose_tiled.sm_90.ptx", "nvcc/sgemm_tiled.sm_90.ptx",
                 "triton/cumsum_rows.sm_90a.ptx"):  # fmt: skip
        assert reasons(name) == [], name


def test_approximations_are_named_with_their_line() -> None:
    text = (CORPUS / "triton/softmax_rows.sm_90a.ptx").read_text().splitlines()
    found = reasons("triton/softmax_rows.sm_90a.ptx")
    assert any("ex2.approx.f32" in r for r in found) and any("div.full.f32" in r for r in found)
    for r in found:
        line = int(r.split(":")[0].removeprefix("line "))
        assert r.split(": ")[1].split(" ")[0] in text[line - 1]


def test_float_atomics_and_tensor_core_float_math_are_not_exact_integer_mma_is() -> None:
    assert any("atom.global.add.f32" in r for r in reasons("nvcc/reduce_warp_shuffle.sm_90.ptx"))
    assert any("mma.sync" in r and "f16" in r for r in reasons("nvcc/mma_m16n8k16.sm_90.ptx"))
    s8 = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<12>;
  mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r1, %r2, %r3, %r4},
      {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r1, %r2, %r3, %r4};
  ret;
}
"""
    assert inexact_reasons(parse(s8)) == []


def test_clock_reads_are_known_only_to_the_hardware() -> None:
    ptx = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<3>;
  mov.u64 %rd1, %clock64;
  ld.param.u64 %rd2, [p];
  st.global.u64 [%rd2], %rd1;
  ret;
}
"""
    assert inexact_reasons(parse(ptx)) == ["line 7: %clock64 is known only to the hardware"]


def test_only_orders_and_clocks_make_two_launches_differ() -> None:
    # The repeat check of the timing stage compares two launches bit for bit unless these say why
    # not: a float atomic's order and a clock are the hardware's; rounding is the same each time.
    def nondeterministic(relative: str) -> list[str]:
        return nondeterministic_reasons(parse((CORPUS / relative).read_text()))

    assert any("atom.global.add.f32" in r for r in nondeterministic("nvcc/reduce_warp_shuffle.sm_90.ptx"))
    assert nondeterministic("triton/softmax_rows.sm_90a.ptx") == []  # approximations, deterministic
    assert nondeterministic("nvcc/mma_m16n8k16.sm_90.ptx") == []  # the tensor core rounds alike
    assert reasons("triton/softmax_rows.sm_90a.ptx") and reasons("nvcc/mma_m16n8k16.sm_90.ptx")
