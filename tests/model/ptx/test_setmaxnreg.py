"""``setmaxnreg``: a warpgroup's register budget, no value changed; the count's range and the
whole warpgroup checked by the model as ptxas checks the count."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.ptxas import PtxasError, assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ModelLimitError, WarpSyncError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_90a")


def kernel(count: int, action: str = "dec") -> str:
    """Every thread lowers (or raises) its budget, then stores its thread index."""
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .reg .b32 %r<2>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    setmaxnreg.{action}.sync.aligned.u32 {count};
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
}}
"""


@pytest.mark.parametrize(("count", "action"), [(40, "dec"), (232, "inc"), (24, "dec"), (256, "inc")])
def test_the_budget_changes_no_value(count: int, action: str) -> None:
    out = np.zeros(256, np.uint32)
    got = interpret(parse(kernel(count, action)), "k", M, (1, 256, 0), {"out": out}).outputs["out"]
    assert np.array_equal(got, np.arange(256, dtype=np.uint32))


@pytest.mark.parametrize("count", [20, 44, 264])
def test_a_count_outside_the_isa_range_is_refused_as_ptxas_refuses_it(count: int) -> None:
    with pytest.raises(
        ModelLimitError, match=f"register count {count} is not a multiple of 8 from 24 to 256"
    ):
        interpret(parse(kernel(count)), "k", M, (1, 128, 0), {"out": np.zeros(128, np.uint32)})
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    with pytest.raises(PtxasError):
        assemble(kernel(count), "sm_90a", toolchain, lineinfo=False)


def test_a_block_without_whole_warpgroups_is_refused() -> None:
    with pytest.raises(WarpSyncError, match="incomplete warpgroup"):
        interpret(parse(kernel(40)), "k", M, (1, 96, 0), {"out": np.zeros(96, np.uint32)})


def test_ptxas_takes_the_forms_the_model_runs() -> None:
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    for count, action in [(40, "dec"), (232, "inc")]:
        assemble(kernel(count, action), "sm_90a", toolchain, lineinfo=False)
