"""Cooperative ``grid.sync()`` in the checker: every property is unknown with the reason, never
refuted, and no encoding or replay is attempted."""

from __future__ import annotations

from pathlib import Path

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.interp.spin import GRID_SYNC_REASON
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_80")
MODULE = parse((Path(__file__).resolve().parents[1] / "data" / "grid_sync.sm_80.ptx").read_text())


def test_grid_sync_is_unknown_with_the_reason() -> None:
    buffers = {"grid_sum_param_0": 256, "grid_sum_param_1": 4}
    verdicts = check(MODULE, "grid_sum", M, (2, 32, 0), buffers, {"grid_sum_param_2": 64})
    assert [v.property for v in verdicts] == ["bounds", "race", "barrier"]
    for v in verdicts:
        assert v.verdict == "unknown"
        assert GRID_SYNC_REASON in v.reason
        assert v.reason.startswith("line ")
        assert v.witness is None
