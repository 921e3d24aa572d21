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
from tests.model.oracle.setmaxnreg import held, kernel

M = ptx_machine("sm_90a")


def kernel_of(count: int, action: str = "dec") -> str:
    """Every thread lowers (or raises) its budget between making two values and storing them
    (:func:`tests.model.oracle.setmaxnreg.kernel`)."""
    return kernel(f"setmaxnreg.{action}.sync.aligned.u32 {count}")


def out(threads: int) -> dict[str, np.ndarray]:
    return {"out": np.zeros((threads, 2), np.uint32)}


@pytest.mark.parametrize(("count", "action"), [(40, "dec"), (232, "inc"), (24, "dec"), (256, "inc")])
def test_the_budget_changes_no_value(count: int, action: str) -> None:
    got = interpret(parse(kernel_of(count, action)), "k", M, (1, 256, 0), out(256)).outputs["out"]
    assert np.array_equal(got, held(256))


@pytest.mark.parametrize("count", [20, 44, 264])
def test_a_count_outside_the_isa_range_is_refused_as_ptxas_refuses_it(count: int) -> None:
    with pytest.raises(
        ModelLimitError, match=f"register count {count} is not a multiple of 8 from 24 to 256"
    ):
        interpret(parse(kernel_of(count)), "k", M, (1, 128, 0), out(128))
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    with pytest.raises(PtxasError):
        assemble(kernel_of(count), "sm_90a", toolchain, lineinfo=False)


def test_a_block_without_whole_warpgroups_is_refused() -> None:
    with pytest.raises(WarpSyncError, match="incomplete warpgroup"):
        interpret(parse(kernel_of(40)), "k", M, (1, 96, 0), out(96))


def test_ptxas_takes_the_forms_the_model_runs() -> None:
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    for count, action in [(40, "dec"), (232, "inc")]:
        assemble(kernel_of(count, action), "sm_90a", toolchain, lineinfo=False)
