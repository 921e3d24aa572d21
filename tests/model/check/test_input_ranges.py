"""Verdicts hold for the inputs the spec describes: a gather ``out[i] = table[idx[i]]`` is in
bounds when ``idx`` is ``randint(0, len(table))`` and refuted, with a witness naming an index
the range allows, when the range reaches past the table. Without ranges (a bare PTX check) the
indices are arbitrary, as before."""

from __future__ import annotations

from typing import Any

import pytest
import z3

from karyamorph.harness.stages.model import check_inputs, check_spec, input_ranges
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.loader import spec_from_dict
from karyamorph.model.check.checker import FiniteFloats, InputRange, check
from karyamorph.model.check.symexec import provenance
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine

TABLE = 100  # elements of the table
N = 256  # indices, one per thread

GATHER = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry gather(
    .param .u64 gather_param_0,
    .param .u64 gather_param_1,
    .param .u64 gather_param_2,
    .param .u32 gather_param_3
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<12>;

    ld.param.u64        %rd1, [gather_param_0];
    ld.param.u64        %rd2, [gather_param_1];
    ld.param.u64        %rd3, [gather_param_2];
    ld.param.u32        %r1, [gather_param_3];
    mov.u32             %r2, %ctaid.x;
    mov.u32             %r3, %ntid.x;
    mov.u32             %r4, %tid.x;
    mad.lo.s32          %r5, %r2, %r3, %r4;
    setp.ge.s32         %p1, %r5, %r1;
    @%p1 bra            DONE;
    cvta.to.global.u64  %rd4, %rd2;
    mul.wide.s32        %rd5, %r5, 4;
    add.s64             %rd6, %rd4, %rd5;
    ld.global.u32       %r6, [%rd6];
    cvta.to.global.u64  %rd7, %rd1;
    mul.wide.s32        %rd8, %r6, 4;
    add.s64             %rd9, %rd7, %rd8;
    ld.global.f32       %f1, [%rd9];
    cvta.to.global.u64  %rd10, %rd3;
    add.s64             %rd11, %rd10, %rd5;
    st.global.f32       [%rd11], %f1;
DONE:
    ret;
}
"""


def _gather(
    init: str, dtype: str = "s32", table: str = "f32", table_init: str = "randn", t: int = TABLE
) -> BoundKernel:
    doc: dict[str, Any] = {
        "kernel": {"source": GATHER, "entry": "gather"},
        "sizes": {"t": t, "n": N},
        "launch": {"grid": ["ceildiv(n, 128)"], "block": [128]},
        "args": [
            {"name": "table", "role": "in", "dtype": table, "shape": ["t"], "init": table_init},
            {"name": "idx", "role": "in", "dtype": dtype, "shape": ["n"], "init": init},
            {"name": "out", "role": "out", "dtype": "f32", "shape": ["n"]},
            {"name": "n", "role": "scalar", "dtype": "u32", "value": "n"},
        ],
        "reference": {"torch": "table[idx.long()]"},
    }
    return bind(spec_from_dict(doc))


def _verdicts(kernel: BoundKernel, **kw: Any) -> dict[str, Verdict]:
    module = parse(kernel.spec.ptx)
    return {v.property: v for v in check_spec(kernel, module, deadline_s=60, **kw)}


def _idx_values(v: Verdict) -> list[int]:
    assert v.witness is not None
    return [value for name, value in v.witness.inputs if name.startswith("idx[")]


def test_a_gather_is_proved_in_bounds_for_indices_within_the_table() -> None:
    verdicts = _verdicts(_gather(f"randint(0, {TABLE})"))
    assert {p: v.verdict for p, v in verdicts.items()} == dict.fromkeys(verdicts, "proved"), verdicts
    assert f"assuming the elements of idx are 0 to {TABLE - 1}" in verdicts["bounds"].reason


@pytest.mark.parametrize(("low", "high", "bad"), [(0, TABLE + 1, TABLE), (-1, TABLE, -1)])
def test_a_range_past_the_table_is_refuted_with_an_index_it_allows(low: int, high: int, bad: int) -> None:
    """The one index outside the table that the range allows is the witness's (a signed
    comparison: -1 is below the table, not 2**32 - 1 above it); the interpreter confirms it."""
    v = _verdicts(_gather(f"randint({low}, {high})"), properties=("bounds",))["bounds"]
    assert v.verdict == "refuted", v
    assert [x - (1 << 32) if x >= 1 << 31 else x for x in _idx_values(v)] == [bad], v.witness
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


def test_without_ranges_any_index_is_possible() -> None:
    """The spec's range not assumed (and a bare check, which has none): refuted with whatever
    index z3 picks, the same verdict either way."""
    kernel = _gather(f"randint(0, {TABLE})")
    v = _verdicts(kernel, properties=("bounds",), assume_inits=False)["bounds"]
    assert v.verdict == "refuted" and "assuming" not in v.reason, v
    assert all(not 0 <= x < TABLE for x in _idx_values(v)), v.witness
    module = parse(kernel.spec.ptx)
    buffers, scalars = check_inputs(kernel, module.entry("gather"))
    bare = check(
        module,
        "gather",
        ptx_machine(),
        kernel.launch,
        buffers,
        scalars,
        properties=("bounds",),
        deadline_s=60,
    )
    assert bare[0].verdict == "refuted"


def test_inits_give_ranges_and_finite_floats() -> None:
    """randint, zeros, ones and arange give ranges of integers; every init of a float buffer
    gives finite values; an integer randn and an output (poisoned before the launch) give none."""
    kernel = _gather("arange", dtype="u8")
    entry = parse(kernel.spec.ptx).entry("gather")
    table = {"gather_param_0": FiniteFloats("f32")}  # the f32 table, filled with randn
    # 256 indices of u8: arange wraps at 256, so every byte value.
    assert input_ranges(kernel, entry) == {**table, "gather_param_1": InputRange(0, 256, 1, signed=False)}
    assert input_ranges(_gather("ones"), entry) == {
        **table,
        "gather_param_1": InputRange(1, 2, 4, signed=True),
    }
    assert input_ranges(_gather("randn"), entry) == table
    assert input_ranges(_gather("randint(-5, 7)", dtype="s16"), entry) == {
        **table,
        "gather_param_1": InputRange(-5, 7, 2, signed=True),
    }
    with pytest.raises(ValueError, match="does not fit"):
        InputRange(0, 257, 1, signed=False)


def test_finite_floats_rule_out_nan_and_infinity_only() -> None:
    """The exponent field of each float type: all ones (NaN, infinity) refused, every other
    pattern (zero, subnormal, largest finite) allowed; f16 and bf16 differ in where it lies."""
    cases = {
        "f32": ([0x7FC00000, 0xFF800000], [0, 0x00000001, 0x7F7FFFFF, 0xBF800000]),
        "f16": ([0x7E00, 0xFC00], [0x7BFF, 0x0001, 0x3C00]),
        "bf16": ([0x7FC0, 0xFF80], [0x7F7F, 0x3F80]),
        "f64": ([0x7FF8000000000000], [0x7FEFFFFFFFFFFFFF]),
    }
    for dtype, (bad, good) in cases.items():
        r = FiniteFloats(dtype)
        for bits, want in [(b, False) for b in bad] + [(g, True) for g in good]:
            got = z3.simplify(r.holds(z3.BitVecVal(bits, 8 * r.element_bytes)))
            assert z3.is_true(got) == want, (dtype, hex(bits))
    with pytest.raises(ValueError, match="no NaN or infinity"):
        FiniteFloats("e4m3")


def test_a_float_arange_past_the_largest_finite_value_is_not_assumed_finite() -> None:
    small = _gather("randint(0, 4)", table="f16", table_init="arange", t=1000)
    entry = parse(small.spec.ptx).entry("gather")
    assert input_ranges(small, entry)["gather_param_0"] == FiniteFloats("f16")
    large = _gather("randint(0, 4)", table="f16", table_init="arange", t=70_000)
    assert "gather_param_0" not in input_ranges(large, entry)  # 65,520 and on round to infinity


def test_provenance_of_a_store_by_block_uses_the_grid() -> None:
    """``out + ctaid.x * 4`` as the simplifier folds it, the base in the high bits
    (``Concat(1, ctaid.x, 0)`` for window 4): without the grid's bound the coordinate could
    carry it into windows 5 to 7, with it the window is the buffer's."""
    ctaid = z3.BitVec("ctaid.x@A", 32)
    addr = z3.Concat(z3.BitVecVal(1, 30), ctaid, z3.BitVecVal(0, 2))
    differ = z3.Solver()
    differ.add(addr != z3.BitVecVal(4 << 32, 64) + z3.ZeroExt(32, ctaid) * 4)
    assert differ.check() == z3.unsat
    assert provenance(addr) is None
    assert provenance(addr, {"ctaid.x@A": 8}) == 4
